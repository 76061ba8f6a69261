#!/usr/bin/env bash
# bench/dwarf_first_stack.sh - how soon profd gives a new process (no
# frame pointers) full stacks.
#
# profd starts system-wide (--sampling-frequency 99, --profile-interval 1,
# -vvv: one "profd: sample pid= tid= comm= k= u=" line per sample on
# stderr, written by the reader thread as it takes the record from the
# ringbuf, in sample order; u is the user depth). A perl filter stamps
# each line with the wall clock (Time::HiRes); the sample record's own
# timestamp is not printed. Once profd samples, each repetition starts
# a fresh copy (new inode: its table is not cached yet; libc's may be) of
# tests/workloads/dwarf/chain.c built -O2 -fomit-frame-pointer
# (main -> d_chain_a .. d_chain_e, 9 user frames with the libc start
# frames) for FS_RUN seconds, with its wall-clock start time T0 taken just
# before the fork. From the stamped lines of its pid after the exec (comm
# dwfs_chainN; samples of the forked shell before the exec are counted
# apart as pre_exec_samples):
#   full_depth           the most frequent user depth (9 expected)
#   partial_before_full  samples before the first full-depth one (exact)
#   first_sample_ms      stamp of the first sample (its record asks for a
#                        wakeup - PROFD_SAMPLE_UNWIND_MISSING - so the
#                        stamp is within ms of the sample)
#   first_full_est_ms    first_sample_ms + partial_before_full / HZ: when
#                        the first full sample was taken, assuming the
#                        CPU-bound process was sampled every 1/HZ s
#   first_full_seen_ms   stamp of the first full sample: an upper bound;
#                        ordinary records do not wake the reader
#                        (BPF_RB_NO_WAKEUP), which polls every 100 ms
#   not_full_after_first_full, full_pct_first_1s, depths_first6
# and, the interval method (no timestamps needed): in the per-second
# profiles, the share of the process's samples whose stack is complete
# (d_chain_e .. main, __libc_start_call_main, __libc_start_main, _start;
# complete_pct) or has at least d_chain_e .. main (chain_pct), and the
# first interval in which >= 95% are complete, by index (0: the interval
# the process started in; interval file names have 1 s resolution, so -1
# can happen). never_complete_reps in the summary counts the processes
# whose stacks were mostly (> 50 %) not complete: profd read their maps
# before ld.so had mapped libc (first sample inside ld.so) and
# process_request_unwind() hands the loader that same stale snapshot again
# instead of re-reading /proc/PID/maps, so every later stack ends at main.
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
echo "# $(profd_info)"
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

# interval method: per profile, "start_epoch pid complete total chain":
# complete = the whole stack, d_chain_e .. main .. _start; chain = at
# least d_chain_e .. main (the libc start frames may be missing)
for f in "$WORK/out"/cpu-*.pb.gz; do
	ts=$(basename "$f" | sed 's/cpu-\([0-9]\{8\}\)T\([0-9]\{2\}\)\([0-9]\{2\}\)\([0-9]\{2\}\)Z.*/\1 \2:\3:\4/')
	ep=$(date -u -d "$ts" +%s)
	trace_stacks "$f" | awk -v ep="$ep" '$4 ~ /^dwfs_chain/ {
		t[$3] += $1
		if ($5 ~ /^d_chain_e;d_chain_d;d_chain_c;d_chain_b;d_chain_a;main/) {
			c[$3] += $1
			if ($5 ~ /;main;__libc_start_call_main;__libc_start_main;_start$/) f[$3] += $1
		} }
		END { for (p in t) print ep, p, f[p] + 0, t[p], c[p] + 0 }'
done >"$WORK/intervals"

while read -r r pid T0; do
	# the workload's samples (comm dwfs_chainN: after the exec), in order
	awk -v pid="$pid" '$3 == "sample" && $4 == "pid=" pid {
		c = $6; sub(/^comm=/, "", c); u = $NF; sub(/^u=/, "", u); print $1, c, u }' "$LOGF" \
		>"$WORK/s$r"
	pre=$(awk '$2 !~ /^dwfs_chain/ { n++ } END { print n + 0 }' "$WORK/s$r")
	awk '$2 ~ /^dwfs_chain/' "$WORK/s$r" >"$WORK/w$r"
	# full depth: the most frequent user depth of the workload's samples
	full=$(awk '{ c[$3]++ } END { for (d in c) if (c[d] > best) { best = c[d]; m = d } print m + 0 }' "$WORK/w$r")
	awk -v t0="$T0" -v full="$full" -v hz="$HZ" -v pre="$pre" '
		{ n++; t[n] = $1; d[n] = $3 }
		END {
			if (!n) { print "samples=0"; exit }
			ff = 0; last_bad = 0; n1 = 0; f1 = 0; bad_after = 0
			for (i = 1; i <= n; i++) {
				if (d[i] == full && !ff) ff = i
				if (d[i] != full) { last_bad = i; if (ff) bad_after++ }
				if (t[i] - t0 < 1) { n1++; if (d[i] == full) f1++ }
			}
			part = ff ? ff - 1 : n
			printf "samples=%d pre_exec_samples=%d full_depth=%d partial_before_full=%d not_full_after_first_full=%d",
				n, pre, full, part, bad_after
			printf " first_sample_ms=%.1f first_full_est_ms=%.1f first_full_seen_ms=%.1f",
				(t[1] - t0) * 1000, (t[1] - t0) * 1000 + part * 1000 / hz,
				ff ? (t[ff] - t0) * 1000 : -1
			printf " full_pct_first_1s=%.1f depths_first6=", n1 ? 100 * f1 / n1 : 0
			for (i = 1; i <= 6 && i <= n; i++) printf "%s%d", (i > 1 ? "," : ""), d[i]
			printf "\n"
		}' "$WORK/w$r" >"$WORK/r$r"
	iv=$(awk -v pid="$pid" -v t0="$T0" '$2 == pid {
		k = $1 - int(t0); pct = $4 ? 100 * $3 / $4 : 0
		line = line sprintf("%s%d:%d/%d", line ? "," : "", k, $3, $4)
		if (pct >= 95 && first == "") first = k
		tc += $3; tt += $4; tch += $5
	} END { printf "complete_pct=%.1f chain_pct=%.1f first_interval_95pct_complete=%s intervals_complete/total=%s\n",
		tt ? 100 * tc / tt : 0, tt ? 100 * tch / tt : 0, first == "" ? "none" : first, line }' \
		<(sort -n "$WORK/intervals"))
	echo "RESULT dwarf_first_stack rep=$r pid=$pid $(cat "$WORK/r$r") $iv"
done <"$WORK/reps" | tee "$WORK/results"

SUMMARY=" never_complete_reps=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^complete_pct=/) { split($i, a, "="); if (a[2] < 50) n++ } } END { print n + 0 }' "$WORK/results")"
for k in first_sample_ms first_full_est_ms first_full_seen_ms partial_before_full; do
	SUMMARY="$SUMMARY ${k}_median=$(sed -n "s/.* $k=\([-0-9.]*\).*/\1/p" "$WORK/results" | median)"
	SUMMARY="$SUMMARY ${k}_max=$(sed -n "s/.* $k=\([-0-9.]*\).*/\1/p" "$WORK/results" | percentile 100)"
done
echo "RESULT dwarf_first_stack summary reps=$REPS hz=$HZ$SUMMARY" \
	"load1=$LOAD_START..$LOAD_END other_profilers_at_end=$(other_profilers | wc -l)"
grep -v "profd: sample " "$LOGF" | grep -E "unwind|error|warn" | head -n 5 | sed 's/^/  /' >&2
