/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_python.h - the contract between the BPF CPython unwinder and
 * user space (src/python/).
 *
 User space recognises a CPython interpreter in a process (by symbols),
 * and writes one `runtime_procs` entry (bpf/runtime.h) per process, of
 * runtime PROFD_RUNTIME_CPYTHON whose state is a struct profd_python_proc:
 * where `_PyRuntime` is and the struct offsets of that CPython version.
 * The unwinder finds the sampled thread's PyThreadState (matching
 * PyThreadState.thread_id, i.e. pthread_self(), with the task's fs base),
 * walks its frame chain and appends to the sample, after the user IPs,
 * sample.interp_len frames of two __u64 each:
 *
 *   [0] code object address | PROFD_PY_GROUP_END if this is the last
 *       (outermost) frame run by its _PyEval_EvalFrameDefault call; a
 *       code address of 0 is a placeholder: an eval call (3.12+) whose
 *       frames are no longer linked (it is returning), an empty group
 *   [1] low 32 bits: the frame's position: f_lasti (3.9/3.10), or the
 *       position pointer minus the code object's address (3.11+);
 *       high 32 bits: profd_py_fingerprint() of the code object as BPF
 *       read it (0: unreadable), so user space can tell a code object
 *       from another one later allocated at the same address
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

#include "runtime.h"

/* Python frames kept per sample (deeper stacks are flagged truncated). */
#define PROFD_MAX_PYTHON_FRAMES		PROFD_MAX_INTERP_FRAMES
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
/* (thread states are read into the scratch state's runtime buffer) */
#define PROFD_PY_MAX_INTERPRETERS	4

#define PROFD_PY_OFF_NONE		0xffff
#define PROFD_PY_GROUP_END		(1ULL << 63)

/* struct profd_python_proc.frame_model (src/python/offsets.h) */
enum profd_py_frame_model {
	PROFD_PY_FRAMES_OBJECTS = 1,	/* 3.9/3.10: one frame per eval call */
	PROFD_PY_FRAMES_IS_ENTRY = 2,	/* 3.11: group ends at is_entry */
	PROFD_PY_FRAMES_CSTACK_SHIM = 3,/* 3.12+: group ends before a C-stack shim */
};

/* The runtime_procs state of a CPython process: its interpreter. */
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
	/* the code object bytes read for the fingerprint: [code_print_off,
	 * + code_print_size), and where its fields lie in them */
	__u16 code_print_off;
	__u8 code_print_size;		/* <= PROFD_PY_PRINT_BUF */
	__u8 code_firstlineno_rel;	/* int co_firstlineno */
	__u8 code_name_rel;		/* co_qualname (3.11+) or co_name pointer */
	__u8 code_filename_rel;		/* co_filename pointer */
	__u16 _pad;
};

#define PROFD_PY_PRINT_BUF		120

/*
 * profd_py_fingerprint - 32 bits that tell code objects at one address
 * apart: their first line and the addresses of their name and file name
 * strings. Computed alike by BPF and user space (src/python/code.c).
 */
static inline __u32 profd_py_fingerprint(__u32 firstlineno, __u64 name,
					 __u64 filename)
{
	__u64 h = (name >> 3) * 0x9e3779b97f4a7c15ULL;

	h ^= (filename >> 3) * 0xff51afd7ed558ccdULL;
	h ^= firstlineno;
	h ^= h >> 29;
	return (__u32)(h ^ (h >> 32)) | 1;	/* never 0: 0 means unread */
}

/* The CPython walker's counters (slots of bpf/profd.h's `counters`). */
#define PROFD_CNT_PY_SAMPLES \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CPYTHON, 0)	/* samples walked (not a loss) */
#define PROFD_CNT_PY_NO_THREAD_STATE \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CPYTHON, 1)	/* thread without a PyThreadState */
#define PROFD_CNT_PY_READ_ERR \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CPYTHON, 2)	/* frame unreadable: walk ended */
#define PROFD_CNT_PY_TRUNCATED \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CPYTHON, 3)	/* more frames than kept */

_Static_assert(sizeof(struct profd_python_proc) <= PROFD_RUNTIME_STATE_SIZE,
	       "CPython's state fits runtime_procs");
_Static_assert(PROFD_PY_TSTATE_BUF <= PROFD_RUNTIME_BUF &&
	       PROFD_PY_FRAME_BUF <= PROFD_RUNTIME_BUF,
	       "CPython's reads fit the scratch buffer");
_Static_assert(PROFD_PY_MAX_TAIL_CALLS <= PROFD_RUNTIME_TAIL_CALLS,
	       "the native walk leaves CPython its tail calls");

#endif /* PROFD_BPF_UNWIND_PYTHON_H */
