#!/usr/bin/env bash
# bench/jit_stacks.sh - issue 19, figure 1: the share of a JVM's and a node
# process's samples whose stacks are complete and named, profd beside
# perf (frame pointers and DWARF) in the same run.
#
# Workloads (no flags given to either runtime):
#   jvm   Debian's openjdk-17 running bench/workloads_jit/JvmBench.java:
#         worker threads "collections" (HashMap, TreeMap, ArrayDeque),
#         "strings" (StringBuilder, split, toUpperCase, format) and
#         "sorter" (Collections.sort with a comparing().thenComparing()
#         Comparator and a lambda, called back from TimSort)
#   node  node 20 running bench/workloads_jit/nodebench.js: classes,
#         closures, JSON.stringify/parse, Array.prototype.sort with a
#         callback, Map and string work on the main thread
# Both are started, run until each printed "ready" and then JS_WARMUP (5) s
# more (JIT compilation under way), then profd (whole machine,
# --sampling-frequency JS_HZ, --profile-interval 5), `perf record -g` and
# `perf record --call-graph dwarf` (both -e cpu-clock -F JS_HZ -p on the two
# pids) sample at the same time for JS_SECONDS (20) s. perf gets no perf
# map (the runtimes run without flags), so it names no Java or JS frame:
# its named share is low for that reason; its complete share says how far
# its unwinding gets.
# Counted by bench/jit_share.py (its header defines "complete" and
# "named"), per workload and thread group: all, own (the JVM's worker
# threads / node's main thread), rt (the runtime's other threads: JIT
# compilers, GC, platform workers). profd's profiles are read with Google's
# pprof -raw; tool=profd counts all of them, tool=profd_later all but the
# first (written while profd was still attaching to the two processes).
# Issue 19's target: complete_named_pct >= 95 for each workload.
#
# Env: JS_JAVA (/usr/lib/jvm/java-17-openjdk-amd64/bin/java), JS_NODE
#      (node), JS_HZ (99), JS_SECONDS (20), JS_WARMUP (5), JS_WAIT (max s to
#      wait for other profilers, 60), PROFD, PPROF, BENCH_KEEP=1.
# Output: RESULT jit_share ... lines (see bench/jit_share.py), the unnamed
# frames and the roots of incomplete stacks seen most ("# ..." lines), the
# profd counters of the two runtimes summed over the profiles
# ("# counters ..."), the machine and its load. ~1.5 min.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

JAVA=${JS_JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}
NODE=${JS_NODE:-$(command -v node || echo node)}
HZ=${JS_HZ:-99}
SECS=${JS_SECONDS:-20}
WARMUP=${JS_WARMUP:-5}
SRC=$BENCH_DIR/workloads_jit

need_root_and_profd
need_tool perf
[ -x "$JAVA" ] || die "$JAVA not found (set JS_JAVA)"
[ -x "$(dirname "$JAVA")/javac" ] || die "$(dirname "$JAVA")/javac not found"
command -v "$NODE" >/dev/null || die "$NODE not found (set JS_NODE)"
[ -n "$PPROF" ] && [ -x "$PPROF" ] || die "Google's pprof not found (set PPROF)"
profd_has_tracer hotspot || die "$PROFD has no HotSpot unwinder (--tracers)"
profd_has_tracer v8 || die "$PROFD has no V8 unwinder (--tracers)"
dwarf_bench_init

"$(dirname "$JAVA")/javac" -d "$WORK/classes" "$SRC/JvmBench.java" || die "javac failed"

# wait_ready FILE PID - wait (up to 60 s) until the workload wrote "ready".
wait_ready() {
	local i
	for i in $(seq 1 600); do
		grep -q '^ready' "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || { cat "$1" >&2; die "workload $2 exited"; }
		sleep 0.1
	done
	die "workload $2 not ready within 60 s"
}

