#!/usr/bin/env bash
# bench/python_slowdown.sh - how much a pure-Python CPU-bound program slows
# down while profd (99 Hz, Python unwinding on) profiles it, next to austin
# at the same rate.
#
# Workload: bench/workloads_python/pybench.py ROUNDS JOBS: JOBS forked
# workers (one per CPU by default, so the profiler's own CPU time competes
# with the workload), each running ROUNDS rounds of an n-body simulation
# through <module> -> main -> worker -> bench_round -> simulate -> advance
# (fixed work); it times itself (wall_s: first fork to last exit; cpu_s:
# the workers' CPU time).
# Two sets, each timed with bench/lib.sh's interleaved_runs (every
# configuration back to back, the start rotated by one per repetition,
# medians over the repetitions and their ratios to base):
#   py39   pyenv's CPython 3.9 (austin 1.0.1 reads CPython <= 3.9 only):
#            base        no profiler
#            profd-99    build/profd --sampling-frequency 99 (system-wide)
#            austin-99   austin -C -i 10101 PYTHON pybench.py ... (austin
#                        starts the interpreter itself and follows the
#                        forked workers; 10101 us ~ 99 Hz)
#            base-again  no profiler again: the A/A control (noise floor)
#   py311  Debian's /usr/bin/python3.11: base profd-99 base-again
# profd is started, and sampling, before the timed run and stopped after
# it; austin samples from the interpreter's start (pybench times only its
# own work). The profiler's CPU time during the run is reported
# (profiler_cpu_ms): profd's from /proc/PID/stat; austin's is read by
# pybench from its parent's /proc/PPID/stat just before it exits.
#
# Env: PYSLOW_REPS (5), PYSLOW_JOBS (nproc), PYSLOW_SETS ("py39 py311"),
#      PYSLOW_PY39 (the newest /root/.pyenv/versions/3.9.*/bin/python3.9)
#      and PYSLOW_ROUNDS_PY39 (100: ~2.5 s of CPU per worker here),
#      PYSLOW_PY311 (/usr/bin/python3.11), PYSLOW_ROUNDS_PY311 (250),
#      PYSLOW_CONFIGS_PY39 ("base profd-99 austin-99 base-again"),
#      PYSLOW_CONFIGS_PY311 ("base profd-99 base-again").
#      A set whose interpreter is missing is skipped (austin-* configs are
#      dropped when austin is missing). ~2.5 min on 2 CPUs.
# Output: one "RESULT python_slowdown config=... set=SET python=VERSION ..."
# line per configuration and set.
set -u
. "$(dirname "$0")/lib.sh"

REPS=${PYSLOW_REPS:-5}
JOBS=${PYSLOW_JOBS:-$(nproc)}
SETS=${PYSLOW_SETS:-py39 py311}
BENCH_PY=$BENCH_DIR/workloads_python/pybench.py

need_root_and_profd
bench_init
[ -f "$BENCH_PY" ] || die "$BENCH_PY is missing"

