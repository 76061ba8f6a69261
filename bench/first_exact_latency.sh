#!/usr/bin/env bash
# bench/first_exact_latency.sh - issue 16, figure 2: time from a
# process's exec to its first sample with the exact stack, p50 and p99,
# ten processes starting together, profd and perf in the same run.
#
# FL_ROUNDS rounds; each starts ten fresh programs at once (own build, own
# build id, own name; bench/workloads_dwarf/exact_chain.c, -O2
# -fomit-frame-pointer, program K: main -> feK_l1 .. feK_lD, D = 2 + K,
# under __libc_start_call_main, __libc_start_main, _start) for FL_RUN_MS,
# with bench/spawn_stamp.c, which reads CLOCK_MONOTONIC just before each
# posix_spawn() (T0: the exec follows within ~1 ms; each program also
# prints CLOCK_MONOTONIC at the start of main). profd runs system-wide
# (--no-gpu, --sampling-frequency HZ, --profile-interval 1, -vvv, and
# $PROFD_EXTRA_ARGS): every sample's debug block, whose header ends in
# ktime=NS, the sample's bpf_ktime_get_ns() (CLOCK_MONOTONIC). A profd
# without ktime= in that header (before commit "debug: the per-sample
# debug header ends in ktime=NS") is timed by when its reader printed the
# block instead, stamped by a perl filter (time_source=reader: late by up
# to the reader's 100 ms poll). perf records beside it (`perf record -e
# cpu-clock -F HZ -a --call-graph dwarf -k mono`: sample times on
# CLOCK_MONOTONIC too). Per process and profiler, from T0:
#   first_chain_ms  the first sample in the program's own frames
#   first_exact_ms  the first sample whose stack is exactly the expected one
#   before_exact    samples in the program's frames before that one
#   first_to_main_ms  the first whose stack is right from the leaf to main
#                   (the libc start frames above it may be missing: perf
#                   6.1's DWARF call graphs here often end at
#                   __libc_start_call_main, the same in every sample of a
#                   process)
# and the summary over the processes with a sample in their own frames
# (procs=; the others, never sampled there, are left out): p50 and p99 (nearest rank) of both,
# the processes whose first chain sample was already exact, and those
# never exact ("inf" in a percentile that falls on one). With ten
# CPU-bound processes on few CPUs first_chain_ms is mostly scheduling
# (each runs 1/5 of the time on 2 CPUs): compare first_exact with
# first_chain, and profd with perf. -vvv makes profd's reader print and
# symbolize every sample of the machine, which may slow profd's own
# start-up work; bench/exact_share.sh (no -vvv) counts the non-exact
# samples per program as a cross-check. Issue 16's target: p99 <= 10 ms.
#
# Env: FL_ROUNDS (5), FL_RUN_MS (1000), FL_HZ (199), FL_WAIT (max s to
#      wait for other profilers, 90), PROFD_EXTRA_ARGS, PROFD, PPROF,
#      BENCH_KEEP=1 (keep $WORK: per-process lines in $WORK/procs).
# Output: "RESULT first_exact_latency tool=profd|perf ..." lines.
set -u
. "$(dirname "$0")/exact_lib.sh"

ROUNDS=${FL_ROUNDS:-5}
RUN_MS=${FL_RUN_MS:-1000}
HZ=${FL_HZ:-199}
MAXWAIT=${FL_WAIT:-90}
NPROG=10

exact_need_tools
need_tool perl
perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e 1 2>/dev/null ||
	die "perl Time::HiRes (clock_gettime) missing"
dwarf_bench_init
build_spawn_stamp
for r in $(seq 1 "$ROUNDS"); do
	for k in $(seq 0 $((NPROG - 1))); do
		build_exact "fe$k" "$(exact_depth "$k")" "$((r * 100 + k))"
		mv "$WORK/bin/fe$k" "$WORK/bin/r${r}fe$k"	# comm: r2fe3
	done
done

wait_quiet "$MAXWAIT"
echo "$(machine_info)"
echo "# $(profd_info) extra_args=[$PROFD_EXTRA_ARGS]"
echo "# before: $QUIET_NOTE"
LOAD_START=$(loadavg1)

LOGF=$WORK/profd.log
# each line stamped "T<CLOCK_MONOTONIC s> " (the fallback clock); profd's
# pid is $! (the filter runs in a process substitution)
# shellcheck disable=SC2086
"$PROFD" -vvv --no-gpu --sampling-frequency "$HZ" --profile-interval 1 \
	--output-dir "$WORK/out" $PROFD_EXTRA_ARGS \
	> >(perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -ne \
		'$| = 1; printf "T%.6f %s", clock_gettime(CLOCK_MONOTONIC), $_' >"$LOGF") 2>&1 &
PROFD_PID=$!
bg_add "$PROFD_PID"
for i in $(seq 1 300); do
	grep -q "profd: sampling" "$LOGF" 2>/dev/null && break
	kill -0 "$PROFD_PID" 2>/dev/null || { cat "$LOGF" >&2; die "profd exited during start-up"; }
	sleep 0.1
done
grep -q "profd: sampling" "$LOGF" || die "profd did not start sampling within 30 s"
start_perf_dwarf "$WORK/perf.data" "$HZ"
sleep 1

: >"$WORK/spawn"
for r in $(seq 1 "$ROUNDS"); do
	log "round $r"
	# shellcheck disable=SC2046
	"$WORK/spawn_stamp" "$RUN_MS" $(for k in $(seq 0 $((NPROG - 1))); do echo "$WORK/bin/r${r}fe$k"; done) \
		>>"$WORK/spawn"
	sleep 0.5
