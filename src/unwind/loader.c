// SPDX-License-Identifier: GPL-2.0
/*
 * loader.c - unwind tables for the processes being sampled (see loader.h):
 * each process's ranges in `unwind_procs`, built from its maps over the
 * per-file tables of objects.c; removal, expiry, eviction, figures.
 */
#include <errno.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "bpf/profd.h"
#include "counters/counters.h"
#include "unwind/loader_internal.h"

/* The DWARF unwinder's counters: this file's and the BPF walker's (unwind_dwarf.bpf.h). */
COUNTER_DEFINE(unwind_evictions, COUNTER_PARTIAL,
	       "unwind tables evicted at --unwind-memory-limit");
COUNTER_DEFINE(unwind_ranges_truncated, COUNTER_PARTIAL,
	       "processes with more executable ranges than have tables");
COUNTER_DEFINE(unwind_update_error, COUNTER_PARTIAL, "unwind_procs updates that failed");
COUNTER_DEFINE_BPF(dwarf_no_row, COUNTER_STAT, PROFD_CNT_DWARF_NO_ROW,
		   "pc in a table's range but no row: frame pointers used");
COUNTER_DEFINE_BPF(dwarf_unsupported_rule, COUNTER_STAT, PROFD_CNT_DWARF_UNSUPPORTED,
		   "CFA rule the BPF unwinder cannot follow: frame pointers used where "
		   "the code keeps them");
COUNTER_DEFINE_BPF(dwarf_unfollowable, COUNTER_PARTIAL, PROFD_CNT_DWARF_UNFOLLOWABLE,
		   "CFA rule that cannot be followed in code without a frame pointer: "
		   "walk cut, [truncated]");
COUNTER_DEFINE_BPF(unwind_leaf_entry, COUNTER_STAT, PROFD_CNT_UNWIND_LEAF_ENTRY,
		   "leaf frames in code without unwind rows (JIT code) at a function's "
		   "first instruction or its return: the caller read from the stack "
		   "top (a checked return address), not skipped by a frame-pointer step");
COUNTER_DEFINE_BPF(unwind_leaf_entry_unverified, COUNTER_PARTIAL,
		   PROFD_CNT_UNWIND_LEAF_ENTRY_UNVERIFIED,
		   "leaf frames in code without unwind rows at a function's entry or "
		   "return whose word at the stack top is no return address (outside "
		   "the known code, or no call before it): walk cut, [truncated]");
COUNTER_DEFINE_BPF(dwarf_pc_unknown, COUNTER_STAT, PROFD_CNT_DWARF_PC_UNKNOWN,
		   "pc outside the process's known ranges");
COUNTER_DEFINE_BPF(dwarf_bad_frame, COUNTER_PARTIAL, PROFD_CNT_DWARF_BAD_FRAME,
		   "CFA not above sp: walk stopped");
COUNTER_DEFINE_BPF(dwarf_table_evicted, COUNTER_PARTIAL, PROFD_CNT_DWARF_TABLE_EVICTED,
		   "pc in a range whose table was evicted: frame pointers used");


struct unwind_loader *unwind_loader_new(int shards_fd, int procs_fd,
					uint64_t max_bytes)
{
	struct unwind_loader *l = calloc(1, sizeof(*l));
	uint64_t shard_bytes = (uint64_t)UNWIND_SHARD_ROWS * sizeof(struct unwind_row);
	uint64_t n = max_bytes / shard_bytes;

	if (!l)
		return NULL;
	if (n < 1)
		n = 1;
	l->procs_fd = procs_fd;
	l->shards = shards_new(shards_fd, n > UNWIND_MAX_SHARDS ? UNWIND_MAX_SHARDS : n);
	if (!l->shards) {
		free(l);
		return NULL;
	}
	elf_version(EV_CURRENT);
	return l;
}

/* processes */

