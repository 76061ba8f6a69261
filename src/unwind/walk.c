// SPDX-License-Identifier: GPL-2.0
/*
 * walk.c - the user-space walker of stack copies (see walk.h): the frame
 * step of bpf/unwind_step.h compiled over a stack copy (and the leaf's
 * instruction bytes BPF copied with it) instead of live user memory, and
 * over the shards mapped read-only.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "counters/counters.h"
#include "bpf/unwind_table.h"
#include "unwind/walk.h"

COUNTER_DEFINE_BPF(stack_copies, COUNTER_STAT, PROFD_CNT_STACK_COPIES,
		   "samples that carried a copy of their user stack (no unwind tables yet)");
COUNTER_DEFINE_BPF(stack_copy_fault, COUNTER_PARTIAL, PROFD_CNT_STACK_COPY_FAULT,
		   "samples whose stack could not be copied (first page unreadable)");
COUNTER_DEFINE(stack_copy_short, COUNTER_PARTIAL,
	       "stack copies that ended before the stack did: walk truncated");
COUNTER_DEFINE(go_switch_stack_copy, COUNTER_PARTIAL,
	       "Go stack switches met walking a stack copy (one stack, no thread "
	       "state to find the other): walk truncated");

#define SHARD_BYTES ((size_t)UNWIND_SHARD_ROWS * sizeof(struct unwind_row))
/* A read this close past the copy's end is the stack going on. */
#define SHORT_READ_SLACK (1u << 20)

struct unwind_walker {
	int procs_fd, shards_fd, exec_fd;
	uint32_t copy_bytes;	/* --stack-copy-bytes */
	/*
	 * Shards mapped during the walk in hand (lazily), unmapped at its
	 * end: a mapped BPF array is resident in full (1 MiB each), so they
	 * are not kept.
	 */
	const struct unwind_row *rows[UNWIND_MAX_SHARDS];
	uint32_t mapped[UNWIND_MAX_SHARDS];
	uint32_t nmapped;
	struct unwind_proc proc;	/* the entry of the walk in hand */
};

/* The memory of one walk: the stack copy, and the code at its leaf's pc. */
struct walk_env {
	struct unwind_walker *w;
	uint64_t lo, hi;	/* the copy covers user addresses [lo, hi) */
	const uint8_t *bytes;
	uint64_t code_lo;	/* the code bytes cover [code_lo, code_lo + code_len) */
	const uint8_t *code;
	uint8_t code_len;
	bool short_read;	/* a read past the copy's end */
	bool go_cut;		/* cut at a Go stack switch */
};

static int env_read(struct walk_env *e, void *dst, uint64_t size, uint64_t addr)
{
	/* the leaf's instruction bytes BPF read with the copy */
	if (addr >= e->code_lo && addr - e->code_lo < e->code_len &&
	    size <= e->code_len - (addr - e->code_lo)) {
		memcpy(dst, e->code + (addr - e->code_lo), size);
		return 0;
	}
	if (addr < e->lo || addr > e->hi || size > e->hi - addr) {
		if (addr >= e->hi && addr - e->hi < SHORT_READ_SLACK)
			e->short_read = true;
		return -1;
	}
	memcpy(dst, e->bytes + (addr - e->lo), size);
	return 0;
}