done
sleep 1.5
stop_pid "$PROFD_PID"
stop_pid "$PERF_PID"
sleep 0.5	# the perl filter writes profd's last lines
LOAD_END=$(loadavg1)

log "reading profd's debug blocks and perf.data"
# "1 pid stack time_s" per sample; profd: ktime, else the reader's stamp
TIME_SOURCE=ktime
grep -q "^T[0-9.]* profd: debug: sample .* ktime=" "$LOGF" || TIME_SOURCE=reader
sed -E 's/^T([0-9.]+) (profd: debug: sample .*)$/\2 ktime_stamp=\1/; s/^T[0-9.]+ //' "$LOGF" |
	awk -v src="$TIME_SOURCE" '
		/^profd: debug: sample / && src == "reader" {
			s = $NF; sub(/^ktime_stamp=/, "", s); $NF = "ktime=" sprintf("%.0f", s * 1e9) }
		{ print }' >"$WORK/profd.debug"
profd_debug_stacks "$WORK/profd.debug" >"$WORK/profd.stacks"
perf_pid_stacks "$WORK/perf.data" >"$WORK/perf.stacks"

# per process and tool: "tool pid name exec_to_main_ms first_chain_ms
# first_exact_ms before_exact first_to_main_ms" (ms from T0; "inf": never)
awk 'NF == 3 { n = $3; sub(/.*\//, "", n); sub(/^r[0-9]+/, "", n); print $1, $2, n }
     NF == 2 { print $1, "main", $2 }' "$WORK/spawn" >"$WORK/spawn.parsed"
for tool in profd perf; do
	while read -r pid t0 name; do
		[ "$t0" = main ] && continue
		k=${name#fe}
		want=$(expected_stack "$name" "$(exact_depth "$k")")
		main_ns=$(awk -v p="$pid" '$1 == p && $2 == "main" { print $3; exit }' "$WORK/spawn.parsed")
		# "time exact to_main" per sample in the program's own frames
		# (the user stack: kernel frames above the leaf left out, as share_of does)
		awk -v pid="$pid" -v name="${name}_l" -v want="$want" '
			BEGIN { m = want; sub(/;__libc_start_call_main.*/, "", m); lm = length(m)
				leaf = want; sub(/;.*/, "", leaf) }
			$2 == pid && index($3, name) {
				u = $3; i = index(";" u ";", ";" leaf ";")
				if (i > 1) u = substr(u, i)
				print $4, (u == want),
					(substr(u, 1, lm) == m && (length(u) == lm || substr(u, lm + 1, 1) == ";")) }' \
			"$WORK/$tool.stacks" |
			sort -g | awk -v tool="$tool" -v pid="$pid" -v nm="$name" -v t0="$t0" -v mn="${main_ns:-0}" '
			function ms(t) { return sprintf("%.1f", (t * 1e9 - t0) / 1e6) }
			{ if (fc == "") fc = ms($1)
			  if ($2 && fe == "") { fe = ms($1); before = n + 0 }
			  if ($3 && fm == "") fm = ms($1)
			  n++ }
			END { printf "%s %s %s %.1f %s %s %s %s\n", tool, pid, nm, mn ? (mn - t0) / 1e6 : -1,
				fc == "" ? "none" : fc, fe == "" ? "inf" : fe, fe == "" ? n + 0 : before,
				fm == "" ? "inf" : fm }'
	done <"$WORK/spawn.parsed"
done >"$WORK/procs"

# pctl COL TOOL P - nearest-rank percentile of column COL ("inf" sorts last)
pctl() {
	awk -v c="$1" -v t="$2" '$1 == t && $5 != "none" { print ($c == "inf" ? 1e18 : $c) }' "$WORK/procs" |
		percentile "$3" | awk '{ print ($1 >= 1e17 ? "inf" : $1) }'
}
for tool in profd perf; do
	echo "RESULT first_exact_latency tool=$tool procs=$(awk -v t="$tool" '$1 == t && $5 != "none"' "$WORK/procs" | wc -l)" \
		"first_exact_p50_ms=$(pctl 6 "$tool" 50) first_exact_p99_ms=$(pctl 6 "$tool" 99)" \
		"first_chain_p50_ms=$(pctl 5 "$tool" 50) first_chain_p99_ms=$(pctl 5 "$tool" 99)" \
		"first_to_main_p50_ms=$(pctl 8 "$tool" 50) first_to_main_p99_ms=$(pctl 8 "$tool" 99)" \
		"$(awk -v t="$tool" '$1 == t && $5 != "none" { n++; if ($7 == 0 && $6 != "inf") f++; if ($6 == "inf") nv++
			if ($7 > mb) mb = $7; b += $7 }
			END { printf "exact_first_procs=%d never_exact=%d before_exact_mean=%.1f before_exact_max=%d",
				f, nv, n ? b / n : 0, mb }' "$WORK/procs")" \
		"before_exact_p50=$(pctl 7 "$tool" 50) exec_to_main_p50_ms=$(pctl 4 "$tool" 50)" \
		"time_source=$([ "$tool" = perf ] && echo perf_mono || echo "$TIME_SOURCE")" \
		"rounds=$ROUNDS run_ms=$RUN_MS hz=$HZ load1=$LOAD_START..$LOAD_END"
done
echo "# ms from T0 (just before posix_spawn); exact_first_procs: first sample in the program's frames already exact"
