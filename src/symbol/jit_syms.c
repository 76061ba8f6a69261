// SPDX-License-Identifier: GPL-2.0
/*
 * jit_syms.c - one process's JIT symbol table (see jit_syms.h).
 *
 * Owns: the entries (append-only while the process lives), their
 * strings in an arena that never moves, the address index by size class,
 * lookups by address and time (the one entry valid in a time window),
 * and the byte budget shared by all tables. Reading the files is
 * jit_read.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "symbol/jit_syms_internal.h"

COUNTER_DEFINE(jit_entries_dropped, COUNTER_STAT,
	       "JIT code entries (perf map lines, jitdump loads) not kept: over "
	       "the per-process or total JIT symbol budget; their code stays unnamed");

static uint64_t total_bytes;		/* atomic: every table's heap */
static uint64_t budget = JIT_BUDGET_DEFAULT;	/* atomic */

void jit_syms_set_budget(uint64_t bytes)
{
	__atomic_store_n(&budget, bytes ? bytes : JIT_BUDGET_DEFAULT, __ATOMIC_RELAXED);
}

uint64_t jit_syms_total_bytes(void)
{
	return __atomic_load_n(&total_bytes, __ATOMIC_RELAXED);
}

uint64_t jit_syms_bytes(const struct jit_syms *js)
{
	return js ? __atomic_load_n(&js->bytes, __ATOMIC_RELAXED) : 0;
}

static void bytes_add(struct jit_syms *js, int64_t n)
{
	__atomic_add_fetch(&js->bytes, (uint64_t)n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&total_bytes, (uint64_t)n, __ATOMIC_RELAXED);
}

/* Whether @n more bytes fit the process's share and the total. */
static bool fits(const struct jit_syms *js, uint64_t n)
{
	uint64_t b = __atomic_load_n(&budget, __ATOMIC_RELAXED);

	return js->n < JIT_PROC_ENTRIES_MAX &&
	       __atomic_load_n(&js->bytes, __ATOMIC_RELAXED) + n <= b / 4 &&
	       jit_syms_total_bytes() + n <= b;
}

struct jit_syms *jit_syms_new(pid_t pid)
{
	struct jit_syms *js = calloc(1, sizeof(*js));

	if (!js)
		return NULL;
	js->refcnt = 1;
	js->pid = pid;
	js->behind_from = UINT64_MAX;
	pthread_mutex_init(&js->lock, NULL);
	bytes_add(js, sizeof(*js));
	return js;
}

struct jit_syms *jit_syms_get(struct jit_syms *js)
{
	if (js)
		__atomic_add_fetch(&js->refcnt, 1, __ATOMIC_RELAXED);
	return js;
}

void jit_syms_put(struct jit_syms *js)
{
	struct jit_arena_chunk *c, *next;

	if (!js || __atomic_sub_fetch(&js->refcnt, 1, __ATOMIC_ACQ_REL))
		return;
	__atomic_sub_fetch(&total_bytes, js->bytes, __ATOMIC_RELAXED);
	for (c = js->arena; c; c = next) {
		next = c->next;
		free(c);
	}
	for (int i = 0; i < JIT_FILES; i++) {
		struct jit_file *f = &js->files[i];

		free(f->path);
		for (uint32_t k = 0; k < f->npending; k++) {
			free(f->pending[k].lines);
			free(f->pending[k].files);
		}
	}
	for (int c2 = 0; c2 < JIT_CLASSES; c2++)
		free(js->ord[c2]);
	free(js->e);
	pthread_mutex_destroy(&js->lock);
	free(js);
}

bool jit_syms_found(const struct jit_syms *js)
{
	return js && __atomic_load_n(&js->found, __ATOMIC_ACQUIRE);
}

uint64_t jit_syms_read_ns(const struct jit_syms *js)
{
	return js ? __atomic_load_n(&js->read_ns, __ATOMIC_ACQUIRE) : 0;
}

/* @len bytes of the arena (8-byte aligned), NULL on OOM. Lock held. */
static void *arena_alloc(struct jit_syms *js, size_t len)
{
	struct jit_arena_chunk *c = js->arena;

	len = (len + 7) & ~(size_t)7;
	if (!c || c->cap - c->used < len) {
		size_t cap = len > 60000 ? len : 65536 - sizeof(*c);

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = js->arena;
		c->used = 0;
		c->cap = cap;
		js->arena = c;
		bytes_add(js, (int64_t)(sizeof(*c) + cap));
	}
	c->used += len;
	return c->data + c->used - len;
}

