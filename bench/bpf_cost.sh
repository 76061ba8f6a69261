#!/usr/bin/env bash
# bench/bpf_cost.sh - CPU time profd's perf_event BPF program costs per sample.
#
# Turns on kernel.bpf_stats_enabled (restored on exit), runs one CPU-bound
# workload per CPU (by default `chain`: tests/workloads/chain.c, built with
# frame pointers, a 5-deep call chain, so every user stack is < 32 frames
# and nearly every sample is a full capture, not an idle skip; another
# workload with BPF_COST_WORKLOAD, e.g. bench/python_bpf_cost.sh), runs profd and
# reads run_time_ns / run_cnt of profd's `profd_sample` program with
# `bpftool prog show`. Only the programs this profd process holds open are
# looked at (ids from /proc/PID/fdinfo), so another profd on the machine is
# never measured by mistake.
#
# profd_sample tail-calls the unwinders and emit_perf. A tail call does not
# go through the kernel's stats wrapper, so profd_sample's counters cover
# the whole chain. Checked on every run: the run_cnt of each of profd's
# other perf_event programs (the tail-call targets) is printed and should
# stay 0.
#
# bpf_stats only keeps totals, so besides the overall average
# (delta run_time_ns / delta run_cnt over the measurement) the counters are
# read every BPF_COST_WINDOW seconds and the median of the per-window
# averages is reported (the headline figure); it is less sensitive to a
# burst of expensive samples, e.g. from another test run on a shared machine.
#
# Env: BPF_COST_RUNS: what to measure, space-separated items HZ[,FLAG...]
#        (default "99 19 99,--no-dwarf-unwinding"; an item whose flag this
#        profd does not know is skipped),
#      BPF_COST_SECONDS (20), BPF_COST_WINDOW (0.5), BPF_COST_WARMUP (3 s
#        after start: unwind tables loaded, caches filled),
#      BPF_COST_JOBS (workload processes, default nproc), PROFD (binary),
#      BPF_COST_WORKLOAD: the workload, a command line (split on blanks, no
#        quoting) to which the run time in seconds is appended; it must
#        stay on the CPU that long and exit on SIGTERM (default: the
#        `chain` binary built into the scratch directory),
#      BPF_COST_NAME: the RESULT line's label (default bpf_cost),
#      BPF_COST_CHECK: optional command line run after each item with
#        profd's output directory (its pprof profiles) appended; its
#        stdout (key=value words) is added to the RESULT line,
#      BPF_COST_BEFORE: optional command line run before each item (e.g.
#        to wait for a quiet machine); its stdout is printed as a
#        "#   before: ..." line after the RESULT line,
#      BPF_COST_TARGET_NS: the median to beat (default 2000).
# kernel.bpf_stats_enabled is global: if another tool switches it off during
# a measurement it is switched on again and counted (stats_reenabled=N; the
# runs in between are not counted, and the windows without runs are left out).
# Output: one "RESULT $BPF_COST_NAME ..." line per item (read by run-all.sh).
# Target: median <= BPF_COST_TARGET_NS (2000) ns per sample.
set -u
. "$(dirname "$0")/lib.sh"

RUNS=${BPF_COST_RUNS:-99 19 99,--no-dwarf-unwinding}
SECONDS_RUN=${BPF_COST_SECONDS:-20}
WINDOW=${BPF_COST_WINDOW:-0.5}
WARMUP=${BPF_COST_WARMUP:-3}
JOBS=${BPF_COST_JOBS:-$(nproc)}
NAME=${BPF_COST_NAME:-bpf_cost}
CHECK=${BPF_COST_CHECK:-}
BEFORE=${BPF_COST_BEFORE:-}
TARGET_NS=${BPF_COST_TARGET_NS:-2000}

need_root_and_profd
need_tool bpftool
bench_init

STATS_SAVED=$(sysctl -n kernel.bpf_stats_enabled) || die "cannot read kernel.bpf_stats_enabled"
restore_stats() { sysctl -q -w kernel.bpf_stats_enabled="$STATS_SAVED" >/dev/null; }
CLEANUP_HOOKS="restore_stats"
sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null || die "cannot enable kernel.bpf_stats_enabled"

