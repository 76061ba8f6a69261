"""CRuby layouts (src/ruby/offsets.c) against independent oracles.

a) Live: tests/workloads/ruby/layout_probe.rb runs in Debian's ruby and
   reads its own interpreter's memory with Fiddle at our offsets (each
   read checked against /proc/self/maps: a wrong offset fails a check, it
   never crashes): the vm -> main ractor -> thread list against
   Thread.list's native_thread_ids, the vm's ractor list (main ractor
   first, then a second Ractor the probe starts, its thread's tid),
   thread -> ec -> cfp, every control
   frame's iseq label and path against caller_locations, the method entry
   of method frames, C frames, the first line against
   Method#source_location. Then every offset the probe uses is perturbed
   in turn: the probe must notice each one, so these checks can fail.
b) Headers: Ruby's own source of the installed version (Debian's source
   package, fetched with apt into a private apt state), configured, and
   scripts/ruby-offsets.c compiled against it: its output must be our
   table, field for field.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = os.path.join(ROOT, "tests", "workloads", "ruby", "layout_probe.rb")
OFFSETS_C = os.path.join(ROOT, "src", "ruby", "offsets.c")
GENERATOR = os.path.join(ROOT, "scripts", "ruby-offsets.c")
SRC_CACHE = "/var/cache/profd-tests/ruby-src"

pytestmark = pytest.mark.skipif(shutil.which("ruby") is None,
                                reason="ruby is not installed (scripts/deps.sh --test)")


def ruby_version():
    out = subprocess.run(["ruby", "-e", "print RUBY_VERSION"], capture_output=True,
                         text=True, check=True).stdout
    return tuple(int(x) for x in out.split("."))


def table_entries():
    """Every entry of rb_table[] in offsets.c, as {field: int}."""
    src = open(OFFSETS_C).read()
    body = src[src.index("rb_table[] = {"):]
    body = body[:body.index("\n};")]
    entries = []
    for block in re.findall(r"\n\t\{(.*?)\n\t\}", body, re.S):
        entries.append({k: int(v) for k, v in re.findall(r"\.(\w+) = (-?\d+)", block)})
    return entries


def our_entry():
    major, minor, teeny = ruby_version()
    for e in table_entries():
        if (e["major"], e["minor"]) == (major, minor) and \
                e["teeny_min"] <= teeny <= e["teeny_max"]:
            return e
    pytest.fail(f"offsets.c has no entry for ruby {major}.{minor}.{teeny}")


def run_probe(tmp_path, offsets, name="off.json"):
    path = tmp_path / name
    path.write_text(json.dumps(offsets))
    # run by a relative path: the main script's iseqs get [path, realpath]
    p = subprocess.run(["ruby", os.path.basename(PROBE), str(path)], capture_output=True,
                       text=True, timeout=60, cwd=os.path.dirname(PROBE))
    assert p.returncode == 0, f"probe crashed ({p.returncode}): {p.stderr[-2000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_table_matches_the_live_interpreter(tmp_path):
    res = run_probe(tmp_path, our_entry())
    assert res["ok"], res["failed"]
    assert res["checks"] >= 40, res


def probe_fields():
    src = open(PROBE).read()
    return sorted(set(re.findall(r"\b(?:o|OFF)\['(\w+)'\]", src)) - {"major", "minor"})


def test_probe_notices_every_wrong_offset(tmp_path):
    """Each field the probe uses, changed, fails at least one check."""
    good = our_entry()
    fields = probe_fields()
    assert len(fields) >= 30, fields
    unnoticed = []
    for f in fields:
        bad = dict(good)
        v = bad[f]
        if f.startswith(("frame_magic", "rstring_noembed", "rstring_embed_len_mask",
                         "rarray_embed_flag", "rarray_embed_len_mask")):
            bad[f] = v & ~(1 << (v.bit_length() - 1)) if v else 1	# drop the top bit
        elif f in ("t_string", "t_array", "t_imemo", "imemo_ment", "imemo_iseq",
                   "imemo_svar", "method_type_cfunc", "imemo_shift",
                   "rstring_embed_len_shift", "rarray_embed_len_shift", "t_mask",
                   "imemo_mask", "ep_flags", "ep_me_cref"):
            bad[f] = v + 1
        elif f == "last_op_id":
            bad[f] = v * 1000
        else:
            bad[f] = v + 8
        res = run_probe(tmp_path, bad, f"{f}.json")
        if res["ok"]:
            unnoticed.append(f)
    assert not unnoticed, f"a wrong value of these went unnoticed: {unnoticed}"


def fetch_source(version):
    """Ruby's source of the installed Debian package, configured; cached."""
    tree = os.path.join(SRC_CACHE, f"ruby-{version}")
    if os.path.exists(os.path.join(tree, ".ext", "include", "x86_64-linux", "ruby",
                                   "config.h")):
        return tree
    os.makedirs(SRC_CACHE, exist_ok=True)
    state = os.path.join(SRC_CACHE, "apt")
    os.makedirs(os.path.join(state, "lists", "partial"), exist_ok=True)
    srclist = os.path.join(state, "sources.list")
    with open(srclist, "w") as f:
        f.write("deb-src http://deb.debian.org/debian bookworm main\n"
                "deb-src http://deb.debian.org/debian-security bookworm-security main\n")
    opts = ["-o", f"Dir::Etc::SourceList={srclist}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={state}/lists", "-o", "APT::Sandbox::User=root"]
    subprocess.run(["apt-get", "-qq", *opts, "update"], check=True, timeout=300,
                   capture_output=True)
    pkg = "ruby%d.%d" % tuple(int(x) for x in version.split(".")[:2])
    # the installed package's source version, else the newest
    inst = subprocess.run(["dpkg-query", "-W", "-f=${source:Version}", f"lib{pkg}"],
                          capture_output=True, text=True).stdout.strip()
    got = None
    for want in ([f"{pkg}={inst}"] if inst else []) + [pkg]:
        p = subprocess.run(["apt-get", "-qq", *opts, "source", "-d", want], cwd=SRC_CACHE,
                           capture_output=True, text=True, timeout=600)
        if p.returncode == 0:
            got = want
            break
    if not got:
        # Debian's security archive may list a version whose files it no
        # longer serves: take the release's
        p = subprocess.run(["apt-get", "-qq", *opts, "source", "-d", "--only-source",
                            f"{pkg}/bookworm"], cwd=SRC_CACHE, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, f"apt-get source {pkg}: {p.stderr[-1000:]}"
    tarballs = [t for t in os.listdir(SRC_CACHE) if t.endswith(".orig.tar.xz")]
    assert tarballs, os.listdir(SRC_CACHE)
    for t in tarballs:
        subprocess.run(["tar", "xf", t], cwd=SRC_CACHE, check=True)
    trees = [d for d in os.listdir(SRC_CACHE) if d.startswith("ruby-")]
    assert f"ruby-{version}" in trees, (version, trees)
    subprocess.run(["./configure", "--enable-shared", "--disable-install-doc"], cwd=tree,
                   check=True, capture_output=True, timeout=900)
    return tree


def test_table_is_what_rubys_headers_say(tmp_path):
    version = subprocess.run(["ruby", "-e", "print RUBY_VERSION"], capture_output=True,
                             text=True, check=True).stdout
    tree = fetch_source(version)
    shutil.copy(GENERATOR, os.path.join(tree, "profd-ruby-offsets.c"))
    exe = tmp_path / "ro"
    subprocess.run(["gcc", "-I.", "-I.ext/include/x86_64-linux", "-Iinclude",
                    "profd-ruby-offsets.c", "-o", str(exe)], cwd=tree, check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    theirs = {k: int(v) for k, v in re.findall(r"\.(\w+) = (-?\d+)", out)}
    ours = our_entry()
    skip = {"teeny_min", "teeny_max"}
    assert set(theirs) - skip == set(ours) - skip, \
        (set(theirs) ^ set(ours)) - skip
    diff = {k: (ours[k], theirs[k]) for k in theirs if k not in skip and ours[k] != theirs[k]}
    assert not diff, f"ours != the headers': {diff}"
