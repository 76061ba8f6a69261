// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_parts.bpf.c - what one DWARF frame step of profd costs, by piece
 * (diagnostic for bench/dwarf_parts.sh; loaded by bench/bpf_parts/parts.c,
 * which attaches each program alone to a cpu-clock event on every CPU and
 * reads its bpf_stats).
 *
 * A step of bpf/unwind_dwarf.bpf.h (dwarf_step, as of commit 6ef46cb) is:
 * binary-search the process's ranges (proc_find_mapping), binary-search
 * the rows of the range in its shard (shard_find_row: one outer and one
 * inner array lookup give the whole 1 MiB shard, which the search indexes
 * directly), one more outer + inner lookup for the row, then one
 * bpf_probe_read_user of the return address (two when rbp was saved).
 * The programs below price those pieces 33 times (the 33-frame stack of
 * bench/dwarf_bpf_cost.sh) and, for comparison, one bulk user-stack read.
 * The search functions are copies of profd's (same loops and map types;
 * the shard is zero-filled, so every search takes the same number of
 * steps as a 31-row table - recursion's - and 6 ranges). Keep them in step
 * with bpf/unwind_dwarf.bpf.h when it changes.
 * Not profd's code path; nothing here is used by profd.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "unwind_table.h"

char LICENSE[] SEC("license") = "GPL";

#define STEPS 33
#define NRANGES 6
#define NROWS 31

/* parts.c drains two ringbufs with these names; unused here. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb_wake SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb_nowake SEC(".maps");

struct buf { __u64 w[1024]; };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct buf);
} scratch SEC(".maps");

/* profd's struct unwind_shard: one element of UNWIND_SHARD_ROWS rows */
struct shard {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, UNWIND_SHARD_ROWS * sizeof(struct unwind_row));
} shard0 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct shard);
} shards SEC(".maps") = {
	.values = { [0] = &shard0 },
};

/* profd's shard_rows */
static __always_inline const struct unwind_row *shard_rows(__u32 shard)
{
	__u32 zero = 0;
	void *inner = bpf_map_lookup_elem(&shards, &shard);

	return inner ? bpf_map_lookup_elem(inner, &zero) : NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} procs SEC(".maps");

__u64 sink = 0;

