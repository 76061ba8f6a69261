# bench/exact_lib.sh - helpers of the issue 16 benchmarks (true stacks
# from the first sample: bench/exact_share.sh, bench/first_exact_latency.sh,
# bench/first_sample_cost.sh; sourced, bash). Sources bench/dwarf_lib.sh.
#
# Owns: building the exact-chain workloads (bench/workloads_dwarf/
# exact_chain.c: one program per name, each with its own known stack) and
# the launcher bench/spawn_stamp.c, the expected stack of a program,
# starting and stopping profd and `perf record --call-graph dwarf` side by
# side, and turning profd's profiles, profd's -vvv sample blocks and
# `perf script` into one line per stack:
#   "<samples> <pid> <leaf;...;root>"   (names normalized: libc's
#   __libc_start_main_impl / __libc_start_main@@GLIBC... -> __libc_start_main)
# Env: PROFD_EXTRA_ARGS (more profd flags, word-split), PPROF.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/dwarf_lib.sh"

EXACT_SRC=$BENCH_DIR/workloads_dwarf/exact_chain.c
PROFD_EXTRA_ARGS=${PROFD_EXTRA_ARGS:-}
# wait_quiet does not wait for our ancestors (timeout(1), the runner of
# all three: bench/true_stacks.sh, bench/run-all.sh)
exact_ancestors() {
	local p=$PPID
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		echo "$p"
		p=$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')
	done
}
DWARF_IGNORE_PIDS="${DWARF_IGNORE_PIDS:-} $(exact_ancestors | tr '\n' ' ')"

# exact_need_tools - the preconditions of the issue 16 benchmarks.
exact_need_tools() {
	need_root_and_profd
	need_tool perf
	need_tool awk
	[ -n "$PPROF" ] && [ -x "$PPROF" ] ||
		die "Google's pprof not found (looked for build/tools/pprof, /tmp/pprof and pprof in PATH; or set PPROF=/path/to/pprof)"
}

# exact_depth K - the chain depth of program K (0-10: 2..12).
exact_depth() { echo $((2 + $1 % 11)); }

# build_exact NAME DEPTH SALT - $WORK/bin/NAME: main -> NAME_l1 ..
# NAME_lDEPTH; SALT (a number) makes its code, hence its build id, its own.
build_exact() {
	mkdir -p "$WORK/bin"
	$CC $DWARF_CFLAGS -DP="$1" -DDEPTH="$2" -DSALT="$3" -o "$WORK/bin/$1" "$EXACT_SRC" ||
		die "cannot build $EXACT_SRC"
}

# build_spawn_stamp - $WORK/spawn_stamp.
build_spawn_stamp() {
	$CC -O2 -o "$WORK/spawn_stamp" "$BENCH_DIR/spawn_stamp.c" ||
		die "cannot build bench/spawn_stamp.c"
}

# expected_stack NAME DEPTH - the exact stack, leaf first.
expected_stack() {
	local s="" j
	for j in $(seq "$2" -1 1); do s="$s$1_l$j;"; done
	echo "${s}main;__libc_start_call_main;__libc_start_main;_start"
}

# normalize_names - libc's start function under one name (perf says
# __libc_start_main_impl, symbol tables may say __libc_start_main@@...).
normalize_names() { sed -E 's/__libc_start_main[^; ]*/__libc_start_main/g'; }

# start_profd_bg LOG ARGS... - profd (system-wide unless ARGS say
# otherwise, plus $PROFD_EXTRA_ARGS) in the background, stdout and stderr
# to LOG; waits until it samples. Sets PROFD_PID.
start_profd_bg() {
	local logf=$1
	shift
	# shellcheck disable=SC2086
	start_profd "$logf" --no-gpu "$@" $PROFD_EXTRA_ARGS
}

# start_perf_dwarf DATA HZ - `perf record -e cpu-clock -F HZ -a
# --call-graph dwarf -k mono` (timestamps on CLOCK_MONOTONIC, the clock of
# bpf_ktime_get_ns()) into DATA; returns once its events are open. Sets
# PERF_PID.
start_perf_dwarf() {
	local data=$1 hz=$2 i
	rm -f "$data"
	perf record -q -e cpu-clock -F "$hz" -a --call-graph dwarf -k mono \
		-o "$data" >"$data.log" 2>&1 &
	PERF_PID=$!
	bg_add "$PERF_PID"
	for i in $(seq 1 100); do
		[ -s "$data" ] && break
		kill -0 "$PERF_PID" 2>/dev/null || { cat "$data.log" >&2; die "perf record failed"; }
		sleep 0.1
	done
	[ -s "$data" ] || die "perf record did not start within 10 s"
	sleep 0.5
}

