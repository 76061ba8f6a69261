#!/usr/bin/env bash
# bench/dwarf_parts.sh - what a DWARF frame step costs, by piece
# (diagnostic for bench/dwarf_bpf_cost.sh).
#
# Builds bench/workloads_dwarf/dwarf_parts.bpf.c (copies of profd's range
# and row searches over real map types, and user-stack reads; see the
# file) and loads it with bench/bpf_parts/parts.c, which attaches one
# program at a time to cpu-clock events at PARTS_HZ on every CPU and
# reports bpf_stats run time per run (mean and median of 0.5 s windows).
# One tests/workloads/dwarf/recursion.c (depth 28, -O2
# -fomit-frame-pointer) runs per CPU, so the user stack read is that
# workload's (a ~33-frame stack, resident).
#
# Env: PARTS_HZ (99), PARTS_SECONDS (4), DWARF_PARTS_WAIT (60 s max wait
#      for other profilers/benchmarks). Needs clang and libbpf headers.
# Output: one "RESULT dwarf_parts ..." line per program.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

HZ=${PARTS_HZ:-99}
SECS=${PARTS_SECONDS:-4}
MAXWAIT=${DWARF_PARTS_WAIT:-60}
PROGS="p_empty p_regs p_uread1 p_uread33 p_uread512 p_uread4k p_calls99 p_table33 p_step33"

need_root_and_profd
need_tool clang
dwarf_bench_init

need_tool bpftool
build_bpf_parts "$BENCH_DIR/workloads_dwarf/dwarf_parts.bpf.c" "$WORK/dwarf_parts.bpf.o"
build_dwarf_workload dwparts_rec "$DWARF_SRC/recursion.c"

wait_quiet "$MAXWAIT"
echo "$(machine_info)"
echo "# $(profd_info)"
echo "# before: $QUIET_NOTE"
NRUN=$(echo $PROGS | wc -w)
for i in $(seq 1 "$(nproc)"); do
	"$WORK/dwparts_rec" $(( NRUN * (SECS + 2) + 10 )) 28 &
	bg_add $!
done
sleep 0.5
"$WORK/parts" "$WORK/dwarf_parts.bpf.o" "$HZ" 0 p_empty >/dev/null 2>"$WORK/err" ||
	{ tail -n 30 "$WORK/err" >&2; die "dwarf_parts.bpf.o does not load"; }
for p in $PROGS; do
	"$WORK/parts" "$WORK/dwarf_parts.bpf.o" "$HZ" "$SECS" "$p" 2>"$WORK/err" | grep "^$p " |
		awk -v hz="$HZ" -v l="$(loadavg1)" '{ printf "RESULT dwarf_parts prog=%s hz=%s runs=%s mean_ns=%s median_ns=%s load1=%s\n", $1, hz, $2, $3, $4, l }'
	[ -s "$WORK/err" ] && sed 's/^/  /' "$WORK/err" | tail -n 5 >&2
done
echo "# after: load1=$(loadavg1) others=[$(other_profilers | tr '\n' ';' | cut -c1-200)]"
