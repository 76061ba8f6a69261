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
	e->epoch_lo = NO_EPOCH;
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
 * Whether @e still describes the object at its address (one or two
 * reads); @deep: an iseq's label and path strings are read and compared
 * too (a GC since @e was last read may have freed them and put other
 * strings at their addresses).
 */
static int recheck(struct ctx *x, struct entry *e, bool deep)
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
	if (!deep || e->ae.kind != K_ISEQ || !strcmp(e->name, RB_EVAL_UNNAMED))
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
 * Whether entry @e names the object the sample (taken at x->now) saw at
 * its address (bpf/unwind_ruby.h): the same content was read before and
 * after the sample (no object A -> B -> A with every field equal in
 * between), or the sample was quiet and a read after it ended in its GC
 * epoch (the object then lives until the next cycle sweeps). A read after
 * a sample taken while a GC was marking proves nothing: a frame that
 * returns before its iseq is marked lets the iseq be freed, and its
 * memory reused, in that cycle.
 */
static bool epoch_covers(const struct ctx *x, const struct entry *e)
{
	if (e->epoch_lo == NO_EPOCH)
		return false;
	if (e->t_lo <= x->now && x->now <= e->t_hi)
		return true;
	return x->quiet && ((x->now <= e->t_lo && e->epoch_lo == x->epoch) ||
			    (x->now <= e->t_hi && e->epoch_hi == x->epoch));
}

/*
 * Read (decode or re-check @e) between two reads of the GC count: the
 * count and the time taken before it in *@epoch and *@t; -EAGAIN when a
 * GC started during the read.
 */
static int read_in_epoch(struct ctx *x, enum kind k, uint64_t addr, struct entry **e,
			 uint64_t *epoch, uint64_t *t)
{
	uint64_t after;
	int ret = 0;

	if ((ret = gc_count_now(x, true, epoch)))
		return ret;
	*t = mono_ns();
	if (*e)
		ret = recheck(x, *e, *epoch != (*e)->epoch_hi);
	else if (!(*e = fresh_entry(x, k, addr, &ret)))
		return ret;	/* (a decoding failure is the entry's: failed) */
	if (ret)
		return ret;
	if ((ret = gc_count_now(x, true, &after)))
		return ret;
	return after == *epoch ? 0 : -EAGAIN;
}

/*
 * rb_obj_get() of an iseq or method entry under GC epochs (bpf/unwind_ruby.h):
 * the entry is given only when epoch_covers() the sample, after a read
 * now if one can tell; else -ESTALE (the object may have been freed and
 * its memory reused by another since the sample). A read during which a
 * GC started is not trusted (-EAGAIN, not cached).
 */
static struct entry *get_epoch(struct ctx *x, enum kind k, uint64_t addr,
			       struct entry *e, int *err)
{
	struct rb_iseq_cache *c = x->c;
	struct entry *fresh = NULL;
	uint64_t epoch, t;
	int ret;

	if (e && epoch_covers(x, e))
		goto hit;
	if (e && (e->failed || e->epoch_lo == NO_EPOCH || (!x->quiet && x->now < e->t_lo))) {
		if (e->failed || e->epoch_lo == NO_EPOCH)
			goto replace;
		*err = -ESTALE;	/* nothing read now could tell what the sample saw */
		return NULL;
	}
	if (e) {
		ret = read_in_epoch(x, k, addr, &e, &epoch, &t);
		if (!ret) {
			c->st.rechecks++;
			e->t_hi = t;	/* unchanged since t_lo */
			e->epoch_hi = epoch;
			e->checked_ns = x->now;
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
	ret = read_in_epoch(x, k, addr, &fresh, &epoch, &t);
	if (ret) {
		if (fresh)
			entry_free(&fresh->ae);
		*err = ret;
		return NULL;
	}
	e = fresh;
	e->epoch_lo = e->epoch_hi = epoch;
	e->t_lo = e->t_hi = t;
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
		ret = recheck(x, e, true);
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
 * GC epoch (low 15 bits) when PROFD_RB_EPOCH is set, made whole from the
 * process's count now (samples are seconds old at most, the count's low
 * bits wrap after 32768 GCs), and whether the sample was quiet.
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
	if ((w1 & PROFD_RB_EPOCH) && addrs && addrs->gc_count &&
	    !gc_count_now(x, false, &count)) {
		x->epoch = count - ((count - (w1 >> PROFD_RB_EPOCH_SHIFT)) & PROFD_RB_EPOCH_MASK);
		x->quiet = w1 & PROFD_RB_GC_QUIET;
	}
}
