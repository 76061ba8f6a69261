#!/bin/bash
# bench/gpu_launch_cost.sh - what the injection library adds to each kernel
# launch, in ns, with no agent attached and with profd attached.
#
# `gpu_app flood` launches 1-us kernels through the mock driver as fast as
# it can for GPU_SECONDS (default 2) and prints launches per second; the
# cost per launch is 1e9 / that rate. Configurations, interleaved over
# GPU_RUNS rounds (default 3), medians reported:
#   base         no injection library (the mock's own cost)
#   no_agent     CUDA_INJECTION64_PATH set, no profd: probes' semaphores are 0
#   agent        under `profd exec`: every launch traps into the launch
#                probe; stacks captured for 1000 launches/s per thread
#                (the library's default token bucket), the rest without
#   agent_stacks under `profd exec` with PROFD_LAUNCH_STACK_RATE=0: a CPU
#                stack for every launch
# Prints: RESULT gpu_launch_cost config=C ns_per_launch=N added_ns=N
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpu_lib.sh"
gpu_bench_init

seconds=${GPU_SECONDS:-2}
configs="base no_agent agent agent_stacks"
for round in $(seq "${GPU_RUNS:-3}"); do
	for c in $configs; do
		case $c in
		base) line=$(gpu_env "$GPU_APP" flood "$seconds") ;;
		no_agent) line=$(CUDA_INJECTION64_PATH=$INJECT_LIB gpu_env "$GPU_APP" flood "$seconds") ;;
		agent) line=$(profd_exec "$WORK/$c-$round" flood "$seconds") ;;
		agent_stacks) line=$(PROFD_LAUNCH_STACK_RATE=0 profd_exec "$WORK/$c-$round" flood "$seconds") ;;
		esac
		rate=$(app_value "$(echo "$line" | grep '^gpu_app flood')" launches_per_sec)
		[ -n "$rate" ] || die "$c: no result from gpu_app (see $WORK)"
		awk -v r="$rate" 'BEGIN { printf "%.1f\n", 1e9 / r }' >>"$WORK/$c.ns"
		log "round $round $c: $rate launches/s"
	done
done
base=$(median <"$WORK/base.ns")
for c in $configs; do
	ns=$(median <"$WORK/$c.ns")
	echo "RESULT gpu_launch_cost config=$c ns_per_launch=$ns added_ns=$(awk -v a="$ns" -v b="$base" 'BEGIN { printf "%.1f", a - b }')"
done
