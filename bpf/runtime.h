/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * runtime.h - the seam between the native unwinders and language runtimes
 * (CPython, CRuby, HotSpot), shared by BPF and user space.
 *
 * Owns: the registry of runtimes (PROFD_RUNTIMES: one line per runtime),
 * their ids, the value of the `runtime_procs` map (tgid -> runtime id and
 * that runtime's per-process state, written by the runtime's user-space
 * module), the `runtime_threads` cache value (tid -> the runtime's thread
 * pointer), the bounds every runtime walk shares, and the counter slots a
 * runtime may use.
 *
 * The native walk ends in one dispatch (runtime.bpf.h): a process with a
 * `runtime_procs` entry has that runtime's unwinder tail-called, which
 * appends sample.interp_len frames of two __u64 each after the native
 * IPs (their meaning is the runtime's own) and sets sample.runtime. User
 * space hands those frames to the same runtime's module (src/runtime/).
 */
#ifndef PROFD_BPF_RUNTIME_H
#define PROFD_BPF_RUNTIME_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * PROFD_RUNTIMES(X, a, b, c) - the registry: X(ID, name, a, b, c) once per
 * runtime. ID makes PROFD_RUNTIME_<ID> (1, 2, ... in this order); name is
 * the runtime's BPF step unwind_<name>_step() (its file is included by
 * runtime.bpf.h), its programs unwind_<name>_<kind> and, in user space,
 * its struct runtime_ops <name>_runtime_ops (src/runtime/registry.c).
 * a, b, c pass through for the macros that expand the list.
 */
#define PROFD_RUNTIMES(X, a, b, c)				\
	X(CPYTHON, python, a, b, c)					\
	X(CRUBY, ruby, a, b, c)						\
	X(V8, v8, a, b, c)						\
	X(HOTSPOT, hotspot, a, b, c)

#define PROFD_RUNTIME_ENUM_(ID, name, a, b, c) PROFD_RUNTIME_##ID,
enum profd_runtime_id {
	PROFD_RUNTIME_NONE = 0,		/* native only */
	PROFD_RUNTIMES(PROFD_RUNTIME_ENUM_, _, _, _)
	PROFD_RUNTIME_END,
};
#define PROFD_RUNTIME_COUNT	(PROFD_RUNTIME_END - 1)

/* Runtime frames kept per sample (deeper stacks are flagged truncated). */
#define PROFD_MAX_INTERP_FRAMES		128
/* Self tail calls any runtime walker may take (the native walk leaves them). */
#define PROFD_RUNTIME_TAIL_CALLS	3
/* Bytes of a runtime's per-process state (runtime_procs value). */
#define PROFD_RUNTIME_STATE_SIZE	96
/* Bytes of the read buffer in the scratch state: a power of two (masks).
 * CRuby reads its control frames 14 at a time into it, and a window of
 * its VM stack's values (the frames' eps) beside them. */
#define PROFD_RUNTIME_BUF		2048
/* BPF counter slots each runtime may use (bpf/profd.h, PROFD_CNT_RUNTIME). */
#define PROFD_RUNTIME_COUNTERS		8

/*
 * runtime_procs value: the runtime a process runs and its state, and the
 * range of the runtime's own machine code (a JIT's code cache; 0, 0:
 * none): the native walk ends at the first pc there (recorded) and hands
 * the stack to the runtime's walker, which may give it back
 * (unwind_hotspot.bpf.h).
 */
struct profd_runtime_proc {
	__u32 runtime;			/* enum profd_runtime_id */
	__u32 _pad;
	__u64 code_low, code_high;	/* [code_low, code_high) */
	__u64 state[PROFD_RUNTIME_STATE_SIZE / 8];	/* the runtime's own layout */
};

/*
 * runtime_threads value: tid -> the runtime's per-thread pointer (its
 * thread state; 0: the thread runs no managed code) and when a search for
 * it last failed. Deleted when the thread exits.
 */
struct profd_runtime_thread {
	__u64 thread;
	__u64 checked_ns;
};

#endif /* PROFD_BPF_RUNTIME_H */
