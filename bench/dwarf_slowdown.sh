#!/usr/bin/env bash
# bench/dwarf_slowdown.sh - how much a CPU-bound program WITHOUT frame
# pointers slows down while profd unwinds it with DWARF tables, next to
# perf's DWARF mode.
#
# bench/cpuwork.c (fixed work, one worker per CPU; main -> run_worker ->
# stage_a -> stage_b -> stage_c -> kernel_loop) rebuilt -O2
# -fomit-frame-pointer, so profd needs its .eh_frame tables. Configurations
# (as bench/slowdown.sh, 99 Hz):
#   base        no profiler
#   profd-99    build/profd --sampling-frequency 99 (system-wide; DWARF
#               unwinding is the default)
#   perf-dwarf  perf record -e cpu-clock -F 99 -a --call-graph dwarf
#               (copies 8 KiB of user stack per sample; unwound later, by
#               perf report - not part of this cost)
#   base-again  no profiler again (A/A control: the noise floor)
# Each repetition runs every configuration back to back, rotated by one
# per repetition; medians over the repetitions and their ratios to base
# (interleaved_runs / interleaved_report in bench/lib.sh).
# The profiler is started and sampling before the timed run and stopped
# after it. perf.data's size is recorded (bytes and MiB per second of
# recording) before it is deleted; profd's output directory size and the
# CPU time of the profd process during the timed run (user + system, in
# ms, from /proc/PID/stat; its start-up is before the run) too.
# Before the first repetition the script waits (up to SLOW_WAIT s) until
# no other profiler or benchmark runs.
#
# Env: SLOW_REPS (3), SLOW_ROUNDS (600), SLOW_JOBS (nproc), SLOW_WAIT (90;
#      DWARF_IGNORE_PIDS: pids of other profilers not to wait for),
#      SLOW_CONFIGS ("base profd-99 perf-dwarf base-again").
# Output: "RESULT dwarf_slowdown ..." per configuration. Target: profd
# wall_ratio <= 1.01.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

REPS=${SLOW_REPS:-3}
ROUNDS=${SLOW_ROUNDS:-600}
JOBS=${SLOW_JOBS:-$(nproc)}
MAXWAIT=${SLOW_WAIT:-90}
CONFIGS=${SLOW_CONFIGS:-base profd-99 perf-dwarf base-again}

need_root_and_profd
case " $CONFIGS " in *" perf-"*) need_tool perf ;; esac
dwarf_bench_init
build_dwarf_workload cpuwork "$BENCH_DIR/cpuwork.c"
# no frame pointer setup anywhere in the hot chain
objdump -d "$WORK/cpuwork" | awk '/<(kernel_loop|stage_[abc]|run_worker)>:/ { f = 1; n = 0; next }
	f && /mov +%rsp,%rbp/ { print "frame pointer set up: " $0; bad = 1 } f && ++n > 4 { f = 0 }
	END { exit bad }' || die "cpuwork still keeps frame pointers"

run_config() {
	local out
	case $1 in
	base|base-again) ;;
	profd-*) start_profd "$WORK/profd.log" --sampling-frequency "${1#profd-}" \
			--output-dir "$WORK/profd-out"
		PROFD_CPU0=$(proc_cpu_ms "$PROFD_PID") ;;
	perf-dwarf) start_perf 99 --call-graph dwarf ;;
	*) die "unknown configuration $1" ;;
	esac
	"$WORK/cpuwork" "$ROUNDS" "$JOBS" >"$WORK/cpuwork.out" || die "cpuwork failed"
	out=$(cat "$WORK/cpuwork.out")
	case $1 in
	profd-*) # profd's own CPU time during the timed run
		echo "$(( $(proc_cpu_ms "$PROFD_PID") - PROFD_CPU0 ))" >>"$WORK/profd_cpu_ms"
		stop_profd
		du -sb "$WORK/profd-out" | awk '{ print $1 }' >>"$WORK/profd_sizes"
		grep -h "done" "$WORK/profd.log" >>"$WORK/profd_done"
		rm -rf "$WORK/profd-out" ;;
	perf-*) stop_perf ;;
	esac
	echo "$1 $(echo "$out" | sed 's/wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\).*/\1 \2/') $(loadavg1)" >>"$WORK/times"
}

wait_quiet "$MAXWAIT"
echo "$(machine_info)"
echo "# $(profd_info)"
echo "# before: $QUIET_NOTE"
log "dwarf_slowdown: cpuwork (no FP) $ROUNDS rounds x $JOBS jobs, $REPS repetitions of: $CONFIGS"
interleaved_runs "$REPS" "$CONFIGS" run_config
OTHERS_END=$(other_profilers | tr '\n' ';' | cut -c1-200)

# extra_words CONFIG - the profiler's output size and CPU time.
extra_words() {
	case $1 in
	perf-*) awk '{ b += $1; s += $2; n++ } END { if (n) printf "perf_data_mib=%.1f perf_data_mib_per_s=%.2f", b / n / 1048576, s ? b / s / 1048576 : 0 }' "$WORK/perf_sizes" ;;
	profd-*) echo "$(awk '{ b += $1; n++ } END { if (n) printf "profd_out_kib=%.1f", b / n / 1024 }' "$WORK/profd_sizes")" \
		"profd_cpu_ms=$(paste -sd, "$WORK/profd_cpu_ms")" ;;
	esac
}
interleaved_report dwarf_slowdown base "$CONFIGS" "jobs=$JOBS rounds=$ROUNDS" extra_words
echo "# other profilers/benchmarks at the end: [$OTHERS_END]"
sed 's/^/#   /' "$WORK/profd_done" 2>/dev/null
