#!/usr/bin/env bash
# bench/offcpu_cost.sh - what --off-cpu costs a context-switch-heavy program.
#
# Part 1, throughput: bench/pingpong.c (two threads bouncing a byte over
# two pipes, each round two blocking switches; ~150-300k switches/s on a
# 2-vCPU VM) runs a fixed number of rounds with:
#   base        no profiler
#   cpu         build/profd (system-wide, CPU sampling only)
#   offcpu      build/profd --off-cpu (default knobs: --off-cpu-threshold
#               0.01, --off-cpu-min-block 1ms)
#   offcpu1     build/profd --off-cpu --off-cpu-threshold 1
#   empty       an empty tp_btf/sched_switch program (bench/offcpu_floor/,
#               floor_empty): the tracepoint's dispatch into BPF, the
#               floor any sched_switch program pays on this kernel
#   hash, tstore  floor_hash / floor_tstore: the empty program plus the
#               old switch-in test (two lookups in an empty hash) / the
#               new one (next->bpf_storage, prev->bpf_storage loads);
#               diagnostic, not in the default list
#   before      $PROFD_BEFORE --off-cpu (default knobs): another build
#               (e.g. the commit before a change), same run; only when
#               PROFD_BEFORE is set
#   perf        perf record -e sched:sched_switch -g -a: the nearest perf
#               equivalent (Debian's perf ignores --off-cpu: "no
#               BUILD_BPF_SKEL=1"); it records every switch of the machine
#   base-again  no profiler again: an A/A control, the noise floor
# interleaved (bench/lib.sh: interleaved_runs, each repetition starting one
# configuration further), profilers started before and stopped after each
# timed run; medians and their ratios to base (wall: throughput; cpu: the
# program's own CPU time). Both threads are pinned to one CPU
# (OFFCPU_CPU): each round is then two direct switches, thread to thread;
# unpinned, a VM's idle wakeups (IPIs, HLT exits) set the pace and any
# busy profiler makes the program *faster*. On a shared machine the wall
# time also holds other tenants' slices on that CPU; cpu_s, the program's
# own user + system time, holds the BPF programs that run in its context
# at its switches and is the steadier figure. kernel.bpf_stats_enabled is
# 0 here (its clock reads would be part of the figure).
#
# Part 2, BPF cost (kernel.bpf_stats_enabled=1, restored on exit): the same
# rounds under profd --off-cpu with --off-cpu-threshold 0.0000000003 (the
# least it takes, ~2^-32: every run of the sched_switch program pays the
# switch-in lookup and the draw, practically none records), 0.01 and 1; run_time_ns / run_cnt of profd's
# profd_sched_switch program (its tail-called unwinders do not go through
# the stats wrapper: the chain is included) over the timed run, and the
# switch-outs it recorded (BPF counter PROFD_CNT_OFFCPU_RECORDED, read from
# profd's `counters` map). Per unrecorded run: the least threshold's average; per
# recorded switch-out: (run_time - run_cnt x unrecorded) / recorded at
# threshold 1. Agent CPU: profd's on-CPU ns over the timed run
# (/proc/PID/task/*/schedstat) as % of one CPU.
#
# Env: OFFCPU_REPS (5), OFFCPU_ROUNDS (300000),
#      OFFCPU_CONFIGS ("base empty cpu offcpu offcpu1 perf base-again",
#      plus "before" when PROFD_BEFORE is set),
#      OFFCPU_CPU (1: the CPU both threads run on; empty: not pinned),
#      OFFCPU_COST_REPS (2), OFFCPU_COST_THRESHOLDS ("0 0.01 1": 0 first,
#      its average is the unrecorded cost), PROFD (binary), PROFD_BEFORE.
#      OFFCPU_REPS=0 skips part 1, OFFCPU_COST_REPS=0 part 2.
# Output: "RESULT offcpu_cost config=..." per configuration (part 1) and
# "RESULT offcpu_bpf threshold=..." per threshold (part 2).
# Target: offcpu (default knobs) wall_ratio <= 1.02.
set -u
. "$(dirname "$0")/lib.sh"

REPS=${OFFCPU_REPS:-5}
ROUNDS=${OFFCPU_ROUNDS:-300000}
PROFD_BEFORE=${PROFD_BEFORE:-}
CONFIGS=${OFFCPU_CONFIGS:-base empty cpu ${PROFD_BEFORE:+before }offcpu offcpu1 perf base-again}
COST_REPS=${OFFCPU_COST_REPS:-2}
THRESHOLDS=${OFFCPU_COST_THRESHOLDS:-0.0000000003 0.01 1}
PIN_CPU=${OFFCPU_CPU-1}
PIN=""
[ -n "$PIN_CPU" ] && PIN="taskset -c $PIN_CPU"

