// SPDX-License-Identifier: GPL-2.0
/*
 * pprof.c - pprof writer (see pprof.h).
 *
 * Owns: turning a struct profile into a perftools.profiles.Profile
 * message (proto/profile.proto, generated with protoc-c) and writing it
 * gzipped, atomically.
 *
 * How it fits: the profile model already uses pprof's shape and 1-based
 * ids, so encoding is a copy; the profile's common labels (external
 * --label pairs) are written on every sample, after its own labels. The only real work is the string table:
 * every string the message references becomes an index, given out by one
 * hash table so that encoding stays O(n). All message structs are built
 * in a few flat arrays (one per message type) that point into the profile
 * where the layout allows it, and are freed together after packing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "output/pprof.h"
#include "util/atomic_file.h"

/* String table of the message: strs[0] is "", slots hold index + 1. */
struct strtab {
	const char **strs;	/* borrowed from the profile */
	uint32_t n, cap;
	uint32_t *slots;	/* open addressing, 0 = empty */
	uint32_t nslots;	/* power of two */
	int err;		/* sticky -ENOMEM */
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int strtab_grow_slots(struct strtab *t)
{
	uint32_t nslots = t->nslots ? t->nslots * 2 : 256;
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 1; i < t->n; i++) {
		uint32_t j = str_hash(t->strs[i]) & (nslots - 1);

		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

/*
 * strtab_index - index of @s in the table, appending it if new. NULL and
 * "" are index 0. On out of memory sets t->err and returns 0, so callers
 * check t->err once at the end.
 */
static int64_t strtab_index(struct strtab *t, const char *s)
{
	uint32_t j;

	if (!s || !*s || t->err)
		return 0;
	if ((t->n + 1) * 4 >= t->nslots * 3 && strtab_grow_slots(t))
		goto oom;
	for (j = str_hash(s) & (t->nslots - 1); t->slots[j];
	     j = (j + 1) & (t->nslots - 1)) {
		uint32_t i = t->slots[j] - 1;

		if (t->strs[i] == s || strcmp(t->strs[i], s) == 0)
			return i;
	}
	if (t->n == t->cap) {
		uint32_t ncap = t->cap * 2;
		const char **ns = realloc(t->strs, ncap * sizeof(*ns));

		if (!ns)
			goto oom;
		t->strs = ns;
		t->cap = ncap;
	}
	t->strs[t->n] = s;
	t->slots[j] = ++t->n;
	return t->n - 1;
oom:
	t->err = -ENOMEM;
	return 0;
}

static int strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	t->cap = 256;
	t->strs = malloc(t->cap * sizeof(*t->strs));
	if (!t->strs)
		return -ENOMEM;
	t->strs[0] = "";
	t->n = 1;
	return strtab_grow_slots(t);
}

static void strtab_free(struct strtab *t)
{
	free(t->strs);
	free(t->slots);
}

/* Every flat array the message points into; freed by enc_free(). */
struct enc {
	Perftools__Profiles__Profile msg;
	struct strtab st;
	Perftools__Profiles__ValueType vt[PROFILE_MAX_VALUES + 1];
	Perftools__Profiles__ValueType *vtp[PROFILE_MAX_VALUES];
	int64_t *comments;
	Perftools__Profiles__Mapping *maps, **mapp;
	Perftools__Profiles__Function *funcs, **funcp;
	Perftools__Profiles__Location *locs, **locp;
	Perftools__Profiles__Line *lines, **linep;
	Perftools__Profiles__Sample *samples, **samplep;
	Perftools__Profiles__Label *labels, **labelp;
	uint64_t *loc_ids;
};

static void enc_free(struct enc *e)
{
	strtab_free(&e->st);
	free(e->comments);
	free(e->maps);
	free(e->mapp);
	free(e->funcs);
	free(e->funcp);
	free(e->locs);
	free(e->locp);
	free(e->lines);
	free(e->linep);
	free(e->samples);
	free(e->samplep);
	free(e->labels);
	free(e->labelp);
	free(e->loc_ids);
}

/* calloc that never returns NULL for n == 0 (so NULL always means OOM). */
static void *xcalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static void enc_value_type(struct enc *e, Perftools__Profiles__ValueType *vt,
			   const struct profile_value_type *src)
{
	perftools__profiles__value_type__init(vt);
	vt->type = strtab_index(&e->st, src->type);
	vt->unit = strtab_index(&e->st, src->unit);
}

static int enc_header(struct enc *e, const struct profile *p)
{
	Perftools__Profiles__Profile *m = &e->msg;

	for (uint32_t i = 0; i < p->nsample_types; i++) {
		enc_value_type(e, &e->vt[i], &p->sample_types[i]);
		e->vtp[i] = &e->vt[i];
	}
	m->n_sample_type = p->nsample_types;
	m->sample_type = e->vtp;

	if (p->period_type.type || p->period_type.unit) {
		enc_value_type(e, &e->vt[PROFILE_MAX_VALUES], &p->period_type);
		m->period_type = &e->vt[PROFILE_MAX_VALUES];
	}
	m->period = p->period;
	m->time_nanos = p->time_nanos;
	m->duration_nanos = p->duration_nanos;

	e->comments = xcalloc(p->ncomments, sizeof(*e->comments));
	if (!e->comments)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->ncomments; i++)
		e->comments[i] = strtab_index(&e->st, p->comments[i]);
	m->n_comment = p->ncomments;
	m->comment = e->comments;
	return 0;
}

