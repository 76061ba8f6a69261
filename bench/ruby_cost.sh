#!/usr/bin/env bash
# bench/ruby_cost.sh - CPU time profd's BPF program costs per sample when
# every sample is a 50-frame Ruby stack, with and without the Ruby walk.
#
# A thin wrapper of bench/bpf_cost.sh (same measurement: bpf_stats
# run_time_ns / run_cnt of profd_sample, tail calls included, median of
# 0.5 s window averages; see that script's header), as
# bench/python_bpf_cost.sh is for CPython. The workload is
# bench/workloads_ruby/deep.rb, one per CPU, whose main thread is always
# RUBY_COST_DEPTH (50) Ruby frames deep (<main> > Object#deep x 49, a loop
# of VM instructions). Two items in one run: "99" (every unwinder) and
# "99,--tracers=native" (the Ruby unwinder off): the same samples with and
# without the Ruby walk (thread lookup, then a read per control frame and
# its ep), so the difference of the medians is the walk's own cost; the
# native walk of the interpreter's C stack is in both. The pair is
# measured RUBY_COST_ROUNDS (3) times, alternating, and the delta is the
# median of the first item's medians less the median of the second's, so a
# change of load on a shared machine weighs on both alike.
# After each item the profile is checked (--check below): samples of the
# workload (comm ruby), the median number of [ruby] frames in them and the
# share with exactly RUBY_COST_DEPTH, and profd's ruby loss counters
# (lost.ruby* / partial.ruby*, by whatever names the runtime gives them).
# A delta is only meaningful when the first item walked the Ruby frames
# (ruby_frames_median = depth) and the second none: otherwise it says
# INVALID.
#
# Env: RUBY_COST_RUBY (default /usr/bin/ruby3.1), RUBY_COST_DEPTH (50),
#      RUBY_COST_RUNS: the pair ("99 99,--tracers=native"; an item's flags
#        are split on commas, so name one tracer per flag), RUBY_COST_ROUNDS (3),
#      RUBY_COST_TARGET_NS (5000: the delta to beat), and bpf_cost.sh's
#      BPF_COST_SECONDS, BPF_COST_WINDOW, BPF_COST_WARMUP, BPF_COST_JOBS,
#      PROFD; PPROF for the check.
# Output: bpf_cost.sh's "RESULT ruby_bpf_cost ..." line per item, then
#   RESULT ruby_bpf_cost_delta ruby=VERSION depth=N rounds=R with_ns=..
#     without_ns=.. delta_ns=.. deltas_ns=d1,d2,.. target_ns=5000
#     PASS|MISS|INVALID
# A profd without the Ruby runtime (--help lists no ruby among --tracers
# names; RUBY_COST_FORCE=1 measures anyway, to try the script) or a
# machine without ruby gives one "RESULT ruby_bpf_cost_delta skipped=..."
# line and exit 0. ~1 min.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

WORKLOAD_RB=$BENCH_DIR/workloads_ruby/deep.rb
DEPTH=${RUBY_COST_DEPTH:-50}
RUBY=${RUBY_COST_RUBY:-/usr/bin/ruby3.1}
PAIR=${RUBY_COST_RUNS:-99 99,--tracers=native}
ROUNDS=${RUBY_COST_ROUNDS:-3}
RUNS=""
for _ in $(seq 1 "$ROUNDS"); do RUNS="$RUNS${RUNS:+ }$PAIR"; done
TARGET=${RUBY_COST_TARGET_NS:-5000}

# --check DIR: the stack check of one item's profiles (key=value words).
if [ "${1:-}" = --check ]; then
	dir=$2
	[ -x "$PPROF" ] || { echo "rb_check=no_pprof"; exit 0; }
	PPROF=$PPROF DEPTH=$DEPTH python3 - "$ROOT/tests" "$dir" <<'PY'
