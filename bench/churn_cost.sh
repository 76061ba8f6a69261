#!/usr/bin/env bash
# bench/churn_cost.sh - profd's CPU per exec'd short-lived process.
#
# An exec storm (bench/execstorm.c: CHURN_RATE processes a second for
# CHURN_SECONDS, each a fresh exec of a dynamically linked program that
# spins CHURN_CHILD_US µs of CPU and exits) runs under whole-machine profd
# at CHURN_HZ; profd's CPU (the threads' ns counters,
# /proc/PID/task/*/schedstat) over the storm, less its CPU over as long
# a quiet window just before, divided by the execs made, is the cost of
# one exec'd process. Each binary of CHURN_PROFDS (default: $PROFD) is
# measured CHURN_ROUNDS times, interleaved, with a storm without profd
# in each round for the storm's own wall time (the slowdown).
#
# Reports per binary and round: execs, storm wall s with and without
# profd, profd CPU ms in the storm and in the quiet window, us per exec.
# Env: CHURN_RATE (200), CHURN_SECONDS (10), CHURN_CHILD_US (2000),
#      CHURN_HZ (99), CHURN_ROUNDS (2), CHURN_PROFDS, CHURN_FLAGS.
set -u
. "$(dirname "$0")/lib.sh"

RATE=${CHURN_RATE:-200}
SECS=${CHURN_SECONDS:-10}
CHILD_US=${CHURN_CHILD_US:-2000}
HZ=${CHURN_HZ:-99}
ROUNDS=${CHURN_ROUNDS:-2}
PROFDS=${CHURN_PROFDS:-$PROFD}
FLAGS=${CHURN_FLAGS:-}

need_root_and_profd
bench_init
build_workload execstorm "$BENCH_DIR/execstorm.c"

cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}
storm() { "$WORK/execstorm" "$RATE" "$SECS" "$CHILD_US"; }

machine_info
printf '%-28s %5s %6s %9s %9s %9s %9s %8s\n' binary round execs wall_s base_wall quiet_ms storm_ms us_exec
for r in $(seq 1 "$ROUNDS"); do
	for bin in $PROFDS; do
		base=$(storm | awk '{ print $4 }')
		PROFD=$bin start_profd "$WORK/profd.log" --sampling-frequency "$HZ" \
			--profile-interval 10 --output-dir "$WORK/out" $FLAGS
		sleep 3
		q0=$(cpu_ns "$PROFD_PID")
		sleep "$SECS"
		q1=$(cpu_ns "$PROFD_PID")
		out=$(storm)
		s1=$(cpu_ns "$PROFD_PID")
		stop_profd
		echo "$out" | awk -v b="$bin" -v r="$r" -v base="$base" -v q="$((q1 - q0))" \
			-v s="$((s1 - q1))" '{ n = $2; w = $4;
			printf "%-28s %5d %6d %9.3f %9.3f %9.1f %9.1f %8.1f\n",
			substr(b, length(b) - 27), r, n, w, base, q / 1e6, s / 1e6,
			(s - q * w / '"$SECS"') / 1e3 / n }'
	done
done
