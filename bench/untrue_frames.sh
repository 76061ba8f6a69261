#!/usr/bin/env bash
# bench/untrue_frames.sh - how many callers in whole-machine profiles are
# untrue (issue 16: no wrong frames; the target is 0).
#
# UNTRUE_ROUNDS (3) times: run gcc (compiling profd sources), xz
# (compressing libc), python3 (json, re), perl (hashes, regexes) and
# sqlite3 (a recursive query), each in a loop, plus
# tests/workloads/fakeframe.c (a leaf whose frame pointer leads to a
# comment's bytes, data, and code not after a call); run profd
# system-wide (--no-gpu, 99 Hz) for UNTRUE_SECONDS (5); then check every
# caller of every stack on the mapped files with tests/untrue_frames.py,
# an independent decoder reading Google's pprof -raw output. Prints one
# JSON line of figures per round (callers_true, callers_untrue,
# skipped_*) and each untrue frame.
# Env: UNTRUE_ROUNDS (3), UNTRUE_SECONDS (5), PPROF (build/tools/pprof),
# PROFD, BENCH_KEEP.
set -u
. "$(dirname "$0")/lib.sh"

ROUNDS=${UNTRUE_ROUNDS:-3}
SECONDS_=${UNTRUE_SECONDS:-5}
PPROF=${PPROF:-$ROOT/build/tools/pprof}

need_root_and_profd
[ -x "$PPROF" ] || die "$PPROF missing (tests build it: tests/conftest.py pprof)"
bench_init
machine_info
$CC -O2 -fno-asynchronous-unwind-tables -fno-unwind-tables -fomit-frame-pointer \
	-pthread -o "$WORK/fakeframe" "$ROOT/tests/workloads/fakeframe.c" ||
	die "cannot build fakeframe"
for r in $(seq 1 "$ROUNDS"); do
	rm -rf "$WORK/out"
	log "round $r: ${SECONDS_} s"
	/usr/bin/python3 "$ROOT/tests/untrue_frames.py" --run "$PROFD" "$PPROF" \
		"$SECONDS_" "$WORK/out" "$WORK/fakeframe"
	echo "round $r: exit $?"
done
