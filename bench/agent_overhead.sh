#!/usr/bin/env bash
# bench/agent_overhead.sh - CPU and memory of the profd process itself.
#
# Runs build/profd at 19 Hz (the default) with the default 10 s profile
# interval for AGENT_SECONDS (60) of steady state, next to whatever the
# machine runs anyway plus, with AGENT_BG=light (the default), a light
# background workload: every second a fresh process runs bench/cpuwork.c
# for ~0.1 s of CPU (6-deep frame-pointer stack), so profd sees real user
# stacks, a process exec + exit every second and a new PID to read maps
# and symbolize for. AGENT_BG=none: no extra workload. AGENT_BG=busy: one
# CPU-bound `chain` (tests/workloads/chain.c) per CPU for the whole run, so
# nearly every sample is a real stack but no process comes or goes: the
# per-sample cost of the agent without the per-process one.
#
# Reports:
#   cpu_pct      (utime + stime) from /proc/PID/stat over the window, per
#                wall second, as % of one core. The window starts once
#                profd prints that it samples (start-up cost is reported
#                apart as startup_cpu_s) and ends before it is stopped.
#   cpu_pct_ns   the same from the per-thread ns counters
#                (/proc/PID/task/*/schedstat), a cross-check with better
#                resolution than the 10 ms ticks of /proc/PID/stat.
#   exit_cpu_s   CPU spent from SIGINT to exit (last profile + flame graph).
#   vmhwm_mib    peak RSS (VmHWM of /proc/PID/status), read until exit.
# Targets: cpu_pct <= 0.5, vmhwm_mib <= 64.
# Env: AGENT_SECONDS (60), AGENT_HZ (19), AGENT_BG (light|busy|none),
#      AGENT_FLAGS (extra profd flags, e.g. --no-dwarf-unwinding), PROFD.
set -u
. "$(dirname "$0")/lib.sh"

SECS=${AGENT_SECONDS:-60}
HZ=${AGENT_HZ:-19}
BG=${AGENT_BG:-light}
FLAGS=${AGENT_FLAGS:-}
TICK=$(getconf CLK_TCK)

need_root_and_profd
bench_init
build_workload cpuwork "$BENCH_DIR/cpuwork.c"

# cpu_ticks PID - utime + stime (fields 14, 15 of /proc/PID/stat).
cpu_ticks() {
	sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | awk '{ print $12 + $13 }'
}
vmhwm_kib() { awk '/^VmHWM:/ { print $2 }' /proc/"$1"/status 2>/dev/null; }

bg_busy() {
	local i
	build_workload chain "$ROOT/tests/workloads/chain.c"
	for i in $(seq 1 "$(nproc)"); do
		"$WORK/chain" $((SECS + 60)) &
		bg_add $!
	done
}

bg_light() {
	while :; do
		"$WORK/cpuwork" 15 1 >/dev/null
		sleep 1
	done
}

echo "$(machine_info)"
case $BG in
light)	bg_light &
	bg_add $!
	BG_LOOP=$! ;;
busy)	bg_busy ;;
none)	;;
*)	die "AGENT_BG must be light, busy or none" ;;
esac
log "agent_overhead: profd at $HZ Hz${FLAGS:+ $FLAGS} for $SECS s, background: $BG; $(machine_info)"
# shellcheck disable=SC2086
start_profd "$WORK/profd.log" --sampling-frequency "$HZ" --output-dir "$WORK/out" $FLAGS
P=$PROFD_PID
LOAD_START=$(loadavg1)
T0=$(now_ns); C0=$(cpu_ticks "$P"); N0=$(proc_cpu_ns "$P")
STARTUP_S=$(awk -v c="$C0" -v t="$TICK" 'BEGIN { printf "%.2f", c / t }')
sleep "$SECS"
T1=$(now_ns); C1=$(cpu_ticks "$P"); N1=$(proc_cpu_ns "$P")
LOAD_END=$(loadavg1)

# stop; follow the exit for the last CPU and memory figures
kill -INT "$P"
HWM=$(vmhwm_kib "$P"); CE=$C1
while kill -0 "$P" 2>/dev/null; do
	h=$(vmhwm_kib "$P"); c=$(cpu_ticks "$P")
	[ -n "$h" ] && HWM=$h
	[ -n "$c" ] && CE=$c
	sleep 0.02
done
wait "$P" 2>/dev/null
bg_forget "$P"
if [ -n "${BG_LOOP:-}" ]; then
	kill "$BG_LOOP" 2>/dev/null; wait "$BG_LOOP" 2>/dev/null; bg_forget "$BG_LOOP"
fi
grep "interval\|done" "$WORK/profd.log" | sed 's/^/  /' >&2

awk -v t0="$T0" -v t1="$T1" -v c0="$C0" -v c1="$C1" -v ce="$CE" -v n0="$N0" -v n1="$N1" \
    -v tick="$TICK" -v hwm="$HWM" -v hz="$HZ" -v bg="$BG" -v st="$STARTUP_S" -v flags="${FLAGS:-none}" \
    -v load="$LOAD_START..$LOAD_END" \
    -v procs="$(sed -n 's/.* \([0-9]*\) processes,.*/\1/p' "$WORK/profd.log" | sort -n | tail -n 1)" \
    -v samples="$(sed -n 's/.*done: \([0-9]*\) samples.*/\1/p' "$WORK/profd.log")" '
BEGIN {
	wall = (t1 - t0) / 1e9
	pct = (c1 - c0) / tick / wall * 100
	pct_ns = (n1 - n0) / 1e9 / wall * 100
	mib = hwm / 1024
	printf "RESULT agent_overhead hz=%d flags=%s background=%s wall_s=%.1f cpu_pct=%.3f cpu_pct_ns=%.3f", hz, flags, bg, wall, pct, pct_ns
	printf " startup_cpu_s=%s exit_cpu_s=%.2f vmhwm_mib=%.1f samples=%s samples_per_s=%.1f max_procs_per_interval=%s load1=%s",
		st, (ce - c1) / tick, mib, samples, samples / wall, procs, load
	printf " cpu_target=0.5%% %s rss_target=64MiB %s\n", (pct <= 0.5) ? "PASS" : "MISS", (mib <= 64) ? "PASS" : "MISS"
}'
