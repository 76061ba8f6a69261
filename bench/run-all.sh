#!/bin/sh
# bench/run-all.sh - run profd's benchmarks and print a summary (`make bench`).
#
# Runs, in this order (about 5-6 minutes on a 2-CPU machine):
#   bench/bpf_cost.sh        BPF run time per sample at 99 and 19 Hz, and at 99 Hz
#                            with --no-dwarf-unwinding (~1.5 min)
#   bench/bpf_parts.sh       where that time goes (diagnostic, ~1 min;
#                            skipped when clang is missing or BENCH_PARTS=0)
#   bench/slowdown.sh        slowdown of a CPU-bound program, profd vs perf (~2-3 min)
#   bench/agent_overhead.sh  CPU and peak RSS of the profd process (~1 min)
# Each script's full output goes to $BENCH_OUT (default: a new
# /tmp/profd-bench-results.XXXXXX directory), the summary to stdout.
# Needs root and build/profd (run `make` first; PROFD=/path/to/profd measures
# another build, e.g. one of a fixed commit). Exit status: 0 when every
# benchmark ran (whether or not the targets were met), 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

[ "$(id -u)" = 0 ] || { echo "run-all.sh: error: needs root" >&2; exit 1; }
profd=${PROFD:-$root/build/profd}
[ -x "$profd" ] || { echo "run-all.sh: error: $profd is missing: run 'make' first" >&2; exit 1; }
command -v bash >/dev/null || { echo "run-all.sh: error: bash not found" >&2; exit 1; }

out=${BENCH_OUT:-$(mktemp -d /tmp/profd-bench-results.XXXXXX)}
mkdir -p "$out"
child=""
cleanup() {
	trap '' INT TERM
	# the benchmarks clean up after themselves on TERM (their EXIT traps)
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
	child=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failed=""
run() {
	name=$1
	echo "== $name ($(date +%H:%M:%S), load:$(uptime | sed 's/.*load average://'))"
	bash "$here/$name.sh" >"$out/$name.out" 2>"$out/$name.log" &
	child=$!
	if wait "$child"; then
		grep '^RESULT' "$out/$name.out"
	else
		echo "   FAILED, see $out/$name.log:"
		tail -n 5 "$out/$name.log" | sed 's/^/   /'
		failed="$failed $name"
	fi
	child=""
}

start=$(date +%s)
echo "profd benchmarks: $profd; nproc=$(nproc) kernel=$(uname -r); results in $out"
run bpf_cost
if [ "${BENCH_PARTS:-1}" != 0 ] && command -v clang >/dev/null; then
	run bpf_parts
fi
run slowdown
run agent_overhead

echo
echo "== summary ($(( $(date +%s) - start )) s; load now:$(uptime | sed 's/.*load average://'))"
for n in bpf_cost bpf_parts slowdown agent_overhead; do
	[ -f "$out/$n.out" ] && cat "$out/$n.out"
done | awk '
function kv(s,   n, i, a, p) {
	delete v
	n = split(s, a, " ")
	for (i = 3; i <= n; i++) {
		p = index(a[i], "=")
		if (p) v[substr(a[i], 1, p - 1)] = substr(a[i], p + 1)
	}
}
/^RESULT bpf_cost / {
	kv($0)
	printf "BPF cost per sample, %3s Hz (flags: %s): median %6.0f ns (mean %.0f ns) of %s windows; target <= 2000 ns: %s\n",
		v["hz"], v["flags"], v["median_ns"], v["mean_ns"], v["windows"], (v["median_ns"] + 0 <= 2000) ? "met" : "MISSED"
	printf "   run_cnt of the tail-called programs at the end (0 = counted in profd_sample): %s\n",
		v["tailcalled_run_cnt_after"]
}
/^RESULT bpf_parts mode=alone / {
	kv($0)
	printf "   part alone %-15s median %6.0f ns\n", v["prog"], v["median_ns"]
}
/^RESULT slowdown / {
	kv($0)
	printf "slowdown %-10s median wall %7.3f s (x%.3f), best %7.3f s (x%.3f); median cpu %7.3f s (x%.3f)\n",
		v["config"], v["wall_s"], v["wall_ratio"], v["min_wall_s"], v["min_wall_ratio"], v["cpu_s"], v["cpu_ratio"]
}
/^RESULT agent_overhead / {
	kv($0)
	printf "agent at %s Hz (%s background): CPU %.3f%% of a core (target <= 0.5%%: %s), peak RSS %.1f MiB (target <= 64: %s)\n",
		v["hz"], v["background"], v["cpu_pct"], (v["cpu_pct"] + 0 <= 0.5) ? "met" : "MISSED",
		v["vmhwm_mib"], (v["vmhwm_mib"] + 0 <= 64) ? "met" : "MISSED"
}'
if [ -n "$failed" ]; then
	echo "failed:$failed"
	exit 1
fi
exit 0
