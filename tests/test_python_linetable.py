"""py_linetable_line (src/python/linetable.c) against CPython itself.

For every CPython 3.9 - 3.13 on this machine (Debian's python3.11 and the
pyenv builds under /root/.pyenv/versions), a script run *in that
interpreter* compiles stdlib modules and snippets chosen to stress the
line tables (long lines, jumps of hundreds and tens of thousands of
lines, line numbers in the millions, lines that go backwards,
comprehensions, nested functions, lambdas, generators, try/with/match),
walks every nested code object and asks the interpreter's own
PyCode_Addr2Line (through ctypes) for the line of every instruction.
The raw table (co_lnotab on 3.9, co_linetable on 3.10+) goes to the
driver mode of build/tests/unit/test_python_linetable, whose answers must
be the interpreter's, offset by offset. On 3.10+ co_lines() is checked
to agree with PyCode_Addr2Line too, so the oracle is not one function
alone.

The same binary without arguments runs the hand-written, truncation and
random-byte checks of tests/unit/test_python_linetable.c.
"""
import glob
import json
import os
import subprocess

import pytest

from conftest import unit_program

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT = os.path.join(ROOT, "build", "tests", "unit", "test_python_linetable")
PYENV = "/root/.pyenv/versions"


def _interpreters():
    """(id, path) for each version the tests want; for an absent one the
    path is the pattern looked for."""
    found = [("debian-3.11", "/usr/bin/python3.11")]
    for minor in range(9, 14):
        pattern = f"{PYENV}/3.{minor}.*/bin/python3.{minor}"
        paths = sorted(glob.glob(pattern))
        if paths:
            found += [(f"pyenv-{p.split('/')[-3]}", p) for p in paths]
        else:
            found.append((f"pyenv-3.{minor}", pattern))
    return [pytest.param(p, id=i) for i, p in found]


