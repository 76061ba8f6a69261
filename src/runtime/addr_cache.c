// SPDX-License-Identifier: GPL-2.0
/*
 * addr_cache.c - the bounded LRU of objects read out of live processes
 * (see addr_cache.h).
 */
#include <stdbool.h>
#include <stdlib.h>

#include "runtime/addr_cache.h"

struct addr_cache {
	struct addr_entry **buckets;
	size_t nbuckets;
	struct addr_entry *head, *tail;
	size_t max_entries, max_bytes;
	void (*free_entry)(struct addr_entry *e);
	struct addr_cache_counts n;
};

struct addr_cache *addr_cache_new(size_t max_entries, size_t max_bytes,
				  void (*free_entry)(struct addr_entry *e))
{
	struct addr_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->nbuckets = 4096;
	while (c->nbuckets < max_entries)
		c->nbuckets *= 2;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	c->max_entries = max_entries;
	c->max_bytes = max_bytes;
	c->free_entry = free_entry;
	return c;
}

static size_t bucket(const struct addr_cache *c, pid_t pid, uint64_t gen,
		     uint32_t kind, uint64_t addr)
{
	uint64_t h = (addr >> 4) ^ ((uint64_t)pid << 40) ^
		     (gen * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)kind << 58);

	h *= 0xff51afd7ed558ccdULL;
	return (h ^ (h >> 32)) & (c->nbuckets - 1);
}

static void lru_unlink(struct addr_cache *c, struct addr_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct addr_cache *c, struct addr_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

void addr_cache_remove(struct addr_cache *c, struct addr_entry *e)
{
	struct addr_entry **pp = &c->buckets[bucket(c, e->pid, e->gen, e->kind, e->addr)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	lru_unlink(c, e);
	c->n.entries--;
	c->n.bytes -= e->bytes;
	c->free_entry(e);
}

void addr_cache_free(struct addr_cache *c)
{
	if (!c)
		return;
	while (c->head)
		addr_cache_remove(c, c->head);
	free(c->buckets);
	free(c);
}

struct addr_entry *addr_cache_lookup(struct addr_cache *c, pid_t pid,
				     uint64_t gen, uint32_t kind, uint64_t addr)
{
	struct addr_entry *e;

	for (e = c->buckets[bucket(c, pid, gen, kind, addr)]; e; e = e->hnext)
		if (e->addr == addr && e->pid == pid && e->gen == gen &&
		    e->kind == kind)
			return e;
	return NULL;
}

void addr_cache_touch(struct addr_cache *c, struct addr_entry *e)
{
	lru_unlink(c, e);
	lru_push(c, e);
}

void addr_cache_insert(struct addr_cache *c, struct addr_entry *e, size_t bytes)
{
	size_t b = bucket(c, e->pid, e->gen, e->kind, e->addr);

	e->bytes = bytes;
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	lru_push(c, e);
	c->n.entries++;
	c->n.bytes += e->bytes;
	while (c->tail && c->tail != e &&
	       (c->n.entries > c->max_entries || c->n.bytes > c->max_bytes)) {
		addr_cache_remove(c, c->tail);
		c->n.evictions++;
	}
}

static bool gen_in(const uint64_t *gens, size_t n, uint64_t gen)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (gens[mid] == gen)
			return true;
		if (gens[mid] < gen)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void addr_cache_forget(struct addr_cache *c, const uint64_t *gens, size_t n)
{
	struct addr_entry *e = c->head, *next;

	for (; e && n; e = next) {
		next = e->next;
		if (gen_in(gens, n, e->gen))
			addr_cache_remove(c, e);
	}
}

void addr_cache_counts(const struct addr_cache *c, struct addr_cache_counts *out)
{
	*out = c->n;
}
