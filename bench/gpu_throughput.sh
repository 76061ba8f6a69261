#!/bin/bash
# bench/gpu_throughput.sh - kernel timings per second through the whole GPU
# path without loss: CUPTI activity buffers -> the injection library's
# profd:kernels probe -> BPF -> cupti_events ringbuf -> correlation with the
# launch stack -> gpu-*.pb.gz. Target (issue 5): >= 1,000,000 per second.
#
# The mock CUDA stack (tests/gpu/mock) plays the GPU: `gpu_app graphflood`
# launches a graph of 1000 tiny kernels over and over at a paced rate, so
# there is one launch probe per 1000 kernel records. For each rate, every
# kernel must be in the profile (stat.gpu_kernels) with nothing counted lost.
# Env: GPU_RATES (kernels/s, default "1000000 2000000 4000000 8000000"),
# GPU_SECONDS (per rate, default 3).
# Prints: RESULT gpu_throughput rate=R kernels=N in_profile=N lost=N ok=0|1
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpu_lib.sh"
gpu_bench_init

seconds=${GPU_SECONDS:-3}
best=0
for rate in ${GPU_RATES:-1000000 2000000 4000000 8000000}; do
	out=$WORK/rate-$rate
	line=$(profd_exec "$out" graphflood "$seconds" --rate "$rate" --exit-delay-ms 500 |
	       grep '^gpu_app graphflood')
	kernels=$(app_value "$line" kernels)
	achieved=$(app_value "$line" kernels_per_sec)
	in_profile=$(grep -o "interval [0-9]*: [0-9]* GPU kernels" "$out.log" | awk "{ s += \$3 } END { print s + 0 }")
	lost=$(( $(status_counter "$out.log" gpu_kernels_lost) + \
		 $(status_counter "$out.log" gpu_records_dropped) ))
	ok=0
	[ "$in_profile" = "$kernels" ] && [ "$lost" = 0 ] && ok=1
	[ $ok = 1 ] && [ "$achieved" -gt "$best" ] && best=$achieved
	echo "RESULT gpu_throughput rate=$rate achieved=$achieved kernels=$kernels in_profile=$in_profile lost=$lost ok=$ok"
done
echo "RESULT gpu_throughput_best kernels_per_sec_without_loss=$best target=1000000"