# Run in the interpreter under test (3.9 syntax). Prints one line per
# code object: FORMAT FIRSTLINENO HEXTABLE OFFSET... (the driver's input)
# then "|" and the interpreter's line of each offset; then a last line
# "#stats" with a JSON summary.
ORACLE = r'''
import ast, ctypes, importlib.util, json, sys, types

MODULES = ["json", "json.decoder", "json.encoder", "asyncio.base_events",
           "dis", "argparse", "typing", "difflib", "email._header_value_parser",
           "tarfile", "inspect"]

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int
minor = sys.version_info[1]
fmt = "lnotab" if minor == 9 else "310" if minor == 10 else "locations"

long_sum = " + ".join("v%d" % i for i in range(300))
SNIPPETS = {
    "long_lines": (
        "def f(" + ", ".join("v%d" % i for i in range(300)) + "):\n"
        "    return " + long_sum + "\n"
        "x = [" + ", ".join("'%s'" % ("s" * (i % 40)) for i in range(400)) + "]\n"
        "y = " + "f(" * 60 + "1" + ")" * 60 + "\n"
        "z = {" + ", ".join("%d: a.b.c.d(%d)" % (i, i) for i in range(200)) + "}\n"
        "w = 0\n"),
    "blank_lines": (
        "a = 1\n" + "\n" * 130 + "b = 2\n" + "\n" * 300 + "c = 3\n"
        + "\n" * 70000 + "d = 4\n"
        "def g(x):\n    x += 1\n" + "\n" * 255 + "    x += 2\n"
        + "\n" * 4097 + "    return x\n"),
    "backwards": (
        "import functools\n"
        "@functools.lru_cache(\n    maxsize=None,\n)\n"
        "@staticmethod\n"
        "def deco(a,\n         b=1,\n         *c,\n         **d):\n"
        "    return (a +\n            b *\n            len(c)\n            - len(d))\n"
        "r = deco(\n    1,\n" + "\n" * 200 + "    2,\n    3)\n"
        "s = max(1,\n" + "\n" * 20000 + "        2)\n"
        "for i in range(3):\n    for j in range(\n        i):\n        pass\n"
        "while r:\n    r -= 1\n    if r > 10:\n        continue\n    break\n"
        "t = (lambda q:\n     q +\n     1)(\n     2)\n"),
    "nested": (
        "class A:\n"
        "    x = [i for i in range(3)]\n"
        "    def m(self, n):\n"
        "        def inner(k):\n"
        "            return [[(i, j) for j in range(k) if j % 2]\n"
        "                    for i in range(k)]\n"
        "        g = (x * 2 for x in\n             range(n))\n"
        "        s = {x for x in g}\n"
        "        d = {k: v for k, v in zip(s, s)}\n"
        "        return inner(n), lambda: (lambda y: y + n)(1), d\n"
        "    async def am(self):\n"
        "        async with self as s:\n"
        "            async for v in s:\n"
        "                await v\n"
        "        return [await z async for z in self]\n"
        "    def gen(self):\n"
        "        try:\n            yield 1\n"
        "        except (ValueError,\n                TypeError) as e:\n"
        "            yield e\n"
        "        finally:\n            yield 3\n"
        "        with open('a') as f, \\\n             open('b') as g:\n"
        "            yield from f\n"),
    "long_function": (
        "def big(a):\n"
        + "".join("    a = a + %d * a - a // %d; b%d = [a, a, a, a]\n" % (i, i + 1, i)
                  for i in range(300))
        + "    return a\n"
        "def one_line(a): return " + " + ".join(["a * (a - 1) // 3"] * 200) + "\n"),
}
if minor >= 10:
    SNIPPETS["match"] = (
        "def m(p):\n"
        "    match p:\n"
        "        case {'x': x,\n              'y': [_, *rest]} if x > 1:\n"
        "            return x\n"
        "        case (1 | 2) as q:\n            return q\n"
        "        case _:\n            pass\n")
if minor >= 11:
    SNIPPETS["except_star"] = (
        "def es():\n"
        "    try:\n        raise ExceptionGroup('g', [ValueError()])\n"
        "    except* ValueError:\n        pass\n"
        "    except* (TypeError,\n             KeyError) as e:\n        raise\n")

def sources():
    for name in MODULES:
        spec = importlib.util.find_spec(name)
        with open(spec.origin, "rb") as f:
            yield name, compile(f.read(), spec.origin, "exec")
    for name, src in SNIPPETS.items():
        yield name, compile(src, "<%s>" % name, "exec")
    # line numbers in the millions, and deep in the int range (a 6-chunk
    # varint from 3.11; in 3.9/3.10 pairs of 127 lines, 8 million of them
    # to 2**30, so those stop at 2**22)
    for shift in (2000000, 1 << 30 if minor >= 11 else 1 << 22):
        tree = ast.parse(SNIPPETS["backwards"] + SNIPPETS["nested"])
        ast.increment_lineno(tree, shift)
        yield "shifted%d" % shift, compile(tree, "<shifted>", "exec")
    # no columns at all: 3.11+ writes every line change as a no-column
    # entry (kind 13), whose line delta is a signed varint
    for shift in (0, 1 << 30 if minor >= 11 else 1 << 22):
        tree = ast.parse(SNIPPETS["backwards"] + SNIPPETS["nested"]
                         + SNIPPETS["blank_lines"])
        ast.increment_lineno(tree, shift)
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset = node.end_col_offset = -1
        yield "nocolumns%d" % shift, compile(tree, "<nocolumns>", "exec")

def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)

stats = {"version": sys.version.split()[0], "format": fmt, "codes": 0,
         "offsets": 0, "none": 0, "co_lines_disagree": 0, "kinds": {}, "pairs": {},
         "max_line": 0, "past_end": 0, "k13_deltas": 0}
for name, top in sources():
    for co in walk(top):
        table = co.co_lnotab if minor == 9 else co.co_linetable
        n = len(co.co_code)
        offsets = list(range(0, n, 2))
        if minor <= 10:
            # No line array to overrun before 3.11: past the end, 3.9
            # answers the last line and 3.10 -1, as linetable.h says.
            offsets += [n, n + 2, n + 1000]
            stats["past_end"] += 3
        want = [addr2line(co, off) for off in offsets]
        if minor >= 10:
            by_lines = {}
            for start, end, line in co.co_lines():
                for off in range(start, end, 2):
                    by_lines[off] = -1 if line is None else line
            for off, line in zip(offsets, want):
                if off < n and by_lines.get(off, -1) != line:
                    stats["co_lines_disagree"] += 1
        if minor <= 10:
            for i in range(0, len(table) - 1, 2):
                a, l = table[i], table[i + 1]
                l = l - 256 if l > 127 else l
                for key, hit in (("negative", l < 0 and l != -128 or
                                  minor == 9 and l == -128),
                                 ("no_line", minor == 10 and l == -128),
                                 ("zero_length", a == 0),
                                 ("max_step", a == (255 if minor == 9 else 254)),
                                 ("line_split", abs(l) == 127 or
                                  minor == 9 and l == -128)):
                    stats["pairs"][key] = stats["pairs"].get(key, 0) + hit
        if minor >= 11:
            i = 0
            while i < len(table):
                kind = (table[i] >> 3) & 15
                stats["kinds"][kind] = stats["kinds"].get(kind, 0) + 1
                # a no-column entry that moves the line: varint not 0
                stats["k13_deltas"] += kind == 13 and table[i + 1] != 0
                i += 1
                while i < len(table) and not table[i] & 128:
                    i += 1
        stats["codes"] += 1
        stats["offsets"] += len(offsets)
        stats["none"] += want.count(-1)
        stats["max_line"] = max([stats["max_line"]] + want)
        print(fmt, co.co_firstlineno, table.hex() or "-",
              " ".join(map(str, offsets)), "|", " ".join(map(str, want)))
print("#stats", json.dumps(stats))
'''