# stop_pid PID - SIGINT PID (profd and perf write what they have) and wait.
stop_pid() {
	kill -INT "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	bg_forget "$1"
}

# profd_pid_stacks PROFILE... - "<samples> <pid> <stack>" per stack of
# profd's profiles.
profd_pid_stacks() {
	local f
	for f in "$@"; do
		trace_stacks "$f" | awk '{ print $1, $3, $5 }'
	done | normalize_names
}

# perf_pid_stacks DATA - "1 <pid> <stack> <time_s>" per sample of perf's
# DWARF call graphs (perf script; time on CLOCK_MONOTONIC with -k mono).
perf_pid_stacks() {
	perf script --no-inline -i "$1" -F pid,tid,time,ip,sym 2>/dev/null | awk '
		function flush() { if (have) print 1, pid, (st == "" ? "?" : st), t; have = 0 }
		/^[ \t]*$/ { flush(); next }
		/^[ \t]+[0-9a-f]+ / { n = $2; sub(/\+0x[0-9a-f]+$/, "", n)
			st = st == "" ? n : st ";" n; next }
		{ flush(); split($1, pt, "/"); pid = pt[1]; t = $2; sub(/:$/, "", t)
		  st = ""; have = 1 }
		END { flush() }' | normalize_names
}

# profd_debug_stacks LOG - "1 <pid> <stack> <ktime_s>" per sample block of
# profd -vvv / --debug-pid output (the header's ktime=NS; "?" for a build
# that does not print it). Kernel frames by name, user frames by symbol.
# The debug printer names a user frame only from symbol tables already
# open, so an early sample's frame may come without a name: it gets the
# name the same FILE+OFFSET has in another block of LOG ("?" if none).
profd_debug_stacks() {
	awk '
		function flush() { if (have) print 1, pid, (st == "" ? "?" : st), t; have = 0 }
		function add(n) { st = st == "" ? n : st ";" n }
		NR == FNR { if ($0 ~ /^  #[0-9]+ +user / && NF == 5 && $4 !~ /^\[/) named[$4] = $5; next }
		/^profd: debug: sample / { flush(); have = 1; st = ""; t = "?"
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^pid=/) { pid = substr($i, 5) }
				if ($i ~ /^ktime=/) { t = sprintf("%.6f", substr($i, 7) / 1e9) }
			}
			next }
		have && /^  #[0-9]+ +kernel / { n = NF >= 5 ? $5 : "?"; sub(/\+0x[0-9a-f]+$/, "", n); add(n); next }
		have && /^  #[0-9]+ +user / {
			add($4 ~ /^\[/ ? "?" : NF == 5 ? $5 : ($4 in named) ? named[$4] : "?"); next }
		have && /^  #[0-9]+ / { add("?"); next }
		{ flush() }
		END { flush() }' "$1" "$1" | normalize_names
}

# share_of PIDSTACKS PID NAME EXPECTED - from "<n> <pid> <stack> ..." lines:
# "C E M A": C samples of PID in NAME's chain (a NAME_l* frame anywhere:
# the program's own work, not ld.so's start-up), E of them exactly
# EXPECTED, M of them EXPECTED at least from the leaf to main (the libc
# start frames above main may be missing), A all of PID's samples. The
# user stack is judged: kernel frames above EXPECTED's leaf (an interrupt
# or a system call entered from it) are left out, for both tools alike.
share_of() {
	awk -v pid="$2" -v name="$3_l" -v want="$4" '
		BEGIN { m = want; sub(/;__libc_start_call_main.*/, "", m); lm = length(m)
			leaf = want; sub(/;.*/, "", leaf) }
		$2 == pid {
		a += $1
		if (index($3, name)) {
			c += $1
			u = $3
			i = index(";" u ";", ";" leaf ";")
			if (i > 1) u = substr(u, i)
			if (u == want) e += $1
			if (substr(u, 1, lm) == m && (length(u) == lm || substr(u, lm + 1, 1) == ";"))
				mm += $1
		} }
		END { printf "%d %d %d %d\n", c, e, mm, a }' "$1"
}
