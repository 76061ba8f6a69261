/* SPDX-License-Identifier: GPL-2.0 */
/*
 * addr_cache.h - a bounded LRU of objects read out of live processes,
 * keyed by (pid, process generation, kind, address).
 *
 * Owns: the hash table, the least-recently-used list and the count and
 * byte bounds shared by the runtimes' object caches (CPython code objects,
 * src/python/code.c; CRuby iseqs, method entries, IDs and class names,
 * src/ruby/iseq.c). The cache holds entries its user allocates: a
 * struct addr_entry embedded in the user's own entry (container_of), freed
 * through the free hook given at creation. What an entry holds, how it is
 * re-checked against its process and how failures are cached stay with
 * the user; this file only keys, orders and bounds them.
 *
 * Threads: one caller at a time (the reader thread).
 */
#ifndef PROFD_RUNTIME_ADDR_CACHE_H
#define PROFD_RUNTIME_ADDR_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The cache's part of an entry: the key and the links. */
struct addr_entry {
	pid_t pid;
	uint32_t kind;		/* the user's: 0 if it keeps one kind */
	uint64_t gen, addr;
	size_t bytes;		/* heap the entry holds (set by addr_cache_insert) */
	struct addr_entry *hnext;	/* hash chain */
	struct addr_entry *prev, *next;	/* LRU list, most recent first */
};

struct addr_cache;

struct addr_cache_counts {
	uint64_t entries, bytes;	/* now */
	uint64_t evictions;		/* entries dropped for room */
};

/*
 * addr_cache_new - an empty cache of at most @max_entries entries and
 * @max_bytes of heap (as addr_cache_insert() is told), whose entries are
 * freed with @free_entry (called with the entry already unlinked). NULL
 * on OOM.
 */
struct addr_cache *addr_cache_new(size_t max_entries, size_t max_bytes,
				  void (*free_entry)(struct addr_entry *e));

/* addr_cache_free - free every entry (through the hook) and the cache. NULL is fine. */
void addr_cache_free(struct addr_cache *c);

/*
 * addr_cache_lookup - the entry of (@pid, @gen, @kind, @addr), or NULL.
 * Does not touch its LRU position (addr_cache_touch()).
 */
struct addr_entry *addr_cache_lookup(struct addr_cache *c, pid_t pid,
				     uint64_t gen, uint32_t kind, uint64_t addr);

/* addr_cache_touch - make @e the most recently used. */
void addr_cache_touch(struct addr_cache *c, struct addr_entry *e);

/*
 * addr_cache_insert - add @e (its key set; owned by the cache from now
 * on), holding @bytes of heap in all, as the most recently used, then
 * evict least recently used entries (never @e) until the bounds hold.
 * The key must not be in the cache already.
 */
void addr_cache_insert(struct addr_cache *c, struct addr_entry *e, size_t bytes);

/* addr_cache_remove - unlink @e and free it through the hook. */
void addr_cache_remove(struct addr_cache *c, struct addr_entry *e);

/*
 * addr_cache_forget - remove the entries of the processes whose
 * generation is one of @gens (@n of them, sorted ascending): they exited.
 * One walk of the cache.
 */
void addr_cache_forget(struct addr_cache *c, const uint64_t *gens, size_t n);

/* addr_cache_counts - entries and bytes held now, evictions so far. */
void addr_cache_counts(const struct addr_cache *c, struct addr_cache_counts *out);

#endif /* PROFD_RUNTIME_ADDR_CACHE_H */
