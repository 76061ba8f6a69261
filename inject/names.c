// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * names.c - the library's string table (kernel and SASS function names).
 *
 * Owns: one copy of every distinct name, numbered from 1 in the order
 * first seen, so that batches carry a fixed-size id and the address of the
 * copy. Copies are never freed: user space reads a name it missed (agent
 * attached later) from process memory at name_ptr. At most NAMES_MAX
 * names; beyond, id 0 and a single PROFD_GPU_ERR_NAMES_FULL. An open-
 * addressing hash table (FNV-1a, load <= 1/2) under one mutex.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "probes.h"

#define NAMES_MAX	65536u
#define SLOTS_MIN	1024u

struct slot {
	uint64_t hash;
	const char *str;	/* NULL: empty */
	uint32_t id;
};

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *slots;
static uint32_t nslots;		/* power of two */
static uint32_t count;
static int full_reported;

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static struct slot *lookup(struct slot *tab, uint32_t n, uint64_t h,
			   const char *s)
{
	uint32_t i = (uint32_t)h & (n - 1);

	while (tab[i].str) {
		if (tab[i].hash == h && (!s || strcmp(tab[i].str, s) == 0))
			return &tab[i];
		i = (i + 1) & (n - 1);
	}
	return &tab[i];
}

/* Double the table; -1 on no memory (the table stays as it was). */
static int grow(void)
{
	uint32_t n = nslots ? nslots * 2 : SLOTS_MIN, i;
	struct slot *tab = calloc(n, sizeof(*tab));

	if (!tab)
		return -1;
	for (i = 0; i < nslots; i++) {
		if (slots[i].str)
			*lookup(tab, n, slots[i].hash, NULL) = slots[i];
	}
	free(slots);
	slots = tab;
	nslots = n;
	return 0;
}

uint32_t names_intern(const char *s, const char **stored)
{
	struct slot *sl;
	uint64_t h;
	uint32_t id = 0;
	char *copy;
	int fresh = 0, report_full = 0;

	*stored = NULL;
	if (!s)
		return 0;
	h = fnv1a(s);

	pthread_mutex_lock(&names_lock);
	if (nslots) {
		sl = lookup(slots, nslots, h, s);
		if (sl->str) {
			*stored = sl->str;
			id = sl->id;
			goto out;
		}
	}
	if (count >= NAMES_MAX) {
		report_full = !full_reported;
		full_reported = 1;
		goto out;
	}
	if ((count + 1) * 2 > nslots && grow() < 0)
		goto out;
	copy = strdup(s);
	if (!copy)
		goto out;
	sl = lookup(slots, nslots, h, s);
	sl->hash = h;
	sl->str = copy;
	sl->id = ++count;
	*stored = copy;
	id = sl->id;
	fresh = 1;
out:
	pthread_mutex_unlock(&names_lock);

	if (fresh && PROBE_ON(name))
		FIRE_NAME(id, *stored);
	if (report_full)
		inject_error(PROFD_GPU_ERR_NAMES_FULL, 0, 1,
			     "name table full (%u names): later names get id 0",
			     NAMES_MAX);
	return id;
}
