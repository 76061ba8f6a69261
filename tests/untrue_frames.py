#!/usr/bin/env python3
"""untrue_frames.py - check every caller of every stack of profd profiles
independently of profd's code (issue 16: no wrong frames).

Reads each profile with Google's pprof (`pprof -raw`: samples as location
ids, locations with address and mapping id, mappings with start, limit,
offset and file) and, for each caller (every user location of a sample
but its leaf), checks on the mapped file as it is on disk: the file
offset (address - mapping start + mapping offset) lies in an executable
PT_LOAD segment of the ELF file, and the bytes before it end in a near
call (`E8 rel32` whose target lies in an executable segment, or `FF /2`
with its ModRM/SIB/displacement). Its own decoder, written from the Intel
SDM, not profd's.

Not checked, but counted: kernel frames (the [kernel.kallsyms] mapping),
runtime frames (a mapping whose file is "[NAME]" other than [vdso], with
address 0: CPython's [python]), "[truncated]", the user leaf, the
sigreturn trampoline `__restore_rt` and the interrupted pc above it (exact
addresses, not return addresses: only required to lie in executable
code), frames whose file cannot be read (deleted temporary files, other
mount namespaces, non-ELF), Go's runtime.goexit + 1 (the return address
the Go runtime plants under every goroutine, past a NOP), and stacks none of whose frames lies in a
mapping (their process was gone before profd read its maps: nothing can
be said of them). A frame outside every mapping in a stack whose other
frames have one is untrue. The vDSO is
read from this process's own [vdso] mapping (the same kernel image).

Figures count frames of the profiles' stacks (a stack with its count is
one sample line of pprof -raw; callers_true_samples weighs by count).

Usage: untrue_frames.py PPROF PROFILE... ; prints the figures as one
JSON object on stdout and each untrue frame on stderr; exit 1 when any.
untrue_frames.py --run PROFD PPROF SECONDS OUTDIR [PROGRAM...]: first run
real programs (gcc, xz, python3, perl, sqlite3: workloads(); and each
PROGRAM, e.g. tests/workloads/fakeframe.c built) and PROFD system-wide for
SECONDS, then check its profiles (bench/untrue_frames.sh).
"""
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys

WINDOW = 15


def modrm_tail(b, i):
    """Bytes of ModRM at b[i] plus SIB and displacement (64-bit mode), or
    None when a needed SIB byte is missing."""
    mod, rm = b[i] >> 6, b[i] & 7
    if mod == 3:
        return 1
    disp = {0: 0, 1: 1, 2: 4}[mod]
    if rm == 4:
        if i + 1 >= len(b):
            return None
        if mod == 0 and (b[i + 1] & 7) == 5:
            disp = 4
        return 2 + disp
    if mod == 0 and rm == 5:
        return 5
    return 1 + disp


def ends_in_call(code, ra, is_code):
    """Whether bytes @code (those right before return address @ra) end in
    a near call ending at @ra; @is_code(target) judges a direct call's
    target."""
    n = len(code)
    if n >= 5 and code[n - 5] == 0xE8:
        rel = struct.unpack("<i", code[n - 4:])[0]
        if is_code(ra + rel):
            return True
    for length in range(2, 8):
        if length > n:
            break
        i = n - length
        if code[i] == 0xFF and (code[i + 1] >> 3) & 7 == 2 and \
                modrm_tail(code, i + 1) == length - 1:
            return True
    return False


class Elf:
    """An ELF file's bytes and its PT_LOAD segments (offset, vaddr, filesz,
    memsz, executable)."""

    def __init__(self, data):
        if data[:4] != b"\x7fELF" or data[4] != 2:
            raise ValueError("not a 64-bit ELF file")
        self.data = data
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        self.segs = []
        for k in range(phnum):
            p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz = \
                struct.unpack_from("<IIQQQQQ", data, phoff + k * phentsize)
            if p_type == 1:
                self.segs.append((p_offset, p_vaddr, p_filesz, p_memsz, bool(p_flags & 1)))

    def exec_vaddr(self, off):
        """The virtual address of file offset @off when an executable
        segment holds it, else None."""
        for o, v, fs, _, x in self.segs:
            if x and o <= off < o + fs:
                return v + off - o
        return None

    def is_code(self, vaddr):
        return any(x and v <= vaddr < v + ms for _, v, _, ms, x in self.segs)


def own_vdso():
    with open("/proc/self/maps") as f:
        line = next((l for l in f if l.rstrip().endswith("[vdso]")), None)
    if not line:
        return None
    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
    with open("/proc/self/mem", "rb") as mem:
        mem.seek(lo)
        return Elf(mem.read(hi - lo))


