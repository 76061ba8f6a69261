#!/bin/sh
# run-demo.sh - what `make run` runs: profd records this whole machine
# for SECONDS while two small bundled programs work (demo/server.c, a C
# call tree built without frame pointers; demo/train.py, pure Python), so
# a new user's first profile shows native and Python stacks even on an
# idle machine. DEMO=0 records the machine alone.
# Usage: sh scripts/run-demo.sh [SECONDS [OUTPUT_DIR]]   (from the repository root)
set -u
secs=${1:-10}
out=${2:-profd-out}
pids=""
if [ "${DEMO:-1}" != 0 ]; then
	# they run a little longer than profd, which takes seconds to load BPF
	build/demo/server $((secs + 10)) & pids="$!"
	if command -v python3 >/dev/null; then
		python3 demo/train.py $((secs + 10)) & pids="$pids $!"
	fi
	echo "make run: recording the whole machine for ${secs} s while two demo" \
	     "programs run (build/demo/server: C; demo/train.py: Python);" \
	     "\`make run DEMO=0\` records without them" >&2
fi
build/profd --duration "$secs" --output-dir "$out"
rc=$?
[ -n "$pids" ] && kill $pids 2>/dev/null
wait
exit $rc
