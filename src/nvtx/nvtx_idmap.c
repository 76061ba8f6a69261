// SPDX-License-Identifier: GPL-2.0
/*
 * nvtx_idmap.c - the u64 -> pointer hash table (see nvtx_idmap.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "nvtx/nvtx_idmap.h"

#define IDMAP_MIN_CAP 16

static uint64_t idmap_key_seed = 0x9e3779b97f4a7c15ULL;

void idmap_seed(uint64_t seed)
{
	idmap_key_seed = seed | 1;
}

/* splitmix64's finalizer of the seeded key: a bijection, so no two keys collide in full. */
static inline uint64_t idmap_hash(uint64_t key)
{
	uint64_t h = key ^ idmap_key_seed;

	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

void *idmap_get(const struct idmap *m, uint64_t key)
{
	uint32_t mask, i;

	if (!m->n)
		return NULL;
	mask = m->cap - 1;
	for (i = idmap_hash(key) & mask; m->slots[i].val; i = (i + 1) & mask)
		if (m->slots[i].key == key)
			return m->slots[i].val;
	return NULL;
}

static void idmap_insert(struct idmap_slot *slots, uint32_t mask, uint64_t key, void *val)
{
	uint32_t i = idmap_hash(key) & mask;

	while (slots[i].val && slots[i].key != key)
		i = (i + 1) & mask;
	slots[i].key = key;
	slots[i].val = val;
}

static int idmap_grow(struct idmap *m)
{
	uint32_t ncap = m->cap ? m->cap * 2 : IDMAP_MIN_CAP;
	struct idmap_slot *ns;

	if (!ncap)
		return -ENOMEM;	/* 2^32 slots: never in practice */
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->slots[i].val)
			idmap_insert(ns, ncap - 1, m->slots[i].key, m->slots[i].val);
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

int idmap_put(struct idmap *m, uint64_t key, void *val)
{
	uint32_t mask, i;

	/* keep the load under 3/4 (counting the possible new key) */
	if ((uint64_t)(m->n + 1) * 4 > (uint64_t)m->cap * 3 && idmap_grow(m))
		return -ENOMEM;
	mask = m->cap - 1;
	for (i = idmap_hash(key) & mask; m->slots[i].val; i = (i + 1) & mask) {
		if (m->slots[i].key == key) {
			m->slots[i].val = val;
			return 0;
		}
	}
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->n++;
	return 0;
}

void *idmap_del(struct idmap *m, uint64_t key)
{
	uint32_t mask, i, j;
	void *val;

	if (!m->n)
		return NULL;
	mask = m->cap - 1;
	for (i = idmap_hash(key) & mask; m->slots[i].val; i = (i + 1) & mask)
		if (m->slots[i].key == key)
			break;
	if (!m->slots[i].val)
		return NULL;
	val = m->slots[i].val;
	m->n--;
	/* backward shift: move later entries of the run into the hole */
	for (j = (i + 1) & mask; m->slots[j].val; j = (j + 1) & mask) {
		uint32_t home = idmap_hash(m->slots[j].key) & mask;

		/* j may move to i unless its home lies cyclically in (i, j] */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		m->slots[i] = m->slots[j];
		i = j;
	}
	m->slots[i].val = NULL;
	return val;
}

void idmap_free(struct idmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->n = 0;
}