if [ -n "${BPF_COST_WORKLOAD:-}" ]; then
	read -ra WORKLOAD <<<"$BPF_COST_WORKLOAD"
	[ ${#WORKLOAD[@]} -gt 0 ] || die "BPF_COST_WORKLOAD is blank"
	command -v "${WORKLOAD[0]}" >/dev/null || die "workload ${WORKLOAD[0]} not found"
else
	build_workload chain "$ROOT/tests/workloads/chain.c"
	WORKLOAD=("$WORK/chain")
fi
WORKLOAD_DESC="$(basename "${WORKLOAD[0]}")${WORKLOAD[1]:+ ${WORKLOAD[*]:1}}"


# tail_counts FILE_OF_"id name" - "name:run_cnt,..." of those programs.
tail_counts() {
	local id name out=""
	while read -r id name; do
		out="$out${out:+,}$name:$(prog_stats "$id" | awk '{ print $2 }')"
	done <"$1"
	echo "$out"
}

# measure ITEM - one measurement; ITEM is HZ[,FLAG...].
measure() {
	local item=$1 hz=${1%%,*} flags="" tag i sid t0 c0 t1 c1 tp cp ts tsp
	local chains="" p w
	[ "$item" != "$hz" ] && flags=$(echo "${item#*,}" | tr ',' ' ')
	for p in $flags; do
		"$PROFD" --help 2>&1 | grep -q -- "${p%%=*}" ||
			{ log "$NAME: $PROFD has no $p: skipping $item"; return 0; }
	done
	tag=$(echo "$item" | tr -c 'A-Za-z0-9\n' '_')
	w=$WORK/windows-$tag
	local before=""
	# shellcheck disable=SC2086
	[ -n "$BEFORE" ] && before=$($BEFORE)

	log "$NAME: $hz Hz${flags:+ $flags}, $JOBS x $WORKLOAD_DESC, ${SECONDS_RUN} s, windows of ${WINDOW} s; $(machine_info)"
	for i in $(seq 1 "$JOBS"); do
		"${WORKLOAD[@]}" $((SECONDS_RUN + WARMUP + 30)) &
		bg_add $!
		chains="$chains $!"
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
		# another tool on the machine may have switched the (global)
		# sysctl off; switch it on again and say so (that window is lost)
		if [ "$(sysctl -n kernel.bpf_stats_enabled)" != 1 ]; then
			sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null
			reenabled=$((reenabled + 1))
		fi
		read -r t1 c1 < <(prog_stats "$sid")
		ts=$(now_ns)
		# dt_s dcnt dns avg_ns
		awk -v dt=$((ts - tsp)) -v dc=$((c1 - cp)) -v dn=$((t1 - tp)) \
			'BEGIN { if (dc > 0) printf "%.3f %d %d %.1f\n", dt / 1e9, dc, dn, dn / dc }' >>"$w"
		tp=$t1; cp=$c1; tsp=$ts
	done
	local load_end; load_end=$(loadavg1)
	tails1=$(tail_counts "$WORK/tail-$tag")
	stop_profd
	for p in $chains; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; bg_forget "$p"; done

	local med avg p10 p90 wins rate samples
	med=$(awk '{ print $4 }' "$w" | median)
	p10=$(awk '{ print $4 }' "$w" | percentile 10)
	p90=$(awk '{ print $4 }' "$w" | percentile 90)
	wins=$(wc -l <"$w")
	avg=$(awk -v dn=$((t1 - t0)) -v dc=$((c1 - c0)) 'BEGIN { printf "%.1f", dc ? dn / dc : 0 }')
	rate=$(awk '{ c += $2; t += $1 } END { printf "%.1f", t ? c / t : 0 }' "$w")
	samples=$(sed -n 's/.*done: \([0-9]*\) samples.*/\1/p' "$WORK/profd-$tag.log")
	local checked=""
	if [ -n "$CHECK" ]; then
		# shellcheck disable=SC2086
		checked=$($CHECK "$WORK/out-$tag" | tr '\n' ' ')
		checked=${checked% }
	fi
	echo "RESULT $NAME hz=$hz flags=${flags:-none} median_ns=$med mean_ns=$avg p10_ns=$p10 p90_ns=$p90" \
		"windows=$wins runs=$((c1 - c0)) runs_per_s=$rate stats_reenabled=$reenabled" \
		"tailcalled_run_cnt_before=$tails0 tailcalled_run_cnt_after=$tails1" \
		"profd_samples_kept=${samples:-?} load1=$load_start..$load_end" \
		"${checked:+$checked }workload=$(echo "$WORKLOAD_DESC" | tr ' ' '+')" \
		"target_ns=$TARGET_NS $(awk -v m="$med" -v t=$TARGET_NS 'BEGIN { print (m <= t) ? "PASS" : "MISS" }')"
	[ -n "$before" ] && echo "#   before: $before"
	grep "interval\|done" "$WORK/profd-$tag.log" | sed 's/^/  /' >&2
	awk '{ print $4 }' "$w" | tr '\n' ' ' | sed 's/^/  window averages ns: /' >&2
	echo >&2
}

echo "$(machine_info)"
for item in $RUNS; do
	measure "$item"
done
