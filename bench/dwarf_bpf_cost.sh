#!/usr/bin/env bash
# bench/dwarf_bpf_cost.sh - CPU time profd's BPF program costs per sample
# when it unwinds a 30-frame user stack that has no frame pointers.
#
# Workload: tests/workloads/dwarf/recursion.c built -O2
# -fomit-frame-pointer (as tests/test_dwarf.py builds it), run with depth
# 28: main -> rec x 28 -> rec_leaf (spins) = 30 frames of its own, plus
# __libc_start_call_main, __libc_start_main and _start = 33 user frames.
# One process per CPU, so nearly every sample is one of these stacks.
#
# Like bench/bpf_cost.sh: turns on kernel.bpf_stats_enabled (restored on
# exit; switched on again, and counted as stats_reenabled, if another
# tool turns it off meanwhile: the switch is global), runs profd
# system-wide and reads run_time_ns / run_cnt of the profd_sample program
# this profd holds (ids from /proc/PID/fdinfo).
# profd_sample tail-calls unwind_dwarf (itself, every 16 frames: a
# 33-frame stack is 3 invocations) and emit; tail calls do not go through
# the stats wrapper, so profd_sample's counters cover the whole chain (the
# tail-call targets' own run_cnt is printed and should stay 0).
# Reported: the overall average (delta run_time_ns / delta run_cnt) and
# the median (p10, p90) of BPF_COST_WINDOW-second window averages.
#
# Each item is measured with DWARF unwinding (the default), with
# --max-stack-depth=1 (DWARF, but the walk stops after the leaf and one
# step: the floor, everything but 32 of the 33 steps) and with
# --no-dwarf-unwinding (frame-pointer walk: on this code rbp holds no
# frame chain, so the walk stops after 1-3 frames, often on a faulting
# read, counted as user_stack_read_error).
# After each run the profile is checked: the share of the workload's
# samples whose stack has all 28 rec frames, rec_leaf and main, and the
# median frame count.
#
# Env: DWARF_COST_RUNS ("99 99,--max-stack-depth=1 99,--no-dwarf-unwinding"),
#      DWARF_COST_SECONDS (20), DWARF_COST_WINDOW (0.5), DWARF_COST_WARMUP
#      (3), DWARF_COST_DEPTH (28), DWARF_COST_JOBS (nproc), DWARF_COST_WAIT
#      (max seconds to wait, per item, for other benchmarks/profilers to
#      end, 60; DWARF_IGNORE_PIDS: pids of other profilers not to wait for).
# Output: "RESULT dwarf_bpf_cost ..." per item. Target: DWARF median
# <= 3000 ns per sample.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

RUNS=${DWARF_COST_RUNS:-99 99,--max-stack-depth=1 99,--no-dwarf-unwinding}
SECONDS_RUN=${DWARF_COST_SECONDS:-20}
WINDOW=${DWARF_COST_WINDOW:-0.5}
WARMUP=${DWARF_COST_WARMUP:-3}
DEPTH=${DWARF_COST_DEPTH:-28}
JOBS=${DWARF_COST_JOBS:-$(nproc)}
MAXWAIT=${DWARF_COST_WAIT:-60}
TARGET_NS=3000

need_root_and_profd
need_tool bpftool
[ -x "$PPROF" ] || die "pprof not found (build/tools/pprof, /tmp/pprof or PATH)"
dwarf_bench_init

STATS_SAVED=$(sysctl -n kernel.bpf_stats_enabled) || die "cannot read kernel.bpf_stats_enabled"
restore_stats() { sysctl -q -w kernel.bpf_stats_enabled="$STATS_SAVED" >/dev/null; }
CLEANUP_HOOKS="restore_stats"
sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null || die "cannot enable kernel.bpf_stats_enabled"

# a distinct name, so its samples are told from other tenants' workloads
build_dwarf_workload dwcost_rec "$DWARF_SRC/recursion.c"

now_ns() { date +%s%N; }

tail_counts() {
	local id name out=""
	while read -r id name; do
		out="$out${out:+,}$name:$(prog_stats "$id" | awk '{ print $2 }')"
	done <"$1"
	echo "$out"
}

# stack_check DIR - "workload_samples= full_depth_pct= median_frames=
# median_rec_frames= other_samples=" over every profile in DIR.
stack_check() {
	local f
	for f in "$1"/cpu-*.pb.gz; do
		[ -e "$f" ] && trace_stacks "$f"
	done >"$WORK/stacks"
	# per workload stack: "samples frames rec_frames full(0/1)"
	awk -v d="$DEPTH" '$4 == "dwcost_rec" {
		n = split($5, fr, ";"); rec = 0; leaf = 0; mainf = 0
		for (i = 1; i <= n; i++) {
			if (fr[i] == "rec") rec++
			else if (fr[i] == "rec_leaf") leaf = 1
			else if (fr[i] == "main") mainf = 1
		}
		print $1, n, rec, (rec == d && leaf && mainf) }' "$WORK/stacks" >"$WORK/wl"
	echo "workload_samples=$(awk '{ t += $1 } END { print t + 0 }' "$WORK/wl")" \
		"full_depth_pct=$(awk '{ t += $1; if ($4) f += $1 } END { printf "%.1f", t ? 100 * f / t : 0 }' "$WORK/wl")" \
		"median_frames=$(awk '{ for (k = 0; k < $1; k++) print $2 }' "$WORK/wl" | median)" \
		"median_rec_frames=$(awk '{ for (k = 0; k < $1; k++) print $3 }' "$WORK/wl" | median)" \
		"other_samples=$(awk '$4 != "dwcost_rec" { t += $1 } END { print t + 0 }' "$WORK/stacks")"
}

