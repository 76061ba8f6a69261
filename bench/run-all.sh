#!/bin/sh
# bench/run-all.sh - run profd's benchmarks and print a summary (`make bench`).
#
# Runs, in this order, the suites named in BENCH_SUITES (default
# "core python dwarf gpu nvtx"; service on request; about 17 minutes on a 2-CPU machine, core
# alone 5-6):
# core:
#   bench/bpf_cost.sh        BPF run time per sample at 99 and 19 Hz, and at 99 Hz
#                            with --no-dwarf-unwinding (~1.5 min)
#   bench/bpf_parts.sh       where that time goes (diagnostic, ~1 min;
#                            skipped when clang is missing or BENCH_PARTS=0)
#   bench/slowdown.sh        slowdown of a CPU-bound program, profd vs perf (~2-3 min)
#   bench/agent_overhead.sh  CPU and peak RSS of the profd process (~1 min)
# python:
#   bench/python_bpf_cost.sh BPF run time per sample for a 50-frame Python
#                            stack, with and without --no-python-unwinding (~1 min)
#   bench/python_slowdown.sh slowdown of a pure-Python program, profd vs
#                            austin (CPython 3.9) and on python3.11 (~2.5 min)
# dwarf:
#   bench/unwind_table_build.sh  unwind-table compile time (no root needed)
#   bench/dwarf_bpf_cost.sh  BPF run time per sample, 30-frame no-FP stack (~1.5 min)
#   bench/dwarf_parts.sh     where that time goes (diagnostic; like bpf_parts)
#   bench/dwarf_memory.sh    BPF map memory with every process profiled (~0.5 min)
#   bench/dwarf_first_stack.sh  time to the first full stack of a new process
#   bench/dwarf_slowdown.sh  slowdown of a no-FP program, profd vs perf --call-graph dwarf
# gpu (mock CUDA stack, no GPU needed; needs build/tests/gpu):
#   bench/gpu_throughput.sh  kernel records per second through probe -> ringbuf
#                            -> correlation without loss (~20 s)
#   bench/gpu_launch_cost.sh what the injection library adds per launch, with
#                            and without profd attached (~40 s)
# nvtx (NVTX v3 headers only, no GPU; needs build/tests/nvtx):
#   bench/nvtx_cost.sh       an NVTX push+pop pair without the injection
#                            library, with it and no agent, and under profd (~40 s)
#   bench/nvtx_spans.sh      NVTX spans per second end to end (library -> BPF ->
#                            tracer -> OTLP/HTTP) without loss (~60 s)
# truestacks (issue 16; bench/true_stacks.sh runs the same three alone):
#   bench/exact_share.sh     exact-stack share per program, profd vs perf (~1.5 min)
#   bench/first_exact_latency.sh  exec -> first exact sample, p50/p99 (~1 min)
#   bench/first_sample_cost.sh    ringbuf bytes/s, agent CPU in an exec storm (~1.5 min)
# ruby (issue 17; needs ruby3.1 and a profd with the Ruby unwinder):
#   bench/ruby_overhead.sh   profd's CPU with 20 Ruby processes, Ruby unwinder
#                            on vs --tracers native (~3.5 min), and the slowdown
#                            of a fixed Ruby benchmark: none, profd, profd
#                            --tracers native, perf (~2 min)
# jit (issue 19; needs java 17 (Debian's openjdk-17), node, perf, and a profd
# with the HotSpot and V8 unwinders):
#   bench/jit_stacks.sh      complete and named share of a JVM's and a node's
#                            samples, profd vs perf -g and --call-graph dwarf (~1.5 min)
#   bench/jit_bpf_cost.sh    BPF time per sample, 40-frame Java/JS/C stacks (~5 min)
#   bench/jit_overhead.sh    agent CPU and RSS with 5 JVMs and 5 nodes (~4 min)
# offcpu (issue 20; needs perf):
#   bench/offcpu_cost.sh     pipe ping-pong throughput with --off-cpu (defaults, threshold 1)
#                            beside perf sched_switch -g; BPF ns per switch (~4 min)
# service:
#   bench/probabilistic.sh   agent CPU and peak RSS at 19 Hz with
#                            --probabilistic-threshold 100 and 10 (~7 min)
# Each script's full output goes to $BENCH_OUT (default: a new
# /tmp/profd-bench-results.XXXXXX directory), the summary to stdout.
# Needs root and build/profd (run `make` first; PROFD=/path/to/profd measures
# another build, e.g. one of a fixed commit). Exit status: 0 when every
# benchmark ran (whether or not the targets were met), 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

