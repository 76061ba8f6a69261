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

# prog_ids_of_pid PID - ids of the BPF programs PID holds open (from
# /proc/PID/fdinfo), so a second profd on the machine is never measured.
prog_ids_of_pid() {
	local f
	for f in /proc/"$1"/fdinfo/*; do
		sed -n 's/^prog_id:[[:space:]]*//p' "$f" 2>/dev/null
	done | sort -un
}

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