static const char *arena_str(struct jit_syms *js, const char *s, size_t max)
{
	size_t len = strnlen(s, max);
	char *d = arena_alloc(js, len + 1);

	if (!d)
		return NULL;
	memcpy(d, s, len);
	d[len] = 0;
	return d;
}

static int size_class(uint64_t size)
{
	int c = 0;

	while (c < JIT_CLASSES - 1 && size > JIT_CLASS_MAX(c))
		c++;
	return c;
}

/* Grow array *@p of *@cap elements of @elem bytes to hold @need. */
static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem,
		struct jit_syms *js)
{
	uint32_t ncap = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*p, (size_t)ncap * elem);
	if (!n)
		return -ENOMEM;
	bytes_add(js, (int64_t)((size_t)(ncap - *cap) * elem));
	*p = n;
	*cap = ncap;
	return 0;
}

int jit_syms_add(struct jit_syms *js, uint64_t start, uint64_t size,
		 uint64_t from, uint64_t sure, const char *name, uint64_t code_index,
		 const struct jit_line *lines, uint32_t nlines)
{
	uint64_t need = sizeof(struct jit_entry) + 2 * sizeof(uint32_t) +
			(name ? strnlen(name, JIT_NAME_MAX) + 8 : 0) +
			(uint64_t)nlines * (sizeof(*lines) + 16);
	struct jit_entry *e;
	struct jit_line *l = NULL;
	int c = size_class(size);

	if (js->full || !fits(js, need)) {
		/* the dropped code's place joins the hull where, from the
		 * first drop's time on, nothing is named */
		if (!js->full || from < js->full_from)
			js->full_from = from;
		if (!js->full || start < js->hull_lo)
			js->hull_lo = start;
		if (!js->full || start + size > js->hull_hi)
			js->hull_hi = start + size < start ? UINT64_MAX : start + size;
		__atomic_store_n(&js->full, true, __ATOMIC_RELAXED);
		counter_inc(&counter_jit_entries_dropped);
		return -ENOSPC;
	}
	if (grow((void **)&js->e, &js->cap, js->n + 1, sizeof(*js->e), js) ||
	    grow((void **)&js->ord[c], &js->capord[c], js->nord[c] + 1,
		 sizeof(uint32_t), js))
		return -ENOMEM;
	if (nlines) {
		const char *prev_src = NULL, *prev_dst = NULL;

		l = arena_alloc(js, (size_t)nlines * sizeof(*l));
		if (!l)
			return -ENOMEM;
		for (uint32_t i = 0; i < nlines; i++) {
			l[i] = lines[i];
			/* consecutive lines of one file share its copy */
			if (lines[i].file && lines[i].file == prev_src) {
				l[i].file = prev_dst;
			} else if (lines[i].file) {
				prev_src = lines[i].file;
				l[i].file = prev_dst = arena_str(js, lines[i].file,
								  JIT_NAME_MAX);
			}
		}
	}
	e = &js->e[js->n];
	*e = (struct jit_entry){
		.start = start, .size = size, .from = from,
		.sure = sure > from ? sure : from, .seq = js->seq++,
		.nlines = l ? nlines : 0, .lines = l, .code_index = code_index,
	};
	if (name) {
		e->name = arena_str(js, name, JIT_NAME_MAX);
		if (!e->name)
			return -ENOMEM;
	}
	js->ord[c][js->nord[c]++] = js->n++;
	js->sorted[c] = false;
	return 0;
}

static const struct jit_entry *sort_base;