static struct uproc **proc_slot(struct unwind_loader *l, pid_t pid)
{
	struct uproc **pp = &l->procs[(uint32_t)pid % PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void put_objs(struct unwind_loader *l, struct uobj **objs, uint32_t n,
		     uint64_t now)
{
	for (uint32_t i = 0; i < n; i++) {
		objs[i]->last_used = now;
		if (--objs[i]->users == 0 && objs[i]->status == -ENOSPC)
			loader_obj_forget(l, objs[i]);	/* evicted while in use */
	}
}

/* Append a range to the update being built in l->build. */
static int add_entry(struct unwind_loader *l, uint64_t start, uint64_t end,
		     struct uobj *o, const struct chunk *ch, uint64_t pc_base)
{
	struct unwind_mapping *e;
	uint32_t n = l->nbuild;

	if (start >= end)
		return 0;
	/* merge with a preceding frame-pointer range */
	if (!ch && n && l->build[n - 1].shard == UNWIND_NO_TABLE &&
	    l->build[n - 1].end == start) {
		l->build[n - 1].end = end;
		return 0;
	}
	if (n >= UNWIND_MAX_PROC_MAPPINGS)
		return -ENOSPC;
	e = &l->build[n];
	memset(e, 0, sizeof(*e));
	e->start = start;
	e->end = end;
	e->pc_base = pc_base;
	e->shard = ch ? ch->ext.shard : UNWIND_NO_TABLE;
	e->first_row = ch ? ch->ext.first_row : 0;
	e->nrows = ch ? ch->ext.nrows : 0;
	l->build_obj[n] = ch ? o : NULL;
	l->nbuild++;
	return 0;
}

/* The entries for mapping @m backed by @o (NULL: frame pointers). */
static int add_mapping(struct unwind_loader *l, const struct proc_mapping *m,
		       struct uobj *o)
{
	uint64_t bias = 0, pos = m->start, pc_base;
	bool found = false;
	int err;

	if (o && !o->status) {
		for (uint32_t i = 0; i < o->nsegs; i++) {
			const struct seg *s = &o->segs[i];

			if (m->offset >= s->off && m->offset < s->off + s->filesz) {
				bias = m->start - (m->offset - s->off + s->vaddr);
				found = true;
				break;
			}
		}
	}
	if (!found && o && (o->status == -ENOSPC || o->open_failed)) {
		/*
		 * evicted, or not opened yet: BPF counts it and asks for the
		 * maps again (the next update loads the table)
		 */
		struct unwind_mapping *e;

		if (m->start >= m->end)
			return 0;
		if (l->nbuild >= UNWIND_MAX_PROC_MAPPINGS)
			return -ENOSPC;
		e = &l->build[l->nbuild];
		memset(e, 0, sizeof(*e));
		e->start = m->start;
		e->end = m->end;
		e->shard = UNWIND_EVICTED;
		l->build_obj[l->nbuild++] = NULL;
		return 0;
	}
	if (!found)
		return add_entry(l, m->start, m->end, NULL, NULL, 0);
	pc_base = bias + o->table_base;
	for (uint32_t c = 0; c < o->nchunks; c++) {
		const struct chunk *ch = &o->chunks[c];
		uint64_t lo = pc_base + ch->lo, hi = pc_base + ch->hi;

		if (lo < m->start)
			lo = m->start;
		if (hi > m->end)
			hi = m->end;
		if (lo >= hi)
			continue;
		err = add_entry(l, pos, lo, NULL, NULL, 0);
		if (!err)
			err = add_entry(l, lo, hi, o, ch, pc_base);
		if (err)
			return err;
		pos = hi;
	}
	return add_entry(l, pos, m->end, NULL, NULL, 0);
}

/*
 * Write @u's entry to BPF: its ranges copied into l->value (the ranges
 * past them zeroed, as far as an earlier write used them).
 */
static int write_proc(struct unwind_loader *l, struct uproc *u)
{
	struct unwind_proc *v = &l->value;

	if (u->nmappings)
		memcpy(v->mappings, u->mappings, u->nmappings * sizeof(*u->mappings));
	if (l->value_used > u->nmappings)
		memset(&v->mappings[u->nmappings], 0,
		       (l->value_used - u->nmappings) * sizeof(*v->mappings));
	l->value_used = u->nmappings;
	v->nmappings = u->nmappings;
	v->maps_read_ns = u->maps_read_ns;
	if (bpf_map_update_elem(l->procs_fd, &u->pid, v, BPF_ANY)) {
		l->st.update_errors++;
		counter_inc(&counter_unwind_update_error);
		return -errno;
	}
	return 0;
}

/* Copy the ranges built in l->build (and their tables) into @u. */
static int keep_entries(struct unwind_loader *l, struct uproc *u)
{
	uint32_t n = l->nbuild ? l->nbuild : 1;
	struct unwind_mapping *m = realloc(u->mappings, n * sizeof(*m));
	struct uobj **eo;

	if (m)
		u->mappings = m;
	eo = m ? realloc(u->entry_obj, n * sizeof(*eo)) : NULL;
	if (!eo)
		return -ENOMEM;
	u->entry_obj = eo;
	memcpy(u->mappings, l->build, l->nbuild * sizeof(*m));
	memcpy(u->entry_obj, l->build_obj, l->nbuild * sizeof(*eo));
	u->nmappings = l->nbuild;
	return 0;
}

int unwind_loader_update(struct unwind_loader *l, pid_t pid,
			 const struct proc_maps *maps)
{
	struct uproc **pp = proc_slot(l, pid), *u = *pp;
	struct uobj **old_objs = NULL;
	uint32_t old_n = 0;
	uint64_t now = mono_ns();
	bool truncated = false;
	int err, werr;

	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		u->pid = pid;
		*pp = u;
		l->st.processes++;
	}
	old_objs = u->objs;
	old_n = u->nobjs;
	u->objs = calloc(maps->n ? maps->n : 1, sizeof(*u->objs));
	u->nobjs = 0;
	l->nbuild = 0;
	u->maps_read_ns = maps->read_ns;	/* older than an exec: not used */
	if (!u->objs) {
		u->objs = old_objs;
		u->nobjs = old_n;
		return -ENOMEM;
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];
		struct uobj *o = NULL;

		if (!m->executable)
			continue;
		if (loader_has_object(m))
			o = loader_obj_get(l, pid, m, now);
		if (o) {
			bool seen = false;

			for (uint32_t j = 0; j < u->nobjs; j++)
				seen |= u->objs[j] == o;
			if (!seen) {
				o->users++;
				u->objs[u->nobjs++] = o;
			}
		}
		if (add_mapping(l, m, o))
			truncated = true;
	}
	if (truncated) {
		l->st.ranges_truncated++;
		counter_inc(&counter_unwind_ranges_truncated);
	}
	put_objs(l, old_objs, old_n, now);
	free(old_objs);
	err = keep_entries(l, u);
	l->nbuild = 0;
	if (err)	/* no memory: no ranges (frame pointers) rather than stale ones */
		u->nmappings = 0;
	werr = write_proc(l, u);
	return err ? err : werr;
}

