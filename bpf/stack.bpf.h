/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack.bpf.h - stack capture: one routine and the unwinder chain.
 *
 * Owns: capture_stack(), the single entry used by the perf_event sampler
 * and by uprobe/USDT programs, and the tail-called unwinder chain
 * (FP -> [DWARF] -> [the process's runtime walker] -> emit) over the
 * per-CPU scratch state.
 *
 * Tail calls only reach programs of the caller's type, so the chain is
 * instantiated once per program type with PROFD_DEFINE_UNWINDERS(); the
 * step bodies are shared inline functions. A new unwinder is one more
 * step function, one more slot in enum profd_unwinder_prog, and one more
 * line in the macro; a language runtime is one line of PROFD_RUNTIMES()
 * (bpf/runtime.h) and its walker's file (runtime.bpf.h).
 */
#ifndef PROFD_BPF_STACK_BPF_H
#define PROFD_BPF_STACK_BPF_H

#include "maps.bpf.h"
#include "runtime.bpf.h"
#include "unwind_dwarf.bpf.h"

/* Upper bound of tail calls one capture may spend in the FP walker. */
#define PROFD_FP_MAX_TAIL_CALLS \
	((PROFD_MAX_USER_FRAMES + PROFD_FP_FRAMES_PER_PROG - 1) / PROFD_FP_FRAMES_PER_PROG)

#define PF_KTHREAD_FLAG 0x00200000	/* include/linux/sched.h PF_KTHREAD */
#define PF_EXITING_FLAG 0x00000004	/* include/linux/sched.h PF_EXITING */

/*
 * capture_stack - start a stack capture of the current task from @ctx.
 *
 * Takes scratch @slot (enum profd_scratch_slot; a held slot drops the
 * capture, counted), fills its header (pid, tid, cpu, comm, time, @origin, @cookie)
 * and, when @in_kernel (the interrupted context was kernel mode), the
 * kernel stack; loads the task's user registers, and tail-calls
 * the first unwinder of @progs. Returns only when the chain could not be
 * entered (counted); the caller then returns 0.
 */
static __always_inline int capture_stack(void *ctx, void *progs, __u32 slot,
					 __u32 origin, __u64 cookie, bool in_kernel)
{
	struct profd_unwind_state *st = unwind_state(slot);
	struct task_struct *task;
	struct pt_regs *regs;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;
	long n;

	if (!st) {
		count(PROFD_CNT_NO_SCRATCH);
		return 0;
	}
	if (!scratch_take(&st->owner))
		return 0;
	st->sample.type = PROFD_EVENT_SAMPLE;
	st->sample.origin = origin;
	st->sample.pid = id >> 32;
	st->sample.tid = (__u32)id;
	st->sample.cpu = bpf_get_smp_processor_id();
	st->sample.flags = 0;
	st->sample.ktime_ns = bpf_ktime_get_ns();
	st->sample.cookie = cookie;
	st->sample.user_len = 0;
	st->sample.interp_len = 0;
	st->sample.runtime = 0;
	st->sample.stack_len = 0;
	bpf_get_current_comm(st->sample.comm, sizeof(st->sample.comm));
	st->tail_calls = 0;
	st->native_tail_calls = PROFD_DWARF_MAX_TAIL_CALLS;
	st->f.pc_exact = 1;
	st->f.flags = 0;
	st->f.go_g = 0;
	st->f.go_g0_sp = 0;
	st->start.sp = 0;
	st->max_user_frames = cfg_max_user_frames;
	if (st->max_user_frames > PROFD_MAX_USER_FRAMES)
		st->max_user_frames = PROFD_MAX_USER_FRAMES;

	/* bpf_get_stack costs microseconds even when there is nothing to walk */
	n = in_kernel ? bpf_get_stack(ctx, st->ips,
				      PROFD_MAX_KERNEL_FRAMES * sizeof(__u64), 0) : 0;
	if (n < 0) {
		count(PROFD_CNT_KERNEL_STACK_ERR);
		n = 0;
	}
	st->sample.kernel_len = n / sizeof(__u64);
	if (n > 0)
		st->sample.flags |= PROFD_SAMPLE_KERNEL_MODE;

	task = bpf_get_current_task_btf();
	/*
	 * sched_process_exit may fire before the task stops running (and
	 * before its memory goes): user space attributes such samples to the
	 * process that exited, never to a new one of the same PID.
	 */
	if (task->flags & PF_EXITING_FLAG)
		st->sample.flags |= PROFD_SAMPLE_EXITING;
	if (task->flags & PF_KTHREAD_FLAG) {
		st->sample.flags |= PROFD_SAMPLE_NO_USER;
		bpf_tail_call(ctx, progs, PROFD_PROG_EMIT);
		return chain_broken(st);
	}
	/* The user registers saved at kernel entry (interrupt or syscall). */
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	st->f.ip = BPF_CORE_READ(regs, ip);
	st->f.sp = BPF_CORE_READ(regs, sp);
	st->f.bp = BPF_CORE_READ(regs, bp);
	st->start = st->f;

	/* a runtime's walker follows the native walk: 33 tail calls in all */
	runtime_begin(st, pid, PROFD_DWARF_MAX_TAIL_CALLS);
	if (cfg_dwarf_unwinding) {
		if (unwind_proc_current(pid))
			bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_DWARF);
		else
			st->sample.flags |= PROFD_SAMPLE_UNWIND_MISSING;
	}
	bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_FP);
	return chain_broken(st);
}