measure() {
	local item=$1 hz=${1%%,*} flags="" tag i sid t0 c0 t1 c1 tp cp ts tsp
	local jobs="" p w
	[ "$item" != "$hz" ] && flags=$(echo "${item#*,}" | tr ',' ' ')
	tag=$(echo "$item" | tr -c 'A-Za-z0-9\n' '_')
	w=$WORK/windows-$tag

	wait_quiet "$MAXWAIT"
	local quiet_before=$QUIET_NOTE
	log "dwarf_bpf_cost: $hz Hz${flags:+ $flags}, $JOBS x recursion depth $DEPTH (no FP), ${SECONDS_RUN} s; $(machine_info)"
	for i in $(seq 1 "$JOBS"); do
		"$WORK/dwcost_rec" $((SECONDS_RUN + WARMUP + 30)) "$DEPTH" &
		bg_add $!
		jobs="$jobs $!"
	done
	# shellcheck disable=SC2086
	start_profd "$WORK/profd-$tag.log" --sampling-frequency "$hz" \
		--profile-interval 60 --output-dir "$WORK/out-$tag" $flags
	sid=$(prog_id_by_name "$PROFD_PID" profd_sample) ||
		{ prog_list "$PROFD_PID" >&2; die "profd_sample not found among profd's programs"; }
	prog_list "$PROFD_PID" | awk '$2 == "perf_event" && $3 != "profd_sample" { print $1, $3 }' \
		>"$WORK/tail-$tag"
	sleep "$WARMUP"

	local tails0 tails1
	tails0=$(tail_counts "$WORK/tail-$tag")
	read -r t0 c0 < <(prog_stats "$sid")
	tp=$t0; cp=$c0; tsp=$(now_ns)
	: >"$w"
	local load_start; load_start=$(loadavg1)
	local n; n=$(awk -v s="$SECONDS_RUN" -v w="$WINDOW" 'BEGIN { print int(s / w + 0.5) }')
	local reenabled=0
	for i in $(seq 1 "$n"); do
		sleep "$WINDOW"
		# the switch is global: another tool may turn it off meanwhile
		if [ "$(sysctl -n kernel.bpf_stats_enabled)" != 1 ]; then
			sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null
			reenabled=$((reenabled + 1))
		fi
		read -r t1 c1 < <(prog_stats "$sid")
		ts=$(now_ns)
		awk -v dt=$((ts - tsp)) -v dc=$((c1 - cp)) -v dn=$((t1 - tp)) \
			'BEGIN { if (dc > 0) printf "%.3f %d %d %.1f\n", dt / 1e9, dc, dn, dn / dc }' >>"$w"
		tp=$t1; cp=$c1; tsp=$ts
	done
	local load_end; load_end=$(loadavg1)
	local others_after; others_after=$(other_profilers | wc -l)
	tails1=$(tail_counts "$WORK/tail-$tag")
	stop_profd
	for p in $jobs; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; bg_forget "$p"; done

	local med avg p10 p90 wins rate samples check unw
	med=$(awk '{ print $4 }' "$w" | median)
	p10=$(awk '{ print $4 }' "$w" | percentile 10)
	p90=$(awk '{ print $4 }' "$w" | percentile 90)
	wins=$(wc -l <"$w")
	avg=$(awk -v dn=$((t1 - t0)) -v dc=$((c1 - c0)) 'BEGIN { printf "%.1f", dc ? dn / dc : 0 }')
	rate=$(awk '{ c += $2; t += $1 } END { printf "%.1f", t ? c / t : 0 }' "$w")
	samples=$(sed -n 's/.*done: \([0-9]*\) samples.*/\1/p' "$WORK/profd-$tag.log")
	check=$(stack_check "$WORK/out-$tag")
	unw=$(unwind_stat "$(ls "$WORK/out-$tag"/cpu-*.pb.gz | tail -n 1)" | tr ' ' '_')
	echo "RESULT dwarf_bpf_cost hz=$hz flags=${flags:-none} depth=$DEPTH median_ns=$med mean_ns=$avg" \
		"p10_ns=$p10 p90_ns=$p90 windows=$wins runs=$((c1 - c0)) runs_per_s=$rate stats_reenabled=$reenabled" \
		"tailcalled_run_cnt_before=$tails0 tailcalled_run_cnt_after=$tails1" \
		"profd_samples_kept=${samples:-?} $check $unw load1=$load_start..$load_end" \
		"other_profilers_at_end=$others_after" \
		"target_ns=$TARGET_NS $(awk -v m="$med" -v t=$TARGET_NS 'BEGIN { print (m <= t) ? "PASS" : "MISS" }')"
	echo "#   before: $quiet_before"
	grep "interval\|done" "$WORK/profd-$tag.log" | sed 's/^/  /' >&2
	awk '{ print $4 }' "$w" | tr '\n' ' ' | sed 's/^/  window averages ns: /' >&2
	echo >&2
}

echo "$(machine_info)"
echo "# $(profd_info)"
for item in $RUNS; do
	measure "$item"
done
