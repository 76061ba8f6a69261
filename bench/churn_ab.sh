#!/usr/bin/env bash
# bench/churn_ab.sh - profd's CPU per exec'd process, builds side by side.
#
# For each round and each binary of AB_PROFDS: start whole-machine profd
# (AB_HZ, default 99 Hz; profd's own default is 19), let it settle
# AB_WARM s (tables of the processes already running), then its CPU (utime+stime, /proc/PID/stat, and the threads'
# schedstat ns) over AB_SECS s quiet, AB_SECS s of exec storm (one binary,
# bench/execstorm.c, AB_RATE/s, children spinning 2 ms: no new tables),
# and AB_SECS s quiet again. Per exec = (storm - mean of the quiet
# windows) / execs made; csw_exec: context switches of profd's threads
# per exec, the same way. Prints one line per run; medians at the end.
# Env: AB_PROFDS (required), AB_ROUNDS (3), AB_RATE (200), AB_SECS (8),
#      AB_HZ (99), AB_WARM (12), AB_CHILD_US (2000: each child's CPU spin).
set -u
. "$(dirname "$0")/lib.sh"

ROUNDS=${AB_ROUNDS:-3}
RATE=${AB_RATE:-200}
SECS=${AB_SECS:-8}
WARM=${AB_WARM:-12}

need_root_and_profd
bench_init
build_workload execstorm "$BENCH_DIR/execstorm.c"

cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}
cpu_ticks() { awk '{ print $14 + $15 }' /proc/"$1"/stat; }
# context switches of all threads (wakeups): deterministic, unlike CPU here
ctxsw() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/ctxt_switches/ { s += $2 } END { printf "%.0f", s }'
}

machine_info
printf '%-30s %5s %6s %9s %9s %9s %9s %9s %8s\n' binary round execs quiet1_ms storm_ms quiet2_ms us_exec us_exec_tk csw_exec
for r in $(seq 1 "$ROUNDS"); do
	for bin in $AB_PROFDS; do
		PROFD=$bin start_profd "$WORK/profd.log" --sampling-frequency "${AB_HZ:-99}" \
			--profile-interval 10 --output-dir "$WORK/out"
		sleep "$WARM"
		a=$(cpu_ns "$PROFD_PID"); ta=$(cpu_ticks "$PROFD_PID"); xa=$(ctxsw "$PROFD_PID")
		sleep "$SECS"
		b=$(cpu_ns "$PROFD_PID"); tb=$(cpu_ticks "$PROFD_PID"); xb=$(ctxsw "$PROFD_PID")
		out=$("$WORK/execstorm" "$RATE" "$SECS" "${AB_CHILD_US:-2000}")
		c=$(cpu_ns "$PROFD_PID"); tc=$(cpu_ticks "$PROFD_PID"); xc=$(ctxsw "$PROFD_PID")
		sleep "$SECS"
		d=$(cpu_ns "$PROFD_PID"); td=$(cpu_ticks "$PROFD_PID"); xd=$(ctxsw "$PROFD_PID")
		stop_profd
		echo "$out" | awk -v bin="$bin" -v r="$r" -v q1=$((b - a)) -v s=$((c - b)) \
			-v q2=$((d - c)) -v tq=$(( (tb - ta) + (td - tc) )) -v ts=$((tc - tb)) \
			-v hz="$(getconf CLK_TCK)" -v xq=$(( (xb - xa) + (xd - xc) )) -v xs=$((xc - xb)) '{ n = $2;
			printf "%-30s %5d %6d %9.1f %9.1f %9.1f %9.1f %9.1f %8.2f\n",
			substr(bin, length(bin) - 29), r, n, q1 / 1e6, s / 1e6, q2 / 1e6,
			(s - (q1 + q2) / 2) / 1e3 / n, (ts - tq / 2) * 1e6 / hz / n,
			(xs - xq / 2) / n }'
	done
done | tee "$WORK/ab.txt"
echo "medians (us per exec, schedstat / utime+stime):"
awk '{ v[$1] = v[$1] " " $7; t[$1] = t[$1] " " $8 }
     END { for (b in v) { printf "%-30s %s |%s\n", b, v[b], t[b] } }' "$WORK/ab.txt" |
	while read -r b rest; do
		m1=$(echo "${rest%%|*}" | tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
		m2=$(echo "${rest##*|}" | tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
		printf '%-30s %9s %9s\n' "$b" "$m1" "$m2"
	done
