#!/usr/bin/env bash
# bench/soak.sh - whole-machine profd for a long run with process churn.
#
# Runs build/profd (99 Hz, 10 s profiles, /metrics on 127.0.0.1) for
# DURATION seconds (default 3600) next to:
#   - an exec storm (bench/execstorm.c) at SOAK_STORM_RATE (50) short-lived
#     processes a second, each spinning 2 ms;
#   - SOAK_BIG (200) distinct big binaries, spread over the run,
#     SOAK_BIG_PARALLEL (4) at a time: each a fresh copy of SOAK_BIG_ELF
#     (default gcc's cc1, 33 MB; its own inode and, patched, its own GNU
#     build ID: a distinct binary to profd, which shares one table among
#     copies of one build) compiling a generated C file (~0.5 s of CPU)
#     SOAK_BIG_REPEAT (3) times, deleted after;
#   - a Python workload: python3 processes of a few seconds each, in turn;
#   - every SOAK_NVTX_EVERY (300) s, an NVTX flood (build/tests/nvtx/nvtx_app
#     flood: 1M push+pop pairs as fast as it can), when that was built;
#     0 turns it off.
# Every SOAK_EVERY (30) s it appends to $SOAK_CSV (default
# $WORK/soak.csv, printed at the end): elapsed s, RSS and peak RSS (MiB),
# profd CPU s and % of a core over the last period, the process table
# size, unwind_procs entries and tables, Python processes, cache gauges
# (profd_cache_bytes / entries, when the binary has them), and the lost
# and partial totals. Prints a summary: RSS first/last/peak, the RSS slope
# over the second half, mean CPU.
# Env: DURATION (3600), SOAK_EVERY (30), SOAK_STORM_RATE (50), SOAK_BIG
#      (200), SOAK_BIG_PARALLEL (4), SOAK_BIG_REPEAT (3), SOAK_BIG_ELF,
#      SOAK_NVTX_EVERY (300),
#      SOAK_PORT (19931), SOAK_FLAGS (more profd flags), SOAK_CSV, PROFD,
#      BENCH_KEEP.
set -u
. "$(dirname "$0")/lib.sh"

