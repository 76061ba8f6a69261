// SPDX-License-Identifier: GPL-2.0
/*
 * profile.c - the in-memory profile of one interval (see profile.h).
 *
 * Owns: string interning and the deduplication of functions and
 * locations, each through one open-addressing hash table of ids; the
 * per-sample storage (labels and location ids in one block) and the
 * profile's common labels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/hash.h"
#include "util/utf8.h"

/* Open-addressing set of 1-based ids; hashing and equality by callback. */
struct idset {
	uint32_t *slots;	/* 0 = empty */
	uint32_t cap;		/* power of two */
	uint32_t n;
};

struct profile_strtab {
	char **strs;
	uint32_t n, cap;
	struct idset set;
};

struct profile_index {
	struct profile_strtab strtab;
	struct idset functions;
	struct idset locations;
};

static uint64_t hash_u64(uint64_t v, uint64_t h)
{
	return fnv1a(&v, sizeof(v), h);
}

typedef bool (*idset_eq_fn)(const void *ctx, uint32_t id, const void *key);

static uint32_t idset_find(const struct idset *s, uint64_t h, idset_eq_fn eq,
			   const void *ctx, const void *key, uint32_t *slot)
{
	uint32_t i;

	if (!s->cap) {
		*slot = 0;
		return 0;
	}
	for (i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		if (!s->slots[i] || eq(ctx, s->slots[i], key)) {
			*slot = i;
			return s->slots[i];
		}
	}
}

typedef uint64_t (*idset_hash_fn)(const void *ctx, uint32_t id);

static int idset_grow(struct idset *s, idset_hash_fn hash, const void *ctx)
{
	uint32_t ncap = s->cap ? s->cap * 2 : 64, i, j;
	uint32_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++) {
		if (!s->slots[i])
			continue;
		for (j = hash(ctx, s->slots[i]) & (ncap - 1); ns[j];
		     j = (j + 1) & (ncap - 1))
			;
		ns[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = ns;
	s->cap = ncap;
	return 0;
}

/* Grow if needed, then return the slot for key (re-probed after growth). */
static int idset_prepare(struct idset *s, uint64_t h, idset_hash_fn hash,
			 idset_eq_fn eq, const void *ctx, const void *key,
			 uint32_t *found, uint32_t *slot)
{
	*found = idset_find(s, h, eq, ctx, key, slot);
	if (*found)
		return 0;
	if ((s->n + 1) * 4 >= s->cap * 3) {
		if (idset_grow(s, hash, ctx))
			return -ENOMEM;
		idset_find(s, h, eq, ctx, key, slot);
	}
	return 0;
}

static int grow_array(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	uint32_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	na = realloc(*arr, (size_t)ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/* strings */

static uint64_t str_hash(const char *s)
{
	return fnv1a_str(s);
}

static uint64_t strtab_hash_id(const void *ctx, uint32_t id)
{
	const struct profile_strtab *t = ctx;

	return str_hash(t->strs[id - 1]);
}

static bool strtab_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct profile_strtab *t = ctx;

	return strcmp(t->strs[id - 1], key) == 0;
}

const char *profile_intern(struct profile *p, const char *s)
{
	struct profile_strtab *t = &p->index->strtab;
	uint32_t found, slot;
	char *copy;

	if (!s)
		s = "";
	/*
	 * profile.proto's string_table is proto3 `string`: a strict decoder
	 * refuses the whole profile for one invalid byte, and comm, paths
	 * and cgroup names come from other programs: intern the repair.
	 */
	if (!utf8_valid(s)) {
		char *r = utf8_repair(s);
		const char *ret = r ? profile_intern(p, r) : NULL;

		free(r);
		return ret;
	}
	if (idset_prepare(&t->set, str_hash(s), strtab_hash_id, strtab_eq, t,
			  s, &found, &slot))
		return NULL;
	if (found)
		return t->strs[found - 1];
	if (grow_array((void **)&t->strs, &t->cap, t->n, sizeof(*t->strs)))
		return NULL;
	copy = strdup(s);
	if (!copy)
		return NULL;
	t->strs[t->n++] = copy;
	t->set.slots[slot] = t->n;
	t->set.n++;
	return copy;
}

/* functions and locations */

/* Interned strings compare by pointer. */
static uint64_t function_hash(const struct profile_function *f)
{
	uint64_t h = hash_u64((uintptr_t)f->name, FNV1A_SEED);

	h = hash_u64((uintptr_t)f->system_name, h);
	return hash_u64((uintptr_t)f->filename, h);
}

static uint64_t function_hash_id(const void *ctx, uint32_t id)
{
	const struct profile *p = ctx;

	return function_hash(&p->functions[id - 1]);
}

static bool function_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct profile *p = ctx;
	const struct profile_function *a = &p->functions[id - 1], *b = key;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename;
}

uint32_t profile_function_id(struct profile *p, const char *name,
			     const char *system_name, const char *filename)
{
	struct profile_index *d = p->index;
	struct profile_function f = {
		.name = profile_intern(p, name),
		.system_name = profile_intern(p, system_name ? system_name : name),
		.filename = profile_intern(p, filename),
	};
	uint32_t found, slot;

	if (!f.name || !f.system_name || !f.filename)
		return 0;
	if (idset_prepare(&d->functions, function_hash(&f), function_hash_id,
			  function_eq, p, &f, &found, &slot))
		return 0;
	if (found)
		return found;
	if (grow_array((void **)&p->functions, &p->cap_functions,
		       p->nfunctions, sizeof(f)))
		return 0;
	p->functions[p->nfunctions++] = f;
	d->functions.slots[slot] = p->nfunctions;
	d->functions.n++;
	return p->nfunctions;
}

static uint64_t location_hash(const struct profile_location *l)
{
	uint64_t h = hash_u64(l->mapping_id, FNV1A_SEED);

	h = hash_u64(l->address, h);
	h = hash_u64(l->function_id, h);
	h = hash_u64((uint64_t)l->line, h);
	for (uint32_t i = 0; i < l->ninlined; i++) {
		h = hash_u64(l->inlined[i].function_id, h);
		h = hash_u64((uint64_t)l->inlined[i].line, h);
	}
	return hash_u64(l->ninlined * 2 + l->inline_known, h);
}

static uint64_t location_hash_id(const void *ctx, uint32_t id)
{
	const struct profile *p = ctx;

	return location_hash(&p->locations[id - 1]);
}

static bool location_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct profile *p = ctx;
	const struct profile_location *a = &p->locations[id - 1], *b = key;

	return a->mapping_id == b->mapping_id && a->address == b->address &&
	       a->function_id == b->function_id && a->line == b->line &&
	       a->ninlined == b->ninlined && a->inline_known == b->inline_known &&
	       (!a->ninlined || !memcmp(a->inlined, b->inlined,
					a->ninlined * sizeof(*a->inlined)));
}

