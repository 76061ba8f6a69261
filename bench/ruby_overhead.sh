#!/usr/bin/env bash
# bench/ruby_overhead.sh - what profd's CRuby unwinder costs at 99 Hz
# (issue 17), in two parts (RBOH_PARTS, default "agent slowdown"):
#
# agent: profd's own CPU time with RBOH_PROCS (20) CPU-bound Ruby
#   processes running (bench/workloads_ruby/rbbench.rb --for 0: methods,
#   blocks, Integer#times, Array#each/map, a recursive method), started
#   once and kept running through all items. Items: "ruby" (profd
#   --no-gpu --sampling-frequency 99, whole machine, every unwinder) and
#   "native" (the same plus --tracers native: no runtime unwinder),
#   alternating for RBOH_ROUNDS (2) rounds, the first item rotating
#   (interleaved_runs of bench/lib.sh). Each item: profd is started and
#   sampling, RBOH_WARMUP (3) s pass (attaching to the 20 processes,
#   loading their unwind tables), then profd's CPU time is read over
#   RBOH_SECONDS (30) s, from the threads' schedstat ns (proc_cpu_ns) and
#   /proc/PID/stat ticks (proc_cpu_ms), and divided by the window: % of
#   one core. start_cpu_ms is profd's CPU from its start to the end of the
#   warm-up. Reported per item and as medians per configuration.
#
# slowdown: a fixed amount of Ruby work, `rbbench.rb RBOH_BENCH_ROUNDS
#   RBOH_JOBS` (800 rounds, ~2.8 s of CPU per worker here; JOBS = nproc:
#   one worker process per CPU, so profd's own CPU competes with the
#   work), which times itself (wall: first fork to last exit; CPU: the
#   workers'), under RBOH_CONFIGS ("base profd-99 profd-99-native perf-99
#   base-again"): no profiler; profd whole machine at 99 Hz; the same with
#   --tracers native; perf record -g -e cpu-clock -F 99 -a (frame
#   pointers: libruby has them, the Ruby frames it cannot see); no
#   profiler again (the A/A control). RBOH_REPS (3) repetitions through
#   interleaved_runs, medians and ratios to base (interleaved_report).
#   perf-* items are dropped when perf is missing.
#
# Every profd item's profiles are checked (--check below) for the
# workload's own processes (by pid): their samples, the share with at
# least one [ruby] frame (rb_ruby_pct; rb_ruby_pct_later: in the profiles
# after the first, i.e. once profd had attached and loaded the unwind
# tables) and with a frame of the workload's own Ruby methods
# (RbBench / Object#worker), samples with a [ruby: ...] loss
# frame, and profd's ruby counters summed over the profile comments
# (stat.ruby_samples, partial.ruby_frame_unnamed, stat.ruby_attach_refused,
# and every lost./partial.ruby* as rb_loss). A "ruby" item is real Ruby
# walking only when rb_ruby_pct is near 100; a "native" one shows 0.
#
# Env: RBOH_PARTS, RBOH_RUBY (/usr/bin/ruby3.1), RBOH_PROCS, RBOH_ROUNDS,
#      RBOH_SECONDS, RBOH_WARMUP, RBOH_BENCH_ROUNDS, RBOH_JOBS, RBOH_REPS,
#      RBOH_CONFIGS, PROFD, PPROF, BENCH_KEEP.
# Output:
#   RESULT ruby_agent_cpu_item item=ruby|native round=R cpu_pct= cpu_pct_ticks=
#     start_cpu_ms= window_s= samples= <check words> load1=
#   RESULT ruby_agent_cpu config=ruby|native procs=20 hz=99 cpu_pct=MEDIAN
#     cpu_pcts=a,b start_cpu_ms=MEDIAN <check words of the last item> ...
#   RESULT ruby_agent_cpu_delta ruby_minus_native_pct= ratio=
#   RESULT ruby_slowdown config=... (interleaved_report's words, plus
#     profiler_cpu_ms= and the check words of profd items) jobs= rounds=
# A machine without ruby or a profd without the Ruby unwinder gives one
# "RESULT ruby_overhead skipped=..." line and exit 0. ~5 min on 2 CPUs.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

