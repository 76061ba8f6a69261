// SPDX-License-Identifier: GPL-2.0
/*
 * profd.bpf.c - profd's BPF programs.
 *
 * Owns: the cpu-clock sampler (perf_event), the process lifecycle
 * tracepoints (tp_btf sched_process_exec / exit / fork), and the
 * instantiation of the unwinder chain for perf_event and kprobe-type
 * (uprobe/USDT) programs. The GPU probes' programs live in gpu.bpf.h,
 * the off-CPU sched_switch program in offcpu.bpf.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "stack.bpf.h"

char LICENSE[] SEC("license") = "GPL";

PROFD_DEFINE_UNWINDERS(perf, "perf_event", PROFD_SCRATCH_PERF)
PROFD_DEFINE_UNWINDERS(kprobe, "kprobe", PROFD_SCRATCH_PROBE)

/* the GPU probes capture stacks with the kprobe-type chain above */
#include "gpu.bpf.h"
/* off-CPU: the sched_switch program and its own chain */
#include "offcpu.bpf.h"

SEC("perf_event")
int profd_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cs;
	__u32 pid = id >> 32;

	count(PROFD_CNT_SAMPLES);
	if (!(__u32)id && !cfg_include_idle) {
		count(PROFD_CNT_IDLE_SKIPPED);
		return 0;
	}
	if (!pid_wanted(pid)) {
		count(PROFD_CNT_FILTERED);
		return 0;
	}
	/*
	 * CPL in the saved cs: 0 means the timer interrupted the kernel.
	 * The context only allows 8-byte loads of its registers.
	 */
	cs = *(volatile __u64 *)&ctx->regs.cs;
	return capture_stack(ctx, &unwind_progs_perf, PROFD_SCRATCH_PERF,
			     PROFD_ORIGIN_CPU_CLOCK, 0,
			     (cs & 3) == 0);
}

/*
 * Exec and exit events do not wake the reader (it polls every 100 ms at
 * the latest): under process churn the wakeups were most of profd's
 * cost. A filling ring buffer, or a followed command (its exit ends
 * profd's wait), still wakes it. Until an exec is read, the old image's
 * tables are not used (exec_times) and its runtime_procs entry is gone, so the
 * new image's first samples ask for its maps (and wake the reader).
 */
static __always_inline void proc_event(__u32 type, struct task_struct *p)
{
	struct profd_proc_event *e;
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (!pid_wanted(p->tgid))
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFD_CNT_PROC_EVENT_LOST);
		return;
	}
	e->type = type;
	e->pid = p->tgid;
	e->ktime_ns = bpf_ktime_get_ns();
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	if (cfg_follow_children ||
		 bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > PROFD_WAKEUP_BYTES)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

/*
 * The fork record (struct profd_proc_fork): no wakeup of its own, like
 * the exec and exit events, unless the ring buffer fills.
 */
static __always_inline void proc_fork_event(__u32 pid, __u32 ppid)
{
	struct profd_proc_fork *e;
	__u64 flags = BPF_RB_NO_WAKEUP;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFD_CNT_PROC_EVENT_LOST);
		return;
	}
	e->type = PROFD_EVENT_PROC_FORK;
	e->pid = pid;
	e->ppid = ppid;
	e->pad = 0;
	e->ktime_ns = bpf_ktime_get_ns();
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > PROFD_WAKEUP_BYTES)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(profd_proc_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 pid = p->tgid;
	__u64 now = bpf_ktime_get_ns();

	/* before the event: the old image's tables stop now */
	bpf_map_update_elem(&exec_times, &pid, &now, BPF_ANY);
	bpf_map_delete_elem(&runtime_procs, &pid);
	proc_event(PROFD_EVENT_PROC_EXEC, p);
	bpf_map_delete_elem(&dl_events, &pid);	/* a new ld.so starts over */
	return 0;
}

/*
 * An exec past its point of no return renames the task (begin_new_exec()
 * -> __set_task_comm(): the old address space is gone, the new image's
 * file mappings come after it, long before sched_process_exec fires at
 * the end of the load): exec_times says the image changed from here, so
 * a maps read that finds the new image knows the samples taken before
 * it are not the new image's (user space's image clock). A rename that
 * is not an exec's (prctl, pthread_setname_np) is left alone; without
 * task_struct.in_execve, the tracepoint's time alone.
 */
SEC("tp_btf/task_rename")
int BPF_PROG(profd_exec_rename, struct task_struct *task, const char *comm)
{
	__u32 pid = task->tgid;
	__u64 now = bpf_ktime_get_ns();

	if (!bpf_core_field_exists(task->in_execve) ||
	    !BPF_CORE_READ_BITFIELD(task, in_execve))
		return 0;
	bpf_map_update_elem(&exec_times, &pid, &now, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(profd_proc_exit, struct task_struct *p)
{
	__u32 pid = p->tgid, tid = p->pid;

	/* fires for every thread: its runtime thread cache goes with it */
	bpf_map_delete_elem(&runtime_threads, &tid);
	/* an off-CPU period it never came back from ends here */
	offcpu_end(p, bpf_ktime_get_ns(), false, PROFD_OFFCPU_EXITED);
	/* The process ends with its last thread: signal->live hit zero. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	proc_event(PROFD_EVENT_PROC_EXIT, p);
	unwind_proc_exit(pid);
	if (cfg_follow_children) {
		/* samples may follow this event: user space deletes it later */
		__u8 *v = bpf_map_lookup_elem(&pid_filter, &pid);

		if (v)
			*v = PROFD_PID_EXITED;
	}
	return 0;
}

/*
 * A new process: its ld.so hook calls are dlopens from the start (no
 * start-up to skip, see profd_dl_event), and under `profd exec` a child
 * of a process in the filter joins it, so the whole tree is profiled; the
 * child inherits its parent's unwind ranges (unwind_proc_inherit()) and,
 * through the fork record, user space names its frames by the parent's
 * mappings until it has read the child's own (a child living a
 * millisecond is gone before that). Threads (same tgid) need nothing.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(profd_proc_fork, struct task_struct *parent,
	     struct task_struct *child)
{
	__u32 ppid = parent->tgid, pid = child->tgid, two = 2;
	__u8 one = PROFD_PID_WANTED;

	if (pid == ppid)
		return 0;	/* a thread */
	/* a forked child's ld.so is past start-up: its dlopens count (gpu.bpf.h) */
	bpf_map_update_elem(&dl_events, &pid, &two, BPF_ANY);
	if (cfg_follow_children) {
		if (!bpf_map_lookup_elem(&pid_filter, &ppid)) {
			/* the PID of an exited child, reused by another process */
			bpf_map_delete_elem(&pid_filter, &pid);
			return 0;
		}
		if (!bpf_map_update_elem(&pid_filter, &pid, &one, BPF_ANY))
			count(PROFD_CNT_FOLLOWED_CHILDREN);
	}
	/* the child maps what its parent did: its tables from the start */
	if (!pid_wanted(pid))
		return 0;
	if (cfg_dwarf_unwinding)
		unwind_proc_inherit(ppid, pid);
	proc_fork_event(pid, ppid);
	return 0;
}
