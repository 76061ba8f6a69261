/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * runtime.bpf.h - the runtime dispatch at the end of the native walk.
 *
 * Owns: the `runtime_procs` map (tgid -> runtime id and its per-process
 * state, written by the runtime's user-space module), the
 * `runtime_threads` cache (tid -> the runtime's thread pointer; deleted
 * at thread exit by profd.bpf.c), runtime_begin() (capture_stack(): does
 * this process run a runtime?) and runtime_dispatch() (the native walkers'
 * last step: that runtime's walker, else emit). The runtimes' walkers are
 * included below, one line each (the registry: bpf/runtime.h).
 */
#ifndef PROFD_BPF_RUNTIME_BPF_H
#define PROFD_BPF_RUNTIME_BPF_H

#include "maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);	/* resized by the loader (--max-processes) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct profd_runtime_proc);
} runtime_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct profd_runtime_thread);
} runtime_threads SEC(".maps");

/* The runtimes' walkers: one include per PROFD_RUNTIMES() line. */
#include "unwind_python.bpf.h"
#include "unwind_ruby.bpf.h"
#include "unwind_v8.bpf.h"
#include "unwind_hotspot.bpf.h"

/*
 * runtime_begin - set up @st's runtime walk when process @pid has a
 * runtime_procs entry: its id (also in the sample) and state, and the
 * native walkers' tail calls cut so the runtime walker keeps
 * PROFD_RUNTIME_TAIL_CALLS.
 */
static __always_inline void runtime_begin(struct profd_unwind_state *st, __u32 pid,
					  __u32 native_max_tail_calls)
{
	struct profd_runtime_proc *rp = bpf_map_lookup_elem(&runtime_procs, &pid);

	st->rt_id = 0;
	st->rt_cursor = 0;
	st->rt_code_low = 0;
	st->rt_code_high = 0;
	st->rt_tail_calls = 0;
	if (!rp || !rp->runtime || rp->runtime > PROFD_RUNTIME_COUNT)
		return;
	__builtin_memcpy(st->rt_state, rp->state, sizeof(st->rt_state));
	st->rt_code_low = rp->code_low;
	st->rt_code_high = rp->code_high;
	st->rt_id = rp->runtime;
	st->sample.runtime = rp->runtime;
	st->native_tail_calls = native_max_tail_calls - PROFD_RUNTIME_TAIL_CALLS - 1;
}

/*
 * runtime_dispatch - the native walk is over: tail-call the walker of the
 * capture's runtime, else emit. Returns only when the chain broke.
 */
static __always_inline int runtime_dispatch(void *ctx, void *progs,
					    struct profd_unwind_state *st)
{
	__u32 id = st->rt_id;

	if (id && id <= PROFD_RUNTIME_COUNT)
		bpf_tail_call(ctx, progs, PROFD_PROG_RUNTIME + id - 1);
	bpf_tail_call(ctx, progs, PROFD_PROG_EMIT);
	return chain_broken(st);
}

#endif /* PROFD_BPF_RUNTIME_BPF_H */
