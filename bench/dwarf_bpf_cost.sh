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
# A wrapper of bench/bpf_cost.sh, which measures (kernel.bpf_stats_enabled,
# run_time_ns / run_cnt of the profd_sample program this profd holds; see
# its header); this script supplies the workload, waits for a quiet
# machine before each item (--before) and checks the stacks after it
# (--check).
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

DEPTH=${DWARF_COST_DEPTH:-28}
MAXWAIT=${DWARF_COST_WAIT:-60}
SELF=$BENCH_DIR/dwarf_bpf_cost.sh

# The bench scripts running this one (bpf_cost.sh and the wrapper) are
# not "other" benchmarks to wait for.
ancestors() { echo "$PPID $(ps -o ppid= -p "$PPID" 2>/dev/null)"; }

case "${1:-}" in
--before)	# wait for a quiet machine; print what it was like
	DWARF_IGNORE_PIDS="${DWARF_IGNORE_PIDS:-} $(ancestors)"
	wait_quiet "$MAXWAIT"
	echo "$QUIET_NOTE"
	exit 0 ;;
--check)	# DIR: key=value words on the stacks in DIR's profiles
	dir=$2
	WORK=$(mktemp -d /tmp/profd-dwarf-check.XXXXXX)
	for f in "$dir"/cpu-*.pb.gz; do
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
	echo "depth=$DEPTH" \
		"workload_samples=$(awk '{ t += $1 } END { print t + 0 }' "$WORK/wl")" \
		"full_depth_pct=$(awk '{ t += $1; if ($4) f += $1 } END { printf "%.1f", t ? 100 * f / t : 0 }' "$WORK/wl")" \
		"median_frames=$(awk '{ for (k = 0; k < $1; k++) print $2 }' "$WORK/wl" | median)" \
		"median_rec_frames=$(awk '{ for (k = 0; k < $1; k++) print $3 }' "$WORK/wl" | median)" \
		"other_samples=$(awk '$4 != "dwcost_rec" { t += $1 } END { print t + 0 }' "$WORK/stacks")" \
		"$(unwind_stat "$(ls "$dir"/cpu-*.pb.gz | tail -n 1)" | tr ' ' '_')" \
		"other_profilers_at_end=$(DWARF_IGNORE_PIDS="${DWARF_IGNORE_PIDS:-} $(ancestors)" other_profilers | wc -l)"
	rm -rf "$WORK"
	exit 0 ;;
esac

need_root_and_profd
[ -x "$PPROF" ] || die "pprof not found (build/tools/pprof, /tmp/pprof or PATH)"
dwarf_bench_init

# a distinct name, so its samples are told from other tenants' workloads;
# bpf_cost.sh appends the run time, the depth comes after it
build_dwarf_workload dwcost_rec "$DWARF_SRC/recursion.c"
printf '#!/bin/sh\nexec %s "$1" %s\n' "$WORK/dwcost_rec" "$DEPTH" >"$WORK/dwcost_run"
chmod +x "$WORK/dwcost_run"

echo "# $(profd_info)"
BPF_COST_NAME=dwarf_bpf_cost \
BPF_COST_RUNS=${DWARF_COST_RUNS:-99 99,--max-stack-depth=1 99,--no-dwarf-unwinding} \
BPF_COST_SECONDS=${DWARF_COST_SECONDS:-20} \
BPF_COST_WINDOW=${DWARF_COST_WINDOW:-0.5} \
BPF_COST_WARMUP=${DWARF_COST_WARMUP:-3} \
BPF_COST_JOBS=${DWARF_COST_JOBS:-$(nproc)} \
BPF_COST_TARGET_NS=3000 \
BPF_COST_WORKLOAD="$WORK/dwcost_run" \
BPF_COST_BEFORE="bash $SELF --before" \
BPF_COST_CHECK="bash $SELF --check" \
	bash "$BENCH_DIR/bpf_cost.sh"
