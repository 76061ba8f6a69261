#!/usr/bin/env bash
# bench/slowdown.sh - how much a CPU-bound program slows down while profiled.
#
# Times bench/cpuwork.c (fixed work, frame pointers, one worker per CPU by
# default so the profiler's own CPU time competes with the workload) with:
#   base        no profiler
#   profd-19    build/profd --sampling-frequency 19 (system-wide)
#   profd-99    build/profd --sampling-frequency 99
#   perf-19     perf record -g -e cpu-clock -F 19 -a
#   perf-99     perf record -g -e cpu-clock -F 99 -a
#   base-again  no profiler again: an A/A control, its ratio to base is
#               the noise floor of the machine at that moment
# Each repetition runs every configuration back to back (interleaved, so a
# change in background load hits all of them alike), starting one
# configuration further each time (so no configuration is always first);
# the median over the repetitions is reported, with its ratio to the
# baseline median, and the best (minimum) run, with its ratio to the best
# baseline run (the loop and the report: interleaved_runs and
# interleaved_report in bench/lib.sh).
# The profiler is started and sampling before the timed run begins, and
# stopped after it ends; cpuwork times itself (wall_s) and also reports
# its CPU time (cpu_s), which is much less sensitive to other tenants.
#
# Env: SLOWDOWN_REPS (5), SLOWDOWN_ROUNDS (400: ~2.1 s of CPU per worker on
#      the reference machine), SLOWDOWN_JOBS (nproc),
#      SLOWDOWN_CONFIGS ("base profd-19 profd-99 perf-19 perf-99 base-again").
# Output: one "RESULT slowdown ..." line per configuration.
set -u
. "$(dirname "$0")/lib.sh"

REPS=${SLOWDOWN_REPS:-5}
ROUNDS=${SLOWDOWN_ROUNDS:-400}
JOBS=${SLOWDOWN_JOBS:-$(nproc)}
CONFIGS=${SLOWDOWN_CONFIGS:-base profd-19 profd-99 perf-19 perf-99 base-again}

need_root_and_profd
case " $CONFIGS " in *" perf-"*) need_tool perf ;; esac
bench_init
build_workload cpuwork "$BENCH_DIR/cpuwork.c"


# run_config NAME - one timed run under NAME; appends "NAME wall_s cpu_s"
# to $WORK/times. (Not in a $(...) subshell: the EXIT trap must see PIDs.)
run_config() {
	local out
	case $1 in
	base|base-again) ;;
	profd-*) start_profd "$WORK/profd.log" --sampling-frequency "${1#profd-}" \
			--output-dir "$WORK/profd-out" ;;
	perf-*) start_perf "${1#perf-}" -g ;;
	*) die "unknown configuration $1" ;;
	esac
	"$WORK/cpuwork" "$ROUNDS" "$JOBS" >"$WORK/cpuwork.out" || die "cpuwork failed"
	out=$(cat "$WORK/cpuwork.out")
	case $1 in
	profd-*) stop_profd; rm -rf "$WORK/profd-out" ;;
	perf-*) stop_perf ;;
	esac
	echo "$1 $(echo "$out" | sed 's/wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\).*/\1 \2/')" >>"$WORK/times"
}

echo "$(machine_info)"
log "slowdown: cpuwork $ROUNDS rounds x $JOBS jobs, $REPS repetitions of: $CONFIGS"
interleaved_runs "$REPS" "$CONFIGS" run_config
interleaved_report slowdown base "$CONFIGS" "jobs=$JOBS rounds=$ROUNDS"