RB=$BENCH_DIR/workloads_ruby/rbbench.rb
RUBY=${RBOH_RUBY:-/usr/bin/ruby3.1}
PARTS=${RBOH_PARTS:-agent slowdown}
PROCS=${RBOH_PROCS:-20}
ROUNDS=${RBOH_ROUNDS:-2}
SECS=${RBOH_SECONDS:-30}
WARMUP=${RBOH_WARMUP:-3}
BROUNDS=${RBOH_BENCH_ROUNDS:-800}
JOBS=${RBOH_JOBS:-$(nproc)}
REPS=${RBOH_REPS:-3}
CONFIGS=${RBOH_CONFIGS:-base profd-99 profd-99-native perf-99 base-again}
PROFD_FLAGS="--no-gpu --sampling-frequency 99"

# --check DIR PIDS: the Ruby check of one item's profiles (key=value words).
if [ "${1:-}" = --check ]; then
	[ -x "$PPROF" ] || { echo "rb_check=no_pprof"; exit 0; }
	PPROF=$PPROF python3 - "$ROOT/tests" "$2" "$3" <<'PY'
import glob, os, re, sys
sys.path.insert(0, sys.argv[1])
from pprof_traces import comments, pprof_raw_samples
pprof, pids = os.environ["PPROF"], set(sys.argv[3].split(","))
total = ruby = own = lossy = later = later_ruby = 0
counters = {}
for i, p in enumerate(sorted(glob.glob(os.path.join(sys.argv[2], "cpu-*.pb.gz")))):
    for s in pprof_raw_samples(pprof, p):
        if s["labels"].get("pid") not in pids:
            continue
        rb = [f["function"] or "" for f in s["frames"] if f["mapping"] == "[ruby]"]
        total += s["value"]
        ruby += s["value"] if rb else 0
        later += s["value"] if i else 0
        later_ruby += s["value"] if i and rb else 0
        own += s["value"] if any(n.startswith(("RbBench", "Object#worker")) for n in rb) else 0
        lossy += s["value"] if any(n.startswith("[ruby:") for n in rb) else 0
    for k, v in re.findall(r"^Comment: ((?:stat|lost|partial)\.ruby\w*)=(\d+)",
                           comments(pprof, p), re.M):
        counters[k] = counters.get(k, 0) + int(v)
pct = lambda n: f"{100 * n / total if total else 0:.1f}"
loss = sum(v for k, v in counters.items() if not k.startswith("stat."))
later_pct = f"{100 * later_ruby / later:.1f}" if later else "nan"
print(f"rb_samples={total} rb_ruby_pct={pct(ruby)} rb_ruby_pct_later={later_pct} "
      f"rb_own_pct={pct(own)} rb_lossy={lossy} "
      f"ruby_samples={counters.get('stat.ruby_samples', 0)} "
      f"frame_unnamed={counters.get('partial.ruby_frame_unnamed', 0)} "
      f"attach_refused={counters.get('stat.ruby_attach_refused', 0)} rb_loss={loss}")
PY
	exit 0
fi

skip() {
	log "ruby_overhead: $1"
	echo "RESULT ruby_overhead skipped=$2"
	exit 0
}
need_root_and_profd
[ -f "$RB" ] || die "$RB is missing"
[ -x "$RUBY" ] || skip "$RUBY not found" no_ruby
profd_has_tracer ruby || skip "$PROFD has no Ruby unwinder (--tracers lists no ruby)" no_ruby_unwinder
RUBY_VER=$("$RUBY" -e 'print RUBY_VERSION') || skip "$RUBY does not run" ruby_broken
dwarf_bench_init

# check_dir DIR PIDS - the check words of DIR's profiles for PIDS (at a
# higher priority than the 20 Ruby processes still running, so it does
# not take minutes).
check_dir() { nice -n -10 bash "$BENCH_DIR/ruby_overhead.sh" --check "$1" "$2"; }

# tracer_flags CONFIG - the --tracers flag of a configuration (none: all).
tracer_flags() { case $1 in *native) echo "--tracers native" ;; esac; }

