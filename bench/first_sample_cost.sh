#!/usr/bin/env bash
# bench/first_sample_cost.sh - issue 16, figure 3: what profd's
# first-sample path costs in an exec storm: ringbuf bytes a second and
# the agent's CPU.
#
# bench/execstorm.c starts CS_RATE processes a second for CS_SECONDS
# (each a fresh exec of itself that spins CS_CHILD_US us of CPU and exits)
# under whole-machine profd (--no-gpu, --sampling-frequency HZ,
# --profile-interval 1, --http-address for /metrics). Configurations, run
# CS_REPS times interleaved (each repetition starting with the next one):
#   none         the storm alone (its own rate and wall time)
#   profd        profd with its default flags
#   profd_extra  profd with $PROFD_EXTRA_ARGS added (e.g. the first-sample
#                path switched off, `--stack-copy-bytes 0`, once a build
#                has it); with PROFD_EXTRA_ARGS empty it is an A/A control
#                of `profd`, the noise floor
# Per run, over the storm only (profd started, 2 s settled, then read
# before and after the storm):
#   agent_cpu_ms_per_s   profd's CPU (all threads' schedstat ns) / storm s
#   records_per_s        sample records (bpf_samples - idle_skipped, from
#                        /metrics) / s
#   avg_frames           frames per sample in three of the storm's 1 s
#                        profiles (pprof -traces; inlined frames counted;
#                        every process on the machine, so it moves with
#                        what else runs)
#   ringbuf_bytes_per_s_est  records x (8 + 64 + 8 x avg_frames) + the
#                        exec and exit events (8 + 32 bytes each, two per
#                        exec) / s: an estimate - profd has no ringbuf byte
#                        counter today; a /metrics counter whose name
#                        holds "ringbuf" and ends in _bytes_total (or
#                        _records_total) is reported as measured when a
#                        build has one (metric_NAME_per_s). A build with
#                        the first-sample path (stack copies) counts the
#                        user-stack bytes its records carried,
#                        stat.stack_copy_bytes: added to the estimate and
#                        reported (stack_copy_bytes_per_s, and every
#                        other stack_copy_* counter per s; these extra
#                        counters: the first repetition's, not a median)
#   maps_reads_per_s, unwind_build_ms_per_s  /metrics deltas / s
#   execs_per_s, storm_wall_s  what the storm achieved (on a loaded
#                        2-CPU machine it falls well short of CS_RATE)
# Each figure is the median over the repetitions.
#
# Env: CS_RATE (500), CS_SECONDS (8), CS_CHILD_US (1000), CS_REPS (2),
#      CS_HZ (199), CS_WAIT (max s to wait for other profilers, 90),
#      PROFD_EXTRA_ARGS, PROFD, PPROF, BENCH_KEEP=1.
# Output: "RESULT first_sample_cost config=C ..." per configuration.
set -u
. "$(dirname "$0")/exact_lib.sh"

RATE=${CS_RATE:-500}
SECS=${CS_SECONDS:-8}
CHILD_US=${CS_CHILD_US:-1000}
REPS=${CS_REPS:-2}
HZ=${CS_HZ:-199}
MAXWAIT=${CS_WAIT:-90}
PORT=$((17100 + $$ % 800))

exact_need_tools
need_tool curl
dwarf_bench_init
$CC -O2 -o "$WORK/execstorm" "$BENCH_DIR/execstorm.c" || die "cannot build bench/execstorm.c"

cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}
# metrics FILE - /metrics into FILE as "name{labels} value" lines
metrics() {
	curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" | grep -v '^#' >"$1" ||
		die "cannot read http://127.0.0.1:$PORT/metrics"
}
# mdelta A B NAME - the change of metric NAME (exact, labels included)
mdelta() {
	awk -v n="$3" 'NR == FNR { if ($1 == n) a = $2; next } $1 == n { b = $2 }
		END { printf "%.6f", b - a }' "$1" "$2"
}
# avg_frames PROFILE... - frames per sample over the profiles
avg_frames() {
	local f
	for f in "$@"; do trace_stacks "$f"; done |
		awk '{ s += $1; fr += $1 * $2 } END { printf "%.2f", s ? fr / s : 0 }'
}

