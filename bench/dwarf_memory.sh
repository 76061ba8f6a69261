#!/usr/bin/env bash
# bench/dwarf_memory.sh - BPF map memory of profd with DWARF unwinding,
# the whole machine profiled.
#
# Runs profd system-wide (--sampling-frequency 99, --profile-interval 5)
# for MEM_SECONDS while, besides whatever else runs on the machine, these
# processes run (so many processes and objects get tables):
#   - CPU-bound, no frame pointers (tests/workloads/dwarf, -O2
#     -fomit-frame-pointer): chain, recursion (depth 28), qsort, bigframes,
#     signal, cold, dlopen + libhot.so, lambda_sort (C++, libstdc++);
#   - python3 (a busy loop), perl (a busy loop);
#   - a churn loop that starts a short-lived process every 0.2 s (gcc -c,
#     python3 -c, sort, find, sed, awk, bash -c): new pids, new objects.
# profd only builds tables for a process after its first sample, so the
# tables cover the processes that ran on a CPU, not every pid on the box.
#
# At the end (profd still running), every BPF map profd holds open is
# listed from /proc/PID/fdinfo (map_id), which includes the 1 MiB shard
# arrays (profd_unw_rows) user space creates itself, and its memlock is
# read with `bpftool map show id N --json` (bytes_memlock: on kernels >=
# 6.4 the map's real memory use; for the BPF_F_NO_PREALLOC hash
# unwind_procs it follows the entries in use). Reported: the total, the
# sum per map name, the stat.unwind comment of the last complete profile
# (tables, no_cfi, processes, rows, shards), rows x 8 bytes (the table
# bytes actually used in the shards), and profd's RSS.
#
# Env: MEM_SECONDS (20), MEM_HZ (99), MEM_WAIT (max s to wait for other
#      profilers/benchmarks to end, 90; DWARF_IGNORE_PIDS: pids
#      of other profilers not to wait for), MEM_ARGS (extra profd flags).
# Output: "RESULT dwarf_memory ..." lines.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

SECS=${MEM_SECONDS:-20}
HZ=${MEM_HZ:-99}
MAXWAIT=${MEM_WAIT:-90}
EXTRA=${MEM_ARGS:-}

need_root_and_profd
need_tool bpftool
[ -x "$PPROF" ] || die "pprof not found (build/tools/pprof, /tmp/pprof or PATH)"
dwarf_bench_init

for w in chain recursion qsort bigframes signal cold dlopen; do
	build_dwarf_workload "$w" "$DWARF_SRC/$w.c"
done
build_dwarf_workload libhot.so "$DWARF_SRC/libhot.c" -fPIC -shared
build_dwarf_workload lambda_sort "$DWARF_SRC/lambda_sort.cpp"
printf 'int f(int x) { return x * 3; }\n' >"$WORK/small.c"

churn() {
	local end=$(( $(date +%s) + $1 )) i=0
	while [ "$(date +%s)" -lt "$end" ]; do
		case $((i % 7)) in
		0) gcc -O2 -c -o "$WORK/small.o" "$WORK/small.c" ;;
		1) python3 -c 'sum(range(200000))' ;;
		2) seq 1 200000 | sort -n >/dev/null ;;
		3) find /usr/include -name '*.h' >/dev/null 2>&1 ;;
		4) seq 1 100000 | sed 's/1/2/g' >/dev/null ;;
		5) seq 1 100000 | awk '{ s += $1 } END { print s }' >/dev/null ;;
		6) bash -c 'for i in $(seq 1 20000); do :; done' ;;
		esac
		i=$((i + 1))
		sleep 0.2
	done
}

wait_quiet "$MAXWAIT"
echo "$(machine_info)"
echo "# $(profd_info)"
echo "# before: $QUIET_NOTE"
LOAD_START=$(loadavg1)
start_profd "$WORK/profd.log" --sampling-frequency "$HZ" --profile-interval 5 \
	--output-dir "$WORK/out" $EXTRA
RUN=$((SECS + 30))
"$WORK/chain" "$RUN" & bg_add $!
"$WORK/recursion" "$RUN" 28 & bg_add $!
"$WORK/qsort" "$RUN" & bg_add $!
"$WORK/bigframes" "$RUN" & bg_add $!
"$WORK/signal" "$RUN" & bg_add $!
"$WORK/cold" "$RUN" & bg_add $!
"$WORK/dlopen" "$RUN" "$WORK/libhot.so" & bg_add $!
"$WORK/lambda_sort" "$RUN" & bg_add $!
python3 -c 'import time
def f(n):
    return f(n - 1) if n else sum(i * i for i in range(1000))
end = time.time() + '"$RUN"'
while time.time() < end:
    f(20)' & bg_add $!
perl -e '$e = time + '"$RUN"'; while (time < $e) { $x = 0; $x += $_ for 1..1000 }' & bg_add $!
churn "$RUN" & bg_add $!

sleep "$SECS"
map_list "$PROFD_PID" >"$WORK/maps"
RSS_KB=$(awk '/^VmRSS:/ { print $2 }' /proc/"$PROFD_PID"/status)
NPIDS=$(ls -d /proc/[0-9]* | wc -l)
LOAD_END=$(loadavg1)
OTHERS_END=$(other_profilers | wc -l)
# let the interval with the last tables finish, then stop
sleep 5
stop_profd

[ -s "$WORK/maps" ] || die "no BPF maps found in /proc/$PROFD_PID/fdinfo"
last=$(ls "$WORK/out"/cpu-*.pb.gz | tail -n 2 | head -n 1)
UNW=$(unwind_stat "$last")
echo "# maps of profd (id type name bytes_memlock max_entries value_size):"
sed 's/^/#   /' "$WORK/maps"
awk '{ n = $3; if (n ~ /^profd_unw_rows/) n = "profd_unw_rows(shards)"
	m[n] += $4; c[n]++ }
	END { for (n in m) printf "RESULT dwarf_memory map=%s count=%d memlock_bytes=%d memlock_mib=%.2f\n", n, c[n], m[n], m[n] / 1048576 }' \
	"$WORK/maps" | sort -t= -k4 -rn
TOTAL=$(awk '{ t += $4 } END { print t }' "$WORK/maps")
UNWIND=$(awk '$3 ~ /^profd_unw_rows/ || $3 == "unwind_shards" || $3 == "unwind_procs" { t += $4 } END { print t + 0 }' "$WORK/maps")
ROWS=$(echo "$UNW" | sed -n 's/.*rows=\([0-9]*\).*/\1/p')
echo "RESULT dwarf_memory total_memlock_bytes=$TOTAL total_memlock_mib=$(awk -v t="$TOTAL" 'BEGIN { printf "%.2f", t / 1048576 }')" \
	"unwind_memlock_mib=$(awk -v t="$UNWIND" 'BEGIN { printf "%.2f", t / 1048576 }')" \
	"row_bytes_used_mib=$(awk -v r="${ROWS:-0}" 'BEGIN { printf "%.2f", r * 8 / 1048576 }')" \
	"maps=$(wc -l <"$WORK/maps") profd_rss_mib=$(awk -v k="$RSS_KB" 'BEGIN { printf "%.1f", k / 1024 }')" \
	"pids_on_machine=$NPIDS hz=$HZ seconds=$SECS load1=$LOAD_START..$LOAD_END other_profilers_at_end=$OTHERS_END"
echo "RESULT dwarf_memory_unwind $(echo "$UNW" | sed 's/stat.unwind: //') profile=$(basename "$last")"
grep -E "interval|done" "$WORK/profd.log" | tail -n 3 | sed 's/^/  /' >&2