static int by_start(const void *a, const void *b)
{
	const struct jit_entry *x = &sort_base[*(const uint32_t *)a];
	const struct jit_entry *y = &sort_base[*(const uint32_t *)b];

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

void jit_syms_index(struct jit_syms *js)
{
	for (int c = 0; c < JIT_CLASSES; c++) {
		if (js->sorted[c])
			continue;
		pthread_mutex_lock(&sort_lock);	/* qsort has no context argument */
		sort_base = js->e;
		qsort(js->ord[c], js->nord[c], sizeof(uint32_t), by_start);
		pthread_mutex_unlock(&sort_lock);
		js->sorted[c] = true;
	}
}

const struct jit_entry *jit_syms_find_load(struct jit_syms *js, uint64_t start,
					   uint64_t code_index)
{
	for (uint32_t i = js->n; i-- > 0;)
		if (js->e[i].start == start && js->e[i].name &&
		    js->e[i].code_index == code_index)
			return &js->e[i];
	return NULL;
}

/* First index of sorted class @c whose start is > @addr. */
static uint32_t upper(const struct jit_syms *js, int c, uint64_t addr)
{
	uint32_t lo = 0, hi = js->nord[c];

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (js->e[js->ord[c][mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int by_time(const void *a, const void *b)
{
	const struct jit_entry *x = *(const struct jit_entry *const *)a;
	const struct jit_entry *y = *(const struct jit_entry *const *)b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The source line of @addr in @e, into @out (none before its first line). */
static void entry_line(const struct jit_entry *e, uint64_t addr, struct jit_frame *out)
{
	uint32_t lo = 0, hi = e->nlines;

	out->file = NULL;
	out->line = 0;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (e->lines[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		out->file = e->lines[lo - 1].file;
		out->line = e->lines[lo - 1].line;
	}
}

/*
 * The entries holding @addr, into @cand (JIT_LOOKUP_CANDS); -EAGAIN when
 * there are more, or the index is too crowded to tell. Lock held.
 */
static int candidates(const struct jit_syms *js, uint64_t addr,
		      const struct jit_entry **cand, uint32_t *ncand)
{
	uint32_t visits = 0, n = 0;

	for (int c = 0; c < JIT_CLASSES; c++) {
		for (uint32_t i = upper(js, c, addr); i-- > 0;) {
			const struct jit_entry *e = &js->e[js->ord[c][i]];

			if (addr - e->start >= JIT_CLASS_MAX(c))
				break;	/* no entry of this class reaches @addr */
			if (++visits > JIT_LOOKUP_VISITS)
				return -EAGAIN;
			if (addr - e->start >= e->size)
				continue;
			if (n == JIT_LOOKUP_CANDS)
				return -EAGAIN;
			cand[n++] = e;
		}
	}
	*ncand = n;
	return 0;
}

int jit_syms_lookup(struct jit_syms *js, uint64_t addr, uint64_t lo_ns,
		    uint64_t hi_ns, struct jit_frame *out)
{
	const struct jit_entry *cand[JIT_LOOKUP_CANDS], *hit = NULL;
	uint32_t n = 0, nhit = 0;
	bool same_start = true;
	int ret;

	if (!js)
		return -ENOENT;
	pthread_mutex_lock(&js->lock);
	ret = candidates(js, addr, cand, &n);
	if (ret)
		goto out;
	qsort(cand, n, sizeof(*cand), by_time);
	/*
	 * Past the first entry dropped for the budget, code not kept may
	 * hold any address in the dropped entries' hull: nothing there is
	 * named (never by what held it before). The files are still parsed
	 * (not kept) to learn the hull. And while a file is parsed only up
	 * to a point, its rest may hold any address from when it may have
	 * been written.
	 */
	if ((js->full && hi_ns > js->full_from && addr >= js->hull_lo && addr < js->hull_hi) ||
	    hi_ns > js->behind_from) {
		ret = -ENOENT;
		goto out;
	}
	/* cand[i] holds @addr from its from until the next one surely holds */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t until = i + 1 < n ? cand[i + 1]->sure : UINT64_MAX;

		if (cand[i]->from >= hi_ns || until <= lo_ns || until <= cand[i]->from)
			continue;
		if (hit && (!hit->name || !cand[i]->name ||
			    strcmp(hit->name, cand[i]->name))) {
			ret = -EAGAIN;	/* two pieces of code in the window */
			goto out;
		}
		if (hit && hit->start != cand[i]->start)
			same_start = false;
		hit = cand[i];	/* the same name again: the latest's lines */
		nhit++;
	}
	if (!hit) {
		ret = -ENOENT;
	} else if (!hit->name) {
		ret = -EINVAL;
	} else {
		out->name = hit->name;
		out->start = hit->start;
		if (same_start)
			entry_line(hit, addr, out);
		else
			out->file = NULL, out->line = 0;
		ret = 0;
	}
out:
	pthread_mutex_unlock(&js->lock);
	return ret;
}
