#!/usr/bin/env bash
# bench/python_bpf_cost.sh - CPU time profd's BPF program costs per sample
# when every sample is a 50-frame Python stack.
#
# A thin wrapper of bench/bpf_cost.sh (same measurement: bpf_stats
# run_time_ns / run_cnt of profd_sample, tail calls included, median of
# 0.5 s window averages; see that script's header): the workload is
# bench/workloads_python/deep_stack.py, one per CPU, whose main thread is
# always PY_COST_DEPTH (50) Python frames deep (<module> -> main -> rec x 47
# -> hot_leaf, a pure-bytecode loop). The default items are
# "99 99,--no-python-unwinding": the same samples with and without the
# Python walk, so the difference is the walk's own cost (thread-state
# lookup plus one bpf_probe_read_user per frame: ~52 reads for 50 frames;
# the native walk of the interpreter's C stack is in both).
# After each item the profile is checked (the --check mode below): samples
# of the interpreter (by comm) and their median number of frames (native +
# Python), samples of the workload (stacks with its functions), the median
# number of Python frames in them and the share with exactly PY_COST_DEPTH,
# and profd's python_frame_read_error / python_stack_truncated counters.
#
# Env: PY_COST_PYTHONS: interpreters to measure, one bpf_cost.sh run each
#        (default /usr/bin/python3.11; e.g. add
#        /root/.pyenv/versions/3.9.18/bin/python3.9 - note that on 3.9/3.10
#        each Python call is also a C recursion, so their native stacks are
#        ~4 C frames per Python frame deep and hit --max-stack-depth),
#      PY_COST_DEPTH (50), PY_COST_RUNS ("99 99,--no-python-unwinding"),
#      and bpf_cost.sh's BPF_COST_SECONDS, BPF_COST_WINDOW,
#      BPF_COST_WARMUP, BPF_COST_JOBS, PROFD; PPROF for the check.
# Output: one "RESULT python_bpf_cost ..." line per interpreter and item,
# with python=VERSION and the check's words. ~1 min per interpreter.
set -u
. "$(dirname "$0")/dwarf_lib.sh"

WORKLOAD_PY=$BENCH_DIR/workloads_python/deep_stack.py
DEPTH=${PY_COST_DEPTH:-50}

# --check VERSION COMM DIR: the stack check of one item's profiles
# (key=value words).
if [ "${1:-}" = --check ]; then
	ver=$2 comm=$3 dir=$4
	[ -x "$PPROF" ] || { echo "python=$ver py_check=no_pprof"; exit 0; }
	for f in "$dir"/cpu-*.pb.gz; do
		[ -e "$f" ] || continue
		trace_stacks "$f"
		for c in partial.python_frame_read_error partial.python_stack_truncated; do
			echo "# $c $(comment_value "$f" "$c")"
		done
	done | awk -v depth="$DEPTH" -v ver="$ver" -v comm="$comm" '
		/^# / { err[$2] += $3; next }
		$4 == comm { ctotal += $1; fc[$2] += $1 }
		{
			n = split($5, fr, ";"); py = 0; mine = 0
			for (i = 1; i <= n; i++) {
				if (fr[i] == "hot_leaf" || fr[i] == "rec") mine = 1
				if (fr[i] ~ /^(hot_leaf|rec|main|\[\[python\]\])$/) py++
			}
			if (!mine) next
			total += $1; cnt[py] += $1
			if (py == depth) full += $1
		}
		END {
			# median of the Python frame counts, weighted by samples
			half = total / 2; m = "nan"; s = 0
			for (k = 0; k <= 512; k++) if (k in cnt) { s += cnt[k]; if (s >= half) { m = k; break } }
			# and of all frames (native + Python) of every sample of the
			# interpreter (by comm), with or without Python frames
			half = ctotal / 2; fm = "nan"; s = 0
			for (k = 0; k <= 1024; k++) if (k in fc) { s += fc[k]; if (s >= half) { fm = k; break } }
			printf "python=%s comm_samples=%d frames_median=%s", ver, ctotal, fm
			printf " py_workload_samples=%d py_frames_median=%s py_full_depth_pct=%.1f", \
				total, m, total ? 100 * full / total : 0
			printf " py_frame_read_errors=%d py_truncated=%d\n", \
				err["partial.python_frame_read_error"], err["partial.python_stack_truncated"]
		}'
	exit 0
fi

[ -f "$WORKLOAD_PY" ] || die "$WORKLOAD_PY is missing"
status=0
for py in ${PY_COST_PYTHONS:-/usr/bin/python3.11}; do
	[ -x "$py" ] || { log "python_bpf_cost: $py not found: skipped"; continue; }
	ver=$("$py" -c 'import platform; print(platform.python_version())') ||
		{ log "python_bpf_cost: $py does not run: skipped"; continue; }
	BPF_COST_NAME=python_bpf_cost \
	BPF_COST_RUNS=${PY_COST_RUNS:-99 99,--no-python-unwinding} \
	BPF_COST_WORKLOAD="$py $WORKLOAD_PY --depth $DEPTH" \
	BPF_COST_CHECK="bash $BENCH_DIR/python_bpf_cost.sh --check $ver $(basename "$py")" \
		bash "$BENCH_DIR/bpf_cost.sh" || status=1
done
exit $status
