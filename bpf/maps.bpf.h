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

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* resized by the loader */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
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

static __always_inline struct profd_unwind_state *unwind_state(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&unwind_scratch, &zero);
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

#endif /* PROFD_BPF_MAPS_BPF_H */