import glob, os, re, statistics, subprocess, sys
sys.path.insert(0, sys.argv[1])
from pprof_traces import comments, pprof_raw_samples
pprof, depth = os.environ["PPROF"], int(os.environ["DEPTH"])
total = full = loss = 0
counts = []
for p in sorted(glob.glob(os.path.join(sys.argv[2], "cpu-*.pb.gz"))):
    for s in pprof_raw_samples(pprof, p):
        if not s["labels"].get("comm", "").startswith("ruby"):
            continue
        n = sum(1 for f in s["frames"] if f["mapping"] == "[ruby]")
        total += s["value"]
        counts += [n] * s["value"]
        full += s["value"] if n == depth else 0
    loss += sum(int(v) for v in
                re.findall(r"^(?:lost|partial)\.ruby\w*=(\d+)", comments(pprof, p), re.M))
med = statistics.median_low(counts) if counts else "nan"
print(f"rb_workload_samples={total} ruby_frames_median={med} "
      f"rb_full_depth_pct={100 * full / total if total else 0:.1f} rb_loss={loss}")
PY
	exit 0
fi

skip() {
	log "ruby_cost: $1"
	echo "RESULT ruby_bpf_cost_delta skipped=$2"
	exit 0
}
[ -f "$WORKLOAD_RB" ] || die "$WORKLOAD_RB is missing"
[ -x "$RUBY" ] || skip "$RUBY not found" no_ruby
profd_has_tracer ruby ||
	[ -n "${RUBY_COST_FORCE:-}" ] ||
	skip "$PROFD has no Ruby unwinder (--tracers lists no ruby)" no_ruby_unwinder
ver=$("$RUBY" -e 'print RUBY_VERSION') || skip "$RUBY does not run" ruby_broken

out=$(mktemp /tmp/profd-ruby-cost.XXXXXX)
trap 'rm -f "$out"' EXIT
RUBY_COST_DEPTH=$DEPTH \
BPF_COST_NAME=ruby_bpf_cost \
BPF_COST_RUNS=$RUNS \
BPF_COST_WORKLOAD="$RUBY --disable-gems $WORKLOAD_RB" \
BPF_COST_CHECK="bash $BENCH_DIR/ruby_cost.sh --check" \
BPF_COST_TARGET_NS=${BPF_COST_TARGET_NS:-20000} \
	bash "$BENCH_DIR/bpf_cost.sh" | tee "$out"
status=${PIPESTATUS[0]}

# the delta: median of the first item's medians less the second's
awk -v ver="$ver" -v depth="$DEPTH" -v target="$TARGET" -v rounds="$ROUNDS" '
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	/^RESULT ruby_bpf_cost / {
		k = n++ % 2		# 0: with the Ruby walk, 1: without
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			f[kv[1]] = kv[2]
		}
		m[k, ++c[k]] = f["median_ns"] + 0
		if (f["rb_workload_samples"] + 0 == 0 ||
		    (k == 0 && f["ruby_frames_median"] != depth) ||
		    (k == 1 && f["ruby_frames_median"] != 0))
			bad++
		if (k == 1) deltas = deltas (deltas ? "," : "") sprintf("%.0f", m[0, c[0]] - m[1, c[1]])
	}
	END {
		if (!c[0] || !c[1]) {
			printf "RESULT ruby_bpf_cost_delta ruby=%s depth=%s items=%d INVALID\n", ver, depth, n
			exit
		}
		for (i = 1; i <= c[0]; i++) w[i] = m[0, i]
		for (i = 1; i <= c[1]; i++) o[i] = m[1, i]
		with = median(w, c[0]); without = median(o, c[1]); d = with - without
		printf "RESULT ruby_bpf_cost_delta ruby=%s depth=%s rounds=%s with_ns=%.1f", \
			ver, depth, rounds, with
		printf " without_ns=%.1f delta_ns=%.1f deltas_ns=%s checks_failed=%d", \
			without, d, deltas, bad
		printf " target_ns=%d %s\n", target, bad ? "INVALID" : d <= target ? "PASS" : "MISS"
	}' "$out"
exit "$status"
