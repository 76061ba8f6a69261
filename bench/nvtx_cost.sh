#!/bin/bash
# bench/nvtx_cost.sh - what an NVTX push+pop pair costs, in ns, without
# the injection library, with it and no agent, and with profd attached.
#
# `nvtx_app flood` (tests/nvtx/apps/nvtx_app.c, NVTX v3 headers, no CUDA)
# makes push+pop pairs as fast as it can on NVTX_THREADS threads (default
# 1) and prints ns_per_pair (CLOCK_MONOTONIC around each thread's loop).
# Configurations, interleaved over NVTX_RUNS rounds (default 3), medians
# reported:
#   base       no NVTX_INJECTION64_PATH: NVTX's own no-op calls
#   no_agent   NVTX_INJECTION64_PATH=build/libprofd_inject.so, no profd:
#              the probe's semaphore is 0 (target: <= 20 ns a pair)
#   agent      under `profd exec` (which sets NVTX_INJECTION64_PATH): events
#              batched per thread, one uprobe trap per 64 events (target:
#              <= 1000 ns an event, i.e. 2000 ns a pair). A flood outruns
#              the reader, so most batches are counted as nvtx_events_lost;
#              the library's cost is the same either way.
# NVTX_ITER pairs per thread without an agent (default 20000000),
# NVTX_AGENT_ITER with one (default 1000000).
# Prints: RESULT nvtx_cost config=C threads=T ns_per_pair=N added_ns=N
#         [events_lost=N] (added_ns: over base)
source "$(dirname "$0")/lib.sh"

NVTX_APP=$ROOT/build/tests/nvtx/nvtx_app
INJECT_LIB=$ROOT/build/libprofd_inject.so

need_root_and_profd
[ -x "$NVTX_APP" ] && [ -f "$INJECT_LIB" ] ||
	die "build/tests/nvtx/nvtx_app and build/libprofd_inject.so are missing: run 'make' first"
bench_init
machine_info

threads=${NVTX_THREADS:-1}
iter=${NVTX_ITER:-20000000}
agent_iter=${NVTX_AGENT_ITER:-1000000}
configs="base no_agent agent"

# flood ITER - nvtx_app's result line, in the environment given.
flood() {
	"$NVTX_APP" flood --iter "$1" --threads "$threads"
}

# agent_flood OUTDIR - flood under `profd exec`; profd's stderr to OUTDIR.log.
agent_flood() {
	"$PROFD" exec --output-dir "$1" -- "$NVTX_APP" flood --iter "$agent_iter" \
		--threads "$threads" 2>"$1.log"
}

for round in $(seq "${NVTX_RUNS:-3}"); do
	for c in $configs; do
		case $c in
		base) line=$(unset NVTX_INJECTION64_PATH; flood "$iter") ;;
		no_agent) line=$(NVTX_INJECTION64_PATH=$INJECT_LIB flood "$iter") ;;
		agent)
			# profd exec points NVTX_INJECTION64_PATH at its copy of the library
			line=$(unset NVTX_INJECTION64_PATH; agent_flood "$WORK/$c-$round")
			grep -o "[ (]nvtx_events_lost=[0-9]*" "$WORK/$c-$round.log" | cut -d= -f2 |
				awk '{ s += $1 } END { print s + 0 }' >>"$WORK/$c.lost" ;;
		esac
		ns=$(echo "$line" | sed -n 's/^nvtx_app flood: .*ns_per_pair=\([0-9.]*\).*/\1/p')
		[ -n "$ns" ] || die "$c: no result from nvtx_app (see $WORK)"
		echo "$ns" >>"$WORK/$c.ns"
		log "round $round $c: $ns ns per push+pop pair"
	done
done
base=$(median <"$WORK/base.ns")
for c in $configs; do
	ns=$(median <"$WORK/$c.ns")
	extra=""
	[ -f "$WORK/$c.lost" ] && extra=" events_lost=$(median <"$WORK/$c.lost")"
	echo "RESULT nvtx_cost config=$c threads=$threads ns_per_pair=$ns added_ns=$(awk -v a="$ns" -v b="$base" 'BEGIN { printf "%.1f", a - b }')$extra"
done
