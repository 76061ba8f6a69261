/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_python.bpf.h - the CPython unwinder (3.9 - 3.13).
 *
 * Owns: the step that appends the thread's Python frames to the sample
 * (format: unwind_python.h), reading the process's `runtime_procs` state
 * (where the interpreter's runtime is and its struct offsets, written by
 * src/python/) and caching each thread's PyThreadState in
 * `runtime_threads`. Included by runtime.bpf.h (the registry), after
 * those maps.
 *
 * Finding the thread state: PyThreadState.thread_id is pthread_self(),
 * which on x86-64 glibc/musl is the thread pointer, i.e. the task's fs
 * base. The cached state is checked against it on every sample (the read
 * is needed anyway for the frame pointer); on a mismatch the unwinder
 * scans _PyRuntime.interpreters -> threads. Threads that are not Python
 * threads are remembered for 100 ms so they are not scanned each sample.
 * A thread's entry is deleted when it exits (profd.bpf.c), and an exiting
 * thread's sample never inserts one.
 */
#ifndef PROFD_BPF_UNWIND_PYTHON_BPF_H
#define PROFD_BPF_UNWIND_PYTHON_BPF_H

#include "maps.bpf.h"
#include "unwind_python.h"

#define PROFD_PY_NEGATIVE_TTL_NS	(100ULL * 1000 * 1000)

/* The CPython state of the capture's process (copied from runtime_procs). */
#define PY(st) ((const struct profd_python_proc *)(st)->rt_state)

/* The 8 bytes at @off of the read buffer (@off < buffer size - 8). */
static __always_inline __u64 py_buf_u64(struct profd_unwind_state *st, __u32 off)
{
	barrier_var(off);
	return *(__u64 *)&st->rt_buf[off & (PROFD_PY_TSTATE_BUF - 1)];
}

static __always_inline __u8 py_buf_u8(struct profd_unwind_state *st, __u32 off)
{
	barrier_var(off);
	return st->rt_buf[off & (PROFD_PY_TSTATE_BUF - 1)];
}

static __always_inline int py_read_tstate(struct profd_unwind_state *st, __u64 addr)
{
	__u32 size = PY(st)->tstate_read_size;

	if (size > PROFD_PY_TSTATE_BUF)
		size = PROFD_PY_TSTATE_BUF;
	return bpf_probe_read_user(st->rt_buf, size, (void *)addr);
}

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/*
 * py_scan_threads - follow one interpreter's thread list from @tstate for
 * the state whose thread_id is @fsbase (its fields left in st->rt_buf).
 * Returns it, or 0. A global function, so the verifier checks the loop
 * once.
 */
__attribute__((noinline))
__u64 py_scan_threads(struct profd_unwind_state *st, __u64 tstate, __u64 fsbase)
{
	if (!st)
		return 0;
	for (int i = 0; i < PROFD_PY_MAX_THREAD_SCAN && tstate; i++) {
		if (py_read_tstate(st, tstate))
			return 0;
		if (py_buf_u64(st, PY(st)->tstate_thread_id) == fsbase)
			return tstate;
		tstate = py_buf_u64(st, PY(st)->tstate_next);
	}
	return 0;
}

/*
 * py_find_tstate - the PyThreadState of the current thread (thread_id
 * == @fsbase) in any interpreter, its fields left in st->rt_buf; 0 if
 * there is none.
 */
static __always_inline __u64 py_find_tstate(struct profd_unwind_state *st,
					    __u64 fsbase)
{
	__u64 interp, tstate;

	interp = py_read_ptr(PY(st)->runtime + PY(st)->runtime_interpreters_head);
	for (int i = 0; i < PROFD_PY_MAX_INTERPRETERS && interp; i++) {
		tstate = py_scan_threads(st, py_read_ptr(interp + PY(st)->interp_threads_head),
					 fsbase);
		if (tstate)
			return tstate;
		interp = py_read_ptr(interp + PY(st)->interp_next);
	}
	return 0;
}