/* Shard @i's rows, mapped read-only on first use in this walk. */
static const struct unwind_row *walker_rows(struct unwind_walker *w, uint32_t i)
{
	uint32_t id;
	int fd;
	void *map;

	if (i >= UNWIND_MAX_SHARDS)
		return NULL;
	if (w->rows[i])
		return w->rows[i];
	if (bpf_map_lookup_elem(w->shards_fd, &i, &id))
		return NULL;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return NULL;
	map = mmap(NULL, SHARD_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return NULL;
	w->rows[i] = map;
	w->mapped[w->nmapped++] = i;
	return map;
}

/* Unmap the shards the last walk mapped. */
static void walker_unmap(struct unwind_walker *w)
{
	for (uint32_t k = 0; k < w->nmapped; k++) {
		munmap((void *)w->rows[w->mapped[k]], SHARD_BYTES);
		w->rows[w->mapped[k]] = NULL;
	}
	w->nmapped = 0;
}

#define UNWIND_ENV_PARAM		, struct walk_env *env
#define UNWIND_ENV_ARG			, env
#define UNWIND_GLOBAL			static
#define unwind_read(dst, size, addr)	env_read(env, (dst), (size), (addr))
#define unwind_count(c)			((void)0)
#define unwind_shard_rows(shard)	walker_rows(env->w, (shard))
/* the copy holds no code before a return address: callsite_verify() reads it */
#define UNWIND_CALLS_CHECKED_LATER
/*
 * Go's switches (bpf/unwind_go.h): a copy holds one stack and not the
 * thread's registers, so its g is unknown and the walk is cut there.
 */
#define unwind_go_thread_g(g, off)	go_no_thread(env)
#define UNWIND_GO_NO_THREAD		DWARF_STEP_CUT

static inline int go_no_thread(struct walk_env *env)
{
	env->go_cut = true;	/* counted once the walk is kept */
	return -1;
}

#include "bpf/unwind_step.h"

struct unwind_walker *unwind_walker_new(int procs_fd, int shards_fd, int exec_fd,
					uint32_t copy_bytes)
{
	struct unwind_walker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->procs_fd = procs_fd;
	w->shards_fd = shards_fd;
	w->exec_fd = exec_fd;
	w->copy_bytes = copy_bytes;
	return w;
}

void unwind_walker_free(struct unwind_walker *w)
{
	if (!w)
		return;
	walker_unmap(w);
	free(w);
}

enum unwind_walk_status unwind_walker_walk(struct unwind_walker *w,
					   const struct profd_sample *s,
					   const struct profd_stack_copy *regs,
					   const uint8_t *stack, uint64_t *ips,
					   uint32_t max, uint32_t *n_out,
					   uint32_t *flags_out, bool count)
{
	struct walk_env env = {
		.w = w, .lo = regs->sp, .hi = regs->sp + s->stack_len,
		.bytes = stack, .code_lo = regs->ip - 1, .code = regs->code,
		.code_len = regs->code_len <= sizeof(regs->code) ? regs->code_len : 0,
	};
	struct unwind_frame f = {
		.ip = regs->ip, .sp = regs->sp, .bp = regs->bp, .pc_exact = 1,
	};
	uint32_t pid = s->pid, n = 0, flags = PROFD_SAMPLE_DWARF;
	uint64_t exec_ns = 0, ip;
	int ret;

	*n_out = 0;
	*flags_out = 0;
	if (!bpf_map_lookup_elem(w->exec_fd, &pid, &exec_ns) && exec_ns > s->ktime_ns)
		return UNWIND_WALK_STALE;
	if (bpf_map_lookup_elem(w->procs_fd, &pid, &w->proc) ||
	    w->proc.maps_read_ns <= exec_ns)
		return UNWIND_WALK_NOT_READY;
	for (;;) {
		if (n >= max) {
			flags |= PROFD_SAMPLE_USER_TRUNCATED;
			break;
		}
		ip = f.ip | (n && f.pc_exact ? PROFD_IP_EXACT : 0);
		ips[n++] = ip;
		/* as in BPF (bpf/unwind_dwarf.bpf.h): not where a runtime's walker ran */
		ret = dwarf_step(&f, &w->proc, s->runtime ? 0 : UNWIND_STEP_LEAF_ENTRY, &env);
		if (ret == DWARF_STEP_NEXT && f.pc_exact)
			ips[n - 1] = ip | PROFD_IP_EXACT;	/* sigreturn trampoline */
		if (ret == DWARF_STEP_NEXT)
			continue;
		if (ret == DWARF_STEP_ERROR || ret == DWARF_STEP_BOGUS)
			flags |= PROFD_SAMPLE_USER_ERROR;
		if (ret == DWARF_STEP_CUT)
			flags |= PROFD_SAMPLE_USER_TRUNCATED;
		if (ret == DWARF_STEP_BOGUS)
			n--;
		break;
	}
	walker_unmap(w);
	flags |= f.flags;
	if ((flags & PROFD_SAMPLE_UNWIND_MISSING) && w->proc.maps_read_ns < s->ktime_ns)
		return UNWIND_WALK_NOT_READY;
	/*
	 * A read just past a copy cut at --stack-copy-bytes: the stack went
	 * on. Past a shorter copy (the stack's top, a main thread's argv) or
	 * far past it, the address is garbage: an error, as in BPF.
	 */
	if (env.short_read && s->stack_len >= w->copy_bytes) {
		/* the stack went on past the copy: cut, not an error */
		flags = (flags & ~PROFD_SAMPLE_USER_ERROR) | PROFD_SAMPLE_USER_TRUNCATED;
		if (count)
			counter_inc(&counter_stack_copy_short);
	}
	if (env.go_cut && count)
		counter_inc(&counter_go_switch_stack_copy);
	*n_out = n;
	*flags_out = flags;
	return UNWIND_WALK_OK;
}
