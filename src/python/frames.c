// SPDX-License-Identifier: GPL-2.0
/*
 * frames.c - interned Python frames (see frames.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "python/frames.h"
#include "util/heap_cost.h"
#include "util/hash.h"

COUNTER_DEFINE(python_frames_full, COUNTER_PARTIAL,
	       "Python frames not named: the frame table was full");

struct entry {
	struct py_frame f;
	uint64_t hash;
};

struct py_frames {
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
static uint64_t held(const struct py_frames *t)
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

static int grow_slots(struct py_frames *t)
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

static uint32_t add(struct py_frames *t, const char *fn, const char *file,
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
	if (t->n >= PY_FRAMES_MAX || held(t) + need > t->max_bytes)
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

struct py_frames *py_frames_new(uint64_t max_bytes)
{
	static const char *const fixed[] = {
		[PY_FRAME_UNREADABLE] = "[python: unreadable frame]",
		[PY_FRAME_BAD_CODE] = "[python: unknown code object]",
		[PY_FRAME_TRUNCATED] = "[python: truncated]",
		[PY_FRAME_TABLE_FULL] = "[python: frame table full]",
	};
	struct py_frames *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->max_bytes = max_bytes ? max_bytes : PY_FRAMES_MAX_BYTES;
	t->n = 1;	/* id 0 is never used */
	t->cap = 0;
	t->v = calloc(256, sizeof(*t->v));
	if (!t->v) {
		free(t);
		return NULL;
	}
	t->cap = 256;
	for (uint32_t id = 1; id < PY_FRAME_FIRST_FREE; id++) {
		if (add(t, fixed[id], "", 0, 0,
			frame_hash(fixed[id], "", 0, 0)) != id) {
			py_frames_free(t);
			return NULL;
		}
	}
	return t;
}

void py_frames_free(struct py_frames *t)
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

uint32_t py_frames_intern(struct py_frames *t, const char *function,
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
		counter_inc(&counter_python_frames_full);
		id = PY_FRAME_TABLE_FULL;
	}
	pthread_mutex_unlock(&t->lock);
	return id;
}

int py_frames_get(struct py_frames *t, uint32_t id, struct py_frame *out)
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

bool py_frames_empty(struct py_frames *t)
{
	bool empty;

	pthread_mutex_lock(&t->lock);
	empty = t->n <= PY_FRAME_FIRST_FREE;
	pthread_mutex_unlock(&t->lock);
	return empty;
}

void py_frames_stats(struct py_frames *t, uint64_t *frames, uint64_t *full)
{
	pthread_mutex_lock(&t->lock);
	*frames = t->n - PY_FRAME_FIRST_FREE;
	*full = t->full;
	pthread_mutex_unlock(&t->lock);
}

uint64_t py_frames_bytes(struct py_frames *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = held(t);
	pthread_mutex_unlock(&t->lock);
	return n;
}

bool py_frames_half_full(struct py_frames *t)
{
	bool half;

	pthread_mutex_lock(&t->lock);
	half = t->n >= PY_FRAMES_MAX / 2 || held(t) >= t->max_bytes / 2;
	pthread_mutex_unlock(&t->lock);
	return half;
}