/*
 * py_start - find the thread state and the innermost frame. Returns the
 * frame address, or 0 when this thread runs no Python (counted).
 */
__attribute__((noinline))
__u64 py_start(struct profd_unwind_state *st)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct profd_runtime_thread *cached, fresh = {};
	__u64 fsbase = 0, tstate = 0, frame, now;
	__u32 tid;

	if (!st)
		return 0;
	tid = st->sample.tid;
#ifdef __TARGET_ARCH_x86
	fsbase = BPF_CORE_READ(task, thread.fsbase);
#endif
	if (!fsbase)
		return 0;
	cached = bpf_map_lookup_elem(&runtime_threads, &tid);
	if (cached && cached->thread) {
		if (!py_read_tstate(st, cached->thread) &&
		    py_buf_u64(st, PY(st)->tstate_thread_id) == fsbase)
			tstate = cached->thread;
	} else if (cached) {
		now = bpf_ktime_get_ns();
		if (now - cached->checked_ns < PROFD_PY_NEGATIVE_TTL_NS) {
			count(PROFD_CNT_PY_NO_THREAD_STATE);
			return 0;
		}
	}
	if (!tstate) {
		tstate = py_find_tstate(st, fsbase);
		fresh.thread = tstate;
		fresh.checked_ns = bpf_ktime_get_ns();
		/* an exiting thread's entry was deleted at its exit: keep it so */
		if (!(st->sample.flags & PROFD_SAMPLE_EXITING))
			bpf_map_update_elem(&runtime_threads, &tid, &fresh, BPF_ANY);
		if (!tstate) {
			count(PROFD_CNT_PY_NO_THREAD_STATE);
			return 0;
		}
	}
	frame = py_buf_u64(st, PY(st)->tstate_frame);
	if (frame && PY(st)->cframe_current_frame != PROFD_PY_OFF_NONE)
		frame = py_read_ptr(frame + PY(st)->cframe_current_frame);
	return frame;
}

/* The fingerprint of the code object at @code (0: unreadable). */
static __always_inline __u32 py_code_print(struct profd_unwind_state *st, __u64 code)
{
	__u32 size = PY(st)->code_print_size;

	if (size > PROFD_PY_PRINT_BUF)
		size = PROFD_PY_PRINT_BUF;
	if (!code || bpf_probe_read_user(st->rt_buf, size,
					 (void *)(code + PY(st)->code_print_off)))
		return 0;
	return profd_py_fingerprint(*(__u32 *)&st->rt_buf[PY(st)->code_firstlineno_rel & 127],
				    py_buf_u64(st, PY(st)->code_name_rel & 127),
				    py_buf_u64(st, PY(st)->code_filename_rel & 127));
}

enum py_step_result {
	PY_STEP_NEXT = 0,
	PY_STEP_DONE = 1,	/* chain ended */
	PY_STEP_FULL = 2,	/* PROFD_MAX_PYTHON_FRAMES kept */
	PY_STEP_ERROR = 3,	/* frame unreadable */
};

/*
 * py_frame_step - read frame st->rt_cursor, append it (unless it is a
 * C-stack shim, which ends the group below it) and move to its caller.
 * A global function: the verifier checks it once.
 */