# run_config CONFIG - one storm; appends one line to $WORK/runs:
# "CONFIG execs_per_s storm_wall_s agent_cpu_ms_per_s records_per_s
#  avg_frames bytes_per_s_est maps_reads_per_s unwind_build_ms_per_s
#  [metric_NAME_per_s=V ...]"
RUN_N=0
run_config() {
	local c=$1 out execs wall c0 c1 extra="" name
	RUN_N=$((RUN_N + 1))
	if [ "$c" = none ]; then
		out=$("$WORK/execstorm" "$RATE" "$SECS" "$CHILD_US")
		echo "$c $(echo "$out" | awk '{ printf "%.1f %.3f", $6, $4 }') - - - - - -" >>"$WORK/runs"
		return
	fi
	[ "$c" = profd_extra ] && extra=$PROFD_EXTRA_ARGS
	# shellcheck disable=SC2086
	start_profd "$WORK/profd.$RUN_N.log" --no-gpu --sampling-frequency "$HZ" \
		--profile-interval 1 --output-dir "$WORK/out.$RUN_N" \
		--http-address "127.0.0.1:$PORT" $extra
	sleep 2
	metrics "$WORK/m0"
	c0=$(cpu_ns "$PROFD_PID")
	out=$("$WORK/execstorm" "$RATE" "$SECS" "$CHILD_US")
	c1=$(cpu_ns "$PROFD_PID")
	metrics "$WORK/m1"
	stop_profd
	execs=$(echo "$out" | awk '{ print $2 }')
	wall=$(echo "$out" | awk '{ print $4 }')
	local samples idle frames maps build more=""
	samples=$(mdelta "$WORK/m0" "$WORK/m1" 'profd_events_total{name="bpf_samples"}')
	idle=$(mdelta "$WORK/m0" "$WORK/m1" 'profd_events_total{name="idle_skipped"}')
	maps=$(mdelta "$WORK/m0" "$WORK/m1" profd_maps_reads_total)
	build=$(mdelta "$WORK/m0" "$WORK/m1" profd_unwind_build_seconds_total)
	# three 1 s profiles from the storm's middle (pprof is slow)
	frames=$(avg_frames $(ls "$WORK/out.$RUN_N"/cpu-*.pb.gz | sort | tail -n 6 | head -n 3))
	for name in $(awk '$1 ~ /ringbuf/ && $1 ~ /_(bytes|records)_total/ { print $1 }' "$WORK/m1"); do
		more="$more metric_$(echo "$name" | tr -c 'a-zA-Z0-9_\n' '_')_per_s=$(awk -v d="$(mdelta "$WORK/m0" "$WORK/m1" "$name")" -v w="$wall" 'BEGIN { printf "%.0f", d / w }')"
	done
	# the first-sample path's counters (stat.stack_copy_*, partial.stack_copy_*)
	for name in $(awk '$1 ~ /^profd_(events|partial)_total\{(name|reason)="stack_copy/ { print $1 }' "$WORK/m1"); do
		more="$more $(echo "$name" | sed 's/.*="\(.*\)"}/\1/')_per_s=$(awk -v d="$(mdelta "$WORK/m0" "$WORK/m1" "$name")" -v w="$wall" 'BEGIN { printf "%.0f", d / w }')"
	done
	copy=$(mdelta "$WORK/m0" "$WORK/m1" 'profd_events_total{name="stack_copy_bytes"}')
	awk -v c="$c" -v n="$execs" -v w="$wall" -v cpu=$((c1 - c0)) -v s="$samples" -v i="$idle" \
		-v f="$frames" -v m="$maps" -v b="$build" -v more="$more" -v copy="$copy" 'BEGIN {
		rec = s - i
		printf "%s %.1f %.3f %.1f %.1f %s %.0f %.1f %.1f%s\n", c, n / w, w, cpu / 1e6 / w, rec / w, f,
			(rec * (72 + 8 * f) + 2 * n * 40 + copy) / w, m / w, b * 1000 / w, more }' >>"$WORK/runs"
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$WORK/out.$RUN_N"
}

wait_quiet "$MAXWAIT"
echo "$(machine_info)"
echo "# $(profd_info) extra_args=[$PROFD_EXTRA_ARGS]"
echo "# before: $QUIET_NOTE"
LOAD_START=$(loadavg1)
: >"$WORK/runs"
CONFIGS="none profd profd_extra"
for r in $(seq 1 "$REPS"); do
	order=$(echo $CONFIGS | tr ' ' '\n' | awk -v k=$(( (r - 1) % 3 )) '{ c[NR - 1] = $0 }
		END { for (i = 0; i < 3; i++) print c[(i + k) % 3] }')
	for c in $order; do
		run_config "$c"
		log "  rep $r $(tail -n 1 "$WORK/runs") (load1 $(loadavg1))"
	done
done
LOAD_END=$(loadavg1)

col() { awk -v c="$1" -v k="$2" '$1 == c && $k != "-" { print $k }' "$WORK/runs" | median; }
for c in $CONFIGS; do
	line="RESULT first_sample_cost config=$c"
	[ "$c" = profd_extra ] && line="$line extra_args=[${PROFD_EXTRA_ARGS}]"
	line="$line execs_per_s=$(col "$c" 2) storm_wall_s=$(col "$c" 3)"
	if [ "$c" != none ]; then
		line="$line agent_cpu_ms_per_s=$(col "$c" 4) records_per_s=$(col "$c" 5)"
		line="$line avg_frames=$(col "$c" 6) ringbuf_bytes_per_s_est=$(col "$c" 7)"
		line="$line maps_reads_per_s=$(col "$c" 8) unwind_build_ms_per_s=$(col "$c" 9)"
		line="$line $(awk -v c="$c" '$1 == c { for (i = 10; i <= NF; i++) printf "%s%s", (i > 10 ? " " : ""), $i; exit }' "$WORK/runs")"
	fi
	echo "$line rate=$RATE seconds=$SECS child_us=$CHILD_US reps=$REPS hz=$HZ load1=$LOAD_START..$LOAD_END" |
		sed 's/  */ /g'
done
echo "# agent_cpu_ms_per_s: profd CPU ms per storm second (1000 = one CPU); ringbuf bytes estimated (no byte counter)"
