#!/usr/bin/env bash
# bench/dwarf_first_stack.sh - how soon profd gives a new process (no
# frame pointers) full stacks.
#
# profd starts system-wide (--sampling-frequency 99, --profile-interval 1,
# -vvv: one "profd: sample pid= tid= comm= k= u=" line per sample on
# stderr, written by the reader thread as it takes the record from the
# ringbuf; the ringbuf wakes the reader on each record, so a line is
# within milliseconds of its sample). A perl filter stamps each line with
# the wall clock (Time::HiRes). Once profd samples, each repetition starts
# a fresh copy (new inode: its table is not cached yet; libc's may be) of
# tests/workloads/dwarf/chain.c built -O2 -fomit-frame-pointer
# (main -> d_chain_a .. d_chain_e, 9 user frames with the libc start
# frames) for FS_RUN seconds, with its wall-clock start time T0 taken just
# before the fork. From the stamped lines of its pid:
#   first_sample_ms  first sample of the process
#   first_full_ms    first sample whose user stack has the full depth
#                    (the largest u seen for the pid, which must be >= 7)
#   steady_ms        the sample after the last one that was not full
#                    (from here on every sample is full)
#   partial          samples before first_full
#   full_pct_1s      share of full samples in the first second
# and, the interval method (no timestamps needed): in the per-second
# profiles, the first interval in which >= 95% of the process's samples
# have the full chain (d_chain_e .. main) and its index (0: the interval
# the process started in).
#
# Env: FS_REPS (5), FS_RUN (3 s), FS_HZ (99), FS_WAIT (max s to wait for
#      other profilers/benchmarks to end, 90; DWARF_IGNORE_PIDS: pids
#      of other profilers not to wait for).
# Output: "RESULT dwarf_first_stack ..." per repetition and a summary.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

REPS=${FS_REPS:-5}
RUN=${FS_RUN:-3}
HZ=${FS_HZ:-99}
MAXWAIT=${FS_WAIT:-90}

need_root_and_profd
need_tool perl
[ -x "$PPROF" ] || die "pprof not found (build/tools/pprof, /tmp/pprof or PATH)"
perl -MTime::HiRes -e 1 2>/dev/null || die "perl Time::HiRes missing"
dwarf_bench_init
build_dwarf_workload chain "$DWARF_SRC/chain.c"

wait_quiet "$MAXWAIT"
echo "$(machine_info)"
echo "# before: $QUIET_NOTE"
LOAD_START=$(loadavg1)

LOGF=$WORK/profd.log
# profd's pid is $! (the filter runs in a process substitution)
"$PROFD" -vvv --sampling-frequency "$HZ" --profile-interval 1 \
	--output-dir "$WORK/out" \
	> >(perl -MTime::HiRes=time -ne '$| = 1; printf "%.6f %s", time, $_' >"$LOGF") 2>&1 &
PROFD_PID=$!
bg_add "$PROFD_PID"
for i in $(seq 1 300); do
	grep -q "profd: sampling" "$LOGF" 2>/dev/null && break
	kill -0 "$PROFD_PID" 2>/dev/null || { cat "$LOGF" >&2; die "profd exited during start-up"; }
	sleep 0.1
done
grep -q "profd: sampling" "$LOGF" || die "profd did not start sampling"
sleep 2

: >"$WORK/reps"
for r in $(seq 1 "$REPS"); do
	exe=$WORK/dwfs_chain$r		# comm: "dwfs_chainN"
	cp "$WORK/chain" "$exe"
	sync
	sleep 1.3
	T0=$(perl -MTime::HiRes=time -e 'printf "%.6f", time')
	"$exe" "$RUN" &
	pid=$!
	wait "$pid"
	sleep 1
	echo "$r $pid $T0" >>"$WORK/reps"
done
sleep 2.5	# the last interval with the process is written
kill -INT "$PROFD_PID"
wait "$PROFD_PID" 2>/dev/null
bg_forget "$PROFD_PID"
sleep 0.5
LOAD_END=$(loadavg1)