[ "$(id -u)" = 0 ] || { echo "run-all.sh: error: needs root" >&2; exit 1; }
profd=${PROFD:-$root/build/profd}
[ -x "$profd" ] || { echo "run-all.sh: error: $profd is missing: run 'make' first" >&2; exit 1; }
command -v bash >/dev/null || { echo "run-all.sh: error: bash not found" >&2; exit 1; }

out=${BENCH_OUT:-$(mktemp -d /tmp/profd-bench-results.XXXXXX)}
mkdir -p "$out"
child=""
cleanup() {
	trap '' INT TERM
	# the benchmarks clean up after themselves on TERM (their EXIT traps)
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
	child=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failed=""
run() {
	name=$1
	echo "== $name ($(date +%H:%M:%S), load:$(uptime | sed 's/.*load average://'))"
	bash "$here/$name.sh" >"$out/$name.out" 2>"$out/$name.log" &
	child=$!
	if wait "$child"; then
		grep '^RESULT' "$out/$name.out"
	else
		echo "   FAILED, see $out/$name.log:"
		tail -n 5 "$out/$name.log" | sed 's/^/   /'
		failed="$failed $name"
	fi
	child=""
}

suites=${BENCH_SUITES:-core python dwarf gpu nvtx}
parts=0
[ "${BENCH_PARTS:-1}" != 0 ] && command -v clang >/dev/null && parts=1
names=""
for suite in $suites; do
	case $suite in
	core) names="$names bpf_cost"
		[ $parts = 1 ] && names="$names bpf_parts"
		names="$names slowdown agent_overhead" ;;
	python) names="$names python_bpf_cost python_slowdown" ;;
	dwarf) names="$names unwind_table_build dwarf_bpf_cost"
		[ $parts = 1 ] && names="$names dwarf_parts"
		names="$names dwarf_memory dwarf_first_stack dwarf_slowdown" ;;
	gpu) names="$names gpu_throughput gpu_launch_cost" ;;
	nvtx) names="$names nvtx_cost nvtx_spans" ;;
	truestacks) names="$names exact_share first_exact_latency first_sample_cost" ;;
	ruby) names="$names ruby_overhead" ;;
	jit) names="$names jit_stacks jit_bpf_cost jit_overhead" ;;
	offcpu) names="$names offcpu_cost" ;;
	service) names="$names probabilistic" ;;
	*) echo "run-all.sh: error: unknown suite $suite (core, python, dwarf, gpu, nvtx, truestacks, ruby, jit, offcpu, service)" >&2; exit 1 ;;
	esac
done

start=$(date +%s)
echo "profd benchmarks: $profd; nproc=$(nproc) kernel=$(uname -r); suites: $suites; results in $out"
for n in $names; do
	run "$n"
done

echo
echo "== summary ($(( $(date +%s) - start )) s; load now:$(uptime | sed 's/.*load average://'))"
for n in $names; do
	[ -f "$out/$n.out" ] && cat "$out/$n.out"