need_root_and_profd
need_tool bpftool
case " $CONFIGS " in *" perf "*) need_tool perf ;; esac
case " $CONFIGS " in *" before "*)
	[ -x "$PROFD_BEFORE" ] || die "config before: PROFD_BEFORE ($PROFD_BEFORE) is not a binary" ;;
esac
bench_init
$CC $WORKLOAD_CFLAGS -pthread -o "$WORK/pingpong" "$BENCH_DIR/pingpong.c" ||
	die "cannot build bench/pingpong.c"
case " $CONFIGS " in *" empty "*|*" hash "*|*" tstore "*)
	need_tool clang
	build_bpf_object "$BENCH_DIR/offcpu_floor/floor.bpf.c" "$WORK/floor.bpf.o"
	$CC -O2 -Wall -o "$WORK/floor" "$BENCH_DIR/offcpu_floor/floor.c" -lbpf ||
		die "cannot build bench/offcpu_floor/floor.c" ;;
esac

STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
restore_stats() { sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"; }
CLEANUP_HOOKS="$CLEANUP_HOOKS restore_stats"
sysctl -qw kernel.bpf_stats_enabled=0

# The index of PROFD_CNT_OFFCPU_RECORDED in enum profd_counter (bpf/profd.h).
RECORDED_IDX=$(awk '/^enum profd_counter/ { on = 1; n = 0; next }
	on && /^[ \t]*PROFD_CNT_[A-Z0-9_]+[ \t]*[,=]/ {
		if ($1 ~ /^PROFD_CNT_OFFCPU_RECORDED/) { print n; exit }
		n++ }' "$ROOT/bpf/profd.h")
[ -n "$RECORDED_IDX" ] || die "PROFD_CNT_OFFCPU_RECORDED not found in bpf/profd.h"

PROFD_ARGS="--no-gpu --output-dir $WORK/profd-out --profile-interval 60"

# pingpong_run - the timed rounds; echoes "wall_s cpu_s switches_per_s".
pingpong_run() {
	$PIN "$WORK/pingpong" "$ROUNDS" >"$WORK/pp.out" || die "pingpong failed"
	sed 's/wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\) switches_per_s=\([0-9]*\)/\1 \2 \3/' \
		"$WORK/pp.out"
}

# start_floor PROGRAM - attach floor.bpf.c's PROGRAM (FLOOR_PID: its loader).
start_floor() {
	local i
	"$WORK/floor" "$WORK/floor.bpf.o" "$1" >"$WORK/floor.log" 2>&1 &
	FLOOR_PID=$!
	bg_add "$FLOOR_PID"
	for i in $(seq 1 100); do
		grep -q attached "$WORK/floor.log" && return 0
		kill -0 "$FLOOR_PID" 2>/dev/null || { cat "$WORK/floor.log" >&2; die "floor $1 failed"; }
		sleep 0.1
	done
	die "floor $1 did not attach"
}

# run_config NAME - one timed run under NAME; appends "NAME wall_s cpu_s
# switches_per_s agent_cpu_pct" to $WORK/times.
run_config() {
	local res c0 c1 agent=0
	case $1 in
	base|base-again) ;;
	cpu) start_profd "$WORK/profd.log" $PROFD_ARGS ;;
	empty|hash|tstore) start_floor "floor_$1"; sleep 0.5 ;;
	offcpu) start_profd "$WORK/profd.log" $PROFD_ARGS --off-cpu ;;
	before) PROFD=$PROFD_BEFORE start_profd "$WORK/profd.log" $PROFD_ARGS --off-cpu ;;
	offcpu1) start_profd "$WORK/profd.log" $PROFD_ARGS --off-cpu --off-cpu-threshold 1 ;;
	perf)
		perf record -q -e sched:sched_switch -g -a -o "$WORK/perf.data" \
			>"$WORK/perf.log" 2>&1 &
		PERF_PID=$!
		bg_add "$PERF_PID"
		while [ ! -s "$WORK/perf.data" ]; do
			kill -0 "$PERF_PID" 2>/dev/null || { cat "$WORK/perf.log" >&2; die "perf failed"; }
			sleep 0.1
		done
		sleep 0.5 ;;
	*) die "unknown configuration $1" ;;
	esac
	case $1 in cpu|offcpu*|before) sleep 1; c0=$(proc_cpu_ns "$PROFD_PID") ;; esac
	res=$(pingpong_run)
	case $1 in
	empty|hash|tstore)
		kill -TERM "$FLOOR_PID" 2>/dev/null
		wait "$FLOOR_PID" 2>/dev/null
		bg_forget "$FLOOR_PID" ;;
	cpu|offcpu*|before)
		c1=$(proc_cpu_ns "$PROFD_PID")
		agent=$(awk -v a="$c0" -v b="$c1" -v s="$(echo "$res" | cut -d' ' -f1)" \
			'BEGIN { printf "%.2f", (b - a) / 1e7 / s }')
		stop_profd
		rm -rf "$WORK/profd-out" ;;
	perf)
		kill -INT "$PERF_PID" 2>/dev/null
		wait "$PERF_PID" 2>/dev/null
		bg_forget "$PERF_PID"
		echo "$(stat -c %s "$WORK/perf.data")" >>"$WORK/perf_sizes"
		rm -f "$WORK/perf.data" "$WORK/perf.data.old" ;;
	esac
	echo "$1 $res $agent" >>"$WORK/times"
}

