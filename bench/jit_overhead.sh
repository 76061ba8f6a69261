#!/usr/bin/env bash
# bench/jit_overhead.sh - issue 19, figure 3: profd's own CPU and memory
# with 5 JVMs and 5 node processes running, whole machine, 99 Hz.
#
# JO_JVMS (5) JVMs (Debian's openjdk-17, bench/workloads_jit/JvmBench.java,
# three worker threads each) and JO_NODES (5) node processes
# (bench/workloads_jit/nodebench.js), no runtime flags, are started and
# run until each printed "ready". Items (JO_ITEMS, in this order):
#   jit     profd --no-gpu --sampling-frequency 99 (every unwinder) over
#           the running processes
#   native  the same with --tracers native (no runtime unwinder: JIT
#           frames unnamed, the JVMs' stacks cut at the first JIT frame)
#   none    every unwinder, after the JVMs and nodes were stopped (the
#           machine's other work only)
# Each item: profd is started and sampling, JO_WARMUP (3) s pass
# (attaching to the JVMs and nodes, loading unwind tables), then profd's
# CPU is read over JO_SECONDS (60) s from its threads' schedstat ns
# (proc_cpu_ns) and /proc/PID/stat utime+stime ticks (proc_cpu_ms) and
# given as % of one core; start_cpu_ms is its CPU from start to the end
# of the warm-up. Memory from /proc/PID/status just before it is stopped:
# VmHWM (peak RSS) and VmRSS. With the JVMs and nodes running, their
# samples are counted by bench/jit_share.py (complete and named shares
# over all the JVMs and over all the nodes, group=all), so an item's cost
# goes with what it delivered.
#
# Env: JO_ITEMS ("jit native none"), JO_JVMS, JO_NODES, JO_SECONDS,
#      JO_WARMUP, JO_JAVA (/usr/lib/jvm/java-17-openjdk-amd64/bin/java),
#      JO_NODE (node), JO_WAIT (max s to wait for other profilers, 60),
#      PROFD, PPROF, BENCH_KEEP=1.
# Output: "RESULT jit_agent item=I jvms= nodes= cpu_pct= cpu_pct_ticks=
#   start_cpu_ms= window_s= vm_hwm_kib= vm_rss_kib= samples= load1=" per
#   item, then the jit_share lines of the items with workloads running
#   (tool=profd_ITEM). ~4 min.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

JAVA=${JO_JAVA:-/usr/lib/jvm/java-17-openjdk-amd64/bin/java}
NODE=${JO_NODE:-$(command -v node || echo node)}
ITEMS=${JO_ITEMS:-jit native none}
NJVM=${JO_JVMS:-5}
NNODE=${JO_NODES:-5}
SECS=${JO_SECONDS:-60}
WARMUP=${JO_WARMUP:-3}
SRC=$BENCH_DIR/workloads_jit

need_root_and_profd
[ -x "$JAVA" ] || die "$JAVA not found (set JO_JAVA)"
command -v "$NODE" >/dev/null || die "$NODE not found (set JO_NODE)"
dwarf_bench_init
"$(dirname "$JAVA")/javac" -d "$WORK/classes" "$SRC/JvmBench.java" || die "javac failed"

WL_PIDS=""
TARGETS=""
start_workloads() {
	local i f
	for i in $(seq 1 "$NJVM"); do
		"$JAVA" -cp "$WORK/classes" JvmBench 0 >"$WORK/jvm$i.out" 2>&1 &
		bg_add $!
		WL_PIDS="$WL_PIDS $!"
		TARGETS="$TARGETS${TARGETS:+,}jvm=$!"
	done
	for i in $(seq 1 "$NNODE"); do
		"$NODE" "$SRC/nodebench.js" 0 >"$WORK/node$i.out" 2>&1 &
		bg_add $!
		WL_PIDS="$WL_PIDS $!"
		TARGETS="$TARGETS${TARGETS:+,}node=$!"
	done
	for f in $(seq -f "$WORK/jvm%g.out" 1 "$NJVM") $(seq -f "$WORK/node%g.out" 1 "$NNODE"); do
		for i in $(seq 1 1200); do
			grep -q '^ready' "$f" 2>/dev/null && break
			sleep 0.1
		done
		grep -q '^ready' "$f" || { cat "$f" >&2; die "workload of $f not ready within 120 s"; }
	done
	log "jit_overhead: $NJVM JVMs and $NNODE nodes ready (load1 $(loadavg1))"
}