/* unwind_loader_ready - see loader.h. */
bool unwind_loader_ready(const struct unwind_loader *l, const struct proc_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct uobj *o;

		if (!loader_has_object(&maps->v[i]))
			continue;
		o = loader_obj_find(l, &maps->v[i]);
		/* a table whose file could not be opened is built at the
		 * object's next sight (loader_obj_get()): a file read, and
		 * node's table (19 MiB while it is built) on the caller's
		 * thread */
		if (!o || o->status == -ENOSPC || o->open_failed)
			return false;
	}
	return true;
}

static void proc_free(struct unwind_loader *l, struct uproc *u, uint64_t now)
{
	put_objs(l, u->objs, u->nobjs, now);
	free(u->objs);
	free(u->mappings);
	free(u->entry_obj);
	free(u);
}

/* Drop tables no process used for UNUSED_TTL_NS. */
static void expire(struct unwind_loader *l, uint64_t now)
{
	for (int b = 0; b < OBJ_BUCKETS; b++) {
		struct uobj *o = l->objs[b], *next;

		for (; o; o = next) {
			next = o->next;
			if (!o->users && now - o->last_used > UNUSED_TTL_NS)
				loader_obj_forget(l, o);
		}
	}
}

void unwind_loader_remove(struct unwind_loader *l, pid_t pid)
{
	struct uproc **pp = proc_slot(l, pid), *u = *pp;
	uint64_t now = mono_ns();

	if (!u)
		return;
	*pp = u->next;
	bpf_map_delete_elem(l->procs_fd, &pid);
	proc_free(l, u, now);
	l->st.processes--;
	/* a walk of every table: once a second, not per exit (exec storms) */
	if (now - l->expired_ns >= TOUCH_EVERY_NS) {
		l->expired_ns = now;
		expire(l, now);
	}
}