# run_config NAME - one timed run; appends "NAME wall_s cpu_s
# profiler_cpu_ms" to $BENCH_TIMES.
run_config() {
	local prof_ms=0 cpu0 us line
	case $1 in
	base|base-again)
		"$PY" "$BENCH_PY" "$ROUNDS" "$JOBS" >"$WORK/py.out" ;;
	profd-*)
		start_profd "$WORK/profd.log" --sampling-frequency "${1#profd-}" \
			--output-dir "$WORK/profd-out"
		cpu0=$(proc_cpu_ms "$PROFD_PID")
		"$PY" "$BENCH_PY" "$ROUNDS" "$JOBS" >"$WORK/py.out"
		prof_ms=$(( $(proc_cpu_ms "$PROFD_PID") - cpu0 ))
		stop_profd
		grep -h "done" "$WORK/profd.log" >>"$WORK/profd_done"
		rm -rf "$WORK/profd-out" ;;
	austin-*)
		us=$(( (1000000 + ${1#austin-} / 2) / ${1#austin-} ))
		austin -C -i "$us" -o "$WORK/austin.out" \
			"$PY" "$BENCH_PY" "$ROUNDS" "$JOBS" >"$WORK/py.out" 2>"$WORK/austin.log"
		prof_ms=$(sed -n 's/.*parent_cpu_s=\([0-9.]*\).*/\1/p' "$WORK/py.out" |
			awk '{ printf "%d", $1 * 1000 }')
		echo "$(wc -l <"$WORK/austin.out") $(grep -o 'Error rate.*' "$WORK/austin.log" | tr -d '\n')" \
			>>"$WORK/austin_samples" ;;
	*) die "unknown configuration $1" ;;
	esac
	line=$(sed -n 's/^wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\) .*/\1 \2/p' "$WORK/py.out")
	[ -n "$line" ] || { cat "$WORK/py.out" "$WORK/austin.log" 2>/dev/null >&2; die "pybench failed under $1"; }
	echo "$1 $line $prof_ms" >>"$BENCH_TIMES"
}

# extra_words CONFIG - the profiler's CPU time per run (ms) and its median
# as a share of the workers' CPU time.
extra_words() {
	local ms cpu
	case $1 in
	base|base-again) return 0 ;;
	esac
	ms=$(times_col "$1" 4 | median)
	cpu=$(times_col "$1" 3 | median)
	printf "profiler_cpu_ms=%s profiler_cpu_pct_of_work=%s" "$(times_col "$1" 4 | paste -sd, -)" \
		"$(awk -v a="$ms" -v b="$cpu" 'BEGIN { printf "%.2f", (b > 0) ? a / 10 / b : 0 }')"
	case $1 in
	austin-*) printf " austin_samples=%s" "$(awk '{ print $1 }' "$WORK/austin_samples" | paste -sd, -)" ;;
	esac
	echo
}

echo "$(machine_info)"
echo "# profd: $PROFD mtime=$(date -u -r "$PROFD" +%FT%TZ); austin: $(austin --version 2>/dev/null | head -n 1 || echo none)"
for set in $SETS; do
	case $set in
	py39)
		PY=${PYSLOW_PY39:-$(ls -d /root/.pyenv/versions/3.9.*/bin/python3.9 2>/dev/null | sort -V | tail -n 1)}
		ROUNDS=${PYSLOW_ROUNDS_PY39:-100}
		CONFIGS=${PYSLOW_CONFIGS_PY39:-base profd-99 austin-99 base-again} ;;
	py311)
		PY=${PYSLOW_PY311:-/usr/bin/python3.11}
		ROUNDS=${PYSLOW_ROUNDS_PY311:-250}
		CONFIGS=${PYSLOW_CONFIGS_PY311:-base profd-99 base-again} ;;
	*) die "unknown set $set (py39, py311)" ;;
	esac
	if [ -z "$PY" ] || [ ! -x "$PY" ]; then
		log "python_slowdown: no interpreter for $set: skipped"
		continue
	fi
	if ! command -v austin >/dev/null; then
		CONFIGS=$(echo $CONFIGS | tr ' ' '\n' | grep -v '^austin-' | tr '\n' ' ')
		case $set in py39) log "python_slowdown: austin not found: no austin-* configurations" ;; esac
	fi
	ver=$("$PY" -c 'import platform; print(platform.python_version())') || die "$PY does not run"
	BENCH_TIMES=$WORK/times-$set
	: >"$BENCH_TIMES"
	log "python_slowdown: $set ($PY, $ver): pybench $ROUNDS rounds x $JOBS jobs, $REPS repetitions of: $CONFIGS"
	interleaved_runs "$REPS" "$CONFIGS" run_config
	interleaved_report python_slowdown base "$CONFIGS" "set=$set python=$ver jobs=$JOBS rounds=$ROUNDS" extra_words
done
sed 's/^/#   /' "$WORK/profd_done" 2>/dev/null
