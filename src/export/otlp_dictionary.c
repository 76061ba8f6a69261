// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_dictionary.c - the ProfilesDictionary of one OTLP profiles request
 * (see otlp_profiles_internal.h).
 *
 * Owns: the arena every message struct of one encoding lives in, and the
 * dictionary's tables. Every table starts with its zero value, so the
 * model's 1-based mapping, function and location ids are the OTLP indices
 * unchanged; strings, attributes and stacks are deduplicated by hash
 * (open-addressing indexes sized up front for the worst case, so they
 * never grow). Mapping: range, offset, filename, and the build id as the
 * attribute "process.executable.build_id.gnu" (semantic conventions);
 * Location: mapping_index, address, one Line (function_index, line) when
 * symbolized; Function: name, system_name, filename. Strings are
 * borrowed from the profile except those repaired into valid UTF-8.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp_profiles_internal.h"
#include "util/hash.h"
#include "util/utf8.h"

/* ---- arena: every message struct of one encoding ---- */



/* Zeroed memory for @n items of @size, freed with the arena; NULL on OOM. */
void *otlp_arena_alloc(struct arena *a, size_t n, size_t size)
{
	size_t bytes, align = sizeof(max_align_t);
	struct chunk *c = a->head;
	void *p;

	if (a->err || (size && n > SIZE_MAX / size / 2))
		goto oom;
	bytes = (n * size + align - 1) & ~(align - 1);
	if (!bytes)
		bytes = align;
	if (!c || c->size - c->used < bytes) {
		size_t csize = bytes > (256u << 10) ? bytes : (256u << 10);

		c = malloc(sizeof(*c) + csize);
		if (!c)
			goto oom;
		c->used = 0;
		c->size = csize;
		c->next = a->head;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += bytes;
	memset(p, 0, bytes);
	return p;
oom:
	a->err = -ENOMEM;
	return NULL;
}

void otlp_arena_free(struct arena *a)
{
	for (struct chunk *c = a->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	a->head = NULL;
}

/* ---- open-addressing index over the dictionary tables ---- */


/* Returns 0 or -ENOMEM; @cap: the most entries the table will hold. */
int otlp_index_init(struct index *ix, uint32_t cap)
{
	uint32_t n = 64;

	while (n < (uint64_t)cap * 2 && n < (1u << 31))
		n *= 2;
	ix->slots = calloc(n, sizeof(*ix->slots));
	ix->hashes = calloc(cap + 1, sizeof(*ix->hashes));
	ix->nslots = n;
	ix->n = 0;
	return ix->slots && ix->hashes ? 0 : -ENOMEM;
}

void otlp_index_free(struct index *ix)
{
	free(ix->slots);
	free(ix->hashes);
}

/* ---- the dictionary's tables ---- */


/*
 * otlp_str_index - the string_table index of @s, adding it if new (repaired
 * into UTF-8 first when needed). NULL and "" are 0. On out of memory sets
 * the arena's error and returns 0.
 */
int32_t otlp_str_index(struct enc *e, const char *s)
{
	struct index *ix = &e->six;
	uint32_t m = ix->nslots - 1, j;
	uint64_t h;

	if (!s || !*s || e->a.err)
		return 0;
	if (!utf8_valid(s)) {
		char *r = utf8_repair(s), *copy;

		if (!r || !(copy = otlp_arena_alloc(&e->a, strlen(r) + 1, 1))) {
			free(r);
			e->a.err = -ENOMEM;
			return 0;
		}
		strcpy(copy, r);
		free(r);
		s = copy;
	}
	h = fnv1a_str(s);
	for (j = h & m; ix->slots[j]; j = (j + 1) & m) {
		uint32_t i = ix->slots[j] - 1;

		if (ix->hashes[i] == h && strcmp(e->strs[i], s) == 0)
			return i;
	}
	if (e->nstrs >= e->cap_strs)	/* sized for every string up front */
		goto oom;
	e->strs[e->nstrs] = (char *)s;
	ix->hashes[e->nstrs] = h;
	ix->slots[j] = ++e->nstrs;
	return e->nstrs - 1;
oom:
	e->a.err = -ENOMEM;
	return 0;
}

/*
 * otlp_attr_index - the attribute_table index of (@key, @str or @num, @unit),
 * adding it if new. A string attribute when @str != NULL.
 */
int32_t otlp_attr_index(struct enc *e, const char *key, const char *str,
			int64_t num, const char *unit)
{
	struct index *ix = &e->aix;
	int32_t k = otlp_str_index(e, key), u = otlp_str_index(e, unit);
	uint32_t m = ix->nslots - 1, j;
	KeyValueAndUnit *kv;
	AnyValue *v;
	char *sv = NULL;
	uint64_t h;

	if (str && !utf8_valid(str)) {
		char *r = utf8_repair(str);

		sv = r ? otlp_arena_alloc(&e->a, strlen(r) + 1, 1) : NULL;
		if (sv)
			strcpy(sv, r);
		free(r);
		if (!sv)
			e->a.err = -ENOMEM;
		str = sv;
	}
	if (e->a.err)
		return 0;
	h = fnv1a(&k, sizeof(k), FNV1A_SEED);
	h = fnv1a(&u, sizeof(u), h);
	h = str ? fnv1a(str, strlen(str) + 1, h) : fnv1a(&num, sizeof(num), h ^ 1);
	for (j = h & m; ix->slots[j]; j = (j + 1) & m) {
		uint32_t i = ix->slots[j] - 1;

		kv = e->attrs[i];
		if (ix->hashes[i] != h || kv->key_strindex != k || kv->unit_strindex != u)
			continue;
		if (str && kv->value->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
		    strcmp(kv->value->string_value, str) == 0)
			return i;
		if (!str && kv->value->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE &&
		    kv->value->int_value == num)
			return i;
	}
	if (e->nattrs >= e->cap_attrs)
		goto oom;
	kv = otlp_arena_alloc(&e->a, 1, sizeof(*kv));
	v = otlp_arena_alloc(&e->a, 1, sizeof(*v));
	if (!kv || !v)
		return 0;
	PF(key_value_and_unit__init)(kv);
	opentelemetry__proto__common__v1__any_value__init(v);
	kv->key_strindex = k;
	kv->unit_strindex = u;
	kv->value = v;
	if (str) {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = (char *)str;
	} else {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = num;
	}
	e->attrs[e->nattrs] = kv;
	ix->hashes[e->nattrs] = h;
	ix->slots[j] = ++e->nattrs;
	return e->nattrs - 1;
oom:
	e->a.err = -ENOMEM;
	return 0;
}

/* otlp_stack_index - the stack_table index of @s's locations, adding it if new. */
int32_t otlp_stack_index(struct enc *e, const struct profile_sample *s)
{
	struct index *ix = &e->stix;
	uint32_t m = ix->nslots - 1, j, n = s->nlocations;
	int32_t *li;
	Stack *st;
	uint64_t h;

	if (!n || e->a.err)
		return 0;
	h = fnv1a(s->location_ids, n * sizeof(*s->location_ids), FNV1A_SEED);
	for (j = h & m; ix->slots[j]; j = (j + 1) & m) {
		uint32_t i = ix->slots[j] - 1, k;

		st = e->stacks[i];
		if (ix->hashes[i] != h || st->n_location_indices != n)
			continue;
		for (k = 0; k < n; k++)
			if ((uint32_t)st->location_indices[k] != s->location_ids[k])
				break;
		if (k == n)
			return i;
	}
	if (e->nstacks >= e->cap_stacks)
		goto oom;
	st = otlp_arena_alloc(&e->a, 1, sizeof(*st));
	li = otlp_arena_alloc(&e->a, n, sizeof(*li));
	if (!st || !li)
		return 0;
	PF(stack__init)(st);
	for (uint32_t k = 0; k < n; k++)
		li[k] = s->location_ids[k];
	st->location_indices = li;
	st->n_location_indices = n;
	e->stacks[e->nstacks] = st;
	ix->hashes[e->nstacks] = h;
	ix->slots[j] = ++e->nstacks;
	return e->nstacks - 1;
oom:
	e->a.err = -ENOMEM;
	return 0;
}

/* The dictionary's mapping, function, location and link tables. */
int otlp_enc_tables(struct enc *e)
{
	const struct profile *p = e->p;
	Dictionary *d = &e->dict;
	Mapping **maps = otlp_arena_alloc(&e->a, p->nmappings + 1, sizeof(*maps));
	Function **funcs = otlp_arena_alloc(&e->a, p->nfunctions + 1, sizeof(*funcs));
	Location **locs = otlp_arena_alloc(&e->a, p->nlocations + 1, sizeof(*locs));
	Link **links = otlp_arena_alloc(&e->a, 1, sizeof(*links));
	static uint8_t zero[16];

	if (e->a.err)
		return e->a.err;
	for (uint32_t i = 0; i <= p->nmappings; i++) {
		const struct profile_mapping *src = i ? &p->mappings[i - 1] : NULL;
		Mapping *m = maps[i] = otlp_arena_alloc(&e->a, 1, sizeof(*m));

		if (!m)
			return -ENOMEM;
		PF(mapping__init)(m);
		if (!src)
			continue;
		m->memory_start = src->start;
		m->memory_limit = src->limit;
		m->file_offset = src->offset;
		m->filename_strindex = otlp_str_index(e, src->filename);
		if (src->build_id && *src->build_id) {
			m->attribute_indices = otlp_arena_alloc(&e->a, 1, sizeof(int32_t));
			if (!m->attribute_indices)
				return -ENOMEM;
			m->attribute_indices[0] = otlp_attr_index(e, BUILD_ID_KEY,
							     src->build_id, 0, NULL);
			m->n_attribute_indices = 1;
		}
	}
	for (uint32_t i = 0; i <= p->nfunctions; i++) {
		const struct profile_function *src = i ? &p->functions[i - 1] : NULL;
		Function *f = funcs[i] = otlp_arena_alloc(&e->a, 1, sizeof(*f));

		if (!f)
			return -ENOMEM;
		PF(function__init)(f);
		if (!src)
			continue;
		f->name_strindex = otlp_str_index(e, src->name);
		f->system_name_strindex = otlp_str_index(e, src->system_name);
		f->filename_strindex = otlp_str_index(e, src->filename);
	}
	for (uint32_t i = 0; i <= p->nlocations; i++) {
		const struct profile_location *src = i ? &p->locations[i - 1] : NULL;
		Location *l = locs[i] = otlp_arena_alloc(&e->a, 1, sizeof(*l));

		if (!l)
			return -ENOMEM;
		PF(location__init)(l);
		if (!src)
			continue;
		if (src->mapping_id > p->nmappings || src->function_id > p->nfunctions)
			return -EINVAL;
		l->mapping_index = src->mapping_id;
		l->address = src->address;
		if (src->function_id) {
			/* the inlined functions first, the caller last (OTLP's
			 * Location.lines order, as pprof's) */
			uint32_t n = src->ninlined + 1;
			Line *ln = otlp_arena_alloc(&e->a, n, sizeof(*ln));

			l->lines = otlp_arena_alloc(&e->a, n, sizeof(*l->lines));
			if (!ln || !l->lines)
				return -ENOMEM;
			for (uint32_t j = 0; j < n; j++) {
				const struct profile_line *pl = j < src->ninlined ?
					&src->inlined[j] : NULL;

				PF(line__init)(&ln[j]);
				ln[j].function_index = pl ? pl->function_id : src->function_id;
				ln[j].line = pl ? pl->line : src->line;
				if (!ln[j].function_index ||
				    ln[j].function_index > (int32_t)p->nfunctions)
					return -EINVAL;
				l->lines[j] = &ln[j];
			}
			l->n_lines = n;
		}
	}
	links[0] = otlp_arena_alloc(&e->a, 1, sizeof(**links));
	if (!links[0])
		return -ENOMEM;
	PF(link__init)(links[0]);
	/* the zero Link with full-length zero ids, as the spec recommends */
	links[0]->trace_id.len = 16;
	links[0]->trace_id.data = zero;
	links[0]->span_id.len = 8;
	links[0]->span_id.data = zero;

	d->mapping_table = maps;
	d->n_mapping_table = p->nmappings + 1;
	d->function_table = funcs;
	d->n_function_table = p->nfunctions + 1;
	d->location_table = locs;
	d->n_location_table = p->nlocations + 1;
	d->link_table = links;
	d->n_link_table = 1;
	return e->a.err;
}