def parse_raw(text):
    """(samples [(count, [location ids])], locations {id: (addr, mapping,
    name)}, mappings {id: (start, limit, offset, file)}) of `pprof -raw`."""
    samples, locs, maps = [], {}, {}
    part = None
    for line in text.splitlines():
        if line.startswith(("Samples:", "Locations", "Mappings")):
            part = line.split(":")[0].split()[0]
            continue
        if part == "Samples":
            m = re.match(r"^\s+(\d+)\s+\d+:((?:\s+\d+)+)\s*$", line)
            if m:
                samples.append((int(m.group(1)), [int(x) for x in m.group(2).split()]))
        elif part == "Locations":
            # "ID: 0xADDR [M=MAPPING] [NAME :LINE s=START(SYSTEM_NAME)]"
            m = re.match(r"^\s+(\d+): 0x([0-9a-f]+)(?: M=(\d+))?\s*(.*)$", line)
            if m:
                name = re.sub(r" :\d* s=\d+.*$", "", m.group(4)).strip()
                locs[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3) or 0), name)
        elif part == "Mappings":
            m = re.match(r"^(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S*)", line)
            if m:
                maps[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16),
                                         int(m.group(4), 16), m.group(5))
    return samples, locs, maps


class Checker:
    def __init__(self):
        self.files = {}
        self.vdso = own_vdso()
        self.fig = collections.Counter()
        self.untrue = []
        self.unreadable = collections.Counter()

    def elf(self, path):
        if path == "[vdso]":
            return self.vdso
        if path not in self.files:
            try:
                with open(path, "rb") as f:
                    self.files[path] = Elf(f.read())
            except (OSError, ValueError, struct.error):
                self.files[path] = None
        return self.files[path]

    def caller(self, addr, mapping, name, count, exact=False):
        start, _, offset, path = mapping
        elf = self.elf(path)
        if elf is None:
            self.fig["skipped_unreadable"] += 1
            self.unreadable[path] += 1
            return
        off = addr - start + offset
        vaddr = elf.exec_vaddr(off if exact else off - 1)
        if vaddr is None:
            why = "not in an executable segment"
        elif exact:     # no call before it: code is all that can be asked
            self.fig["exact_true"] += 1
            return
        else:
            code = elf.data[max(0, off - WINDOW):off]
            if ends_in_call(code, vaddr + 1, elf.is_code):
                self.fig["callers_true"] += 1
                self.fig["callers_true_samples"] += count
                return
            if name.startswith("runtime.goexit") and code[-1:] == b"\x90":
                # Go's planted bottom frame: goexit + 1, past its NOP
                self.fig["go_goexit"] += 1
                return
            why = "not after a call"
        self.fig["callers_untrue"] += 1
        self.untrue.append(f"{path}+0x{off:x} ({name or '?'}) x{count}: {why}")

    def profile(self, pprof, path):
        raw = subprocess.run([pprof, "-raw", "-symbolize=none", path], check=True,
                             capture_output=True, text=True).stdout
        samples, locs, maps = parse_raw(raw)
        self.fig["profiles"] += 1
        for count, ids in samples:
            self.fig["samples"] += 1
            leaf_seen, exact_next = False, False
            # a stack with no frame in a mapping: its process's maps were
            # never read (gone first), nothing can be said of its addresses
            mapped = any(maps.get(locs[lid][1]) and locs[lid][0] and
                         maps[locs[lid][1]][3] != "[kernel.kallsyms]" for lid in ids)
            for lid in ids:
                addr, mid, name = locs[lid]
                mapping = maps.get(mid)
                fname = name.split()[0] if name else ""
                if mapping and mapping[3] == "[kernel.kallsyms]":
                    self.fig["kernel_frames"] += 1
                    continue
                if name.startswith("[truncated]"):
                    continue
                if mapping and addr == 0 and mapping[3].startswith("[") \
                        and mapping[3] != "[vdso]":
                    self.fig["runtime_frames"] += 1
                    leaf_seen = True
                    continue
                if not leaf_seen:
                    leaf_seen = True
                    exact_next = fname == "__restore_rt"
                    continue
                exact = fname == "__restore_rt" or exact_next
                # the trampoline's entry and the pc it interrupted: exact
                exact_next = fname == "__restore_rt"
                if not mapping and not mapped:
                    self.fig["skipped_no_maps"] += 1
                    continue
                if not mapping:
                    self.fig["callers_untrue"] += 1
                    self.untrue.append(f"0x{addr:x} ({name or '?'}) x{count}: in no mapping")
                    continue
                self.caller(addr, mapping, name, count, exact)