DURATION=${DURATION:-3600}
EVERY=${SOAK_EVERY:-30}
RATE=${SOAK_STORM_RATE:-50}
NBIG=${SOAK_BIG:-200}
PAR=${SOAK_BIG_PARALLEL:-4}
REPEAT=${SOAK_BIG_REPEAT:-3}
BIG_ELF=${SOAK_BIG_ELF:-$(ls /usr/lib/gcc/x86_64-linux-gnu/*/cc1 2>/dev/null | tail -1)}
PORT=${SOAK_PORT:-19931}
FLAGS=${SOAK_FLAGS:-}
NVTX_EVERY=${SOAK_NVTX_EVERY:-300}
NVTX_APP=$ROOT/build/tests/nvtx/nvtx_app

need_root_and_profd
need_tool curl
need_tool python3
[ -x "$BIG_ELF" ] || die "no big ELF to copy (SOAK_BIG_ELF)"
bench_init
CSV=${SOAK_CSV:-$WORK/soak.csv}
build_workload execstorm "$BENCH_DIR/execstorm.c"
python3 -c "
print('\n'.join(f'int f{i}(int *a, int n) {{ int s = 0; for (int j = 0; j < n; j++) '
                f's += a[j] * {i} ^ (s >> 3); return s + f{max(i - 1, 0)}(a, n - 1); }}'
                for i in range(400)))" >"$WORK/big.c"
mkdir -p "$WORK/big" "$WORK/out"

machine_info
start_profd "$WORK/profd.log" --sampling-frequency 99 --profile-interval 10 \
	--output-dir "$WORK/out" --http-address "127.0.0.1:$PORT" $FLAGS
T0=$(date +%s)
END=$((T0 + DURATION))

"$WORK/execstorm" "$RATE" "$DURATION" 2000 >"$WORK/storm.log" &
bg_add $!
distinct_copy() {	# distinct_copy SRC DST N - SRC with build ID's last 4 bytes = N
	python3 - "$1" "$2" "$3" <<'PY'
import re, subprocess, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = subprocess.run(["readelf", "-n", src], capture_output=True, text=True).stdout
m = re.search(r"Build ID: ([0-9a-f]+)", out)
data = bytearray(open(src, "rb").read())
if m:
    bid = bytes.fromhex(m.group(1))
    at = data.find(bid)
    data[at + len(bid) - 4:at + len(bid)] = n.to_bytes(4, "little")
open(dst, "wb").write(data)
PY
	chmod 755 "$2"
}
(	# big binaries: PAR at a time, one starting every DURATION * 0.9 / NBIG s
	gap=$(awk -v d="$DURATION" -v n="$NBIG" 'BEGIN { printf "%.2f", d * 0.9 / n }')
	for i in $(seq 1 "$NBIG"); do
		[ "$(date +%s)" -lt "$END" ] || break
		while [ "$(jobs -rp | wc -l)" -ge "$PAR" ]; do sleep 0.2; done
		(
			distinct_copy "$BIG_ELF" "$WORK/big/elf-$i" "$i"
			for _ in $(seq 1 "$REPEAT"); do
				"$WORK/big/elf-$i" -quiet -O2 "$WORK/big.c" -o /dev/null 2>/dev/null
			done
			rm -f "$WORK/big/elf-$i"
		) &
		echo "$i" >"$WORK/big.count"
		sleep "$gap"
	done
	wait
) &
bg_add $!
(	# Python: a few seconds of pure-Python work per process, in turn
	while [ "$(date +%s)" -lt "$END" ]; do
		python3 -c '
import time
def leaf(n):
    return sum(i * i for i in range(n))
def mid(n):
    return leaf(n) + leaf(n // 2)
end = time.time() + 4
while time.time() < end:
    mid(20000)
    time.sleep(0.01)'
	done
) &
bg_add $!

if [ "$NVTX_EVERY" -gt 0 ] && [ -x "$NVTX_APP" ] && [ -f "$ROOT/build/libprofd_inject.so" ]; then
	(	# NVTX bursts: more than the tracer's 64 MiB queue passes through
		while sleep "$NVTX_EVERY" && [ "$(date +%s)" -lt "$END" ]; do
			NVTX_INJECTION64_PATH=$ROOT/build/libprofd_inject.so \
				"$NVTX_APP" flood --iter 1000000 >>"$WORK/nvtx.log" 2>&1
		done
	) &
	bg_add $!
fi

metric() {	# metric NAME [LABEL_MATCH] - first sample of NAME in $M
	awk -v n="$1" -v l="${2:-}" '$1 == n || (l != "" && index($1, n "{") == 1 &&
		index($1, l)) { print $2; exit }' <<<"$M"
}
sum_family() { awk -v n="$1" 'index($1, n "{") == 1 { s += $2 } END { printf "%d", s }' <<<"$M"; }

echo "t_s,rss_mib,hwm_mib,cpu_s,cpu_pct,processes,unwind_procs,unwind_tables,symbol_objects,big_done,heap_in_use_mib,heap_free_mib,cache_bytes_mib,cache_evictions,lost,partial" >"$CSV"
prev_cpu=0
prev_t=$T0
while :; do
	now=$(date +%s)
	[ "$now" -lt "$END" ] || break
	sleep $((EVERY < END - now ? EVERY : END - now))
	kill -0 "$PROFD_PID" 2>/dev/null || die "profd exited: $(tail -5 "$WORK/profd.log")"
	M=$(curl -s "http://127.0.0.1:$PORT/metrics" | grep -v '^#')
	t=$(date +%s)
	rss=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' /proc/"$PROFD_PID"/status)
	hwm=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' /proc/"$PROFD_PID"/status)
	cpu=$(metric process_cpu_seconds_total)
	pct=$(awk -v c="$cpu" -v p="$prev_cpu" -v t="$t" -v q="$prev_t" \
		'BEGIN { printf "%.2f", (t > q ? 100 * (c - p) / (t - q) : 0) }')
	printf '%d,%s,%s,%.2f,%s,%s,%s,%s,%s,%s,%.1f,%.1f,%.1f,%s,%s,%s\n' \
		$((t - T0)) "$rss" "$hwm" "$cpu" "$pct" \
		"$(metric profd_processes_tracked)" "$(metric profd_unwind_processes)" \
		"$(metric profd_unwind_tables)" "$(metric profd_cache_entries 'symbol_objects')" \
		"$(cat "$WORK/big.count" 2>/dev/null || echo 0)" \
		"$(awk -v b="$(metric profd_heap_bytes 'in_use')" 'BEGIN { print b / 1048576 }')" \
		"$(awk -v b="$(metric profd_heap_bytes 'free')" 'BEGIN { print b / 1048576 }')" \
		"$(awk -v b="$(sum_family profd_cache_bytes)" 'BEGIN { print b / 1048576 }')" \
		"$(sum_family profd_cache_evictions_total)" \
		"$(sum_family profd_lost_total)" "$(sum_family profd_partial_total)" >>"$CSV"
	prev_cpu=$cpu
	prev_t=$t
	tail -1 "$CSV"
done
stop_profd
cat "$CSV"
echo "storm: $(cat "$WORK/storm.log" 2>/dev/null)"
awk -F, -v d="$DURATION" 'NR > 1 { n++; t[n] = $1; r[n] = $2; if ($3 > peak) peak = $3; c += $5 }
	END {
		if (!n) exit;
		h = int((n + 1) / 2); dt = t[n] - t[h];
		printf "summary: %d s, RSS first %.1f last %.1f peak %.1f MiB, second-half slope %.2f MiB/min, CPU mean %.2f %% of a core\n",
			t[n], r[1], r[n], peak, (dt > 0 ? (r[n] - r[h]) * 60 / dt : 0), c / n
	}' "$CSV"
[ -n "${BENCH_KEEP:-}" ] && echo "kept: $WORK"
