#!/usr/bin/env bash
# bench/bpf_parts.sh - where profd_sample's time goes (diagnostic).
#
# Builds bench/bpf_parts/ (one perf_event program per piece of profd's
# capture path: empty, header helpers, kernel stack, user FP walk, ringbuf
# output with and without wakeup, two tail calls; two kernel-stack
# variants: an 8-frame buffer, and skipping the helper for user-mode samples) and prices each piece
# with bpf_stats (BPF_ENABLE_STATS, held by the loader only for its run;
# the sysctl is not touched) while one `chain` workload per CPU runs.
# Each program runs alone (its own cpu-clock events at PARTS_HZ on every
# CPU, PARTS_SECONDS each), as profd's program does; then all of them
# together, where they warm the caches for each other.
#
# Env: PARTS_HZ (99), PARTS_SECONDS (4). Needs clang and libbpf headers.
# Output: one "RESULT bpf_parts ..." line per program and mode.
set -u
. "$(dirname "$0")/lib.sh"

HZ=${PARTS_HZ:-99}
SECS=${PARTS_SECONDS:-4}
PROGS="p_empty p_header p_kstack p_kstack8 p_kstack_guard p_ufp p_tail2 p_rb_nowakeup p_rb_wakeup"

need_root_and_profd
need_tool clang
need_tool bpftool
bench_init

build_bpf_parts "$BENCH_DIR/bpf_parts/parts.bpf.c" "$WORK/parts.bpf.o"
build_workload chain "$ROOT/tests/workloads/chain.c"

echo "$(machine_info)"
NRUN=$(echo $PROGS | wc -w)
for i in $(seq 1 "$(nproc)"); do
	"$WORK/chain" $(( (NRUN + 1) * (SECS + 2) + 10 )) &
	bg_add $!
done
# fail early, with the verifier log, if the object does not load
"$WORK/parts" "$WORK/parts.bpf.o" "$HZ" 0 p_empty >/dev/null 2>"$WORK/err" ||
	{ tail -n 30 "$WORK/err" >&2; die "parts.bpf.o does not load"; }
for p in $PROGS; do
	"$WORK/parts" "$WORK/parts.bpf.o" "$HZ" "$SECS" "$p" 2>"$WORK/err" | grep "^$p " |
		awk -v hz="$HZ" -v l="$(loadavg1)" '{ printf "RESULT bpf_parts mode=alone prog=%s hz=%s runs=%s mean_ns=%s median_ns=%s load1=%s\n", $1, hz, $2, $3, $4, l }'
done
"$WORK/parts" "$WORK/parts.bpf.o" "$HZ" "$SECS" 2>"$WORK/err" | grep "^p_" |
	awk -v hz="$HZ" -v l="$(loadavg1)" '
	/^p_tail_target/ { print "RESULT bpf_parts mode=together " $0; next }
	{ printf "RESULT bpf_parts mode=together prog=%s hz=%s runs=%s mean_ns=%s median_ns=%s load1=%s\n", $1, hz, $2, $3, $4, l }'
