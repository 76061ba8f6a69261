/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_dwarf.bpf.h - the DWARF CFI unwinder over compact unwind tables.
 *
 * Owns: the maps that hold unwind rows (`unwind_shards`, an array of
 * mmap-able arrays filled by src/unwind/) and each process's executable
 * ranges (`unwind_procs`), and one frame step: find the range of the pc,
 * binary-search its row, compute the CFA, read the return address,
 * restore rbp (the rules: unwind_step.h, shared with user space's
 * walker of stack copies). The walk loop and its tail calls are here.
 */
#ifndef PROFD_BPF_UNWIND_DWARF_BPF_H
#define PROFD_BPF_UNWIND_DWARF_BPF_H

#include "maps.bpf.h"
#include "runtime.bpf.h"
#include "unwind_table.h"

/* Frames one DWARF program invocation walks before tail-calling itself. */
#define PROFD_DWARF_FRAMES_PER_PROG	16
/*
 * The kernel allows 33 tail calls per chain: entry -> DWARF, 31 DWARF ->
 * DWARF, DWARF -> emit. 32 invocations of 16 frames cover 512 frames.
 */
#define PROFD_DWARF_MAX_TAIL_CALLS \
	(PROFD_MAX_USER_FRAMES / PROFD_DWARF_FRAMES_PER_PROG - 1)

/*
 * A shard is one array element of UNWIND_SHARD_ROWS rows (1 MiB): one
 * lookup gives the whole shard, and the binary search indexes it directly
 * (masked, so the verifier sees every access in bounds) instead of making
 * a helper call per step.
 */
struct unwind_shard {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, UNWIND_SHARD_ROWS * sizeof(struct unwind_row));
};


struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, UNWIND_MAX_SHARDS);
	__type(key, __u32);
	__array(values, struct unwind_shard);
} unwind_shards SEC(".maps");

/* The rows of shard @shard, or NULL. */
static __always_inline const struct unwind_row *shard_rows(__u32 shard)
{
	__u32 zero = 0;
	void *inner = bpf_map_lookup_elem(&unwind_shards, &shard);

	return inner ? bpf_map_lookup_elem(inner, &zero) : NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);		/* resized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

/*
 * tgid -> bpf_ktime_get_ns() of its last exec (profd_exec_rename at
 * begin_new_exec(), then profd_proc_exec at its end). Exec
 * events reach user space late (they do not wake the reader), so until
 * the new image's maps are read, the old image's unwind_procs entry
 * stays: an entry read before the exec is not used (unwind_proc_current).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);	/* scaled by the loader */
	__type(key, __u32);
	__type(value, __u64);
} exec_times SEC(".maps");

/* Staging for a forked child's copy of its parent's entry (10 KiB). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_proc_staging SEC(".maps");

/* @pid's unwind_procs entry if it describes its current image, else NULL. */
static __always_inline const struct unwind_proc *unwind_proc_current(__u32 pid)
{
	const struct unwind_proc *proc = bpf_map_lookup_elem(&unwind_procs, &pid);
	const __u64 *exec_ns;

	if (!proc)
		return NULL;
	exec_ns = bpf_map_lookup_elem(&exec_times, &pid);
	if (exec_ns && *exec_ns >= proc->maps_read_ns)
		return NULL;
	return proc;
}

/*
 * unwind_proc_inherit - at a fork, give child @pid a copy of parent
 * @ppid's current entry (marked UNWIND_PROC_INHERITED): its address space
 * is a copy of the parent's, so its first samples walk with tables at
 * once instead of waiting for a maps read. A stale exec time of an
 * earlier process with the child's pid is dropped (no exec yet).
 */
static __always_inline void unwind_proc_inherit(__u32 ppid, __u32 pid)
{
	const struct unwind_proc *parent;
	struct unwind_proc *v;
	__u32 zero = 0;

	bpf_map_delete_elem(&exec_times, &pid);
	parent = unwind_proc_current(ppid);
	v = bpf_map_lookup_elem(&unwind_proc_staging, &zero);
	if (!parent || !v)
		return;
	if (bpf_probe_read_kernel(v, sizeof(*v), parent))
		return;
	v->flags = UNWIND_PROC_INHERITED;
	bpf_map_update_elem(&unwind_procs, &pid, v, BPF_ANY);
}