/* Whether function @id has a source file. */
static bool function_has_file(const struct profile *p, uint32_t id)
{
	const struct profile_function *f = profile_function(p, id);

	return f && f->filename && *f->filename;
}

/*
 * Fold new location @l into its mapping's flags: each is true while
 * every location of the mapping has it.
 */
static void mapping_flags_add(struct profile *p, const struct profile_location *l)
{
	struct profile_mapping *m;
	bool fn = l->function_id, file, line;

	if (!l->mapping_id || l->mapping_id > p->nmappings)
		return;
	m = &p->mappings[l->mapping_id - 1];
	file = fn && function_has_file(p, l->function_id);
	line = fn && l->line > 0;
	for (uint32_t i = 0; i < l->ninlined; i++) {
		file = file && function_has_file(p, l->inlined[i].function_id);
		line = line && l->inlined[i].line > 0;
	}
	if (!m->nlocations++) {
		m->has_functions = fn;
		m->has_filenames = file;
		m->has_line_numbers = line;
		m->has_inline_frames = fn && l->inline_known;
		return;
	}
	m->has_functions = m->has_functions && fn;
	m->has_filenames = m->has_filenames && file;
	m->has_line_numbers = m->has_line_numbers && line;
	m->has_inline_frames = m->has_inline_frames && fn && l->inline_known;
}

uint32_t profile_location_id_lines(struct profile *p, uint32_t mapping_id,
				   uint64_t address, uint32_t function_id,
				   int64_t line, const struct profile_line *inlined,
				   uint32_t ninlined, bool inline_known)
{
	struct profile_index *d = p->index;
	struct profile_location l = {
		.mapping_id = mapping_id,
		.address = address,
		.function_id = function_id,
		.line = line,
		.inlined = ninlined ? inlined : NULL,
		.ninlined = ninlined,
		.inline_known = inline_known,
	};
	struct profile_line *copy = NULL;
	uint32_t found, slot;

	if (idset_prepare(&d->locations, location_hash(&l), location_hash_id,
			  location_eq, p, &l, &found, &slot))
		return 0;
	if (found)
		return found;
	if (grow_array((void **)&p->locations, &p->cap_locations,
		       p->nlocations, sizeof(l)))
		return 0;
	if (ninlined) {
		copy = malloc(ninlined * sizeof(*copy));
		if (!copy)
			return 0;
		memcpy(copy, inlined, ninlined * sizeof(*copy));
		l.inlined = copy;
	}
	p->locations[p->nlocations++] = l;
	d->locations.slots[slot] = p->nlocations;
	d->locations.n++;
	mapping_flags_add(p, &l);
	return p->nlocations;
}

uint32_t profile_location_id(struct profile *p, uint32_t mapping_id,
			     uint64_t address, uint32_t function_id,
			     int64_t line)
{
	return profile_location_id_lines(p, mapping_id, address, function_id,
					 line, NULL, 0, false);
}

/* the rest */

struct profile *profile_new(void)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (p)
		p->index = calloc(1, sizeof(*p->index));
	if (!p || !p->index) {
		free(p);
		return NULL;
	}
	return p;
}