/* profd's proc_find_mapping (bpf/unwind_dwarf.bpf.h) */
__attribute__((noinline))
int find_mapping(const struct unwind_proc *proc, __u64 pc)
{
	__u32 lo = 0, hi, mid;
	const struct unwind_mapping *m;

	if (!proc)
		return -1;
	hi = proc->nmappings;
	if (hi > UNWIND_MAX_PROC_MAPPINGS)
		hi = UNWIND_MAX_PROC_MAPPINGS;
	for (int i = 0; i <= UNWIND_PROC_MAPPING_BITS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (proc->mappings[mid & (UNWIND_MAX_PROC_MAPPINGS - 1)].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	m = &proc->mappings[(lo - 1) & (UNWIND_MAX_PROC_MAPPINGS - 1)];
	return pc < m->end ? (int)((lo - 1) & (UNWIND_MAX_PROC_MAPPINGS - 1)) : -1;
}

/* profd's shard_find_row */
__attribute__((noinline))
int find_row(__u32 shard, __u32 first, __u32 nrows, __u32 rel)
{
	const struct unwind_row *rows = shard_rows(shard);
	__u32 lo = 0, hi = nrows, mid;

	if (!rows || nrows > UNWIND_SHARD_ROWS)
		return -1;
	for (int i = 0; i <= UNWIND_SHARD_ROW_BITS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (rows[(first + mid) & (UNWIND_SHARD_ROWS - 1)].pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (int)(lo - 1) : -1;
}

static __always_inline struct unwind_proc *get_proc(void)
{
	static const struct unwind_proc zero = {};
	struct unwind_proc *p;
	__u32 key = 0;

	p = bpf_map_lookup_elem(&procs, &key);
	if (p)
		return p;
	bpf_map_update_elem(&procs, &key, &zero, BPF_NOEXIST);
	p = bpf_map_lookup_elem(&procs, &key);
	if (!p)
		return NULL;
	for (int i = 0; i < NRANGES; i++) {
		p->mappings[i].start = 0x1000ULL * (i + 1);
		p->mappings[i].end = 0x1000ULL * (i + 2);
		p->mappings[i].pc_base = 0x1000ULL * (i + 1);
		p->mappings[i].shard = 0;
		p->mappings[i].first_row = 0;
		p->mappings[i].nrows = NROWS;
	}
	p->nmappings = NRANGES;
	return p;
}

/* the table part of one step: both searches and the row fetch */
__attribute__((noinline))
int table_step(const struct unwind_proc *proc, __u64 pc)
{
	const struct unwind_mapping *m;
	const struct unwind_row *rows, *row = NULL;
	__u32 shard;
	int idx, off;

	if (!proc)
		return -1;
	idx = find_mapping(proc, pc);
	if (idx < 0)
		return -1;
	m = &proc->mappings[idx & (UNWIND_MAX_PROC_MAPPINGS - 1)];
	shard = m->shard;
	off = find_row(shard, m->first_row, m->nrows, (__u32)(pc - m->pc_base));
	rows = shard_rows(shard);
	if (off >= 0 && rows)
		row = &rows[(m->first_row + off) & (UNWIND_SHARD_ROWS - 1)];
	return row ? row->cfa_off8 + 1 : -1;
}

static __always_inline __u64 user_sp(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;

	if (task->flags & 0x00200000)	/* PF_KTHREAD */
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	return BPF_CORE_READ(regs, sp);
}

/* the floor: dispatch + stats bookkeeping */
SEC("perf_event")
int p_empty(struct bpf_perf_event_data *ctx)
{
	return 0;
}

/* the user sp, as capture_stack gets it (task pt_regs) */
SEC("perf_event")
int p_regs(struct bpf_perf_event_data *ctx)
{
	sink += user_sp();
	return 0;
}

/* one 8-byte bpf_probe_read_user (one return address) */
SEC("perf_event")
int p_uread1(struct bpf_perf_event_data *ctx)
{
	__u64 sp = user_sp(), v = 0;

	if (sp)
		bpf_probe_read_user(&v, sizeof(v), (void *)sp);
	sink += v;
	return 0;
}

/* 33 8-byte reads, 16 bytes apart (33 return addresses) */
SEC("perf_event")
int p_uread33(struct bpf_perf_event_data *ctx)
{
	__u64 sp = user_sp(), v, s = 0;

	if (!sp)
		return 0;
	for (int i = 0; i < STEPS; i++) {
		v = 0;
		bpf_probe_read_user(&v, sizeof(v), (void *)(sp + 16 * i));
		s += v;
	}
	sink += s;
	return 0;
}

/* one bulk read of 512 bytes of the user stack */
SEC("perf_event")
int p_uread512(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0;
	struct buf *b = bpf_map_lookup_elem(&scratch, &zero);
	__u64 sp = user_sp();

	if (b && sp)
		bpf_probe_read_user(b->w, 512, (void *)sp);
	return 0;
}

/* one bulk read of 4 KiB of the user stack (may cross a page) */
SEC("perf_event")
int p_uread4k(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0;
	struct buf *b = bpf_map_lookup_elem(&scratch, &zero);
	__u64 sp = user_sp();

	if (b && sp)
		bpf_probe_read_user(b->w, 4096, (void *)sp);
	return 0;
}

/* 33 table lookups (range search + row search + row fetch) */
SEC("perf_event")
int p_table33(struct bpf_perf_event_data *ctx)
{
	struct unwind_proc *proc = get_proc();
	int s = 0;

	if (!proc)
		return 0;
	for (int i = 0; i < STEPS; i++)
		s += table_step(proc, 0x1000ULL * (1 + i % NRANGES) + 0x100 + i);
	sink += s;
	return 0;
}

/* an empty global (noinline) function: one BPF-to-BPF call and return */
__attribute__((noinline))
int nop_fn(__u32 x)
{
	return x + 1;
}

/* 99 calls of nop_fn: the three calls (table_step, find_mapping,
 * find_row) of 33 steps, without their work */
SEC("perf_event")
int p_calls99(struct bpf_perf_event_data *ctx)
{
	__u32 s = 0;

	for (int i = 0; i < 3 * STEPS; i++)
		s = nop_fn(s);
	sink += s;
	return 0;
}

/* 33 whole steps: table lookups + one 8-byte user read each */
SEC("perf_event")
int p_step33(struct bpf_perf_event_data *ctx)
{
	struct unwind_proc *proc = get_proc();
	__u64 sp = user_sp(), v;
	int s = 0;

	if (!proc || !sp)
		return 0;
	for (int i = 0; i < STEPS; i++) {
		s += table_step(proc, 0x1000ULL * (1 + i % NRANGES) + 0x100 + i);
		v = 0;
		bpf_probe_read_user(&v, sizeof(v), (void *)(sp + 16 * i));
		s += (int)v;
	}
	sink += s;
	return 0;
}