# start_perf_p DATA MODE... - `perf record MODE -e cpu-clock -F HZ -p PIDS`
# in the background, returns once its events are open; sets PERF_PID.
start_perf_p() {
	local data=$1 i
	shift
	perf record -q "$@" -e cpu-clock -F "$HZ" -p "$JVM_PID,$NODE_PID" -o "$data" >"$data.log" 2>&1 &
	PERF_PID=$!
	bg_add "$PERF_PID"
	for i in $(seq 1 100); do
		[ -s "$data" ] && break
		kill -0 "$PERF_PID" 2>/dev/null || { cat "$data.log" >&2; die "perf record $* failed"; }
		sleep 0.1
	done
}

# stop_pid PID - SIGINT PID (perf writes what it has) and wait.
stop_pid() {
	kill -INT "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	bg_forget "$1"
}

wait_quiet "${JS_WAIT:-60}"
echo "$(machine_info)"
echo "# $(profd_info)"
echo "# java: $("$JAVA" -version 2>&1 | sed -n 2p); node: $("$NODE" --version)"
echo "# before: $QUIET_NOTE"

"$JAVA" -cp "$WORK/classes" JvmBench 0 >"$WORK/jvm.out" 2>&1 &
JVM_PID=$!
bg_add "$JVM_PID"
"$NODE" "$SRC/nodebench.js" 0 >"$WORK/node.out" 2>&1 &
NODE_PID=$!
bg_add "$NODE_PID"
wait_ready "$WORK/jvm.out" "$JVM_PID"
wait_ready "$WORK/node.out" "$NODE_PID"
sleep "$WARMUP"

LOAD_START=$(loadavg1)
start_profd "$WORK/profd.log" --no-gpu --sampling-frequency "$HZ" --profile-interval 5 \
	--output-dir "$WORK/out"
# perf's two modes in the same window
start_perf_p "$WORK/perf.fp" -g
PERF_FP=$PERF_PID
start_perf_p "$WORK/perf.dwarf" --call-graph dwarf
PERF_DW=$PERF_PID
log "sampling ${SECS} s (jvm $JVM_PID, node $NODE_PID)"
sleep "$SECS"
stop_pid "$PERF_FP"
stop_pid "$PERF_DW"
stop_profd
LOAD_END=$(loadavg1)
log "counting"

targets="jvm=$JVM_PID,node=$NODE_PID"
mapfile -t profiles < <(ls "$WORK"/out/cpu-*.pb.gz | sort)
trailer="hz=$HZ seconds=$SECS load1=$LOAD_START..$LOAD_END"
python3 "$BENCH_DIR/jit_share.py" profd "$PPROF" "$targets" "${profiles[@]}" | sed "/^RESULT/s/\$/ $trailer/"
python3 "$BENCH_DIR/jit_share.py" profd "$PPROF" "$targets" "${profiles[@]:1}" |
	sed -n "/^RESULT/{s/tool=profd/tool=profd_later/;s/\$/ $trailer/;p}"
for mode in fp dwarf; do
	# --no-inline: perf 6.1 would run addr2line for every frame (minutes)
	perf script --no-inline -i "$WORK/perf.$mode" -F comm,pid,tid,ip,sym,dso 2>/dev/null >"$WORK/perf.$mode.txt"
	python3 "$BENCH_DIR/jit_share.py" perf "$mode" "$targets" "$WORK/perf.$mode.txt" |
		sed "/^RESULT/s/\$/ $trailer/"
done
# the runtimes' counters (profile comments), summed over the profiles
for f in "${profiles[@]}"; do
	"$PPROF" -raw "$f" 2>/dev/null | grep -oE '(stat|partial|lost)\.(hotspot|v8|jit)[a-z_]*=[0-9]+'
done | awk -F= '{ s[$1] += $2 } END { for (k in s) if (s[k]) printf "%s=%d\n", k, s[k] }' | sort |
	paste -sd' ' - | sed 's/^/# counters (all processes): /'
echo "# load at the end: $(uptime | sed 's/.*load average://')"
