#!/usr/bin/env bash
# bench/exit_time.sh - how long whole-machine profd takes from SIGTERM to exit.
#
# EXIT_ROUNDS (3) times: start build/profd (defaults, 5 s profiles), and
# once it samples, run `nvtx_app flood` (build/tests/nvtx/nvtx_app, 100k
# push+pop pairs) through EXIT_COPIES (1) distinct copies of the injection
# library (each its own inode: profd attaches its probes to each copy;
# 0: no NVTX program, no probes attached), then SIGTERM and time the exit
# (the last profile written, the probes detached, the process gone).
# Prints one line per round and the median.
# Env: EXIT_ROUNDS (3), EXIT_COPIES (1), PROFD, BENCH_KEEP.
set -u
. "$(dirname "$0")/lib.sh"

ROUNDS=${EXIT_ROUNDS:-3}
COPIES=${EXIT_COPIES:-1}
NVTX_APP=$ROOT/build/tests/nvtx/nvtx_app
LIB=$(dirname "$PROFD")/libprofd_inject.so

need_root_and_profd
[ "$COPIES" = 0 ] || { [ -x "$NVTX_APP" ] && [ -f "$LIB" ]; } ||
	die "needs $NVTX_APP and $LIB (built with the CUDA headers)"
bench_init
machine_info
for c in $(seq 1 "$COPIES"); do
	mkdir -p "$WORK/lib$c" && cp "$LIB" "$WORK/lib$c/libprofd_inject.so"
done
: >"$WORK/exit_s"
for r in $(seq 1 "$ROUNDS"); do
	rm -rf "$WORK/out" && mkdir -p "$WORK/out"
	start_profd "$WORK/profd.log" --output-dir "$WORK/out" --profile-interval 5 -v
	sleep 2
	for c in $(seq 1 "$COPIES"); do
		NVTX_INJECTION64_PATH=$WORK/lib$c/libprofd_inject.so \
			"$NVTX_APP" flood --iter 100000 >/dev/null
		sleep 1
	done
	sleep 1
	attached=$(grep -c "GPU probes attached" "$WORK/profd.log")
	t0=$(date +%s.%N)
	kill -TERM "$PROFD_PID"
	wait "$PROFD_PID"
	rc=$?
	t1=$(date +%s.%N)
	bg_forget "$PROFD_PID"
	s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	echo "$s" >>"$WORK/exit_s"
	echo "round $r: copies $COPIES ($attached attached), exit status $rc, exit ${s} s"
done
echo "median exit: $(median <"$WORK/exit_s") s over $ROUNDS rounds, $COPIES library copies"