/*
 * Make room: drop the least recently used table, unused ones first. A
 * table in use is unloaded and its processes' ranges fall back to frame
 * pointers until they exit. Never @keep (the one being loaded).
 */
void loader_evict_one(struct unwind_loader *l, struct uobj *keep)
{
	struct uobj *victim = NULL;

	for (int pass = 0; pass < 2 && !victim; pass++) {
		for (int b = 0; b < OBJ_BUCKETS; b++) {
			for (struct uobj *o = l->objs[b]; o; o = o->next) {
				if (o == keep || o->status || !o->nchunks)
					continue;
				if (pass == 0 && o->users)
					continue;
				if (!victim || o->last_used < victim->last_used)
					victim = o;
			}
		}
	}
	if (!victim)
		return;
	l->st.evictions++;
	counter_inc(&counter_unwind_evictions);
	if (!victim->users) {
		loader_obj_forget(l, victim);
		return;
	}
	/* In use: point its processes' ranges at frame pointers, rewrite. */
	for (uint32_t i = 0; i < l->nbuild; i++) {	/* the update in progress */
		if (l->build_obj[i] != victim)
			continue;
		l->build[i].shard = UNWIND_EVICTED;
		l->build[i].nrows = 0;
		l->build_obj[i] = NULL;
	}
	for (int b = 0; b < PROC_BUCKETS; b++) {
		for (struct uproc *u = l->procs[b]; u; u = u->next) {
			bool changed = false;

			for (uint32_t i = 0; i < u->nmappings; i++) {
				if (u->entry_obj[i] != victim)
					continue;
				u->mappings[i].shard = UNWIND_EVICTED;
				u->mappings[i].nrows = 0;
				u->entry_obj[i] = NULL;
				changed = true;
			}
			if (changed)
				write_proc(l, u);
		}
	}
	loader_obj_unload(l, victim);
	victim->status = -ENOSPC;
	l->st.evictions_in_use++;
}

void unwind_loader_touch(struct unwind_loader *l, pid_t pid, uint64_t now_ns)
{
	struct uproc *u = *proc_slot(l, pid);

	if (!u || now_ns - u->touched_ns < TOUCH_EVERY_NS)
		return;
	u->touched_ns = now_ns;
	for (uint32_t i = 0; i < u->nobjs; i++)
		u->objs[i]->last_used = now_ns;
}

void unwind_loader_free(struct unwind_loader *l)
{
	if (!l)
		return;
	for (int b = 0; b < PROC_BUCKETS; b++) {
		struct uproc *u = l->procs[b], *next;

		for (; u; u = next) {
			next = u->next;
			free(u->objs);
			free(u->mappings);
			free(u->entry_obj);
			free(u);
		}
	}
	for (int b = 0; b < OBJ_BUCKETS; b++) {
		struct uobj *o = l->objs[b], *next;

		for (; o; o = next) {
			next = o->next;
			free(o->chunks);
			free(o);
		}
	}
	shards_free(l->shards);
	free(l);
}

void unwind_loader_stats(const struct unwind_loader *l,
			 struct unwind_loader_stats *out)
{
	*out = l->st;
	shards_stats(l->shards, &out->shards, &out->rows);
}
