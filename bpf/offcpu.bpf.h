/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * offcpu.bpf.h - off-CPU profiling: where threads wait, and for how long.
 *
 * Owns: the sched_switch program (tp_btf, attached only with --off-cpu),
 * the unwinder chain instantiated for it, and `offcpu_pending` (tid ->
 * switch-out time of a recorded switch-out whose thread has not run
 * since).
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
 */
#ifndef PROFD_BPF_OFFCPU_BPF_H
#define PROFD_BPF_OFFCPU_BPF_H

#include "stack.bpf.h"

/*
 * A full map refuses new switch-outs (counted) and never drops one it
 * holds: every entry's thread is still blocked, or exits (its entry goes).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROFD_OFFCPU_PENDING_MAX);
	__type(key, __u32);
	__type(value, __u64);
} offcpu_pending SEC(".maps");

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
 * offcpu_end - emit the end of @tid's off-CPU period, if one is pending:
 * at @now (0: read the clock now; most switch-ins have none pending and
 * read no clock) less @ran ns (never before its start).
 */
static __always_inline void offcpu_end(__u32 pid, __u32 tid, __u64 now, __u64 ran,
				       __u32 flags)
{
	struct profd_offcpu_end *e;
	__u64 *out = bpf_map_lookup_elem(&offcpu_pending, &tid);
	__u64 out_ns, wake = BPF_RB_NO_WAKEUP;

	if (!out)
		return;
	if (!now)
		now = bpf_ktime_get_ns();
	out_ns = *out;
	if (flags & PROFD_OFFCPU_IN_UNSEEN)
		count(PROFD_CNT_OFFCPU_IN_UNSEEN);
	bpf_map_delete_elem(&offcpu_pending, &tid);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFD_CNT_OFFCPU_END_LOST);
		return;
	}
	e->type = PROFD_EVENT_OFFCPU_END;
	e->pid = pid;
	e->tid = tid;
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
	__u32 pid = prev->tgid, tid = prev->pid;
	__u64 now;
	__u32 policy = prev->policy;
	/* CPU time since picked: kept by the fair class only */
	__u64 ran = policy == PROFD_SCHED_NORMAL || policy == PROFD_SCHED_BATCH ||
		    policy == PROFD_SCHED_IDLE ?
		    prev->se.sum_exec_runtime - prev->se.prev_sum_exec_runtime : 0;

	/* switch-in: a recorded switch-out of @next ends. The clock is read
	 * only where it is used (a pending end, a drawn switch-out): every
	 * switch of the machine runs this (docs/PERFORMANCE.md, Off-CPU) */
	offcpu_end(next->tgid, next->pid, 0, 0, 0);
	/* @prev ran since a switch-in no sched_switch showed (see above) */
	offcpu_end(pid, tid, 0, ran, PROFD_OFFCPU_IN_UNSEEN);

	/* switch-out: only a thread that blocks, never an exiting one */
	if (preempt || !prev_state || (prev_state & PROFD_TASK_DEAD) ||
	    (prev->flags & PF_EXITING_FLAG) || !tid)
		return 0;
	if (!pid_wanted(pid))
		return 0;
	if (cfg_off_cpu_threshold < (1ULL << 32) &&
	    bpf_get_prandom_u32() >= cfg_off_cpu_threshold)
		return 0;
	now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&offcpu_pending, &tid, &now, BPF_ANY)) {
		count(PROFD_CNT_OFFCPU_PENDING_FULL);
		return 0;
	}
	count(PROFD_CNT_OFFCPU_RECORDED);
	/* current is still @prev: the same capture as a CPU sample's */
	return capture_stack(ctx, &unwind_progs_sched, PROFD_SCRATCH_SWITCH,
			     PROFD_ORIGIN_OFF_CPU, now, true);
}

#endif /* PROFD_BPF_OFFCPU_BPF_H */
