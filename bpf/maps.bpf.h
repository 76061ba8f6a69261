/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * maps.bpf.h - maps and configuration shared by every profd BPF program.
 *
 * Owns: the `events` ringbuf (the one path to user space), the per-CPU
 * unwinder scratch state, the named counters, the PID filter and the
 * read-only configuration the loader sets before load.
 */
#ifndef PROFD_BPF_MAPS_BPF_H
#define PROFD_BPF_MAPS_BPF_H

#include "profd.h"

/* Set by the loader (skeleton .rodata) before load. */
const volatile bool cfg_filter_pids = false;	/* only PIDs in pid_filter */
const volatile bool cfg_include_idle = false;	/* keep pid 0 samples */
const volatile __u32 cfg_max_user_frames = 256;	/* --max-stack-depth */
const volatile bool cfg_dwarf_unwinding = true;	/* !--no-dwarf-unwinding */
const volatile bool cfg_follow_children = false;	/* add forked children to pid_filter */
/* user stack bytes a sample without unwind tables carries (--stack-copy-bytes) */
const volatile __u32 cfg_stack_copy_bytes = 16384;
/* every sample carries its stack (--check-unwinder) */
const volatile bool cfg_stack_copy_always = false;
/* --off-cpu-threshold x 2^32: a blocking switch-out is recorded when a
 * 32-bit random draw is below it (2^32: always) */
const volatile __u64 cfg_off_cpu_threshold = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* resized by the loader */
} events SEC(".maps");

/* The capture scratch: PROFD_SCRATCH_SLOTS per CPU (under 32 KiB each). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFD_SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct profd_unwind_state);
} unwind_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFD_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* tgid -> 1 for --pid; sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

static __always_inline void count(enum profd_counter c)
{
	__u32 key = c;
	__u64 *v = bpf_map_lookup_elem(&counters, &key);

	if (v)
		*v += 1;	/* per-CPU slot: no atomics needed */
}

/* pid_wanted - @pid (tgid) passes the --pid / `profd exec` filter. */
static __always_inline bool pid_wanted(__u32 pid)
{
	return !cfg_filter_pids || bpf_map_lookup_elem(&pid_filter, &pid);
}

/* The scratch state of @slot (enum profd_scratch_slot) on this CPU. */
static __always_inline struct profd_unwind_state *unwind_state(__u32 slot)
{
	return bpf_map_lookup_elem(&unwind_scratch, &slot);
}

/*
 * Scratch ownership. A scratch buffer is per CPU, and a uprobe program can
 * be preempted, so a second task's capture on the same CPU would write
 * over the first's state. The owner word, taken with compare-and-swap,
 * holds the owner's thread id (bit 31 set, so never 0) and, above, when it
 * was taken (ktime >> 20, about ms): a capture finding the word held
 * drops its sample (counted); a word held a second or more was left by a
 * capture that never released it, and is taken over. The owner checks the
 * word before it emits, so a capture whose scratch was taken over drops
 * its sample rather than emit another's frames.
 */
#define PROFD_SCRATCH_STALE_UNITS 1024	/* ~1 s in ktime >> 20 units */

static __always_inline __u32 scratch_me(void)
{
	return (__u32)bpf_get_current_pid_tgid() | 0x80000000u;
}

/* Take @owner for the current thread; false (counted) when it is held. */
static __always_inline bool scratch_take(__u64 *owner)
{
	__u32 now = bpf_ktime_get_ns() >> 20;
	__u64 cur = *owner;

	if (cur && (__u32)(now - (__u32)(cur >> 32)) < PROFD_SCRATCH_STALE_UNITS)
		goto busy;
	if (__sync_val_compare_and_swap(owner, cur, ((__u64)now << 32) | scratch_me()) != cur)
		goto busy;
	return true;
busy:
	count(PROFD_CNT_SCRATCH_BUSY);
	return false;
}

/* Whether the current thread still holds @owner. */
static __always_inline bool scratch_held(const __u64 *owner)
{
	return (__u32)*owner == scratch_me();
}

/* Give @owner back if the current thread holds it. */
static __always_inline void scratch_release(__u64 *owner)
{
	__u64 cur = *owner;

	if ((__u32)cur == scratch_me())
		__sync_val_compare_and_swap(owner, cur, 0);
}

/*
 * put_ip - store @ip in scratch slot @idx. The barrier stops the compiler
 * from folding the mask into a strength-reduced pointer the verifier
 * cannot bound.
 */
static __always_inline void put_ip(struct profd_unwind_state *st, __u32 idx,
				   __u64 ip)
{
	barrier_var(idx);
	st->ips[idx & (PROFD_SCRATCH_IPS - 1)] = ip;
}

/*
 * put_frame_regs - keep user frame @n's rbp @bp and sp @sp for the
 * capture's runtime walker (PROFD_FRAME_BP_SLOT(), PROFD_FRAME_SP_SLOT());
 * nothing when no runtime follows.
 */
static __always_inline void put_frame_regs(struct profd_unwind_state *st, __u32 n,
					   __u64 bp, __u64 sp)
{
	if (!st->rt_id)
		return;
	barrier_var(n);
	st->ips[PROFD_FRAME_BP_SLOT(n)] = bp;
	st->ips[PROFD_FRAME_SP_SLOT(n)] = sp;
}

/*
 * runtime_code - whether @ip (of user frame @n; a return address unless
 * n is 0) lies in the capture's runtime's own code: the native walk
 * ends there, the runtime's walker goes on.
 */
static __always_inline bool runtime_code(const struct profd_unwind_state *st, __u32 n,
					 __u64 ip)
{
	__u64 pc = n ? ip - 1 : ip;

	return pc - st->rt_code_low < st->rt_code_high - st->rt_code_low;
}

/*
 * chain_broken - a tail call of the chain failed (counted): the capture
 * ends without a record and gives its scratch back. Returns 0.
 */
static __always_inline int chain_broken(struct profd_unwind_state *st)
{
	count(PROFD_CNT_TAIL_CALL_FAILED);
	scratch_release(&st->owner);
	return 0;
}

#endif /* PROFD_BPF_MAPS_BPF_H */
