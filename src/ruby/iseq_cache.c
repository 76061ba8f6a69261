// SPDX-License-Identifier: GPL-2.0
/*
 * iseq_cache.c - the cache of decoded CRuby objects (see iseq.h) and
 * when an entry may name a sample.
 *
 * Owns: the one LRU of decoded objects (iseqs, method entries, IDs, class
 * names: src/runtime/addr_cache), re-checking an entry against the
 * object now at its address, and the GC-epoch rule (bpf/unwind_ruby.h)
 * that decides whether what was read names the object a sample saw.
 * The decoders are iseq.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/unwind_ruby.h"
#include "ruby/iseq_internal.h"
#include "util/heap_cost.h"

static void entry_free(struct addr_entry *ae)
{
	struct entry *e = (struct entry *)ae;

	free(e->name);
	free(e->path);
	rv_lines_free(&e->lines);
	free(e);
}

static size_t entry_bytes(const struct entry *e)
{
	return heap_cost(sizeof(*e)) +
	       (e->name ? heap_cost(strlen(e->name) + 1) : 0) +
	       (e->path ? heap_cost(strlen(e->path) + 1) : 0) +
	       (e->lines.pos ? 2 * heap_cost((size_t)e->lines.n * 4) : 0);
}

struct rb_iseq_cache *rb_iseq_cache_new(struct remote_reader *reader,
					size_t max_entries, size_t max_bytes)
{
	struct rb_iseq_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->lru = addr_cache_new(max_entries, max_bytes, entry_free);
	if (!c->lru) {
		free(c);
		return NULL;
	}
	c->remote = reader;
	return c;
}

void rb_iseq_cache_free(struct rb_iseq_cache *c)
{
	if (!c)
		return;
	addr_cache_free(c->lru);
	free(c);
}

void rb_iseq_forget(struct rb_iseq_cache *c, const uint64_t *gens, size_t n)
{
	addr_cache_forget(c->lru, gens, n);
}

void rb_iseq_stats(struct rb_iseq_cache *c, struct rb_iseq_stats *out)
{
	struct addr_cache_counts n;

	addr_cache_counts(c->lru, &n);
	*out = c->st;
	out->entries = n.entries;
	out->bytes = n.bytes;
	out->evictions = n.evictions;
}

/*
 * A new entry for object @addr of kind @k, decoded now (not inserted);
 * a failed decode is an entry too (e->failed), cached like a success.
 * NULL and *@err when the failure is not the object's (budget, memory).
 */
static struct entry *fresh_entry(struct ctx *x, enum kind k, uint64_t addr, int *err)
{
	struct entry *e = calloc(1, sizeof(*e));
	int ret;

	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->ae.pid = x->pid;
	e->ae.gen = x->gen;
	e->ae.kind = k;
	e->ae.addr = addr;
	e->run_epoch = e->sure_epoch = NO_EPOCH;	/* t_first 0: not read in epochs */
	ret = rb_obj_decode(x, k, addr, e);
	x->c->st.reads++;
	if (ret == -EAGAIN || ret == -ENOMEM) {	/* not the object's fault */
		entry_free(&e->ae);
		*err = ret;
		return NULL;
	}
	if (ret) {
		free(e->name);
		free(e->path);
		e->name = e->path = NULL;
		rv_lines_free(&e->lines);
	}
	e->failed = ret;
	e->checked_ns = x->now;
	return e;
}

/*
 * Whether @e still describes the object at its address: its header, and
 * an iseq's label and path strings (a GC since @e was read may have freed
 * them and put other strings at their addresses). 0, -ESTALE, or a read's
 * error.
 */
static int recheck(struct ctx *x, struct entry *e)
{
	uint64_t print[NPRINT] = { 0 };
	uint8_t a[BODY_MAX], b[DEF_HDR];
	char *label, *path;
	int err;

	switch ((enum kind)e->ae.kind) {
	case K_ISEQ:
		err = rb_iseq_header(x, e->ae.addr, a, print);
		break;
	case K_ME:
		err = rb_me_header(x, e->ae.addr, a, b, print);
		break;
	default:
		return -ESTALE;	/* a class: read it again */
	}
	if (err)
		return err;
	if (memcmp(print, e->print, sizeof(print)))
		return -ESTALE;
	if (e->ae.kind != K_ISEQ)
		return 0;
	if ((err = rb_iseq_strings(x, a, &label, &path)))
		return err == -EINVAL ? -ESTALE : err;
	err = strcmp(label, e->name) || strcmp(path, e->path) ? -ESTALE : 0;
	free(label);
	free(path);
	return err;
}