# agent_item ITEM - one agent item (ruby, native): profd over the running
# Ruby processes; appends "ITEM window_s cpu_ms_ns cpu_ms_ticks start_cpu_ms
# samples check-words..." to $BENCH_TIMES.
agent_item() {
	local out t0 t1 n0 n1 k0 k1 samples
	# each item's profiles stay in $WORK (kept with BENCH_KEEP=1)
	out=$WORK/agent-$1-$(wc -l <"$BENCH_TIMES")
	# shellcheck disable=SC2046,SC2086
	start_profd "$WORK/profd.log" $PROFD_FLAGS --output-dir "$out" $(tracer_flags "$1")
	sleep "$WARMUP"
	t0=$(now_ns); n0=$(proc_cpu_ns "$PROFD_PID"); k0=$(proc_cpu_ms "$PROFD_PID")
	sleep "$SECS"
	t1=$(now_ns); n1=$(proc_cpu_ns "$PROFD_PID"); k1=$(proc_cpu_ms "$PROFD_PID")
	stop_profd
	samples=$(sed -n 's/.*done: \([0-9]*\) samples.*/\1/p' "$WORK/profd.log")
	grep -h "done" "$WORK/profd.log" >>"$WORK/profd_done"
	echo "$1 $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') \
$(( (n1 - n0) / 1000000 )) $((k1 - k0)) $((n0 / 1000000)) ${samples:-0} $(check_dir "$out" "$RB_PIDS")" \
		>>"$BENCH_TIMES"
}

# agent_pcts ITEM - ITEM's CPU % of a core (schedstat ns), one per round.
agent_pcts() { awk -v c="$1" '$1 == c { printf "%.3f\n", $3 / 10 / $2 }' "$BENCH_TIMES"; }

agent_part() {
	local i c cpus words with without
	RB_PIDS=""
	for i in $(seq 1 "$PROCS"); do
		"$RUBY" --disable-gems "$RB" --for 0 &
		bg_add $!
		RB_PIDS="$RB_PIDS${RB_PIDS:+,}$!"
	done
	sleep 2
	BENCH_TIMES=$WORK/times-agent
	: >"$BENCH_TIMES"
	log "ruby_overhead: agent: $PROCS x rbbench.rb --for 0 ($RUBY_VER), profd $PROFD_FLAGS, $ROUNDS rounds of: ruby native, ${SECS} s after ${WARMUP} s"
	interleaved_runs "$ROUNDS" "ruby native" agent_item
	# one line per item, then the medians
	awk -v secs="$SECS" '{
		r[$1]++
		printf "RESULT ruby_agent_cpu_item item=%s round=%d cpu_pct=%.3f cpu_pct_ticks=%.3f start_cpu_ms=%s window_s=%s samples=%s", \
			$1, r[$1], $3 / 10 / $2, $4 / 10 / $2, $5, $2, $6
		for (i = 7; i <= NF; i++) printf " %s", $i
		printf "\n" }' "$BENCH_TIMES"
	for c in ruby native; do
		cpus=$(agent_pcts "$c")
		words=$(awk -v c="$c" '$1 == c { w = ""; for (i = 7; i <= NF; i++) w = w " " $i } END { print w }' "$BENCH_TIMES")
		echo "RESULT ruby_agent_cpu config=$c procs=$PROCS hz=99 ruby=$RUBY_VER cpu_pct=$(echo "$cpus" | median)" \
			"cpu_pcts=$(echo "$cpus" | paste -sd, -) start_cpu_ms=$(times_col "$c" 5 | median)" \
			"window_s=$SECS rounds=$ROUNDS$words load1=$LOAD_START..$LOAD_END"
	done
	with=$(agent_pcts ruby | median)
	without=$(agent_pcts native | median)
	echo "RESULT ruby_agent_cpu_delta procs=$PROCS ruby_minus_native_pct=$(awk -v a="$with" -v b="$without" \
		'BEGIN { printf "%.3f", a - b }') ratio=$(ratio "$with" "$without") load1=$LOAD_START..$LOAD_END"
	for i in $(echo "$RB_PIDS" | tr , ' '); do
		kill -TERM "$i" 2>/dev/null; wait "$i" 2>/dev/null; bg_forget "$i"
	done
}