# extra CONFIG - the RESULT line's more words: switches/s, agent CPU.
extra() {
	echo "switches_per_s=$(times_col "$1" 4 | median)" \
		"agent_cpu_pct=$(times_col "$1" 5 | median)"
}

# recorded_now PID - PROFD_CNT_OFFCPU_RECORDED summed over CPUs, from
# the `counters` map PID holds.
recorded_now() {
	local id
	for id in $(bpf_ids_of_pid map "$1"); do
		bpftool map show id "$id" 2>/dev/null | grep -q " name counters " || continue
		bpftool map lookup id "$id" key $(printf '%d 0 0 0' "$RECORDED_IDX") --json |
			tr -d ' \n' | grep -o '"value":[0-9]*' | cut -d: -f2 |
			awk '{ s += $1 } END { print s + 0 }'
		return
	done
	echo 0
}

# cost_run THRESHOLD - one timed run under profd --off-cpu with
# THRESHOLD, bpf_stats on; appends "THRESHOLD run_time_ns run_cnt
# recorded wall_s" to $WORK/cost.
cost_run() {
	local id s0 s1 r0 r1 res
	start_profd "$WORK/profd.log" $PROFD_ARGS --off-cpu --off-cpu-threshold "$1"
	id=$(prog_id_by_name "$PROFD_PID" profd_sched_switch) ||
		die "profd_sched_switch not found"
	sleep 1
	s0=$(prog_stats "$id"); r0=$(recorded_now "$PROFD_PID")
	res=$(pingpong_run)
	s1=$(prog_stats "$id"); r1=$(recorded_now "$PROFD_PID")
	stop_profd
	rm -rf "$WORK/profd-out"
	echo "$1 $(echo "$s0 $s1" | awk '{ print $3 - $1, $4 - $2 }') $((r1 - r0))" \
		"$(echo "$res" | cut -d' ' -f1)" >>"$WORK/cost"
	log "  cost $(tail -n 1 "$WORK/cost") (load1 $(loadavg1))"
}

echo "$(machine_info)"
LOAD_START=$(loadavg1)
if [ "$REPS" -gt 0 ]; then
	log "offcpu_cost: pingpong $ROUNDS rounds, $REPS repetitions of: $CONFIGS"
	interleaved_runs "$REPS" "$CONFIGS" run_config
	interleaved_report offcpu_cost base "$CONFIGS" "rounds=$ROUNDS cpu=${PIN_CPU:-any}" extra
	[ -s "$WORK/perf_sizes" ] &&
		echo "# perf.data: $(awk '{ s += $1 } END { printf "%.0f", s / NR / 1048576 }' \
			"$WORK/perf_sizes") MiB a run (median run $(times_col perf 2 | median) s)"
fi

log "offcpu_cost: BPF cost, bpf_stats on, thresholds $THRESHOLDS x $COST_REPS"
sysctl -qw kernel.bpf_stats_enabled=1
: >"$WORK/cost"
for r in $(seq 1 "$COST_REPS"); do
	for t in $THRESHOLDS; do
		cost_run "$t"
	done
done
# per unrecorded run: the least threshold's time / runs; per recorded: the rest
awk '{ t[$1] += $2; n[$1] += $3; rec[$1] += $4; w[$1] += $5
       if (least == "" || $1 + 0 < least + 0) least = $1 }
END {
	u = n[least] ? t[least] / n[least] : 0
	for (k in t) {
		per = rec[k] ? (t[k] - n[k] * u) / rec[k] : 0
		printf "RESULT offcpu_bpf threshold=%s runs=%d ns_per_run=%.0f recorded=%d " \
		       "unrecorded_ns=%.0f recorded_ns=%.0f runs_per_s=%.0f bpf_cpu_pct=%.2f\n",
		       k, n[k], n[k] ? t[k] / n[k] : 0, rec[k], u, per,
		       w[k] ? n[k] / w[k] : 0, w[k] ? t[k] / w[k] / 1e7 : 0
	}
}' "$WORK/cost" | sort
echo "# load1=$LOAD_START..$(loadavg1)"