__attribute__((noinline))
int py_frame_step(struct profd_unwind_state *st)
{
	__u64 frame, code, instr, prev;
	__u32 n, size, idx;

	if (!st)
		return PY_STEP_ERROR;
	frame = st->rt_cursor;
	n = st->sample.interp_len;
	if (!frame)
		return PY_STEP_DONE;
	if (n >= PROFD_MAX_PYTHON_FRAMES)
		return PY_STEP_FULL;
	size = PY(st)->frame_read_size;
	if (size > PROFD_PY_FRAME_BUF)
		size = PROFD_PY_FRAME_BUF;
	if (bpf_probe_read_user(st->rt_buf, size, (void *)frame)) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_ERROR;
		count(PROFD_CNT_PY_READ_ERR);
		return PY_STEP_ERROR;
	}
	code = py_buf_u64(st, PY(st)->frame_code);
	instr = py_buf_u64(st, PY(st)->frame_instr);
	prev = py_buf_u64(st, PY(st)->frame_previous);
	st->rt_cursor = prev == frame ? 0 : prev;	/* a cycle: torn memory */
	idx = (__u32)st->sample.kernel_len + st->sample.user_len;
	if (PY(st)->frame_model == PROFD_PY_FRAMES_CSTACK_SHIM &&
	    py_buf_u8(st, PY(st)->frame_owner) == PY(st)->owner_cstack) {
		/*
		 * The eval call of this shim ran the frames above. If it ran
		 * none that are still linked (it is returning: its frame was
		 * unlinked before being cleared), say so with an empty group,
		 * a placeholder frame whose code is 0.
		 */
		__u32 last = idx + 2 * (n ? n - 1 : 0);

		barrier_var(last);
		if (n && !(st->ips[last & (PROFD_SCRATCH_IPS - 1)] & PROFD_PY_GROUP_END)) {
			st->ips[last & (PROFD_SCRATCH_IPS - 1)] |= PROFD_PY_GROUP_END;
			return PY_STEP_NEXT;
		}
		code = PROFD_PY_GROUP_END;
		instr = 0;
	} else {
		if (PY(st)->frame_model == PROFD_PY_FRAMES_OBJECTS ||
		    (PY(st)->frame_model == PROFD_PY_FRAMES_IS_ENTRY &&
		     py_buf_u8(st, PY(st)->frame_is_entry)))
			code |= PROFD_PY_GROUP_END;
		if (PY(st)->frame_model != PROFD_PY_FRAMES_OBJECTS)
			instr -= code & ~PROFD_PY_GROUP_END;	/* offset in the object */
		instr = (__u32)instr | (__u64)py_code_print(st, code & ~PROFD_PY_GROUP_END) << 32;
	}
	idx += 2 * n;
	put_ip(st, idx, code);
	put_ip(st, idx + 1, instr);
	st->sample.interp_len = n + 1;
	return PY_STEP_NEXT;
}

/*
 * unwind_python_step - append up to PROFD_PY_FRAMES_PER_PROG Python
 * frames, then tail-call itself or emit. A frame that cannot be read ends
 * the walk (PROFD_SAMPLE_INTERP_ERROR: user space adds an error frame).
 */
static __always_inline int unwind_python_step(void *ctx, void *progs, __u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	int ret = PY_STEP_NEXT;

	if (!st)
		return 0;
	if (!st->rt_cursor) {
		count(PROFD_CNT_PY_SAMPLES);
		st->sample.flags |= PROFD_SAMPLE_INTERP;
		st->rt_cursor = py_start(st);
		if (!st->rt_cursor)
			goto emit;
	}
	for (int i = 0; i < PROFD_PY_FRAMES_PER_PROG; i++) {
		ret = py_frame_step(st);
		if (ret != PY_STEP_NEXT)
			break;
	}
	if (ret == PY_STEP_NEXT && st->rt_cursor &&
	    st->rt_tail_calls < PROFD_PY_MAX_TAIL_CALLS) {
		st->rt_tail_calls++;
		bpf_tail_call(ctx, progs, PROFD_PROG_RUNTIME + PROFD_RUNTIME_CPYTHON - 1);
	}
	if ((ret == PY_STEP_NEXT || ret == PY_STEP_FULL) && st->rt_cursor) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_TRUNCATED;
		count(PROFD_CNT_PY_TRUNCATED);
	}
emit:
	bpf_tail_call(ctx, progs, PROFD_PROG_EMIT);
	return chain_broken(st);
}

#endif /* PROFD_BPF_UNWIND_PYTHON_BPF_H */
