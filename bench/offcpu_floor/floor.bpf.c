// SPDX-License-Identifier: GPL-2.0
/*
 * floor.bpf.c - what any tp_btf/sched_switch program costs a switch, for
 * bench/offcpu_cost.sh (configurations "empty", "hash", "tstore").
 *
 * floor_empty does nothing: its cost is the tracepoint's dispatch into
 * BPF (bpf_trace_run4: RCU read lock, migrate-disable, the stats wrapper
 * when bpf_stats is on), the floor every sched_switch program pays.
 * floor_hash adds what profd's switch-in test was before issue 20 W: a
 * lookup of `next` (and `prev`) in an empty hash. floor_tstore adds what
 * it is now: a load of next->bpf_storage (and prev's), with the task
 * storage helper only where it is set. Diagnostic only: not profd's code.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u64);
} floor_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} floor_tasks SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_empty, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_hash, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u32 in = next->pid, out = prev->pid;

	if (bpf_map_lookup_elem(&floor_pending, &in))
		return 1;
	if (bpf_map_lookup_elem(&floor_pending, &out))
		return 1;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_tstore, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	if (next->bpf_storage && bpf_task_storage_get(&floor_tasks, next, 0, 0))
		return 1;
	if (prev->bpf_storage && bpf_task_storage_get(&floor_tasks, prev, 0, 0))
		return 1;
	return 0;
}
