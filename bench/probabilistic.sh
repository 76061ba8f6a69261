#!/usr/bin/env bash
# bench/probabilistic.sh - what probabilistic profiling saves: CPU and peak
# RSS of the profd process at 19 Hz with --probabilistic-threshold 100
# (always on) and 10 (about one interval in ten profiled).
#
# Runs bench/agent_overhead.sh twice with a busy background (one CPU-bound
# `chain` per CPU: nearly every sample is a real stack), PROB_SECONDS (180)
# of steady state each, --probabilistic-interval PROB_INTERVAL (10s) so
# that the run holds PROB_SECONDS / 10 draws. Reports per threshold the
# agent's CPU % of one core, peak RSS, samples taken, and the intervals
# profiled (from profd's own "not profiled" lines).
# Env: PROB_SECONDS (180), PROB_INTERVAL (10s), PROB_THRESHOLDS ("100 10"), PROFD.
set -u
here=$(cd "$(dirname "$0")" && pwd)
SECS=${PROB_SECONDS:-180}
IVL=${PROB_INTERVAL:-10s}
for th in ${PROB_THRESHOLDS:-100 10}; do
	log=$(mktemp /tmp/profd-prob.XXXXXX)
	AGENT_SECONDS=$SECS AGENT_BG=busy \
	AGENT_FLAGS="--probabilistic-threshold $th --probabilistic-interval $IVL" \
		bash "$here/agent_overhead.sh" >"$log" 2>"$log.err" || {
		echo "probabilistic.sh: agent_overhead.sh failed (threshold $th):" >&2
		tail -n 5 "$log.err" >&2
		exit 1
	}
	off=$(grep -c "not profiled" "$log.err")
	total=$(grep -c "profd: interval\|  profd: interval" "$log.err")
	sed -n 's/^RESULT agent_overhead /RESULT probabilistic threshold='"$th"' interval='"$IVL"' intervals='"$total"' not_profiled='"$off"' /p' "$log"
	rm -f "$log" "$log.err"
done
