#!/bin/bash
# bench/nvtx_spans.sh - NVTX spans per second profd sustains end to end
# without loss: nvtx_app (library batches -> USDT -> BPF -> cupti_events
# ringbuf -> reader -> NVTX tracer -> batcher -> OTLP/HTTP, gzip) to a
# receiver that only counts (bench/otlp_null_receiver.py), so profd's
# side is what is measured.
#
# `nvtx_app flood --rate R --threads 2` makes R push+pop pairs (= spans)
# per second on each of 2 threads for NVTX_SECONDS (default 10). For each
# total rate in NVTX_RATES (default "100000 200000 300000 400000"):
# spans made, spans profd turned into spans (nvtx_spans), spans the
# endpoint took (otlp_items_sent minus profile samples), every loss counter,
# and profd's CPU time.
# Prints: RESULT nvtx_spans rate=R made=N spans=N sent=N lost=N cpu_s=S
source "$(dirname "$0")/lib.sh"

NVTX_APP=$ROOT/build/tests/nvtx/nvtx_app

need_root_and_profd
[ -x "$NVTX_APP" ] || die "build/tests/nvtx/nvtx_app is missing: run 'make' first"
bench_init
machine_info

secs=${NVTX_SECONDS:-10}
port=$((20000 + RANDOM % 20000))
python3 "$(dirname "$0")/otlp_null_receiver.py" "$port" >"$WORK/receiver.log" &
receiver=$!
trap 'kill $receiver 2>/dev/null; bench_cleanup' EXIT
sleep 1

for rate in ${NVTX_RATES:-100000 200000 300000 400000}; do
	per=$((rate / 2))
	log "rate $rate spans/s for $secs s"
	/usr/bin/time -f "cpu_s=%U+%S" -o "$WORK/time-$rate" \
		"$PROFD" exec --otlp-endpoint "http://127.0.0.1:$port" \
		--otlp-protocol http/protobuf --output-dir "$WORK/out-$rate" -- \
		"$NVTX_APP" flood --threads 2 --rate "$per" --iter $((per * secs)) \
		>"$WORK/app-$rate" 2>"$WORK/profd-$rate.log"
	made=$((per * secs * 2))
	spans=$(sed -n 's/^profd: OTLP: \([0-9]*\) spans.*/\1/p' "$WORK/profd-$rate.log")
	sent=$(sed -n 's/^profd: OTLP: .* \([0-9]*\) items sent.*/\1/p' "$WORK/profd-$rate.log")
	lost=$(grep -o "[ (]\(nvtx_events_lost\|nvtx_queue_full\|otlp_items_dropped\|nvtx_library_dropped\)=[0-9]*" \
		"$WORK/profd-$rate.log" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }')
	cpu=$(sed -n 's/^cpu_s=//p' "$WORK/time-$rate" | awk -F+ '{ print $1 + $2 }')
	echo "RESULT nvtx_spans rate=$rate made=$made spans=${spans:-0} sent=${sent:-0} lost=$lost cpu_s=$cpu"
done