void profile_free(struct profile *p)
{
	struct profile_index *ix;

	if (!p)
		return;
	ix = p->index;
	for (uint32_t i = 0; i < ix->strtab.n; i++)
		free(ix->strtab.strs[i]);
	free(ix->strtab.strs);
	free(ix->strtab.set.slots);
	free(ix->functions.slots);
	free(ix->locations.slots);
	free(ix);
	for (uint32_t i = 0; i < p->nsamples; i++)
		free(p->samples[i].labels);	/* and location_ids */
	free(p->samples);
	free(p->mappings);
	free(p->functions);
	for (uint32_t i = 0; i < p->nlocations; i++)
		free((void *)p->locations[i].inlined);
	free(p->locations);
	free(p->comments);
	free(p);
}

int profile_add_sample_type(struct profile *p, const char *type,
			    const char *unit)
{
	struct profile_value_type *vt;

	if (p->nsample_types >= PROFILE_MAX_VALUES)
		return -ENOSPC;
	vt = &p->sample_types[p->nsample_types];
	vt->type = profile_intern(p, type);
	vt->unit = profile_intern(p, unit);
	if (!vt->type || !vt->unit)
		return -ENOMEM;
	p->nsample_types++;
	return 0;
}

int profile_add_comment(struct profile *p, const char *comment)
{
	const char *s = profile_intern(p, comment);

	if (!s || grow_array((void **)&p->comments, &p->cap_comments,
			     p->ncomments, sizeof(*p->comments)))
		return -ENOMEM;
	p->comments[p->ncomments++] = s;
	return 0;
}

uint32_t profile_add_mapping(struct profile *p, uint64_t start, uint64_t limit,
			     uint64_t offset, const char *filename,
			     const char *build_id)
{
	struct profile_mapping m = {
		.start = start,
		.limit = limit,
		.offset = offset,
		.filename = profile_intern(p, filename),
		.build_id = profile_intern(p, build_id),
	};

	if (!m.filename || !m.build_id ||
	    grow_array((void **)&p->mappings, &p->cap_mappings, p->nmappings,
		       sizeof(m)))
		return 0;
	p->mappings[p->nmappings++] = m;
	return p->nmappings;
}

int profile_add_common_label(struct profile *p, const char *key,
			     const char *value)
{
	const char *k, *v;
	uint32_t i;

	if (!key || !*key || !value)
		return -EINVAL;
	k = profile_intern(p, key);
	v = profile_intern(p, value);
	if (!k || !v)
		return -ENOMEM;
	for (i = 0; i < p->ncommon_labels; i++)
		if (p->common_labels[i].key == k)	/* interned: same pointer */
			break;
	if (i == PROFILE_MAX_COMMON_LABELS)
		return -ENOSPC;
	p->common_labels[i] = (struct profile_label){ .key = k, .str = v };
	if (i == p->ncommon_labels)
		p->ncommon_labels++;
	return 0;
}

int profile_add_sample(struct profile *p, const uint32_t *location_ids,
		       uint32_t nlocations, const int64_t *values,
		       const struct profile_label *labels, uint32_t nlabels)
{
	struct profile_sample *s;
	size_t lbytes = nlabels * sizeof(*labels);

	if (nlabels > PROFILE_MAX_LABELS)
		return -EINVAL;
	if (grow_array((void **)&p->samples, &p->cap_samples, p->nsamples,
		       sizeof(*s)))
		return -ENOMEM;
	s = &p->samples[p->nsamples];
	memset(s, 0, sizeof(*s));
	/* labels first (pointer-aligned), then the location ids */
	s->labels = malloc(lbytes + (nlocations ? nlocations : 1) *
			   sizeof(*location_ids));
	if (!s->labels)
		return -ENOMEM;
	s->location_ids = (uint32_t *)((char *)s->labels + lbytes);
	if (nlocations)
		memcpy(s->location_ids, location_ids,
		       nlocations * sizeof(*location_ids));
	s->nlocations = nlocations;
	for (uint32_t i = 0; i < p->nsample_types; i++)
		s->values[i] = values[i];
	for (uint32_t i = 0; i < nlabels; i++) {
		s->labels[i] = labels[i];
		s->labels[i].key = profile_intern(p, labels[i].key);
		if (labels[i].str)
			s->labels[i].str = profile_intern(p, labels[i].str);
		if (labels[i].num_unit)
			s->labels[i].num_unit =
				profile_intern(p, labels[i].num_unit);
		if (!s->labels[i].key ||
		    (labels[i].str && !s->labels[i].str) ||
		    (labels[i].num_unit && !s->labels[i].num_unit)) {
			free(s->labels);
			return -ENOMEM;
		}
	}
	s->nlabels = nlabels;
	p->nsamples++;
	return 0;
}

const struct profile_mapping *profile_mapping(const struct profile *p,
					      uint32_t id)
{
	return id && id <= p->nmappings ? &p->mappings[id - 1] : NULL;
}

const struct profile_function *profile_function(const struct profile *p,
						uint32_t id)
{
	return id && id <= p->nfunctions ? &p->functions[id - 1] : NULL;
}

const struct profile_location *profile_location(const struct profile *p,
						uint32_t id)
{
	return id && id <= p->nlocations ? &p->locations[id - 1] : NULL;
}
