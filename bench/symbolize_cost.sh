#!/usr/bin/env bash
# bench/symbolize_cost.sh - what source lines and inlined frames (DWARF,
# src/symbol/dwarf_lines.c) cost the agent: CPU and peak RSS of a
# whole-system profd run with them (the default) beside one with
# --no-symbolize-lines, on the same machine and workload, alternating
# (on, off, off, on, ...) for SYM_ROUNDS rounds so that drifts of the
# machine's load fall on both sides.
#
# Each item is one bench/agent_overhead.sh run (SYM_SECONDS of steady
# state, default 60; its cpu_pct window excludes start-up) beside
# workloads whose frames have DWARF: one -O2 -g build of
# tests/workloads/chain.c (a busy loop at the end of a call chain) for
# the whole bench, bench/cpuwork.c exec'd every second (AGENT_BG=light),
# and every process's libc, whose DWARF Debian's libc6-dbg provides
# (/usr/lib/debug/.build-id/...).
#
# Reports, per configuration: the median cpu_pct and vmhwm_mib of its
# runs, and the differences (lines on - off).
# Targets (issue 18): +0.2% of a core, +32 MiB RSS at most.
# Env: SYM_SECONDS (60), SYM_ROUNDS (2), PROFD.
set -u
. "$(dirname "$0")/lib.sh"

SECS=${SYM_SECONDS:-60}
ROUNDS=${SYM_ROUNDS:-2}

need_root_and_profd
bench_init
build_workload chain_g "$ROOT/tests/workloads/chain.c"
"$WORK/chain_g" $(( (SECS + 30) * ROUNDS * 2 + 60 )) >/dev/null &
bg_add $!

run_one() {	# run_one on|off: one agent_overhead.sh RESULT line into $WORK/results
	local flags=""
	[ "$1" = off ] && flags="--no-symbolize-lines"
	AGENT_SECONDS=$SECS AGENT_BG=light AGENT_FLAGS="$flags" \
		bash "$BENCH_DIR/agent_overhead.sh" 2>>"$WORK/log" |
		sed -n "s/^RESULT agent_overhead /$1 /p" >>"$WORK/results"
	log "  $1: $(tail -n 1 "$WORK/results")"
}

log "symbolize_cost: $ROUNDS rounds of lines on/off, $SECS s each; $(machine_info)"
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then run_one on; run_one off; else run_one off; run_one on; fi
done

col() {	# col CONFIG KEY - the KEY= values of CONFIG's runs, one a line
	awk -v c="$1" -v k="$2" '$1 == c { for (i = 2; i <= NF; i++)
		if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$WORK/results"
}
ON_CPU=$(col on cpu_pct_ns | median); OFF_CPU=$(col off cpu_pct_ns | median)
ON_RSS=$(col on vmhwm_mib | median); OFF_RSS=$(col off vmhwm_mib | median)
awk -v oc="$ON_CPU" -v fc="$OFF_CPU" -v orr="$ON_RSS" -v fr="$OFF_RSS" -v s="$SECS" \
    -v n="$ROUNDS" -v runs="$(col on cpu_pct_ns | paste -sd, -)/$(col off cpu_pct_ns | paste -sd, -)" '
BEGIN {
	dc = oc - fc; dr = orr - fr
	printf "RESULT symbolize_cost seconds=%d rounds=%d cpu_pct_on=%.3f cpu_pct_off=%.3f", s, n, oc, fc
	printf " cpu_pct_delta=%+.3f rss_mib_on=%.1f rss_mib_off=%.1f rss_mib_delta=%+.1f", dc, orr, fr, dr
	printf " runs_cpu_on/off=%s cpu_target=+0.2%% %s rss_target=+32MiB %s\n", runs,
		(dc <= 0.2) ? "PASS" : "MISS", (dr <= 32) ? "PASS" : "MISS"
}'
