# bench/lib.sh - helpers shared by the profd benchmarks (sourced, bash).
#
# Owns: the preconditions every benchmark checks (root, build/profd, tools),
# the scratch directory, background-process cleanup on exit, building the
# workloads, starting profd and waiting until it samples, finding profd's
# own BPF programs, and the machine description printed with each result.
# Env: PROFD (binary to measure, default build/profd), CC, BENCH_KEEP=1
# (keep the scratch directory $WORK: workloads, profd logs and output).

set -u

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
PROFD=${PROFD:-$ROOT/build/profd}
CC=${CC:-gcc}
# Flags of every workload: frame pointers, so profd and perf can unwind them.
WORKLOAD_CFLAGS="-O2 -g -fno-omit-frame-pointer"

die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# need_root_and_profd - the preconditions of every benchmark.
need_root_and_profd() {
	[ "$(id -u)" = 0 ] || die "needs root (BPF, perf_event, kernel.bpf_stats_enabled)"
	[ -x "$PROFD" ] || die "$PROFD is missing: run 'make' first"
	command -v "$CC" >/dev/null || die "$CC not found"
}

need_tool() { command -v "$1" >/dev/null || die "$1 not found (needed by $(basename "$0"))"; }

# BENCH_TIMES: the timing file of interleaved_runs (below); a script sets
# it, never the environment; empty means $WORK/times.
BENCH_TIMES=""

# BG_PIDS: background processes the EXIT trap kills (only these, by id).
BG_PIDS=""
CLEANUP_HOOKS=""
bench_cleanup() {
	local p
	# a second INT/TERM (e.g. one to the process group, then one from
	# run-all.sh) must not cut the cleanup short
	trap '' INT TERM
	for p in $BG_PIDS; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $BG_PIDS; do
		wait "$p" 2>/dev/null
	done
	BG_PIDS=""
	for p in $CLEANUP_HOOKS; do
		"$p"
	done
	[ -n "${WORK:-}" ] && [ -d "$WORK" ] && [ -z "${BENCH_KEEP:-}" ] && rm -rf "$WORK"
}
bg_add() { BG_PIDS="$BG_PIDS $1"; }
bg_forget() {
	local p out=""
	for p in $BG_PIDS; do [ "$p" = "$1" ] || out="$out $p"; done
	BG_PIDS=$out
}