/*
 * unwind_fp_step - walk up to PROFD_FP_FRAMES_PER_PROG frame-pointer
 * frames: record ip, then ip = [bp + 8], bp = [bp]. Ends at bp == 0, a
 * zero return address, a frame that does not move up the stack, a read
 * fault (flagged and counted) or the depth limit (flagged, counted; user
 * space adds a "[truncated]" frame). Continues itself by tail call.
 */
static __always_inline int unwind_fp_step(void *ctx, void *progs, __u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	__u32 n, base, i;
	bool done = false;
	__u64 frame[2];

	if (!st)
		return 0;
	n = st->sample.user_len;
	base = st->sample.kernel_len;

	for (i = 0; i < PROFD_FP_FRAMES_PER_PROG; i++) {
		__u32 idx = base + n;

		if (n >= st->max_user_frames) {
			st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
			count(PROFD_CNT_USER_TRUNCATED);
			done = true;
			break;
		}
		if (idx >= PROFD_MAX_IPS) {
			done = true;
			break;
		}
		put_ip(st, idx, st->f.ip);
		put_frame_regs(st, n, st->f.bp, st->f.sp);
		n++;
		if (!st->f.bp || runtime_code(st, n - 1, st->f.ip)) {
			done = true;
			break;
		}
		if (bpf_probe_read_user(frame, sizeof(frame), (void *)st->f.bp)) {
			st->sample.flags |= PROFD_SAMPLE_USER_ERROR;
			count(PROFD_CNT_USER_READ_ERR);
			done = true;
			break;
		}
		if (!frame[1] || (frame[0] && frame[0] <= st->f.bp)) {
			/* bottom reached: keep the last return address */
			idx = base + n;
			if (frame[1] && n < st->max_user_frames &&
			    idx < PROFD_MAX_IPS) {
				put_ip(st, idx, frame[1]);
				put_frame_regs(st, n, frame[0], st->f.bp + 16);
				n++;
			}
			done = true;
			break;
		}
		st->f.ip = frame[1];
		st->f.sp = st->f.bp + 16;
		st->f.bp = frame[0];
	}
	st->sample.user_len = n;
	if (!done && st->tail_calls < PROFD_FP_MAX_TAIL_CALLS &&
	    st->tail_calls < st->native_tail_calls) {
		st->tail_calls++;
		bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_FP);
	}
	return runtime_dispatch(ctx, progs, st);
}

/*
 * copy_stack - append the sample's user registers (struct
 * profd_stack_copy) and up to cfg_stack_copy_bytes of its user stack from
 * sp up to the record in scratch, after its @nips IPs, page by page: a
 * fault (the top of a thread's stack) ends the copy. A main thread's copy
 * ends a little above mm->start_stack (argc: nothing of the walk lies
 * higher). Sets sample.stack_len; returns the bytes added to the record.
 */
