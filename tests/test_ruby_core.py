"""CRuby on the runtime seam, end to end (src/ruby/, bpf/unwind_ruby.bpf.h).

Real runs of Debian's ruby 3.1 under profd, read back through Google's
pprof: Ruby frames replace the rb_vm_exec() frames that ran them, in the
order the script's own caller_locations prints (threads, a fiber, blocks,
Array#each, Integer#times), under `profd --pid` and `profd exec`; and a
process that scribbles over what the walker reads (a fake execution
context, a frame whose ep points at unmapped memory, a fake context seen
at attach) never crashes profd and its loss is counted.

Frame names are compared by their method name: "Integer#times" and
"times", "block in Object#rc_each" and "block in rc_each" are the same
frame (caller_locations in 3.1 prints the bare labels).
"""
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, start, stop, wait_file
from pprof_traces import comments, pprof_traces

RBDIR = os.path.join(ROOT, "tests", "workloads", "ruby")
RUBY = "/usr/bin/ruby"
FREQ = "99"


@pytest.fixture(scope="module")
def ruby():
    if not os.path.exists(RUBY):
        pytest.skip("ruby not installed here")
    v = subprocess.run([RUBY, "-e", "print RUBY_VERSION"], capture_output=True,
                       text=True).stdout
    if not v.startswith("3.1."):
        pytest.skip(f"the scribbling workload knows CRuby 3.1 layouts only, not {v}")
    return RUBY


def norm(name):
    """A frame's name without its owner: "block in Object#foo" -> "block in foo"."""
    return re.sub(r"[\w:]+[#.](?=\w)", "", name)


def samples_of(pprof, outdir):
    paths = sorted(str(p) for p in outdir.glob("cpu-*.pb.gz"))
    assert paths, f"no profile in {outdir}"
    out = []
    for p in paths:
        out += pprof_traces(pprof, p)
    raw = "".join(comments(pprof, p) for p in paths)
    return out, raw


def counter(raw, name):
    return sum(int(m) for m in re.findall(rf"\.{name}=(\d+)", raw))


def ruby_frames(frames, labels):
    """The frames of @frames (leaf first) that are the script's Ruby frames
    (by name, @labels) or CRuby's error frames."""
    return [norm(f) for f in frames if norm(f) in labels or f.startswith("[ruby:")]


def check_stacks(samples, stacks, min_share=0.9):
    """Each role's thread: >= @min_share of its samples that reached
    rc_leaf show exactly the stack the script printed."""
    labels = {l for r in stacks.values() for l in r["stack"]}
    for role, r in stacks.items():
        mine = [s for s in samples if s["labels"].get("tid") == str(r["tid"])]
        hot = [s for s in mine if "rc_leaf" in [norm(f) for f in s["frames"]]]
        total = sum(s["value"] for s in hot)
        good = sum(s["value"] for s in hot
                   if ruby_frames(s["frames"], labels) == r["stack"])
        assert total >= 15, f"{role}: only {total} samples in rc_leaf of {len(mine)}"
        assert good >= min_share * total, (
            f"{role}: {good}/{total} exact; want {r['stack']}; e.g. " +
            repr([ruby_frames(s["frames"], labels) for s in hot
                  if ruby_frames(s["frames"], labels) != r["stack"]][:3]))
    return labels


def check_placement(samples, stacks):
    """Ruby frames sit where rb_vm_exec was: in t1's samples with its exact
    Ruby stack, none of it is left, Array#each's C function runs between
    "each" and its block, and the thread's native start is below all of
    its Ruby frames."""
    labels = {l for r in stacks.values() for l in r["stack"]}
    t1 = [s for s in samples if s["labels"].get("tid") == str(stacks["t1"]["tid"])]
    full = [s for s in t1 if ruby_frames(s["frames"], labels) == stacks["t1"]["stack"]]
    assert full
    for s in full:
        names = [norm(f) for f in s["frames"]]
        assert "rb_vm_exec" not in names, names
        if "rb_ary_each" in names:
            assert names.index("block in rc_each") < names.index("rb_ary_each") \
                < names.index("each"), names
        if "start_thread" in names:
            assert "block in <main>" in names and \
                names.index("block in <main>") < names.index("start_thread"), names


def test_stacks_per_thread_and_fiber(profd_bin, pprof, ruby, tmp_path):
    """Two threads and a fiber on the main thread, each in a known chain:
    >= 90 % of each one's hot samples carry exactly its Ruby stack, as
    caller_locations printed it, merged in place of rb_vm_exec."""
    out_json = str(tmp_path / "stacks.json")
    work = start([ruby, os.path.join(RBDIR, "core_stacks.rb"), out_json, "60"])
    try:
        wait_file(out_json)
        r = subprocess.run([profd_bin, "--no-gpu", "--pid", str(work.pid), "--duration", "4",
                            "--sampling-frequency", FREQ, "--output-dir",
                            str(tmp_path / "out")],
                           capture_output=True, text=True, timeout=60)
    finally:
        stop(work)
    assert r.returncode == 0, r.stderr
    stacks = json.load(open(out_json))
    samples, raw = samples_of(pprof, tmp_path / "out")
    check_stacks(samples, stacks)
    check_placement(samples, stacks)
    assert counter(raw, "ruby_samples") >= 100, raw
    for lost in ("ruby_bad_stack", "ruby_frame_read_error", "ruby_stack_truncated"):
        assert counter(raw, lost) == 0, lost