/* unwind_proc_exit - process @pid ended: an inherited entry goes with it. */
static __always_inline void unwind_proc_exit(__u32 pid)
{
	const struct unwind_proc *v = bpf_map_lookup_elem(&unwind_procs, &pid);

	if (v && (v->flags & UNWIND_PROC_INHERITED))
		bpf_map_delete_elem(&unwind_procs, &pid);
}

/*
 * The frame step (unwind_step.h) over live user memory. Its searches and
 * dwarf_step() are global functions: the verifier checks each once, and
 * their results are plain scalars to the caller, so the paths through
 * them do not multiply the caller's states.
 */
#define UNWIND_ENV_PARAM
#define UNWIND_ENV_ARG
#define UNWIND_GLOBAL			__attribute__((noinline))
#define unwind_read(dst, size, addr)	bpf_probe_read_user((dst), (size), (void *)(addr))
#define unwind_count(c)			count(c)
#define unwind_shard_rows(shard)	shard_rows(shard)
/* Go's stack switches: the thread's g for unwind_go.h's rules */
#include "unwind_go.bpf.h"
#include "unwind_step.h"

/*
 * unwind_dwarf_step - walk up to PROFD_DWARF_FRAMES_PER_PROG frames with
 * dwarf_step(), recording each pc, then tail-call itself or emit.
 */
static __always_inline int unwind_dwarf_step(void *ctx, void *progs, __u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	const struct unwind_proc *proc;
	__u32 n, base, pid;
	bool done = false;
	__u64 ip;
	int ret;

	if (!st)
		return 0;
	pid = st->sample.pid;
	proc = unwind_proc_current(pid);
	if (!proc) {
		/* the process went away from the map meanwhile */
		bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_FP);
		return chain_broken(st);
	}
	st->sample.flags |= PROFD_SAMPLE_DWARF;
	n = st->sample.user_len;
	base = st->sample.kernel_len;
	for (int i = 0; i < PROFD_DWARF_FRAMES_PER_PROG; i++) {
		if (n >= st->max_user_frames) {
			st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
			count(PROFD_CNT_USER_TRUNCATED);
			done = true;
			break;
		}
		if (base + n >= PROFD_MAX_IPS) {
			done = true;
			break;
		}
		ip = st->f.ip | (n && st->f.pc_exact ? PROFD_IP_EXACT : 0);
		put_ip(st, base + n, ip);
		put_frame_regs(st, n, st->f.bp, st->f.sp);
		n++;
		if (runtime_code(st, n - 1, st->f.ip)) {
			/* the runtime's own code: its walker goes on from here */
			done = true;
			break;
		}
		/*
		 * The leaf's caller from the stack top (leaf_entry_step()),
		 * unless a runtime's walker owns the process: V8's merge puts
		 * back a frameless leaf's caller itself from the same word
		 * (src/v8/merge.c), which would then be there twice.
		 */
		ret = dwarf_step(&st->f, proc, st->rt_id ? 0 : UNWIND_STEP_LEAF_ENTRY);
		st->sample.flags |= st->f.flags;
		if (ret == DWARF_STEP_NEXT && st->f.pc_exact)
			/* a sigreturn step: the frame just recorded is the
			 * trampoline, entered at its first byte, not called */
			put_ip(st, base + n - 1, ip | PROFD_IP_EXACT);
		if (ret != DWARF_STEP_NEXT) {
			if (ret == DWARF_STEP_ERROR || ret == DWARF_STEP_BOGUS)
				st->sample.flags |= PROFD_SAMPLE_USER_ERROR;
			if (ret == DWARF_STEP_CUT)
				st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
			if (ret == DWARF_STEP_BOGUS)
				n--;
			done = true;
			break;
		}
	}
	st->sample.user_len = n;
	if (!done && st->tail_calls < PROFD_DWARF_MAX_TAIL_CALLS &&
	    st->tail_calls < st->native_tail_calls) {
		st->tail_calls++;
		bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_DWARF);
	}
	if (!done) {
		/* depth limit or tail-call budget reached with frames left */
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		count(PROFD_CNT_USER_TRUNCATED);
	}
	/* then the runtime's frames, or emit (runtime.bpf.h) */
	return runtime_dispatch(ctx, progs, st);
}

#endif /* PROFD_BPF_UNWIND_DWARF_BPF_H */
