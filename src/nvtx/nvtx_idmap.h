/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvtx_idmap.h - a u64 -> pointer hash table for the NVTX tracer's
 * per-process tables (strings, threads, ranges, domains, ...).
 *
 * Open addressing, linear probing, backward-shift deletion: a lookup is a
 * hash and (mostly) one cache line. Keys are any u64; values are non-NULL
 * pointers (NULL marks an empty slot). The hash is keyed with a random
 * seed (idmap_seed()) so a process that picks its own ids cannot pick
 * colliding ones. Not thread-safe (the tracer's thread only).
 */
#ifndef PROFD_NVTX_IDMAP_H
#define PROFD_NVTX_IDMAP_H

#include <stdint.h>

struct idmap_slot {
	uint64_t key;
	void *val;		/* NULL: empty */
};

struct idmap {
	struct idmap_slot *slots;	/* owned; NULL until the first put */
	uint32_t cap;			/* power of two (0 before the first put) */
	uint32_t n;
};

/* idmap_seed - set the hash seed (once, before any map is used). */
void idmap_seed(uint64_t seed);

/* idmap_get - the value of @key, NULL if none. */
void *idmap_get(const struct idmap *m, uint64_t key);

/*
 * idmap_put - set @key to @val (non-NULL), replacing any value. Returns 0
 * or -ENOMEM (the map is unchanged).
 */
int idmap_put(struct idmap *m, uint64_t key, void *val);

/* idmap_del - remove @key; returns its value, NULL if none. */
void *idmap_del(struct idmap *m, uint64_t key);

/* idmap_free - free the slots (not the values); the map is empty after. */
void idmap_free(struct idmap *m);

/* Iterate: for (i = 0; i < m->cap; i++) if (m->slots[i].val) ... (no changes meanwhile). */

#endif /* PROFD_NVTX_IDMAP_H */