# bench_init - scratch dir $WORK and the cleanup trap.
bench_init() {
	WORK=$(mktemp -d /tmp/profd-bench.XXXXXX)
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# build_workload NAME SRC - compile a workload into $WORK/NAME.
build_workload() {
	$CC $WORKLOAD_CFLAGS -o "$WORK/$1" "$2" || die "cannot build $2"
}

# build_bpf_object SRC.bpf.c OUT.o - compile a micro-benchmark BPF object
# against build/vmlinux.h (or one generated into $WORK) and bpf/.
build_bpf_object() {
	local vmlinux_dir=$ROOT/build
	if [ ! -s "$vmlinux_dir/vmlinux.h" ]; then
		vmlinux_dir=$WORK
		[ -s "$WORK/vmlinux.h" ] ||
			bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$WORK/vmlinux.h" ||
			die "cannot generate vmlinux.h"
	fi
	clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I"$vmlinux_dir" -I"$ROOT/bpf" \
		-c "$1" -o "$2" || die "cannot build $1"
}

# build_bpf_parts SRC.bpf.c OUT.o - build_bpf_object, and the loader
# bench/bpf_parts/parts.c into $WORK/parts.
build_bpf_parts() {
	build_bpf_object "$1" "$2"
	$CC -O2 -Wall -o "$WORK/parts" "$BENCH_DIR/bpf_parts/parts.c" -lbpf ||
		die "cannot build bench/bpf_parts/parts.c"
}

# start_profd LOG ARGS... - start profd in the background, set PROFD_PID,
# and wait until it prints that it samples (BPF attached, reader running).
start_profd() {
	local logf=$1 i
	shift
	"$PROFD" "$@" >"$logf" 2>&1 &
	PROFD_PID=$!
	bg_add "$PROFD_PID"
	for i in $(seq 1 300); do
		grep -q "profd: sampling" "$logf" 2>/dev/null && return 0
		kill -0 "$PROFD_PID" 2>/dev/null || { cat "$logf" >&2; die "profd exited during start-up"; }
		sleep 0.1
	done
	cat "$logf" >&2
	die "profd did not start sampling within 30 s"
}

# stop_profd - SIGINT profd (it writes the partial profile) and wait.
stop_profd() {
	kill -INT "$PROFD_PID" 2>/dev/null
	wait "$PROFD_PID" 2>/dev/null
	bg_forget "$PROFD_PID"
}

# start_perf HZ PERF_OPTS... - `perf record -e cpu-clock -F HZ -a` with
# PERF_OPTS (the call-graph mode: -g, --call-graph dwarf) in the
# background; sets PERF_PID and PERF_T0, returns once its events are open.
start_perf() {
	local hz=$1 i
	shift
	rm -f "$WORK/perf.data"
	perf record -q "$@" -e cpu-clock -F "$hz" -a -o "$WORK/perf.data" \
		>"$WORK/perf.log" 2>&1 &
	PERF_PID=$!
	PERF_T0=$(date +%s.%N)
	bg_add "$PERF_PID"
	# ready once the header is written (events open and enabled)
	for i in $(seq 1 100); do
		[ -s "$WORK/perf.data" ] && break
		kill -0 "$PERF_PID" 2>/dev/null || { cat "$WORK/perf.log" >&2; die "perf record failed"; }
		sleep 0.1
	done
	sleep 0.5
}

# stop_perf - stop perf record; appends "bytes seconds" of what it wrote
# to $WORK/perf_sizes, then removes it.
stop_perf() {
	local bytes secs
	kill -INT "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null
	bg_forget "$PERF_PID"
	bytes=$(stat -c %s "$WORK/perf.data" 2>/dev/null || echo 0)
	secs=$(awk -v a="$PERF_T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	echo "$bytes $secs" >>"$WORK/perf_sizes"
	rm -f "$WORK/perf.data" "$WORK/perf.data.old"
}

# bpf_ids_of_pid KIND PID - ids of the BPF objects of KIND (prog, map)
# PID holds open (from /proc/PID/fdinfo), so a second profd on the machine
# is never measured.
bpf_ids_of_pid() {
	local f
	for f in /proc/"$2"/fdinfo/*; do
		sed -n "s/^$1_id:[[:space:]]*//p" "$f" 2>/dev/null
	done | sort -un
}

# prog_ids_of_pid PID - ids of the BPF programs PID holds open.
prog_ids_of_pid() { bpf_ids_of_pid prog "$1"; }

# prog_list PID - "id type name" of each BPF program PID holds open.
prog_list() {
	local id
	for id in $(prog_ids_of_pid "$1"); do
		bpftool prog show id "$id" --json 2>/dev/null | awk -v id="$id" '{
			t = "?"; n = "?"
			if (match($0, /"type":"[^"]*"/)) t = substr($0, RSTART + 8, RLENGTH - 9)
			if (match($0, /"name":"[^"]*"/)) n = substr($0, RSTART + 8, RLENGTH - 9)
			print id, t, n }'
	done
}

# prog_id_by_name PID NAME - id of PID's BPF program called NAME.
prog_id_by_name() {
	prog_list "$1" | awk -v n="$2" '$3 == n { print $1; found = 1; exit } END { exit !found }'
}

# prog_stats ID - "run_time_ns run_cnt" of program ID (0 0 if absent).
prog_stats() {
	bpftool prog show id "$1" --json 2>/dev/null | awk '
		{ t = 0; c = 0
		  if (match($0, /"run_time_ns":[0-9]+/)) t = substr($0, RSTART + 14, RLENGTH - 14)
		  if (match($0, /"run_cnt":[0-9]+/)) c = substr($0, RSTART + 10, RLENGTH - 10)
		  print t, c }'
}

# machine_info - one line describing the machine and its load right now.
machine_info() {
	echo "machine: nproc=$(nproc) kernel=$(uname -r) load:$(uptime | sed 's/.*load average://')"
}

# loadavg1 - the 1-minute load average.
loadavg1() { cut -d' ' -f1 /proc/loadavg; }

# median - median of the numbers on stdin, one a line.
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# percentile P - nearest-rank P-th percentile of the numbers on stdin.
percentile() {
	sort -g | awk -v p="$1" '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit }
		i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR
		print v[i] }'
}

# proc_cpu_ms PID - user + system CPU time of PID so far, in ms.
proc_cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' \
		/proc/"$1"/stat
}

# proc_cpu_ns PID - the on-CPU ns of PID's threads so far (first field of
# /proc/PID/task/*/schedstat): finer than the 10 ms ticks of proc_cpu_ms,
# but threads that have exited are not counted.
proc_cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}