def test_profd_exec_ruby(profd_bin, pprof, ruby, tmp_path):
    """`profd exec -- ruby script`: the interpreter is attached as it
    starts (its VM is set up after its first maps read) and its stacks
    come out right; profd exits with the script's status."""
    out_json = str(tmp_path / "stacks.json")
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "--sampling-frequency", FREQ,
                        "--output-dir", str(tmp_path / "out"), "--",
                        ruby, os.path.join(RBDIR, "core_stacks.rb"), out_json, "4"],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    stacks = json.load(open(out_json))
    samples, raw = samples_of(pprof, tmp_path / "out")
    check_stacks(samples, stacks)
    check_placement(samples, stacks)


def profile_scribbler(profd_bin, ruby, tmp_path, mode, before_attach):
    """Run core_scribble.rb @mode under profd (--pid, 4 s); the scribbling
    starts once profd attached, or (@before_attach) before profd starts."""
    go, ready = str(tmp_path / "go"), str(tmp_path / "ready")
    if before_attach:
        open(go, "w").close()
    work = start([ruby, os.path.join(RBDIR, "core_scribble.rb"), mode, go, ready])
    profd = None
    try:
        if before_attach:
            wait_file(ready)
        profd = start([profd_bin, "--no-gpu", "-v", "--pid", str(work.pid), "--duration", "4",
                       "--sampling-frequency", FREQ, "--output-dir", str(tmp_path / "out")],
                      stderr=subprocess.PIPE, text=True)
        err = []
        if not before_attach:
            for line in profd.stderr:
                err.append(line)
                if "CRuby" in line and "attached" in line:
                    break
            open(go, "w").close()
        _, rest = profd.communicate(timeout=60)
        err.append(rest)
    finally:
        stop(work)
        if profd and profd.poll() is None:
            profd.kill()
            profd.wait()
    return profd.returncode, "".join(err)


def test_fake_execution_context_is_refused(profd_bin, pprof, ruby, tmp_path):
    """th->ec -> garbage while walked: every sample's walk is refused
    (cfp outside its VM stack), counted, shown as an error frame; profd
    goes on."""
    rc, err = profile_scribbler(profd_bin, ruby, tmp_path, "fake_ec", False)
    assert rc == 0, err
    samples, raw = samples_of(pprof, tmp_path / "out")
    bad = sum(s["value"] for s in samples if "[ruby: unreadable frame]" in s["frames"])
    assert bad >= 20, (bad, err)
    assert counter(raw, "ruby_bad_stack") >= bad, raw


def test_unreadable_frame_is_counted(profd_bin, pprof, ruby, tmp_path):
    """A caller frame whose ep points at unmapped memory: the walk ends in
    a counted "[ruby: unreadable frame]" right below the frames read, and
    nothing beyond it is shown."""
    rc, err = profile_scribbler(profd_bin, ruby, tmp_path, "bad_ep", False)
    assert rc == 0, err
    samples, raw = samples_of(pprof, tmp_path / "out")
    hot = [s for s in samples if "rc_victim" in [norm(f) for f in s["frames"]]]
    good = 0
    for s in hot:
        names = [norm(f) for f in s["frames"]]
        v = names.index("rc_victim")
        if names[v + 1:v + 2] == ["[ruby: unreadable frame]"] and "rc_outer" not in names:
            good += s["value"]
    total = sum(s["value"] for s in hot)
    assert total >= 20 and good >= 0.9 * total, (good, total)
    assert counter(raw, "ruby_frame_read_error") >= good, raw


def test_fake_context_at_attach_is_refused(profd_bin, pprof, ruby, tmp_path):
    """A process whose memory contradicts the layout when profd first sees
    it is not walked at all: counted, native frames only."""
    rc, err = profile_scribbler(profd_bin, ruby, tmp_path, "fake_ec", True)
    assert rc == 0, err
    samples, raw = samples_of(pprof, tmp_path / "out")
    assert counter(raw, "ruby_attach_refused") >= 1, raw
    assert counter(raw, "ruby_samples") == 0, raw
    assert not any(f.startswith("[ruby:") or norm(f).startswith("rc_")
                   for s in samples for f in s["frames"])


def test_forked_child_has_ruby_stacks(profd_bin, pprof, ruby, tmp_path):
    """A forked child (its main thread's tid is its parent's in CRuby 3.1)
    is attached on its own and its Ruby frames replace rb_vm_exec."""
    r = subprocess.run([profd_bin, "exec", "--no-gpu", "--sampling-frequency", FREQ,
                        "--output-dir", str(tmp_path / "out"), "--",
                        ruby, os.path.join(RBDIR, "core_fork.rb"), "4"],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    samples, raw = samples_of(pprof, tmp_path / "out")
    for fn in ("rc_child_work", "rc_parent_work"):
        pids = {s["labels"].get("pid") for s in samples
                if fn in [norm(f) for f in s["frames"]]}
        assert len(pids) == 1, (fn, pids)
        mine = [s for s in samples if s["labels"].get("pid") in pids]
        good = sum(s["value"] for s in mine if fn in [norm(f) for f in s["frames"]])
        unmerged = sum(s["value"] for s in mine if "rb_vm_exec" in s["frames"])
        assert good >= 30, (fn, good)
        assert unmerged <= 0.1 * good, (fn, unmerged, good)
    assert counter(raw, "ruby_attach_refused") == 0, raw
