#!/usr/bin/env bash
# bench/seam_ab.sh - two profd builds side by side: per-sample BPF cost
# (native and 50-frame Python stacks) and the agent's CPU, alternated in
# one run so the machine's drift hits both alike (issue 15: the runtime,
# output and counter seams must not cost more than the code before them).
#
# For each of AB_ROUNDS rounds and each binary of AB_PROFDS (e.g.
# "/tmp/profd-old build/profd"): bench/bpf_cost.sh at 99 Hz (`chain`, one
# per CPU), bench/python_bpf_cost.sh at 99 Hz (python3.11, 50 frames
# deep) and bench/agent_overhead.sh with AGENT_BG=busy (every sample a
# real stack). Prints each RESULT line prefixed by the binary and round,
# then the medians per binary.
# Env: AB_PROFDS (required), AB_ROUNDS (2), AB_BPF_SECONDS (15),
#      AB_AGENT_SECONDS (30).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${AB_PROFDS:?set AB_PROFDS to two profd binaries}"
ROUNDS=${AB_ROUNDS:-2}
out=$(mktemp)
for r in $(seq 1 "$ROUNDS"); do
	for bin in $AB_PROFDS; do
		{
			PROFD=$bin BPF_COST_RUNS=99 BPF_COST_SECONDS=${AB_BPF_SECONDS:-15} \
				bash "$here/bpf_cost.sh" 2>/dev/null
			PROFD=$bin PY_COST_RUNS=99 BPF_COST_SECONDS=${AB_BPF_SECONDS:-15} \
				bash "$here/python_bpf_cost.sh" 2>/dev/null
			PROFD=$bin AGENT_BG=busy AGENT_SECONDS=${AB_AGENT_SECONDS:-30} \
				bash "$here/agent_overhead.sh" 2>/dev/null
		} | grep '^RESULT' | sed "s|^|$bin round=$r |" | tee -a "$out"
	done
done
echo "medians per binary:"
for bin in $AB_PROFDS; do
	for what in "RESULT bpf_cost " "RESULT python_bpf_cost " "RESULT agent_overhead "; do
		key=$([ "$what" = "RESULT agent_overhead " ] && echo cpu_pct_ns || echo median_ns)
		grep -F "$bin round=" "$out" | grep -F "$what" |
			grep -o "$key=[0-9.]*" | cut -d= -f2 | sort -n |
			awk -v b="$bin" -v w="${what#RESULT }" -v k="$key" \
				'{ v[NR] = $1 } END { if (NR) printf "%-24s %-16s %s=%s (n=%d)\n", b, w, k, v[int((NR + 1) / 2)], NR }'
	done
done
rm -f "$out"
