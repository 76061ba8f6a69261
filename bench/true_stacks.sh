#!/usr/bin/env bash
# bench/true_stacks.sh - issue 16's figures (true stacks from the first
# sample) in one go, each benchmark after the other, on one build:
#   bench/exact_share.sh          exact-stack share per program, profd vs
#                                 perf, quiet, under load, a 60 ms program
#                                 in a loop (~1.5 min)
#   bench/first_exact_latency.sh  exec -> first exact sample, p50/p99, ten
#                                 processes starting together (~1 min)
#   bench/first_sample_cost.sh    ringbuf bytes/s and agent CPU in a
#                                 500/s exec storm (~1.5 min)
# Each waits (up to its *_WAIT, 90 s) for other profilers on the machine to
# end. PROFD=/path/to/profd measures another build; PROFD_EXTRA_ARGS goes
# to every profd (first_sample_cost.sh: only its profd_extra runs).
# Each script's full output goes to $BENCH_OUT (default: a new
# /tmp/profd-true-stacks.XXXXXX directory), the RESULT lines to stdout.
# Exit status: 0 when every benchmark ran (targets met or not), 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "true_stacks.sh: error: needs root" >&2; exit 1; }

out=${BENCH_OUT:-$(mktemp -d /tmp/profd-true-stacks.XXXXXX)}
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
for name in ${TRUE_STACKS_BENCHES:-exact_share first_exact_latency first_sample_cost}; do
	echo "== $name ($(date +%H:%M:%S), load:$(uptime | sed 's/.*load average://'))"
	bash "$here/$name.sh" >"$out/$name.out" 2>"$out/$name.log" &
	child=$!
	if wait "$child"; then
		grep -E '^(RESULT|# )' "$out/$name.out"
	else
		echo "   FAILED, see $out/$name.log:"
		tail -n 5 "$out/$name.log" | sed 's/^/   /'
		failed="$failed $name"
	fi
	child=""
done
echo "output: $out"
[ -z "$failed" ] || { echo "failed:$failed" >&2; exit 1; }