static int enc_mappings(struct enc *e, const struct profile *p)
{
	e->maps = xcalloc(p->nmappings, sizeof(*e->maps));
	e->mapp = xcalloc(p->nmappings, sizeof(*e->mapp));
	if (!e->maps || !e->mapp)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nmappings; i++) {
		const struct profile_mapping *src = &p->mappings[i];
		Perftools__Profiles__Mapping *m = &e->maps[i];

		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->memory_start = src->start;
		m->memory_limit = src->limit;
		m->file_offset = src->offset;
		m->filename = strtab_index(&e->st, src->filename);
		m->build_id = strtab_index(&e->st, src->build_id);
		m->has_functions = src->has_functions;
		m->has_filenames = src->has_filenames;
		m->has_line_numbers = src->has_line_numbers;
		m->has_inline_frames = src->has_inline_frames;
		e->mapp[i] = m;
	}
	e->msg.n_mapping = p->nmappings;
	e->msg.mapping = e->mapp;
	return 0;
}

static int enc_functions(struct enc *e, const struct profile *p)
{
	e->funcs = xcalloc(p->nfunctions, sizeof(*e->funcs));
	e->funcp = xcalloc(p->nfunctions, sizeof(*e->funcp));
	if (!e->funcs || !e->funcp)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nfunctions; i++) {
		const struct profile_function *src = &p->functions[i];
		Perftools__Profiles__Function *f = &e->funcs[i];

		perftools__profiles__function__init(f);
		f->id = i + 1;
		f->name = strtab_index(&e->st, src->name);
		f->system_name = strtab_index(&e->st, src->system_name);
		f->filename = strtab_index(&e->st, src->filename);
		e->funcp[i] = f;
	}
	e->msg.n_function = p->nfunctions;
	e->msg.function = e->funcp;
	return 0;
}

/* A Line of @f's id and @line at *@k of the flat arrays. */
static void enc_line(struct enc *e, size_t *k, uint32_t function_id,
		     int64_t line)
{
	Perftools__Profiles__Line *ln = &e->lines[*k];

	perftools__profiles__line__init(ln);
	ln->function_id = function_id;
	ln->line = line;
	e->linep[(*k)++] = ln;
}

/*
 * The Lines of each resolved location: the functions inlined at its
 * address, innermost first, then the function itself (pprof's order:
 * the last Line is the caller). The mapping flags are the model's.
 */
static int enc_locations(struct enc *e, const struct profile *p)
{
	size_t nlines = 0, k = 0;

	for (uint32_t i = 0; i < p->nlocations; i++)
		nlines += 1 + p->locations[i].ninlined;
	e->locs = xcalloc(p->nlocations, sizeof(*e->locs));
	e->locp = xcalloc(p->nlocations, sizeof(*e->locp));
	e->lines = xcalloc(nlines, sizeof(*e->lines));
	e->linep = xcalloc(nlines, sizeof(*e->linep));
	if (!e->locs || !e->locp || !e->lines || !e->linep)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const struct profile_location *src = &p->locations[i];
		Perftools__Profiles__Location *l = &e->locs[i];

		if (src->mapping_id > p->nmappings ||
		    src->function_id > p->nfunctions)
			return -EINVAL;
		perftools__profiles__location__init(l);
		l->id = i + 1;
		l->mapping_id = src->mapping_id;
		l->address = src->address;
		if (src->function_id) {
			l->line = &e->linep[k];
			for (uint32_t j = 0; j < src->ninlined; j++) {
				if (!src->inlined[j].function_id ||
				    src->inlined[j].function_id > p->nfunctions)
					return -EINVAL;
				enc_line(e, &k, src->inlined[j].function_id,
					 src->inlined[j].line);
			}
			enc_line(e, &k, src->function_id, src->line);
			l->n_line = src->ninlined + 1;
		}
		e->locp[i] = l;
	}
	e->msg.n_location = p->nlocations;
	e->msg.location = e->locp;
	return 0;
}

static void enc_label(struct enc *e, Perftools__Profiles__Label *l,
		      const struct profile_label *src)
{
	perftools__profiles__label__init(l);
	l->key = strtab_index(&e->st, src->key);
	if (src->str) {
		l->str = strtab_index(&e->st, src->str);
	} else {
		l->num = src->num;
		l->num_unit = strtab_index(&e->st, src->num_unit);
	}
}

/* Whether @s has its own label @key (a common label of that key yields). */
static bool has_label(const struct profile_sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (s->labels[i].key == key || !strcmp(s->labels[i].key, key))
			return true;
	return false;
}

