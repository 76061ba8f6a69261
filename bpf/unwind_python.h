/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_python.h - the contract between the BPF CPython unwinder and
 * user space (src/python/).
 *
 * User space recognises a CPython interpreter in a process (by symbols),
 * and writes one struct profd_python_proc per process into the
 * `python_procs` map: where `_PyRuntime` is and the struct offsets of that
 * CPython version. The unwinder finds the sampled thread's PyThreadState
 * (matching PyThreadState.thread_id, i.e. pthread_self(), with the task's
 * fs base), walks its frame chain and appends to the sample, after the
 * user IPs, sample.python_len frames of two __u64 each:
 *
 *   [0] code object address | PROFD_PY_GROUP_END if this is the last
 *       (outermost) frame run by its _PyEval_EvalFrameDefault call; a
 *       code address of 0 is a placeholder: an eval call (3.12+) whose
 *       frames are no longer linked (it is returning), an empty group
 *   [1] the frame's raw position field (8 bytes read at frame_instr:
 *       f_lasti in the low 32 bits for 3.9/3.10, a pointer for 3.11+)
 *
 * Frames are leaf first. User space names each frame from its code object
 * and puts each group of frames where its _PyEval_EvalFrameDefault native
 * frame is in the native stack.
 */
#ifndef PROFD_BPF_UNWIND_PYTHON_H
#define PROFD_BPF_UNWIND_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Python frames kept per sample (deeper stacks are flagged truncated). */
#define PROFD_MAX_PYTHON_FRAMES		128
/* Frames one Python program invocation walks before tail-calling itself. */
#define PROFD_PY_FRAMES_PER_PROG	32
/* Self tail calls the Python walker may take: 4 invocations of 32 frames. */
#define PROFD_PY_MAX_TAIL_CALLS \
	(PROFD_MAX_PYTHON_FRAMES / PROFD_PY_FRAMES_PER_PROG - 1)
/* Bytes read per frame / thread state: offsets must lie below these. */
#define PROFD_PY_FRAME_BUF		128
#define PROFD_PY_TSTATE_BUF		256
/* Thread states looked at per interpreter when searching for a thread. */
#define PROFD_PY_MAX_THREAD_SCAN	256
#define PROFD_PY_MAX_INTERPRETERS	4

#define PROFD_PY_OFF_NONE		0xffff
#define PROFD_PY_GROUP_END		(1ULL << 63)

/* struct profd_python_proc.frame_model (src/python/offsets.h) */
enum profd_py_frame_model {
	PROFD_PY_FRAMES_OBJECTS = 1,	/* 3.9/3.10: one frame per eval call */
	PROFD_PY_FRAMES_IS_ENTRY = 2,	/* 3.11: group ends at is_entry */
	PROFD_PY_FRAMES_CSTACK_SHIM = 3,/* 3.12+: group ends before a C-stack shim */
};

/* python_procs value: one CPython interpreter in one process. */
struct profd_python_proc {
	__u64 runtime;			/* runtime address of _PyRuntime */
	__u16 runtime_interpreters_head;
	__u16 interp_next;
	__u16 interp_threads_head;
	__u16 tstate_next;		/* < PROFD_PY_TSTATE_BUF - 8 */
	__u16 tstate_thread_id;		/* < PROFD_PY_TSTATE_BUF - 8 */
	__u16 tstate_frame;		/* < PROFD_PY_TSTATE_BUF - 8 */
	__u16 cframe_current_frame;	/* PROFD_PY_OFF_NONE: tstate_frame is the frame */
	__u16 frame_code;		/* < PROFD_PY_FRAME_BUF - 8 */
	__u16 frame_previous;		/* < PROFD_PY_FRAME_BUF - 8 */
	__u16 frame_instr;		/* < PROFD_PY_FRAME_BUF - 8 */
	__u16 frame_is_entry;		/* byte; PROFD_PY_OFF_NONE unless 3.11 */
	__u16 frame_owner;		/* byte; PROFD_PY_OFF_NONE before 3.11 */
	__u16 frame_read_size;		/* <= PROFD_PY_FRAME_BUF */
	__u16 tstate_read_size;		/* <= PROFD_PY_TSTATE_BUF */
	__u8 frame_model;		/* enum profd_py_frame_model */
	__u8 owner_cstack;		/* FRAME_OWNED_BY_CSTACK (3.12+) */
	__u16 _pad[3];
};

/* python_threads value: tid -> its PyThreadState (0: not a Python thread). */
struct profd_python_thread {
	__u64 tstate;
	__u64 checked_ns;		/* when a search last failed (tstate 0) */
};

#endif /* PROFD_BPF_UNWIND_PYTHON_H */
