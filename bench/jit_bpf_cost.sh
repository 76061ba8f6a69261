#!/usr/bin/env bash
# bench/jit_bpf_cost.sh - issue 19, figure 2: CPU time profd's BPF program
# costs per sample when every sample is a 40-frame Java stack or a 40-frame
# JS stack, beside a 40-frame native C stack for scale.
#
# A wrapper of bench/bpf_cost.sh (same measurement: bpf_stats run_time_ns
# / run_cnt of profd_sample, tail calls included, median of 0.5 s window
# averages; see its header), one run per workload, each one process per
# CPU whose main thread is JIT_COST_DEPTH (40) frames of its own deep
# (main -> rec x 38 -> leaf, the leaf ~0.2 ms of arithmetic, the descent
# repeated so rec and leaf are hot):
#   java-jit  bench/workloads_jit/Deep.java on JIT_COST_JAVA (Debian's
#             openjdk-17) with -XX:CompileCommand=dontinline,Deep::* (C2
#             would inline rec into itself, halving the physical frames)
#   java-int  the same with -Xint (interpreted frames only)
#   node-jit  bench/workloads_jit/deep.js on node (no flags)
#   node-int  the same with --jitless (Ignition frames only)
#   c         bench/workloads_jit/deep.c, -O2 with frame pointers
# Items per workload: "99" (every unwinder) and, for Java and JS,
# "99,--tracers=native" (the same samples without the runtime's walk: its
# native frames only, the walk stopping at the first JIT frame without a
# frame pointer), so the difference is the runtime walk's own cost.
# After each item the profile is checked (--check below, Google's pprof
# -raw): samples with the leaf, the median of their own frames (main, rec,
# leaf: 40 when every frame is there) and of all frames, and the share
# with exactly JIT_COST_DEPTH own frames.
#
# Env: JIT_COST_WORKLOADS ("java-jit java-int node-jit node-int c"),
#      JIT_COST_DEPTH (40), JIT_COST_JAVA, JIT_COST_NODE, and bpf_cost.sh's
#      BPF_COST_SECONDS (15 here), BPF_COST_WARMUP (5 here),
#      BPF_COST_WINDOW, BPF_COST_JOBS, PROFD; PPROF for the check.
# Output: one "RESULT jit_bpf_cost ..." line per workload and item, with
# workload=W and the check's words. ~30 s per item.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

SRC=$BENCH_DIR/workloads_jit
DEPTH=${JIT_COST_DEPTH:-40}
JAVA=${JIT_COST_JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}
NODE=${JIT_COST_NODE:-$(command -v node || echo node)}

# --check WORKLOAD DIR: the stack check of one item's profiles.
if [ "${1:-}" = --check ]; then
	[ -x "$PPROF" ] || { echo "workload=$2 check=no_pprof"; exit 0; }
	PPROF=$PPROF python3 - "$ROOT/tests" "$2" "$DEPTH" "$3" <<'PY'
import glob, os, re, statistics, sys
sys.path.insert(0, sys.argv[1])
from pprof_traces import pprof_raw_samples
kind, depth = sys.argv[2], int(sys.argv[3])
own = re.compile(r"^(Deep\.)?(main|rec|leaf)$")
leaf = "Deep.leaf" if kind.startswith("java") else "leaf"
n = exact = 0
ownc, allc = [], []
for p in sorted(glob.glob(os.path.join(sys.argv[4], "cpu-*.pb.gz"))):
    for s in pprof_raw_samples(os.environ["PPROF"], p):
        names = [f["function"] or "" for f in s["frames"]]
        if leaf not in names:
            continue
        k = sum(1 for x in names if own.match(x))
        n += s["value"]
        exact += s["value"] if k == depth else 0
        ownc += [k] * s["value"]
        allc += [len(names)] * s["value"]
med = lambda v: statistics.median(v) if v else "nan"
print(f"workload={kind} leaf_samples={n} own_frames_median={med(ownc)} "
      f"frames_median={med(allc)} own_depth_{depth}_pct={100 * exact / n if n else 0:.1f}")
PY
	exit 0
fi

need_root_and_profd
dwarf_bench_init
mkdir -p "$WORK/classes"
status=0
for w in ${JIT_COST_WORKLOADS:-java-jit java-int node-jit node-int c}; do
	runs="99 99,--tracers=native"
	case $w in
	java-*)
		[ -x "$JAVA" ] || { log "jit_bpf_cost: $JAVA not found: $w skipped"; continue; }
		[ -e "$WORK/classes/Deep.class" ] || "$(dirname "$JAVA")/javac" -d "$WORK/classes" "$SRC/Deep.java" ||
			die "javac failed"
		flags="-XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Deep::*"
		[ "$w" = java-int ] && flags=-Xint
		cmd="$JAVA $flags -cp $WORK/classes Deep $DEPTH" ;;
	node-*)
		command -v "$NODE" >/dev/null || { log "jit_bpf_cost: $NODE not found: $w skipped"; continue; }
		flags=""
		[ "$w" = node-int ] && flags=--jitless
		cmd="$NODE $flags $SRC/deep.js $DEPTH" ;;
	c)
		build_workload deep "$SRC/deep.c"
		runs=99
		cmd="$WORK/deep $DEPTH" ;;
	*) die "unknown workload $w (java-jit java-int node-jit node-int c)" ;;
	esac
	BPF_COST_NAME=jit_bpf_cost \
	BPF_COST_RUNS=${JIT_COST_RUNS:-$runs} \
	BPF_COST_SECONDS=${BPF_COST_SECONDS:-15} \
	BPF_COST_WARMUP=${BPF_COST_WARMUP:-5} \
	BPF_COST_WORKLOAD="$cmd" \
	BPF_COST_CHECK="bash $BENCH_DIR/jit_bpf_cost.sh --check $w" \
		bash "$BENCH_DIR/bpf_cost.sh" || status=1
done
exit $status
