#!/usr/bin/env bash
# bench/symbolize_cost.sh - what source lines and inlined frames (DWARF,
# src/symbol/dwarf_lines.c) cost the agent: CPU and peak RSS of a
# whole-system profd with them (the default) beside one with
# --no-symbolize-lines, both running at the same time on the same
# machine and workload (side by side: the machine's noise falls on both).
#
# Each round starts the two agents together (which one first alternates
# by round), waits until both sample, measures each one's CPU over
# SYM_SECONDS (per-thread schedstat ns: start-up excluded) and, after
# SIGINT, its peak RSS (VmHWM, read until it exits: the last write-out
# included). Both run at profd's default frequency and memory limit.
# Workloads with DWARF, for the whole bench: a -O2 -g build of
# tests/workloads/chain.c (a busy loop at the end of a call chain),
# bench/workloads/uf_libc.c (time in libc's internals: qsort, printf,
# strtod, malloc; libc's lines from Debian's libc6-dbg in
# /usr/lib/debug/.build-id), bench/workloads/uf_cxx.cc (C++, libstdc++),
# and bench/cpuwork.c exec'd every second (new processes to symbolize).
# Each agent also sees the other (a -g-less stripped binary: symbols only).
#
# Reports each round and the medians of on, off and the per-round
# difference (on - off). Targets (issue 18): +0.2 % of a core, +32 MiB.
# Env: SYM_SECONDS (60), SYM_ROUNDS (3), PROFD.
set -u
. "$(dirname "$0")/lib.sh"

SECS=${SYM_SECONDS:-60}
ROUNDS=${SYM_ROUNDS:-3}

need_root_and_profd
need_tool g++
bench_init
[ -d /usr/lib/debug/.build-id ] || log "no /usr/lib/debug/.build-id (libc6-dbg): libc has no lines"
build_workload chain_g "$ROOT/tests/workloads/chain.c"
build_workload cpuwork "$BENCH_DIR/cpuwork.c"
build_workload uf_libc "$BENCH_DIR/workloads/uf_libc.c"
g++ $WORKLOAD_CFLAGS -o "$WORK/uf_cxx" "$BENCH_DIR/workloads/uf_cxx.cc" || die "cannot build uf_cxx.cc"
LIFE=$(( (SECS + 40) * ROUNDS + 60 ))
"$WORK/chain_g" "$LIFE" >/dev/null &
bg_add $!
for p in uf_libc uf_cxx; do
	"$WORK/$p" >/dev/null &
	bg_add $!
done
( while :; do "$WORK/cpuwork" 15 1 >/dev/null; sleep 1; done ) &
bg_add $!

vmhwm_kib() { awk '/^VmHWM:/ { print $2 }' /proc/"$1"/status 2>/dev/null; }

# start_agent NAME FLAGS... - start profd into $WORK/NAME; sets AGENT_PID.
start_agent() {
	local name=$1
	shift
	mkdir -p "$WORK/$name"
	"$PROFD" --output-dir "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 &
	AGENT_PID=$!
	bg_add "$AGENT_PID"
}

wait_sampling() {	# wait_sampling NAME PID
	local i
	for i in $(seq 1 600); do
		grep -q "profd: sampling" "$WORK/$1.log" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || { cat "$WORK/$1.log" >&2; die "profd ($1) exited during start-up"; }
		sleep 0.1
	done
	die "profd ($1) did not start sampling within 60 s"
}

# stop_agent PID - SIGINT, follow VmHWM until it exits; prints KiB.
stop_agent() {
	local hwm h
	kill -INT "$1"
	hwm=$(vmhwm_kib "$1")
	while kill -0 "$1" 2>/dev/null; do
		h=$(vmhwm_kib "$1")
		[ -n "$h" ] && hwm=$h
		sleep 0.02
	done
	wait "$1" 2>/dev/null
	bg_forget "$1"
	echo "${hwm:-0}"
}

log "symbolize_cost: $ROUNDS rounds, lines on and off side by side, $SECS s each; $(machine_info)"
: >"$WORK/results"
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then
		start_agent on; PON=$AGENT_PID
		start_agent off --no-symbolize-lines; POFF=$AGENT_PID
	else
		start_agent off --no-symbolize-lines; POFF=$AGENT_PID
		start_agent on; PON=$AGENT_PID
	fi
	wait_sampling on "$PON"
	wait_sampling off "$POFF"
	sleep 5		# both past start-up (first maps reads, unwind tables)
	T0=$(now_ns); A0=$(proc_cpu_ns "$PON"); B0=$(proc_cpu_ns "$POFF")
	sleep "$SECS"
	T1=$(now_ns); A1=$(proc_cpu_ns "$PON"); B1=$(proc_cpu_ns "$POFF")
	HON=$(stop_agent "$PON")
	HOFF=$(stop_agent "$POFF")
	awk -v t="$((T1 - T0))" -v a="$((A1 - A0))" -v b="$((B1 - B0))" -v ha="$HON" -v hb="$HOFF" \
	    -v r="$r" -v l="$(loadavg1)" 'BEGIN {
		printf "round=%d cpu_pct_on=%.3f cpu_pct_off=%.3f rss_mib_on=%.1f rss_mib_off=%.1f load1=%s\n",
			r, 100 * a / t, 100 * b / t, ha / 1024, hb / 1024, l }' >>"$WORK/results"
	log "  $(tail -n 1 "$WORK/results")"
	grep -h "lines_shed\|symbols_shed" "$WORK/on.log" | tail -n 1 | sed 's/^/  on: /' >&2
done

col() {	# col KEY - the KEY= values of every round, one a line
	awk -v k="$1" '{ for (i = 1; i <= NF; i++)
		if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$WORK/results"
}
diffs() {	# diffs KEY_ON KEY_OFF - per-round differences
	paste <(col "$1") <(col "$2") | awk '{ print $1 - $2 }'
}
echo "$(machine_info)"
cat "$WORK/results"
awk -v oc="$(col cpu_pct_on | median)" -v fc="$(col cpu_pct_off | median)" \
    -v dc="$(diffs cpu_pct_on cpu_pct_off | median)" \
    -v orr="$(col rss_mib_on | median)" -v fr="$(col rss_mib_off | median)" \
    -v dr="$(diffs rss_mib_on rss_mib_off | median)" -v s="$SECS" -v n="$ROUNDS" '
BEGIN {
	printf "RESULT symbolize_cost seconds=%d rounds=%d cpu_pct_on=%.3f cpu_pct_off=%.3f", s, n, oc, fc
	printf " cpu_pct_delta=%+.3f rss_mib_on=%.1f rss_mib_off=%.1f rss_mib_delta=%+.1f", dc, orr, fr, dr
	printf " cpu_target=+0.2%% %s rss_target=+32MiB %s\n",
		(dc <= 0.2) ? "PASS" : "MISS", (dr <= 32) ? "PASS" : "MISS"
}'