@pytest.fixture(scope="module")
def unit_bin():
    """build/tests/unit/test_python_linetable, built by make.
    PROFD_TEST_PYTHON_LINETABLE_BIN may name one built another way."""
    return unit_program("test_python_linetable", "PROFD_TEST_PYTHON_LINETABLE_BIN")


def test_unit_checks(unit_bin):
    """Hand-encoded tables, every prefix, encoders that follow CPython's
    writers, random bytes against a guard page."""
    r = subprocess.run([unit_bin], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    assert "FAIL" not in r.stdout and r.stdout.count("ok  ") >= 20, r.stdout


@pytest.mark.parametrize("python", _interpreters())
def test_matches_cpython(unit_bin, python, capsys):
    if not os.access(python, os.X_OK):
        pytest.skip(f"CPython not installed here (optional): {python}")
    r = subprocess.run([python, "-c", ORACLE], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines and lines[-1].startswith("#stats "), r.stdout[-2000:]
    stats = json.loads(lines[-1][len("#stats "):])
    inputs, wants = zip(*(line.split(" | ") for line in lines[:-1]))

    d = subprocess.run([unit_bin, "-"], input="\n".join(inputs) + "\n",
                       capture_output=True, text=True, timeout=120)
    assert d.returncode == 0, d.stderr
    got_lines = d.stdout.splitlines()
    assert len(got_lines) == len(inputs)

    checked, bad = 0, []
    for inp, want, got in zip(inputs, wants, got_lines):
        fields = inp.split()
        offsets, want, got = fields[3:], want.split(), got.split()
        assert len(got) == len(want) == len(offsets)
        for off, w, g in zip(offsets, want, got):
            checked += 1
            if w != g:
                bad.append(f"firstlineno {fields[1]} table {fields[2][:80]}: "
                           f"offset {off}: ours {g}, CPython {w}")
    if stats["format"] == "locations":
        kinds = sorted(stats["kinds"].items(), key=lambda kv: int(kv[0]))
        forms = (f"entries by kind {dict(kinds)}, {stats['k13_deltas']} "
                 f"no-column entries that move the line")
    else:
        forms = f"pairs {stats['pairs']}, {stats['past_end']} offsets past the end"
    with capsys.disabled():
        print(f"\n  {stats['version']} ({stats['format']}): {stats['codes']} code "
              f"objects, {checked} offsets checked, {stats['none']} without a "
              f"line, max line {stats['max_line']}; {forms}")
    assert checked == stats["offsets"] and checked > 20000
    # the sources still reach every form of the table
    if stats["format"] == "locations":
        assert sorted(map(int, stats["kinds"])) == list(range(16)), stats["kinds"]
        assert stats["k13_deltas"] > 100, stats["k13_deltas"]
    else:
        pairs = stats["pairs"]
        want = {"negative", "zero_length", "max_step", "line_split"}
        if stats["format"] == "310":
            want.add("no_line")
        assert all(pairs[k] for k in want), pairs
    assert not bad, f"{len(bad)} of {checked} differ:\n" + "\n".join(bad[:20])
    assert stats["co_lines_disagree"] == 0, "co_lines() and PyCode_Addr2Line disagree"