static int enc_samples(struct enc *e, const struct profile *p)
{
	size_t nlocs = 0, nlabels = 0, li = 0, bi = 0;

	for (uint32_t i = 0; i < p->nsamples; i++) {
		nlocs += p->samples[i].nlocations;
		nlabels += p->samples[i].nlabels + p->ncommon_labels;
	}
	e->samples = xcalloc(p->nsamples, sizeof(*e->samples));
	e->samplep = xcalloc(p->nsamples, sizeof(*e->samplep));
	e->loc_ids = xcalloc(nlocs, sizeof(*e->loc_ids));
	e->labels = xcalloc(nlabels, sizeof(*e->labels));
	e->labelp = xcalloc(nlabels, sizeof(*e->labelp));
	if (!e->samples || !e->samplep || !e->loc_ids || !e->labels ||
	    !e->labelp)
		return -ENOMEM;

	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *src = &p->samples[i];
		Perftools__Profiles__Sample *s = &e->samples[i];

		perftools__profiles__sample__init(s);
		s->n_location_id = src->nlocations;
		s->location_id = &e->loc_ids[li];
		for (uint32_t j = 0; j < src->nlocations; j++) {
			uint32_t id = src->location_ids[j];

			if (!id || id > p->nlocations)
				return -EINVAL;
			e->loc_ids[li++] = id;
		}
		/* The packer only reads; the cast spares a copy. */
		s->n_value = p->nsample_types;
		s->value = (int64_t *)src->values;
		s->label = &e->labelp[bi];
		for (uint32_t j = 0; j < src->nlabels; j++, bi++) {
			enc_label(e, &e->labels[bi], &src->labels[j]);
			e->labelp[bi] = &e->labels[bi];
		}
		s->n_label = src->nlabels;
		for (uint32_t j = 0; j < p->ncommon_labels; j++) {
			if (has_label(src, p->common_labels[j].key))
				continue;
			enc_label(e, &e->labels[bi], &p->common_labels[j]);
			e->labelp[bi] = &e->labels[bi];
			bi++;
			s->n_label++;
		}
		e->samplep[i] = s;
	}
	e->msg.n_sample = p->nsamples;
	e->msg.sample = e->samplep;
	return 0;
}

int pprof_encode(const struct profile *p, uint8_t **buf, size_t *len)
{
	struct enc e;
	size_t size;
	int err;

	memset(&e, 0, sizeof(e));
	*buf = NULL;
	*len = 0;
	if (p->nsample_types > PROFILE_MAX_VALUES)
		return -EINVAL;
	perftools__profiles__profile__init(&e.msg);
	err = strtab_init(&e.st);
	if (!err)
		err = enc_header(&e, p);
	if (!err)
		err = enc_mappings(&e, p);
	if (!err)
		err = enc_functions(&e, p);
	if (!err)
		err = enc_locations(&e, p);
	if (!err)
		err = enc_samples(&e, p);
	if (!err)
		err = e.st.err;
	if (err)
		goto out;

	e.msg.n_string_table = e.st.n;
	e.msg.string_table = (char **)e.st.strs;
	size = perftools__profiles__profile__get_packed_size(&e.msg);
	*buf = malloc(size ? size : 1);
	if (!*buf) {
		err = -ENOMEM;
		goto out;
	}
	*len = perftools__profiles__profile__pack(&e.msg, *buf);
out:
	enc_free(&e);
	return err;
}

/* Stream @len bytes of @data through gzip into @fd. Returns 0 or -errno. */
static int gzip_to_fd(int fd, const uint8_t *data, size_t len)
{
	unsigned char out[64 * 1024];
	z_stream zs;
	int flush, err = 0;

	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: gzip wrapper, which pprof expects. */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	zs.next_in = (unsigned char *)data;
	do {
		/* avail_in is 32-bit: feed at most 1 GiB at a time. */
		size_t chunk = len > (1u << 30) ? (1u << 30) : len;

		zs.avail_in = chunk;
		len -= chunk;
		flush = len ? Z_NO_FLUSH : Z_FINISH;
		do {
			zs.next_out = out;
			zs.avail_out = sizeof(out);
			if (deflate(&zs, flush) == Z_STREAM_ERROR) {
				err = -EIO;
				goto out;
			}
			err = write_all(fd, out, sizeof(out) - zs.avail_out);
			if (err)
				goto out;
		} while (zs.avail_out == 0);
	} while (flush != Z_FINISH);
out:
	deflateEnd(&zs);
	return err;
}

int pprof_write(const struct profile *p, const char *path)
{
	struct atomic_file af;
	uint8_t *buf = NULL;
	size_t len;
	int err;

	err = pprof_encode(p, &buf, &len);
	if (!err)
		err = atomic_file_begin(&af, path);
	if (!err)
		err = atomic_file_commit(&af, gzip_to_fd(af.fd, buf, len));
	free(buf);
	return err;
}