stop_workloads() {
	local p
	for p in $WL_PIDS; do kill -TERM "$p" 2>/dev/null; done
	for p in $WL_PIDS; do wait "$p" 2>/dev/null; bg_forget "$p"; done
	WL_PIDS=""
	TARGETS=""
}

# status_kib PID FIELD - FIELD (VmHWM, VmRSS) of /proc/PID/status in KiB.
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' /proc/"$1"/status; }

item() {
	local out=$WORK/out-$1 t0 t1 n0 n1 k0 k1 hwm rss samples l0 l1
	# shellcheck disable=SC2046
	start_profd "$WORK/profd-$1.log" --no-gpu --sampling-frequency 99 --output-dir "$out" \
		$([ "$1" = native ] && echo --tracers native)
	sleep "$WARMUP"
	l0=$(loadavg1)
	t0=$(now_ns); n0=$(proc_cpu_ns "$PROFD_PID"); k0=$(proc_cpu_ms "$PROFD_PID")
	sleep "$SECS"
	t1=$(now_ns); n1=$(proc_cpu_ns "$PROFD_PID"); k1=$(proc_cpu_ms "$PROFD_PID")
	hwm=$(status_kib "$PROFD_PID" VmHWM)
	rss=$(status_kib "$PROFD_PID" VmRSS)
	l1=$(loadavg1)
	stop_profd
	samples=$(sed -n 's/.*done: \([0-9]*\) samples.*/\1/p' "$WORK/profd-$1.log")
	awk -v it="$1" -v t0="$t0" -v t1="$t1" -v n="$((n1 - n0))" -v k="$((k1 - k0))" -v s0="$((n0 / 1000000))" \
		-v hwm="$hwm" -v rss="$rss" -v smp="${samples:-0}" -v l="$l0..$l1" -v j="$NJVM" -v nd="$NNODE" 'BEGIN {
		w = (t1 - t0) / 1e9
		printf "RESULT jit_agent item=%s jvms=%d nodes=%d cpu_pct=%.3f cpu_pct_ticks=%.3f start_cpu_ms=%d window_s=%.2f vm_hwm_kib=%d vm_rss_kib=%d samples=%d hz=99 load1=%s\n",
			it, it == "none" ? 0 : j, it == "none" ? 0 : nd, n / 1e7 / w, k / 10 / w, s0, w, hwm, rss, smp, l }'
	if [ -n "$TARGETS" ] && [ -x "$PPROF" ]; then
		nice -n -10 python3 "$BENCH_DIR/jit_share.py" profd "$PPROF" "$TARGETS" "$out"/cpu-*.pb.gz |
			sed -n "/^RESULT.* group=all /{s/tool=profd/tool=profd_$1/;p}" >>"$WORK/shares"
	fi
}

wait_quiet "${JO_WAIT:-60}"
echo "$(machine_info)"
echo "# $(profd_info)"
echo "# before: $QUIET_NOTE"
: >"$WORK/shares"
for it in $ITEMS; do
	case $it in
	jit | native) [ -n "$WL_PIDS" ] || start_workloads ;;
	none) stop_workloads ;;
	*) die "unknown item $it (jit native none)" ;;
	esac
	log "jit_overhead: item $it, ${SECS} s"
	item "$it"
done
stop_workloads
cat "$WORK/shares"
echo "# load at the end: $(uptime | sed 's/.*load average://')"