static __always_inline __u64 copy_stack(struct profd_unwind_state *st, __u64 nips)
{
	__u64 sp = st->start.sp, len = cfg_stack_copy_bytes, got = 0, top, want;
	struct task_struct *task;
	__u8 *dst;

	if (st->sample.tid == st->sample.pid) {
		task = bpf_get_current_task_btf();
		top = BPF_CORE_READ(task, mm, start_stack);
		if (top > sp && top - sp + 64 < len)
			len = (top - sp + 64 + 7) & ~7ULL;
	}
	if (len > PROFD_STACK_COPY_MAX)
		len = PROFD_STACK_COPY_MAX;
	if (nips > PROFD_MAX_RECORD_SLOTS)
		return 0;
	st->ips[nips] = st->start.ip;
	st->ips[nips + 1] = st->start.sp;
	st->ips[nips + 2] = st->start.bp;
	/* code[7] and code_len: the leaf's instruction bytes, or none */
	dst = (__u8 *)&st->ips[nips + 3];
	if (bpf_probe_read_user(dst, 7, (void *)(st->start.ip - 1)))
		st->ips[nips + 3] = 0;
	else
		dst[7] = 7;
	dst = (__u8 *)&st->ips[nips + 4];
	for (int i = 0; i < PROFD_STACK_COPY_MAX / 4096 + 1; i++) {
		want = 4096 - ((sp + got) & 4095);
		if (want > len - got)
			want = len - got;
		if (!want || got > PROFD_STACK_COPY_MAX || want > 4096)
			break;
		barrier_var(got);
		if (bpf_probe_read_user(dst + got, want, (void *)(sp + got)))
			break;
		got += want;
	}
	if (!got) {
		count(PROFD_CNT_STACK_COPY_FAULT);
		return 0;
	}
	count(PROFD_CNT_STACK_COPIES);
	st->sample.stack_len = got;
	return sizeof(struct profd_stack_copy) + got;
}

/* Pending bytes above which every record wakes the reader. */
#define PROFD_WAKEUP_BYTES	(64 * 1024)
/* Probe samples (GPU launches) wake the reader at most this often. */
#define PROFD_PROBE_WAKEUP_NS	(5 * 1000 * 1000)

/* When a probe sample last woke the reader (races are harmless). */
__u64 last_probe_wakeup_ns;

/*
 * emit_sample - copy the finished record from scratch to the ringbuf.
 *
 * A wakeup costs more than the rest of the capture, so the reader is only
 * woken when it must act at once: the process (or this pc) has no unwind
 * info yet, so its maps must be read while it lives; the buffer fills; or
 * a probe sample (a GPU launch, whose program may exit milliseconds
 * later, before its frames' files are opened) came after 5 ms without
 * one. Otherwise the reader picks the record up at its next periodic poll.
 */
static __always_inline int emit_sample(__u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	__u64 nips, size, flags = BPF_RB_NO_WAKEUP;

	if (!st)
		return 0;
	if (!scratch_held(&st->owner)) {
		/* taken over while this capture was preempted: not all ours */
		count(PROFD_CNT_SCRATCH_LOST);
		return 0;
	}
	nips = (__u64)st->sample.kernel_len + st->sample.user_len +
	       2 * (__u64)st->sample.interp_len;
	if (nips > PROFD_MAX_RECORD_SLOTS)
		nips = PROFD_MAX_RECORD_SLOTS;
	size = sizeof(struct profd_sample) + nips * sizeof(__u64);
	if (cfg_stack_copy_bytes && st->start.sp &&
	    !(st->sample.flags & PROFD_SAMPLE_NO_USER) &&
	    (cfg_stack_copy_always || (st->sample.flags & PROFD_SAMPLE_UNWIND_MISSING)))
		size += copy_stack(st, nips);
	/*
	 * Forced: the adaptive wakeup (flags 0) only fires when the reader has
	 * consumed everything before this record, which NO_WAKEUP records
	 * prevent.
	 */
	if (!cfg_dwarf_unwinding ||
	    (st->sample.flags & PROFD_SAMPLE_UNWIND_MISSING) ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > PROFD_WAKEUP_BYTES)
		flags = BPF_RB_FORCE_WAKEUP;
	if (st->sample.origin == PROFD_ORIGIN_PROBE &&
	    st->sample.ktime_ns - last_probe_wakeup_ns > PROFD_PROBE_WAKEUP_NS) {
		last_probe_wakeup_ns = st->sample.ktime_ns;
		flags = BPF_RB_FORCE_WAKEUP;
	}
	if (bpf_ringbuf_output(&events, &st->sample, size, flags))
		count(PROFD_CNT_RINGBUF_FULL);
	scratch_release(&st->owner);
	return 0;
}