# interval method: per profile, "start_epoch pid full total"
for f in "$WORK/out"/cpu-*.pb.gz; do
	ts=$(basename "$f" | sed 's/cpu-\([0-9]\{8\}\)T\([0-9]\{2\}\)\([0-9]\{2\}\)\([0-9]\{2\}\)Z.*/\1 \2:\3:\4/')
	ep=$(date -u -d "$ts" +%s)
	trace_stacks "$f" | awk -v ep="$ep" '$4 ~ /^dwfs_chain/ {
		t[$3] += $1
		if ($5 ~ /^d_chain_e;d_chain_d;d_chain_c;d_chain_b;d_chain_a;main/) f[$3] += $1 }
		END { for (p in t) print ep, p, f[p] + 0, t[p] }'
done >"$WORK/intervals"

while read -r r pid T0; do
	awk -v pid="$pid" -v t0="$T0" '
		$3 == "sample" && $4 == "pid=" pid {
			u = $NF; sub(/^u=/, "", u); n++; t[n] = $1; d[n] = u + 0
			if (d[n] > max) max = d[n]
		}
		END {
			if (!n) { print "samples=0"; exit }
			full = max; ff = 0; last_bad = 0; part = 0; n1 = 0; f1 = 0
			for (i = 1; i <= n; i++) {
				if (d[i] == full && !ff) ff = i
				if (d[i] != full) last_bad = i
				if (t[i] - t0 < 1) { n1++; if (d[i] == full) f1++ }
			}
			part = ff ? ff - 1 : n
			steady = last_bad < n ? (t[last_bad + 1] - t0) * 1000 : -1
			printf "samples=%d full_depth=%d first_sample_ms=%.1f first_full_ms=%.1f steady_ms=%.1f partial=%d not_full_total=%d full_pct_1s=%.1f depths_first5=",
				n, full, (t[1] - t0) * 1000, ff ? (t[ff] - t0) * 1000 : -1, steady, part,
				0, n1 ? 100 * f1 / n1 : 0
			for (i = 1; i <= 5 && i <= n; i++) printf "%s%d", (i > 1 ? "," : ""), d[i]
			printf "\n"
		}' "$LOGF" >"$WORK/r$r"
	# not_full_total: recount outside the END block for clarity
	nf=$(awk -v pid="$pid" '$3 == "sample" && $4 == "pid=" pid { u = $NF; sub(/^u=/, "", u); print u }' "$LOGF" |
		awk -v m="$(sed -n 's/.*full_depth=\([0-9]*\).*/\1/p' "$WORK/r$r")" '$1 != m { c++ } END { print c + 0 }')
	iv=$(awk -v pid="$pid" -v t0="$T0" '$2 == pid {
		k = $1 - int(t0); pct = $4 ? 100 * $3 / $4 : 0
		line = line sprintf("%s%d:%d/%d", line ? "," : "", k, $3, $4)
		if (pct >= 95 && first == "") first = k
	} END { printf "first_interval_95pct=%s intervals=%s\n", first == "" ? "none" : first, line }' \
		<(sort -n "$WORK/intervals"))
	echo "RESULT dwarf_first_stack rep=$r pid=$pid $(sed "s/not_full_total=0/not_full_total=$nf/" "$WORK/r$r") $iv"
done <"$WORK/reps" | tee "$WORK/results"

SUMMARY=""
for k in first_sample_ms first_full_ms steady_ms; do
	SUMMARY="$SUMMARY ${k}_median=$(sed -n "s/.* $k=\([-0-9.]*\).*/\1/p" "$WORK/results" | median)"
	SUMMARY="$SUMMARY ${k}_max=$(sed -n "s/.* $k=\([-0-9.]*\).*/\1/p" "$WORK/results" | percentile 100)"
done
echo "RESULT dwarf_first_stack summary reps=$REPS hz=$HZ$SUMMARY" \
	"load1=$LOAD_START..$LOAD_END other_profilers_at_end=$(other_profilers | wc -l)"
grep -v "profd: sample " "$LOGF" | grep -E "unwind|error|warn" | head -n 5 | sed 's/^/  /' >&2