/* The process's GC count now (*@fresh: read again, not the sample's). */
static int gc_count_now(struct ctx *x, bool fresh, uint64_t *out)
{
	struct rb_iseq_cache *c = x->c;
	uint64_t v;
	int err;

	if (!fresh && c->gc_pid == x->pid && c->gc_gen == x->gen && c->gc_now == x->now) {
		*out = c->gc_count;
		return 0;
	}
	if ((err = rv_read(&x->rv, x->addrs->gc_count, &v, sizeof(v))))
		return err;
	c->gc_pid = x->pid;
	c->gc_gen = x->gen;
	c->gc_now = x->now;
	c->gc_count = v;
	*out = v;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Whether entry @e names the object the sample (taken at x->now, in GC
 * epoch x->epoch) saw at its address (the GC facts: bpf/unwind_ruby.h):
 *  - @e is sure from a time at or before the sample until cycle
 *    sure_epoch + 1 sweeps: the sample is of epoch sure_epoch, or of the
 *    next one while it marked;
 *  - or reads in the sample's epoch found @e's content before and after
 *    it: a slot is freed at most once in an epoch (a cycle sweeps each
 *    page once, and what is allocated after is not freed by that sweep),
 *    so the sample saw that content or an object read the same;
 *  - or, for code that is not eval'd, reads in any epochs found @e's
 *    content before and after it (an object A, then B, then A again with
 *    the same header and strings at that address takes code compiled
 *    anew and again at the same memory: eval'd code, which does).
 */
static bool epoch_covers(const struct ctx *x, const struct entry *e)
{
	if (!e->t_first)
		return false;
	if (e->sure_epoch != NO_EPOCH && x->now >= e->sure_from &&
	    (x->epoch == e->sure_epoch || (x->marking && x->epoch == e->sure_epoch + 1)))
		return true;
	if (x->now > e->t_hi)
		return false;
	return (e->run_epoch != NO_EPOCH && e->run_epoch == x->epoch && e->t_lo <= x->now) ||
	       (!e->eval && e->t_first <= x->now);
}

/* One read of an object: when it ran, in which GC epoch. */
struct read_span {
	uint64_t start, end;	/* CLOCK_MONOTONIC ns */
	uint64_t epoch;		/* the GC count, the same before and after;
				 * NO_EPOCH: a GC started during the read */
};

/*
 * Read (decode, or re-check @e in full) between two reads of the GC
 * count, into @span. 0, or a negative errno (a decoding failure is the
 * new entry's: failed).
 */
static int read_in_epoch(struct ctx *x, enum kind k, uint64_t addr, struct entry **e,
			 struct read_span *span)
{
	uint64_t before, after;
	int ret = 0;

	if ((ret = gc_count_now(x, true, &before)))
		return ret;
	span->start = mono_ns();
	if (*e)
		ret = recheck(x, *e);
	else if (!(*e = fresh_entry(x, k, addr, &ret)))
		return ret;
	if (ret)
		return ret;
	span->end = mono_ns();
	if ((ret = gc_count_now(x, true, &after)))
		return ret;
	span->epoch = after == before ? before : NO_EPOCH;
	return 0;
}

/*
 * @e's content was found by the read @span (which started after the
 * sample): a read before the sample is one that ended before it, after
 * it one that started after it. Extends @e's reads, its run in one
 * epoch, and if the sample was quiet and of the read's epoch, the object
 * it saw is @e's until the next cycle sweeps.
 */
static void note_read(const struct ctx *x, struct entry *e, const struct read_span *span)
{
	if (!e->t_first)
		e->t_first = span->end;
	if (span->epoch == NO_EPOCH || e->run_epoch != span->epoch) {
		e->run_epoch = span->epoch;
		e->t_lo = span->end;
	}
	if (span->start > e->t_hi)
		e->t_hi = span->start;
	if (!x->quiet || span->epoch != x->epoch)
		return;
	if (e->sure_epoch != span->epoch || x->now < e->sure_from)
		e->sure_from = x->now;
	e->sure_epoch = span->epoch;
}

/*
 * get() of an iseq or method entry under GC epochs (bpf/unwind_ruby.h):
 * the entry is given only when epoch_covers() the sample, after a read
 * now if one can tell (the process is still in the sample's epoch, and
 * the sample was quiet or @e was read before it in that epoch; or @e is
 * not eval'd code and was read before the sample); else
 * -ESTALE (the object may have been freed and its memory reused by
 * another since the sample). A read during which a GC started is not
 * trusted for its epoch. Eval'd code is decoded anew in each
 * epoch (compiled anew on every call, it gets the same memory, pointers
 * and all, for different code).
 */
static struct entry *get_epoch(struct ctx *x, enum kind k, uint64_t addr,
			       struct entry *e, int *err)
{
	struct rb_iseq_cache *c = x->c;
	struct entry *fresh = NULL;
	struct read_span span;
	bool can_tell;
	int ret;

	if (e && epoch_covers(x, e))
		goto hit;
	if (e && (e->failed || !e->t_first))
		goto replace;
	can_tell = (x->epoch == x->epoch_now &&
		    (x->quiet || (e && e->run_epoch != NO_EPOCH && e->run_epoch == x->epoch &&
				  e->t_lo <= x->now))) ||
		   (e && !e->eval && e->t_first <= x->now);
	if (e && !can_tell) {
		*err = -ESTALE;	/* nothing read now could tell what the sample saw */
		return NULL;
	}
	if (e && !(e->eval && e->run_epoch != x->epoch)) {
		ret = read_in_epoch(x, k, addr, &e, &span);
		if (!ret) {
			c->st.rechecks++;
			e->checked_ns = x->now;
			note_read(x, e, &span);
			if (epoch_covers(x, e))
				goto hit;
			*err = -ESTALE;
			return NULL;
		}
		if (ret != -ESTALE) {
			*err = ret;
			return NULL;
		}
	}
replace:
	if (e)
		addr_cache_remove(c->lru, &e->ae);
	ret = read_in_epoch(x, k, addr, &fresh, &span);
	if (ret) {
		if (fresh)
			entry_free(&fresh->ae);
		*err = ret;
		return NULL;
	}
	e = fresh;
	note_read(x, e, &span);
	addr_cache_insert(c->lru, &e->ae, entry_bytes(e));
	if (!epoch_covers(x, e)) {
		*err = -ESTALE;		/* the sample's object is unknown */
		return NULL;
	}
	if (e->failed) {
		*err = e->failed;
		return NULL;
	}
	return e;
hit:
	c->st.hits++;
	addr_cache_touch(c->lru, &e->ae);
	if (e->failed) {
		*err = e->failed;
		return NULL;
	}
	return e;
}

/*
 * The entry of object @addr of kind @k, from the cache or decoded now;
 * NULL and *@err on failure. The entry is the cache's, valid until the
 * next rb_obj_get() (which may evict it).
 */
struct entry *rb_obj_get(struct ctx *x, enum kind k, uint64_t addr, int *err)
{
	struct rb_iseq_cache *c = x->c;
	struct entry *e = (struct entry *)addr_cache_lookup(c->lru, x->pid, x->gen, k, addr);
	int ret;

	if (x->epoch_lost && (k == K_ISEQ || k == K_ME)) {
		*err = -ESTALE;	/* which object the sample saw cannot be known */
		return NULL;
	}
	if (x->epoch != NO_EPOCH && (k == K_ISEQ || k == K_ME))
		return get_epoch(x, k, addr, e, err);
	if (e && ((k == K_ID && !e->failed) ||
		  x->now - e->checked_ns < RB_ISEQ_RECHECK_NS)) {
		c->st.hits++;
		addr_cache_touch(c->lru, &e->ae);
		if (e->failed) {
			*err = e->failed;
			return NULL;
		}
		return e;
	}
	if (e && !e->failed) {
		ret = recheck(x, e);
		if (!ret || ret == -ETIMEDOUT || ret == -EAGAIN) {
			/* unchanged (or unreadable now: keep what was read) */
			c->st.rechecks += !ret;
			if (!ret)
				e->checked_ns = x->now;
			addr_cache_touch(c->lru, &e->ae);
			return e;
		}
	}
	if (e)
		addr_cache_remove(c->lru, &e->ae);
	e = fresh_entry(x, k, addr, err);
	if (!e)
		return NULL;
	ret = e->failed;
	addr_cache_insert(c->lru, &e->ae, entry_bytes(e));
	if (ret) {
		*err = ret;
		return NULL;
	}
	return e;
}

/*
 * A naming call's context. @w1 is the frame's second word: the sample's
 * GC epoch (low 14 bits) when PROFD_RB_EPOCH is set, made whole from the
 * process's count now (samples are seconds old at most, the count's low
 * bits wrap after 16384 GCs), and whether a GC marked or ran then. A
 * process with a GC count whose sample has no epoch, or whose count cannot
 * be read now, has x->epoch_lost set: nothing can be named for it.
 */
void rb_ctx_init(struct ctx *x, struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		 const struct rb_offsets *off, const struct rb_proc_addrs *addrs,
		 uint64_t w1, uint64_t now, size_t *budget)
{
	uint64_t count;

	*x = (struct ctx){
		.c = c, .pid = pid, .gen = gen, .now = now, .off = off, .addrs = addrs,
		.epoch = NO_EPOCH,
		.rv = { .remote = c->remote, .pid = pid, .budget = budget,
			.timeouts = &c->st.timeouts },
	};
	if (!addrs || !addrs->gc_count)
		return;		/* no GC epochs: names trusted for RB_ISEQ_RECHECK_NS */
	if (!(w1 & PROFD_RB_EPOCH) || gc_count_now(x, false, &count)) {
		x->epoch_lost = true;
		return;
	}
	x->epoch_now = count;
	x->epoch = count - ((count - (w1 >> PROFD_RB_EPOCH_SHIFT)) & PROFD_RB_EPOCH_MASK);
	x->quiet = w1 & PROFD_RB_GC_QUIET;
	x->marking = w1 & PROFD_RB_GC_MARKING;
}