/*
 * PROFD_DEFINE_UNWINDERS(kind, sec, slot) - the chain for one program type,
 * over scratch @slot:
 * programs unwind_fp_<kind>, unwind_dwarf_<kind>, emit_<kind>, one
 * unwind_<runtime>_<kind> per runtime (PROFD_RUNTIMES), and the program
 * array unwind_progs_<kind> that links them (filled at load by libbpf).
 * PROFD_DEFINE_UNWINDERS_UNLINKED(): the same with the array left empty,
 * for a chain whose programs may not be loaded (libbpf fails a load whose
 * array names a program with autoload off): user space fills it after
 * the load (tracer.c, link_chain()).
 */
#define PROFD_RUNTIME_PROG_DECL_(ID, name, kind, sec, slot)		\
	SEC(sec) int unwind_##name##_##kind(void *ctx);
#define PROFD_RUNTIME_PROG_SLOT_(ID, name, kind, sec, slot)		\
	[PROFD_PROG_RUNTIME + PROFD_RUNTIME_##ID - 1] = (void *)&unwind_##name##_##kind,
#define PROFD_RUNTIME_PROG_BODY_(ID, name, kind, sec, slot)		\
	SEC(sec) int unwind_##name##_##kind(void *ctx)			\
	{								\
		return unwind_##name##_step(ctx, &unwind_progs_##kind, slot); \
	}

#define PROFD_UNWINDERS_INIT_(kind, sec, slot)				\
	= {									\
		.values = {							\
			[PROFD_PROG_UNWIND_FP] = (void *)&unwind_fp_##kind,	\
			[PROFD_PROG_UNWIND_DWARF] = (void *)&unwind_dwarf_##kind, \
			PROFD_RUNTIMES(PROFD_RUNTIME_PROG_SLOT_, kind, sec, slot) \
			[PROFD_PROG_EMIT] = (void *)&emit_##kind,		\
		},								\
	}
#define PROFD_DEFINE_UNWINDERS(kind, sec, slot)				\
	PROFD_DEFINE_UNWINDERS_(kind, sec, slot,				\
				PROFD_UNWINDERS_INIT_(kind, sec, slot))
#define PROFD_DEFINE_UNWINDERS_UNLINKED(kind, sec, slot)			\
	PROFD_DEFINE_UNWINDERS_(kind, sec, slot, )
#define PROFD_DEFINE_UNWINDERS_(kind, sec, slot, init)			\
	SEC(sec) int unwind_fp_##kind(void *ctx);				\
	SEC(sec) int unwind_dwarf_##kind(void *ctx);				\
	PROFD_RUNTIMES(PROFD_RUNTIME_PROG_DECL_, kind, sec, slot)		\
	SEC(sec) int emit_##kind(void *ctx);					\
	struct {								\
		__uint(type, BPF_MAP_TYPE_PROG_ARRAY);				\
		__uint(max_entries, PROFD_PROG_MAX);				\
		__type(key, __u32);						\
		__array(values, int(void *));					\
	} unwind_progs_##kind SEC(".maps") init;				\
	SEC(sec) int unwind_fp_##kind(void *ctx)				\
	{									\
		return unwind_fp_step(ctx, &unwind_progs_##kind, slot);		\
	}									\
	SEC(sec) int unwind_dwarf_##kind(void *ctx)				\
	{									\
		return unwind_dwarf_step(ctx, &unwind_progs_##kind, slot);		\
	}									\
	PROFD_RUNTIMES(PROFD_RUNTIME_PROG_BODY_, kind, sec, slot)		\
	SEC(sec) int emit_##kind(void *ctx)					\
	{									\
		return emit_sample(slot);						\
	}

#endif /* PROFD_BPF_STACK_BPF_H */