done | awk '
function kv(s,   n, i, a, p) {
	delete v
	n = split(s, a, " ")
	for (i = 3; i <= n; i++) {
		p = index(a[i], "=")
		if (p) v[substr(a[i], 1, p - 1)] = substr(a[i], p + 1)
	}
}
/^RESULT bpf_cost / {
	kv($0)
	printf "BPF cost per sample, %3s Hz (flags: %s): median %6.0f ns (mean %.0f ns) of %s windows; target <= 2000 ns: %s\n",
		v["hz"], v["flags"], v["median_ns"], v["mean_ns"], v["windows"], (v["median_ns"] + 0 <= 2000) ? "met" : "MISSED"
	printf "   run_cnt of the tail-called programs at the end (0 = counted in profd_sample): %s\n",
		v["tailcalled_run_cnt_after"]
}
/^RESULT gpu_throughput / {
	kv($0)
	printf "GPU kernel records %8s/s asked, %8s/s made: %s in the profile, %s lost\n",
		v["rate"], v["achieved"], v["in_profile"], v["lost"]
}
/^RESULT gpu_throughput_best / {
	kv($0)
	printf "GPU kernel records per second without loss: %s; target >= 1000000: %s\n",
		v["kernels_per_sec_without_loss"], (v["kernels_per_sec_without_loss"] + 0 >= 1000000) ? "met" : "MISSED"
}
/^RESULT gpu_launch_cost / {
	kv($0)
	printf "GPU launch cost %-13s %8s ns per launch (+%s ns)\n", v["config"], v["ns_per_launch"], v["added_ns"]
}
/^RESULT nvtx_cost / {
	kv($0)
	target = ""
	if (v["config"] == "no_agent") target = sprintf("; target <= 20 ns: %s", (v["ns_per_pair"] + 0 <= 20) ? "met" : "MISSED")
	if (v["config"] == "agent") target = sprintf("; target <= 2000 ns (1 us an event): %s", (v["ns_per_pair"] + 0 <= 2000) ? "met" : "MISSED")
	printf "NVTX push+pop %-9s %8s ns per pair (+%s ns)%s\n", v["config"], v["ns_per_pair"], v["added_ns"], target
}
/^RESULT nvtx_spans / {
	kv($0)
	printf "NVTX spans end to end at %7s/s: %s made, %s exported, %s lost, profd %s s CPU\n", v["rate"], v["made"], v["sent"], v["lost"], v["cpu_s"]
}
/^RESULT bpf_parts mode=alone / {
	kv($0)
	printf "   part alone %-15s median %6.0f ns\n", v["prog"], v["median_ns"]
}
/^RESULT slowdown / {
	kv($0)
	printf "slowdown %-10s median wall %7.3f s (x%.3f), best %7.3f s (x%.3f); median cpu %7.3f s (x%.3f)\n",
		v["config"], v["wall_s"], v["wall_ratio"], v["min_wall_s"], v["min_wall_ratio"], v["cpu_s"], v["cpu_ratio"]
}
/^RESULT (python_bpf_cost|dwarf_bpf_cost) / {
	kv($0)
	what = "DWARF BPF cost per sample, depth " v["depth"]
	if ($2 == "python_bpf_cost") what = "Python BPF cost per sample, python " v["python"]
	frames = ""
	if (("py_frames_median" in v) && v["py_frames_median"] != "nan")
		frames = sprintf(", %s Python frames (%s%% full)", v["py_frames_median"], v["py_full_depth_pct"])
	printf "%s, %3s Hz (flags: %s)%s: median %6.0f ns (mean %.0f ns) of %s windows\n",
		what, v["hz"], v["flags"], frames, v["median_ns"], v["mean_ns"], v["windows"]
	next
}
/^RESULT (python_slowdown|dwarf_slowdown|ruby_slowdown) / {
	kv($0)
	prof = ""
	if ("profiler_cpu_pct_of_work" in v) prof = "; profiler CPU " v["profiler_cpu_pct_of_work"] "% of the work"
	printf "%s %-6s %-10s median wall %7.3f s (x%.3f); median cpu %7.3f s (x%.3f)%s\n",
		$2, v["set"], v["config"], v["wall_s"], v["wall_ratio"], v["cpu_s"], v["cpu_ratio"], prof
	next
}
/^RESULT (unwind_table_build|dwarf_memory|dwarf_first_stack summary|dwarf_parts) / {
	sub(/^RESULT /, "")
	print "   " substr($0, 1, 160)
	next
}
/^RESULT ruby_agent_cpu / {
	kv($0)
	printf "agent at %s Hz with %s Ruby processes, %-16s: CPU %.3f%% of a core (rounds: %s); %s%% of their samples with Ruby frames, %s unnamed, %s attach refusals\n",
		v["hz"], v["procs"], (v["config"] == "ruby") ? "Ruby unwinder on" : "--tracers native", v["cpu_pct"], v["cpu_pcts"], v["rb_ruby_pct"], v["frame_unnamed"], v["attach_refused"]
	next
}
/^RESULT ruby_agent_cpu_delta / {
	kv($0)
	printf "   Ruby unwinder on - off: %+.3f%% of a core (x%s)\n", v["ruby_minus_native_pct"], v["ratio"]
	next
}
/^RESULT ruby_overhead skipped/ { print "ruby_overhead: " $0; next }
/^RESULT jit_(share tool=[a-z_]+ workload=[a-z]+ group=all|bpf_cost|agent) / { print substr($0, 8, 200); next }
/^RESULT probabilistic / {
	kv($0)
	printf "agent at %s Hz, --probabilistic-threshold %3s (%s of %s intervals not profiled): CPU %.3f%% of a core, peak RSS %.1f MiB, %s samples\n",
		v["hz"], v["threshold"], v["not_profiled"], v["intervals"], v["cpu_pct"], v["vmhwm_mib"], v["samples"]
	next
}
/^RESULT agent_overhead / {
	kv($0)
	printf "agent at %s Hz (%s background): CPU %.3f%% of a core (target <= 0.5%%: %s), peak RSS %.1f MiB (target <= 64: %s)\n",
		v["hz"], v["background"], v["cpu_pct"], (v["cpu_pct"] + 0 <= 0.5) ? "met" : "MISSED",
		v["vmhwm_mib"], (v["vmhwm_mib"] + 0 <= 64) ? "met" : "MISSED"
}'
if [ -n "$failed" ]; then
	echo "failed:$failed"
	exit 1
fi
exit 0