# now_ns - CLOCK_REALTIME in ns.
now_ns() { date +%s%N; }

# profd_has_tracer NAME - whether $PROFD's --tracers knows unwinder NAME
# (python, ruby): its --help lists the names.
profd_has_tracer() {
	"$PROFD" --help 2>&1 | tr -s ' \n' '  ' | grep -q "Which unwinders run, of [a-z0-9_,]*$1"
}

# The interleaved timing loop of the slowdown benchmarks (slowdown.sh,
# dwarf_slowdown.sh, python_slowdown.sh).
#
# interleaved_runs REPS "CONFIGS" RUN_FN - REPS repetitions; each runs
# every configuration of the space-separated CONFIGS back to back
# (interleaved, so a change in background load hits all of them alike) by
# calling `RUN_FN CONFIG`, repetition r starting with configuration
# ((r - 1) mod N) + 1 (so no configuration is always first). RUN_FN runs
# one timed run of CONFIG (profiler started before the run and stopped
# after it) and appends one line "CONFIG wall_s cpu_s [more...]" to
# $BENCH_TIMES (default $WORK/times); it is called in this shell, not in a
# subshell, so the EXIT trap sees the processes it bg_add()s. Include
# two no-profiler configurations (e.g. base and base-again): the ratio of
# the second to the first is an A/A control, the noise floor at that
# moment. Sets LOAD_START and LOAD_END (1-minute load averages).
interleaved_runs() {
	local reps=$1 configs=$2 fn=$3 n r c order
	: "${BENCH_TIMES:=$WORK/times}"
	n=$(echo $configs | wc -w)
	LOAD_START=$(loadavg1)
	for r in $(seq 1 "$reps"); do
		order=$(echo $configs | tr ' ' '\n' |
			awk -v k=$(( (r - 1) % n )) -v n="$n" '{ c[NR - 1] = $0 }
				END { for (i = 0; i < n; i++) print c[(i + k) % n] }')
		for c in $order; do
			"$fn" "$c"
			log "  rep $r $(tail -n 1 "$BENCH_TIMES") (load1 $(loadavg1))"
		done
	done
	LOAD_END=$(loadavg1)
}

# times_col CONFIG COL - column COL of CONFIG's lines in $BENCH_TIMES, one a line.
times_col() { awk -v c="$1" -v k="$2" '$1 == c { print $k }' "${BENCH_TIMES:-$WORK/times}"; }

# ratio A B - A / B with 4 decimals (0 when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", (b > 0) ? a / b : 0 }'; }

# interleaved_report LABEL BASE "CONFIGS" "TRAILER" [EXTRA_FN] - one line
# per configuration:
#   RESULT LABEL config=C wall_s= cpu_s= wall_ratio= cpu_ratio= min_wall_s=
#     min_wall_ratio= runs_wall_s= [EXTRA_FN C's words] TRAILER load1=S..E
# wall_s and cpu_s are medians over the repetitions, the ratios are to
# BASE's medians (min_wall_ratio: best run to BASE's best run).
interleaved_report() {
	local label=$1 base=$2 configs=$3 trailer=$4 extra_fn=${5:-} c
	local bw bc bmin wall cpu best walls extra
	bw=$(times_col "$base" 2 | median)
	bc=$(times_col "$base" 3 | median)
	bmin=$(times_col "$base" 2 | percentile 0)
	for c in $configs; do
		wall=$(times_col "$c" 2 | median)
		cpu=$(times_col "$c" 3 | median)
		best=$(times_col "$c" 2 | percentile 0)
		walls=$(times_col "$c" 2 | paste -sd, -)
		extra=""
		[ -n "$extra_fn" ] && extra=$("$extra_fn" "$c")
		echo "RESULT $label config=$c wall_s=$wall cpu_s=$cpu" \
			"wall_ratio=$(ratio "$wall" "$bw") cpu_ratio=$(ratio "$cpu" "$bc")" \
			"min_wall_s=$best min_wall_ratio=$(ratio "$best" "$bmin")" \
			"runs_wall_s=$walls${extra:+ $extra} $trailer load1=$LOAD_START..$LOAD_END"
	done
}
