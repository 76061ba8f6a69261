/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * offcpu.bpf.h - off-CPU profiling: where threads wait, and for how long.
 *
 * Owns: the sched_switch program (tp_btf, attached only with --off-cpu),
 * the unwinder chain instantiated for it, and `offcpu_pending` (task
 * storage: the switch-out time of a recorded switch-out whose thread has
 * not run since, on that thread).
 *
 * At a switch-out where the thread blocks (not preempted: prev_state is
 * not TASK_RUNNING) the tracepoint runs in that thread's context, before
 * the switch, so capture_stack() walks its user stack with the same chain
 * as a CPU sample and its kernel stack says why it blocks (futex_wait,
 * pipe_read, do_nanosleep, a page fault). It is recorded with probability
 * --off-cpu-threshold; the sample's origin is PROFD_ORIGIN_OFF_CPU and its
 * cookie the switch-out time. When that thread next switches in (it is
 * `next` of the same tracepoint) a struct profd_offcpu_end carries both
 * times; user space joins it with the stack, applies --off-cpu-min-block
 * and splits the time over the intervals it spans (src/agent/offcpu.c).
 * A thread that exits with an entry left (it never ran again) ends it at
 * its exit (profd_proc_exit).
 *
 * A switch-in can happen without a sched_switch that names the thread as
 * `next` (some kernels leave out the switches of tasks they hide from
 * tracing: on the Firecracker guests profd is tested on, every switch
 * away from the init's threads is missing, so the thread that runs next
 * is never seen coming in). A thread that switches out with its entry
 * still there ran without being seen: its period ends at this switch-out
 * less the CPU time it ran since it was last picked (its sched_entity's
 * sum_exec_runtime - prev_sum_exec_runtime; 0 outside the fair class),
 * flagged PROFD_OFFCPU_IN_UNSEEN and counted (off_cpu_in_unseen). The end
 * comes before the thread's next stack, so user space never sees two
 * stacks of one thread without an end between.
 *
 * Every switch of the machine runs the program, and nearly all of them
 * record nothing: that path reads no clock. With cfg_offcpu_task_storage
 * (PROFD_OFFCPU_TASK_STORAGE=1, src/tracer/tracer.c) it calls no helper
 * either: the pending entry is BPF task storage, deleted when the period
 * ends, so a thread with none pending has no storage at all
 * (task->bpf_storage is NULL: the kernel frees a task's storage with its
 * last entry) and the switch-in test is one load of next->bpf_storage;
 * only a thread with some task storage (ours or another BPF user's) pays
 * the lookup. The default, the hash keyed by tid (offcpu_tid_hash), costs
 * two lookups a switch (docs/PERFORMANCE.md, "Off-CPU (issue 20)").
 */
#ifndef PROFD_BPF_OFFCPU_BPF_H
#define PROFD_BPF_OFFCPU_BPF_H

#include "stack.bpf.h"

/*
 * One entry per blocked recorded thread, on the thread (its value: the
 * switch-out ns); it goes at the period's end, or with the thread. No
 * entry is ever evicted; one that cannot be made (no memory, the storage
 * busy on this CPU) refuses the switch-out, counted. Bounded by the
 * threads that exist, each a few hundred bytes beside its kernel stack.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} offcpu_pending SEC(".maps");

/*
 * The pending entries by default (cfg_offcpu_task_storage false), two
 * lookups a switch; a full one refuses new switch-outs (counted). Kernels
 * before 6.4 allocate task storage with kmalloc(GFP_ATOMIC), which may
 * wake kswapd: under sched_switch's runqueue lock that can deadlock, so
 * there it is never used. From 6.4 task storage comes from bpf_mem_alloc
 * (later kmalloc_nolock), safe in any context; when the tracer turns it
 * on this hash gets one entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROFD_OFFCPU_PENDING_MAX);
	__type(key, __u32);
	__type(value, __u64);
} offcpu_tid_hash SEC(".maps");

const volatile bool cfg_offcpu_task_storage = false;

/* @task's pending switch-out ns, or NULL. */
static __always_inline __u64 *pending_get(struct task_struct *task)
{
	__u32 tid;

	if (cfg_offcpu_task_storage)
		return task->bpf_storage ?
		       bpf_task_storage_get(&offcpu_pending, task, 0, 0) : NULL;
	tid = task->pid;
	return bpf_map_lookup_elem(&offcpu_tid_hash, &tid);
}

static __always_inline void pending_delete(struct task_struct *task)
{
	__u32 tid;

	if (cfg_offcpu_task_storage) {
		bpf_task_storage_delete(&offcpu_pending, task);
		return;
	}
	tid = task->pid;
	bpf_map_delete_elem(&offcpu_tid_hash, &tid);
}

/* A new pending entry of @task (its value to fill), or NULL. */
static __always_inline __u64 *pending_new(struct task_struct *task)
{
	__u64 zero = 0;
	__u32 tid;

	if (cfg_offcpu_task_storage)
		return bpf_task_storage_get(&offcpu_pending, task, 0,
					    BPF_LOCAL_STORAGE_GET_F_CREATE);
	tid = task->pid;
	if (bpf_map_update_elem(&offcpu_tid_hash, &tid, &zero, BPF_ANY))
		return NULL;
	return bpf_map_lookup_elem(&offcpu_tid_hash, &tid);
}

/*
 * The chain's programs share the attach point of the entry program: the
 * kernel lets a tracing program tail-call only programs of the same hook.
 * src/tracer/tracer.c loads them only with --off-cpu (no verifier time
 * otherwise), links the chain after the load and attaches the entry
 * program alone.
 */
PROFD_DEFINE_UNWINDERS_UNLINKED(sched, "tp_btf/sched_switch", PROFD_SCRATCH_SWITCH)

#define PROFD_TASK_DEAD	0x80	/* include/linux/sched.h TASK_DEAD */
#define PROFD_SCHED_NORMAL	0	/* include/uapi/linux/sched.h */
#define PROFD_SCHED_BATCH	3
#define PROFD_SCHED_IDLE	5

/*
 * offcpu_end - emit the end of @task's off-CPU period, if one is pending:
 * at @now (0: read the clock now) less the CPU time @task ran since picked
 * when @unseen (never before its start). With task storage a task with
 * none has none pending: that test is a load, no helper (most switch-ins).
 */
static __always_inline void offcpu_end(struct task_struct *task, __u64 now, bool unseen,
				       __u32 flags)
{
	struct profd_offcpu_end *e;
	__u64 *out, out_ns, ran = 0, wake = BPF_RB_NO_WAKEUP;

	out = pending_get(task);
	if (!out)
		return;
	if (!now)
		now = bpf_ktime_get_ns();
	out_ns = *out;
	pending_delete(task);
	if (unseen) {
		__u32 policy = task->policy;

		/* CPU time since picked: kept by the fair class only */
		if (policy == PROFD_SCHED_NORMAL || policy == PROFD_SCHED_BATCH ||
		    policy == PROFD_SCHED_IDLE)
			ran = task->se.sum_exec_runtime - task->se.prev_sum_exec_runtime;
		flags |= PROFD_OFFCPU_IN_UNSEEN;
		count(PROFD_CNT_OFFCPU_IN_UNSEEN);
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFD_CNT_OFFCPU_END_LOST);
		return;
	}
	e->type = PROFD_EVENT_OFFCPU_END;
	e->pid = task->tgid;
	e->tid = task->pid;
	e->flags = flags;
	e->out_ns = out_ns;
	e->in_ns = now - ran > out_ns && ran < now ? now - ran : out_ns;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > PROFD_WAKEUP_BYTES)
		wake = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, wake);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(profd_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u32 pid, tid;
	__u64 now, *out;

	/* switch-in: a recorded switch-out of @next ends */
	offcpu_end(next, 0, false, 0);
	/* @prev ran since a switch-in no sched_switch showed (see above) */
	offcpu_end(prev, 0, true, 0);

	/* switch-out: only a thread that blocks, never an exiting one */
	if (preempt || !prev_state || (prev_state & PROFD_TASK_DEAD) ||
	    (prev->flags & PF_EXITING_FLAG))
		return 0;
	pid = prev->tgid;
	tid = prev->pid;
	if (!tid || !pid_wanted(pid))
		return 0;
	if (cfg_off_cpu_threshold < (1ULL << 32) &&
	    bpf_get_prandom_u32() >= cfg_off_cpu_threshold)
		return 0;
	out = pending_new(prev);
	if (!out) {
		count(PROFD_CNT_OFFCPU_PENDING_FAILED);
		return 0;
	}
	now = bpf_ktime_get_ns();
	*out = now;
	count(PROFD_CNT_OFFCPU_RECORDED);
	/* current is still @prev: the same capture as a CPU sample's */
	return capture_stack(ctx, &unwind_progs_sched, PROFD_SCRATCH_SWITCH,
			     PROFD_ORIGIN_OFF_CPU, now, true);
}

#endif /* PROFD_BPF_OFFCPU_BPF_H */
