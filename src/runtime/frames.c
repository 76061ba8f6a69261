// SPDX-License-Identifier: GPL-2.0
/*
 * frames.c - a runtime's interned frames (see frames.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "runtime/frames.h"
#include "util/heap_cost.h"
#include "util/hash.h"

struct entry {
	struct rt_frame f;
	uint64_t hash;
};

struct rt_frames {
	const struct rt_frames_kind *kind;
	pthread_mutex_t lock;
	struct entry *v;	/* by id; v[0] unused */
	uint32_t n, cap;
	uint32_t *slots;	/* open addressing: ids, 0 = empty */
	uint32_t nslots;
	uint64_t bytes;		/* of the strings, with malloc's overhead */
	uint64_t max_bytes;	/* bound on held(): strings, entries, slots */
	uint64_t full;
};

/* Heap a string of @len characters takes. */
static uint64_t str_cost(size_t len)
{
	return heap_cost(len + 1);
}

/* What the table holds on the heap. */
static uint64_t held(const struct rt_frames *t)
{
	return sizeof(*t) + t->bytes + (uint64_t)t->cap * sizeof(*t->v) +
	       (uint64_t)t->nslots * sizeof(*t->slots);
}

static uint64_t frame_hash(const char *fn, const char *file, int line, int first)
{
	uint64_t h = fnv1a(fn, strlen(fn), FNV1A_SEED);

	h = fnv1a(file, strlen(file) + 1, h);
	h ^= (uint64_t)(uint32_t)line << 32 | (uint32_t)first;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static bool same(const struct entry *e, const char *fn, const char *file,
		 int line, int first)
{
	return e->f.line == line && e->f.first_line == first &&
	       !strcmp(e->f.function, fn) && !strcmp(e->f.file, file);
}

static int grow_slots(struct rt_frames *t)
{
	uint32_t n = t->nslots ? t->nslots * 2 : 1024;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint32_t id = 1; id < t->n; id++) {
		uint32_t j = t->v[id].hash & (n - 1);

		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = id;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

static uint32_t add(struct rt_frames *t, const char *fn, const char *file,
		    int line, int first, uint64_t h)
{
	uint64_t need = str_cost(strlen(fn)) + str_cost(strlen(file));
	struct entry *e;
	uint32_t j;

	/* arrays that must grow first double (the old slots are freed) */
	if (t->n == t->cap)
		need += (uint64_t)t->cap * sizeof(*t->v);
	if ((t->n + 1) * 2 > t->nslots)
		need += (uint64_t)(t->nslots ? t->nslots : 1024) * sizeof(*t->slots);
	if (t->n >= RT_FRAMES_MAX || held(t) + need > t->max_bytes)
		return 0;
	if ((t->n + 1) * 2 > t->nslots && grow_slots(t))
		return 0;
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct entry *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return 0;
		t->v = v;
		t->cap = cap;
	}
	e = &t->v[t->n];
	e->f.function = strdup(fn);
	e->f.file = strdup(file);
	if (!e->f.function || !e->f.file) {
		free((char *)e->f.function);
		free((char *)e->f.file);
		return 0;
	}
	t->bytes += str_cost(strlen(fn)) + str_cost(strlen(file));
	e->f.line = line;
	e->f.first_line = first;
	e->hash = h;
	j = h & (t->nslots - 1);
	while (t->slots[j])
		j = (j + 1) & (t->nslots - 1);
	t->slots[j] = t->n;
	return t->n++;
}

struct rt_frames *rt_frames_new(const struct rt_frames_kind *kind, uint64_t max_bytes)
{
	struct rt_frames *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->kind = kind;
	t->max_bytes = max_bytes ? max_bytes : RT_FRAMES_MAX_BYTES;
	t->n = 1;	/* id 0 is never used */
	t->cap = 0;
	t->v = calloc(256, sizeof(*t->v));
	if (!t->v) {
		free(t);
		return NULL;
	}
	t->cap = 256;
	for (uint32_t id = 1; id <= kind->nfixed; id++) {
		const char *name = kind->fixed[id];

		if (add(t, name, "", 0, 0, frame_hash(name, "", 0, 0)) != id) {
			rt_frames_free(t);
			return NULL;
		}
	}
	return t;
}

void rt_frames_free(struct rt_frames *t)
{
	if (!t)
		return;
	for (uint32_t id = 1; id < t->n; id++) {
		free((char *)t->v[id].f.function);
		free((char *)t->v[id].f.file);
	}
	free(t->v);
	free(t->slots);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

uint32_t rt_frames_intern(struct rt_frames *t, const char *function,
			  const char *file, int line, int first_line)
{
	uint64_t h = frame_hash(function, file, line, first_line);
	uint32_t id = 0, j;

	pthread_mutex_lock(&t->lock);
	for (j = h & (t->nslots - 1); t->slots[j]; j = (j + 1) & (t->nslots - 1)) {
		struct entry *e = &t->v[t->slots[j]];

		if (e->hash == h && same(e, function, file, line, first_line)) {
			id = t->slots[j];
			break;
		}
	}
	if (!id)
		id = add(t, function, file, line, first_line, h);
	if (!id) {
		t->full++;
		if (t->kind->full)
			counter_inc(t->kind->full);
		id = t->kind->full_id;
	}
	pthread_mutex_unlock(&t->lock);
	return id;
}

int rt_frames_get(struct rt_frames *t, uint32_t id, struct rt_frame *out)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&t->lock);
	if (id && id < t->n) {
		*out = t->v[id].f;
		ret = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

bool rt_frames_empty(struct rt_frames *t)
{
	bool empty;

	pthread_mutex_lock(&t->lock);
	empty = t->n <= t->kind->nfixed + 1;
	pthread_mutex_unlock(&t->lock);
	return empty;
}

void rt_frames_stats(struct rt_frames *t, uint64_t *frames, uint64_t *full)
{
	pthread_mutex_lock(&t->lock);
	*frames = t->n - (t->kind->nfixed + 1);
	*full = t->full;
	pthread_mutex_unlock(&t->lock);
}

uint64_t rt_frames_bytes(struct rt_frames *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = held(t);
	pthread_mutex_unlock(&t->lock);
	return n;
}

bool rt_frames_half_full(struct rt_frames *t)
{
	bool half;

	pthread_mutex_lock(&t->lock);
	half = t->n >= RT_FRAMES_MAX / 2 || held(t) >= t->max_bytes / 2;
	pthread_mutex_unlock(&t->lock);
	return half;
}

int rt_frame_gens_init(struct rt_frame_gens *g, const struct rt_frames_kind *kind,
		       uint64_t max_bytes)
{
	memset(g, 0, sizeof(*g));
	g->kind = kind;
	g->max_bytes = max_bytes;
	g->t[0] = rt_frames_new(kind, max_bytes);
	g->t[1] = rt_frames_new(kind, max_bytes);
	return g->t[0] && g->t[1] ? 0 : -ENOMEM;
}

void rt_frame_gens_fini(struct rt_frame_gens *g)
{
	rt_frames_free(g->t[0]);
	rt_frames_free(g->t[1]);
	g->t[0] = g->t[1] = NULL;
}

int rt_frame_gens_get(struct rt_frame_gens *g, uint64_t token, struct rt_frame *out)
{
	return rt_frames_get(g->t[(token & RT_FRAME_GEN) ? 1 : 0], (uint32_t)token, out);
}

bool rt_frame_gens_new_interval(struct rt_frame_gens *g)
{
	struct rt_frames *fresh;
	uint64_t n, full;

	g->since_renewal++;
	if (!rt_frames_half_full(g->t[g->cur]) &&
	    (g->since_renewal < RT_FRAMES_RENEW_INTERVALS ||
	     (rt_frames_empty(g->t[g->cur]) && rt_frames_empty(g->t[!g->cur]))))
		return false;
	fresh = rt_frames_new(g->kind, g->max_bytes);
	if (!fresh)
		return false;
	/* the other generation was last used two or more intervals ago */
	rt_frames_stats(g->t[!g->cur], &n, &full);
	__atomic_add_fetch(&g->full_before, full, __ATOMIC_RELAXED);
	rt_frames_free(g->t[!g->cur]);
	g->t[!g->cur] = fresh;
	g->cur = !g->cur;
	g->since_renewal = 0;
	return true;
}

void rt_frame_gens_stats(struct rt_frame_gens *g, uint64_t *frames, uint64_t *full)
{
	rt_frames_stats(g->t[g->cur], frames, full);
	*full += __atomic_load_n(&g->full_before, __ATOMIC_RELAXED);
}

uint64_t rt_frame_gens_bytes(struct rt_frame_gens *g)
{
	return rt_frames_bytes(g->t[0]) + rt_frames_bytes(g->t[1]);
}