# --- the workload: real programs doing real work --------------------------

PYWORK = ("import json, re, collections\n"
          "while True:\n"
          "    d = [{'k%d' % i: [i, str(i) * 3]} for i in range(20000)]\n"
          "    s = json.dumps(d)\n"
          "    collections.Counter(re.findall(r'k(\\d)', s))\n"
          "    json.loads(s)\n")
PERLWORK = ('my %h; for (my $i = 0; ; $i++) { my $k = $i % 4099; '
            '$h{$k} .= sprintf("%x", $i); delete $h{$k} if length($h{$k}) > 64; '
            '(my $t = $h{$k} // "") =~ s/([0-9])/<$1>/g; }')
SQLWORK = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
           "LIMIT 2000000) SELECT count(*), sum(x * x % 7), "
           "group_concat(DISTINCT x % 13) FROM c ORDER BY 1;")


def workloads(root, scratch):
    """argv lists of the programs that run under the check, each in a loop
    while it lasts: gcc compiling profd sources, xz compressing libc,
    python3 (json, re), perl (hashes, regexes), sqlite3 (a recursive
    query); those not installed are left out."""
    srcs = [os.path.join(root, "src", d, f) for d, f in (
        ("aggregate", "build.c"), ("symbol", "symbolizer.c"), ("unwind", "callsite.c"),
        ("proc", "process.c"))]
    inc = ["-I" + os.path.join(root, "src"), "-I" + root, "-I" + os.path.join(root, "build"),
           "-I" + os.path.join(root, "build", "gen"), "-D_GNU_SOURCE"]
    out = []
    loop = "while :; do {cmd}; done"
    if shutil.which("gcc"):
        cmds = "; ".join(f"gcc -O2 -std=gnu11 {' '.join(inc)} -c -o /dev/null {s}"
                         for s in srcs)
        out.append(["sh", "-c", loop.format(cmd=cmds)])
    if shutil.which("xz"):
        out.append(["sh", "-c", loop.format(
            cmd="xz -6 -c /usr/lib/x86_64-linux-gnu/libc.so.6 > /dev/null")])
    for py in ("/usr/bin/python3",):
        if os.path.exists(py):
            out.append([py, "-c", PYWORK])
    if shutil.which("perl"):
        out.append(["perl", "-e", PERLWORK])
    if shutil.which("sqlite3"):
        out.append(["sh", "-c", loop.format(cmd=f"sqlite3 :memory: '{SQLWORK}' > /dev/null")])
    return out


def run(profd, outdir, seconds, root, freq="99", extra=()):
    """Start the workloads (and the argv lists @extra), let them run a second, run @profd system-wide
    (--no-gpu) for @seconds writing to @outdir, stop everything (only
    what this started, by pid). Returns (profd returncode, stderr,
    profile paths, names of the programs run)."""
    import glob
    import signal
    import time
    progs = workloads(root, outdir) + [list(a) for a in extra]
    procs = [subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True) for a in progs]
    try:
        time.sleep(1)
        r = subprocess.run([profd, "--no-gpu", "--duration", str(seconds),
                            "--sampling-frequency", freq, "--output-dir", outdir],
                           capture_output=True, text=True, timeout=seconds + 120)
    finally:
        for p in procs:    # each its own session: its loop and children
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    names = [os.path.basename(a[0] if a[0] != "sh" else a[2].split()[3]) for a in progs]
    return r.returncode, r.stderr, sorted(glob.glob(os.path.join(outdir, "cpu-*.pb.gz"))), names


def main(argv):
    if len(argv) >= 2 and argv[1] == "--run":
        # untrue_frames.py --run PROFD PPROF SECONDS OUTDIR [PROGRAM...]
        profd, pprof, seconds, outdir = argv[2], argv[3], int(argv[4]), argv[5]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        rc, err, paths, names = run(profd, outdir, seconds, root,
                                    extra=[[a] for a in argv[6:]])
        print("programs:", " ".join(names), file=sys.stderr)
        print(err.strip().splitlines()[-2] if err.strip() else "", file=sys.stderr)
        if rc or not paths:
            print(err, file=sys.stderr)
            return 2
        argv = [argv[0], pprof] + paths
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    c = Checker()
    for p in argv[2:]:
        c.profile(argv[1], p)
    for u in c.untrue:
        print("untrue:", u, file=sys.stderr)
    for path, n in c.unreadable.most_common(10):
        print(f"unreadable: {path} x{n}", file=sys.stderr)
    print(json.dumps(dict(c.fig), sort_keys=True))
    return 1 if c.fig["callers_untrue"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