# slow_run CONFIG - one timed run of the fixed work; appends "CONFIG
# wall_s cpu_s profiler_cpu_ms check-words..." to $BENCH_TIMES.
slow_run() {
	local prof_ms=0 cpu0 line words="" pids out
	out=$WORK/slow-$1-$(wc -l <"$BENCH_TIMES")
	case $1 in
	base|base-again) ;;
	profd-*)
		# shellcheck disable=SC2046,SC2086
		start_profd "$WORK/profd.log" --no-gpu --sampling-frequency "$(echo "$1" | cut -d- -f2)" \
			--output-dir "$out" $(tracer_flags "$1")
		cpu0=$(proc_cpu_ms "$PROFD_PID") ;;
	perf-*) start_perf "${1#perf-}" -g ;;
	*) die "unknown configuration $1" ;;
	esac
	"$RUBY" --disable-gems "$RB" "$BROUNDS" "$JOBS" >"$WORK/rb.out" || die "rbbench.rb failed under $1"
	case $1 in
	profd-*)
		prof_ms=$(( $(proc_cpu_ms "$PROFD_PID") - cpu0 ))
		stop_profd
		grep -h "done" "$WORK/profd.log" >>"$WORK/profd_done"
		pids=$(sed -n 's/.* pids=\([0-9,]*\).*/\1/p' "$WORK/rb.out")
		words=" $(check_dir "$out" "$pids")" ;;
	perf-*)
		stop_perf
		# perf's own CPU is not in its lines (it exits before we could read it)
		prof_ms=nan ;;
	esac
	line=$(sed -n 's/^wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\) check=\([0-9]*\).*/\1 \2/p' "$WORK/rb.out")
	[ -n "$line" ] || { cat "$WORK/rb.out" >&2; die "rbbench.rb printed no times under $1"; }
	sed -n 's/.* check=\([0-9]*\).*/\1/p' "$WORK/rb.out" >>"$WORK/checksums"
	echo "$1 $line $prof_ms$words" >>"$BENCH_TIMES"
}

# slow_extra CONFIG - profd's CPU per run (ms), its median as % of the
# workers' CPU, and the check words of CONFIG's last run.
slow_extra() {
	case $1 in
	profd-*) ;;
	*) return 0 ;;
	esac
	printf "profiler_cpu_ms=%s profiler_cpu_pct_of_work=%s" "$(times_col "$1" 4 | paste -sd, -)" \
		"$(awk -v a="$(times_col "$1" 4 | median)" -v b="$(times_col "$1" 3 | median)" \
			'BEGIN { printf "%.2f", (b > 0) ? a / 10 / b : 0 }')"
	awk -v c="$1" '$1 == c { w = ""; for (i = 5; i <= NF; i++) w = w " " $i } END { print w }' "$BENCH_TIMES"
}

slowdown_part() {
	if ! command -v perf >/dev/null; then
		CONFIGS=$(echo $CONFIGS | tr ' ' '\n' | grep -v '^perf-' | tr '\n' ' ')
		log "ruby_overhead: perf not found: no perf-* configurations"
	fi
	BENCH_TIMES=$WORK/times-slow
	: >"$BENCH_TIMES"
	log "ruby_overhead: slowdown: rbbench.rb $BROUNDS rounds x $JOBS jobs ($RUBY_VER), $REPS repetitions of: $CONFIGS"
	interleaved_runs "$REPS" "$CONFIGS" slow_run
	[ "$(sort -u "$WORK/checksums" | wc -l)" = 1 ] || log "ruby_overhead: the checksums differ: $(sort -u "$WORK/checksums" | paste -sd, -)"
	interleaved_report ruby_slowdown base "$CONFIGS" "jobs=$JOBS rounds=$BROUNDS ruby=$RUBY_VER" slow_extra
}

echo "$(machine_info)"
echo "# $(profd_info)"
wait_quiet "${RBOH_WAIT:-0}"
echo "# quiet: $QUIET_NOTE"
for part in $PARTS; do
	case $part in
	agent) agent_part ;;
	slowdown) slowdown_part ;;
	*) die "unknown part $part (agent, slowdown)" ;;
	esac
done
sed 's/^/#   /' "$WORK/profd_done" 2>/dev/null
echo "# load at the end: $(uptime | sed 's/.*load average://')"
