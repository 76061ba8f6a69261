// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_profiles.c - a struct profile as an OTLP ExportProfilesServiceRequest
 * (see otlp_profiles.h).
 *
 * Owns: the mapping from profd's pprof-shaped model to OTLP profiles
 * v1development (profiles.proto at opentelemetry-proto ac2c4b5d) around
 * the dictionary (otlp_dictionary.c: strings, attributes, stacks,
 * mappings, functions, locations):
 *  - one ResourceProfiles per "pid" label (resource.c's attributes, with
 *    process.pid), samples without one under the host resource; the
 *    resource also gets the profile's common labels (external --label
 *    pairs) and "container.id" from the samples' "container_id" label
 *    (a process gone before resource.c read it), where resource.c's
 *    attributes lack those keys; one
 *    ScopeProfiles "profd"; one Profile per sample type (OTLP's Profile
 *    has a single sample_type), each with a random 16-byte profile_id;
 *  - Sample: stack_index, one value, the other labels as attributes
 *    (string labels as string values, numeric ones as int values with
 *    num_unit as the unit), keys as the labels'.
 * All messages live in one arena freed after packing; strings are
 * borrowed from the profile except those repaired into valid UTF-8.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "export/otlp_profiles_internal.h"
#include "util/utf8.h"
#include "util/version.h"

/* One process's samples (or the host's, pid 0). */
struct group {
	pid_t pid;
	const char *comm;		/* the first "comm" label seen */
	const char *container_id;	/* the first "container_id" label seen */
	uint32_t nsamples, filled;
	Sample **samples[PROFILE_MAX_VALUES];
};

/*
 * pid of @s from its "pid" label (numeric, or a decimal string); 0 if
 * none. Its "comm" and "container_id" labels (NULL if none) go to *@comm
 * and *@container_id.
 */
static pid_t sample_pid(const struct profile_sample *s, const char **comm,
			const char **container_id)
{
	pid_t pid = 0;

	*comm = NULL;
	*container_id = NULL;
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const struct profile_label *l = &s->labels[i];

		if (!l->key)
			continue;
		if (strcmp(l->key, "pid") == 0) {
			if (!l->str && l->num > 0 && l->num <= 0x7fffffff)
				pid = l->num;
			else if (l->str) {
				long v = strtol(l->str, NULL, 10);

				pid = v > 0 && v <= 0x7fffffff ? v : 0;
			}
		} else if (strcmp(l->key, "comm") == 0 && l->str) {
			*comm = l->str;
		} else if (strcmp(l->key, "container_id") == 0 && l->str && *l->str) {
			*container_id = l->str;
		}
	}
	return pid;
}

/* A KeyValue for @a (strings borrowed until packing); NULL on OOM. */
static KeyValue *enc_kv(struct enc *e, const struct otlp_attr *a)
{
	KeyValue *kv = otlp_arena_alloc(&e->a, 1, sizeof(*kv));
	AnyValue *v = otlp_arena_alloc(&e->a, 1, sizeof(*v));

	if (!kv || !v)
		return NULL;
	opentelemetry__proto__common__v1__key_value__init(kv);
	opentelemetry__proto__common__v1__any_value__init(v);
	kv->key = (char *)(a->key ? a->key : "");
	kv->value = v;
	switch (a->type) {
	case OTLP_VALUE_STRING:
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = (char *)(a->str ? a->str : "");
		break;
	case OTLP_VALUE_INT:
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = a->i;
		break;
	case OTLP_VALUE_DOUBLE:
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
		v->double_value = a->d;
		break;
	case OTLP_VALUE_BOOL:
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
		v->bool_value = a->b;
		break;
	}
	return kv;
}

/* @s, or a copy repaired into valid UTF-8 in the arena; NULL on OOM. */
static const char *arena_utf8(struct enc *e, const char *s)
{
	char *fixed, *copy;

	if (utf8_valid(s))
		return s;
	fixed = utf8_repair(s);
	copy = fixed ? otlp_arena_alloc(&e->a, strlen(fixed) + 1, 1) : NULL;
	if (copy)
		strcpy(copy, fixed);
	free(fixed);
	return copy;
}

static bool resource_has(const struct otlp_resource *r, const char *key)
{
	for (uint32_t i = 0; r && i < r->nattrs; i++)
		if (r->attrs[i].key && !strcmp(r->attrs[i].key, key))
			return true;
	return false;
}

/*
 * The Resource of @g: @r's attributes (borrowed until packing), then
 * container.id from @g's samples and the profile's common labels, each
 * unless @r has that key already. NULL on out of memory.
 */
static Resource *enc_resource(struct enc *e, const struct otlp_resource *r,
			      const struct group *g)
{
	const struct profile *p = e->p;
	uint32_t max = (r ? r->nattrs : 0) + 1 + p->ncommon_labels, n = 0;
	Resource *m = otlp_arena_alloc(&e->a, 1, sizeof(*m));
	KeyValue **kvp = otlp_arena_alloc(&e->a, max, sizeof(*kvp));
	struct otlp_attr a = { .type = OTLP_VALUE_STRING };

	if (!m || !kvp)
		return NULL;
	opentelemetry__proto__resource__v1__resource__init(m);
	for (uint32_t i = 0; r && i < r->nattrs; i++)
		if (!(kvp[n++] = enc_kv(e, &r->attrs[i])))
			return NULL;
	if (g->container_id && !resource_has(r, "container.id")) {
		a.key = "container.id";
		a.str = g->container_id;
		if (!(kvp[n++] = enc_kv(e, &a)))
			return NULL;
	}
	for (uint32_t i = 0; i < p->ncommon_labels; i++) {
		const struct profile_label *l = &p->common_labels[i];

		if (resource_has(r, l->key))
			continue;
		a.key = arena_utf8(e, l->key);
		a.str = arena_utf8(e, l->str);
		if (!a.key || !a.str || !(kvp[n++] = enc_kv(e, &a)))
			return NULL;
	}
	m->attributes = kvp;
	m->n_attributes = n;
	return m;
}

static ValueType *enc_value_type(struct enc *e, const struct profile_value_type *t)
{
	ValueType *v = otlp_arena_alloc(&e->a, 1, sizeof(*v));

	if (!v)
		return NULL;
	PF(value_type__init)(v);
	v->type_strindex = otlp_str_index(e, t->type);
	v->unit_strindex = otlp_str_index(e, t->unit);
	return v;
}

/* The ResourceProfiles of @g: scope "profd", one Profile per sample type. */
static ResourceProfiles *enc_group(struct enc *e, struct group *g,
				   struct otlp_resources *res)
{
	const struct profile *p = e->p;
	ResourceProfiles *rp = otlp_arena_alloc(&e->a, 1, sizeof(*rp));
	ScopeProfiles *sp = otlp_arena_alloc(&e->a, 1, sizeof(*sp));
	Scope *scope = otlp_arena_alloc(&e->a, 1, sizeof(*scope));
	ScopeProfiles **spp = otlp_arena_alloc(&e->a, 1, sizeof(*spp));
	Profile **profs = otlp_arena_alloc(&e->a, p->nsample_types, sizeof(*profs));

	if (e->a.err)
		return NULL;
	PF(resource_profiles__init)(rp);
	PF(scope_profiles__init)(sp);
	opentelemetry__proto__common__v1__instrumentation_scope__init(scope);
	scope->name = (char *)"profd";
	scope->version = (char *)PROFD_VERSION;
	rp->resource = enc_resource(e, otlp_resources_get(res, g->pid,
				&(struct otlp_process_hint){ .comm = g->comm }), g);
	if (!rp->resource)
		return NULL;
	for (uint32_t t = 0; t < p->nsample_types; t++) {
		Profile *pr = profs[t] = otlp_arena_alloc(&e->a, 1, sizeof(*pr));

		if (!pr)
			return NULL;
		PF(profile__init)(pr);
		pr->sample_type = enc_value_type(e, &p->sample_types[t]);
		if (p->period_type.type || p->period_type.unit)
			pr->period_type = enc_value_type(e, &p->period_type);
		pr->period = p->period;
		pr->time_unix_nano = p->time_nanos > 0 ? p->time_nanos : 0;
		pr->duration_nano = p->duration_nanos > 0 ? p->duration_nanos : 0;
		pr->profile_id.len = 16;
		pr->profile_id.data = otlp_arena_alloc(&e->a, 16, 1);
		if (!pr->profile_id.data)
			return NULL;
		if (getrandom(pr->profile_id.data, 16, GRND_NONBLOCK) != 16 ||
		    pr->profile_id.data[0] == 0) {
			/* never all zero (invalid): mix in the time */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			pr->profile_id.data[0] |= 1;
			memcpy(pr->profile_id.data + 8, &ts.tv_nsec, sizeof(ts.tv_nsec));
		}
		pr->samples = g->samples[t];
		pr->n_samples = g->nsamples;
	}
	sp->scope = scope;
	sp->profiles = profs;
	sp->n_profiles = p->nsample_types;
	spp[0] = sp;
	rp->scope_profiles = spp;
	rp->n_scope_profiles = 1;
	return e->a.err ? NULL : rp;
}

/* Build the whole request in e->req. Returns 0, -EINVAL or -ENOMEM. */
static int enc_build(struct enc *e, struct otlp_resources *res)
{
	const struct profile *p = e->p;
	uint32_t nt = p->nsample_types, ngroups = 0, nlabels = 0;
	uint32_t *gidx = NULL, *gslots = NULL, nslots = 64;
	struct group *groups = NULL;
	ResourceProfiles **rps;
	int err;

	for (uint32_t i = 0; i < p->nsamples; i++)
		nlabels += p->samples[i].nlabels;
	/*
	 * Every table's worst case, so the indexes never grow. Strings: "",
	 * sample and period types, mapping filenames and the build id key,
	 * function names, label keys and units (values are AnyValues).
	 */
	e->cap_strs = 1 + 2 * nt + 2 + p->nmappings + 1 + 3 * p->nfunctions + 2 * nlabels;
	e->cap_attrs = 1 + p->nmappings + nlabels;
	e->cap_stacks = 1 + p->nsamples;
	e->strs = otlp_arena_alloc(&e->a, e->cap_strs, sizeof(*e->strs));
	e->attrs = otlp_arena_alloc(&e->a, e->cap_attrs, sizeof(*e->attrs));
	e->stacks = otlp_arena_alloc(&e->a, e->cap_stacks, sizeof(*e->stacks));
	if (e->a.err || otlp_index_init(&e->six, e->cap_strs) ||
	    otlp_index_init(&e->aix, e->cap_attrs) || otlp_index_init(&e->stix, e->cap_stacks))
		return -ENOMEM;
	e->strs[e->nstrs++] = (char *)"";
	e->attrs[e->nattrs] = otlp_arena_alloc(&e->a, 1, sizeof(KeyValueAndUnit));
	e->stacks[e->nstacks] = otlp_arena_alloc(&e->a, 1, sizeof(Stack));
	if (e->a.err)
		return -ENOMEM;
	PF(key_value_and_unit__init)(e->attrs[e->nattrs++]);
	PF(stack__init)(e->stacks[e->nstacks++]);

	err = otlp_enc_tables(e);
	if (err)
		return err;

	/* group samples by pid */
	while (nslots < p->nsamples * 2u + 2)
		nslots *= 2;
	gidx = malloc((p->nsamples + 1) * sizeof(*gidx));
	gslots = calloc(nslots, sizeof(*gslots));
	groups = calloc(p->nsamples + 1, sizeof(*groups));
	if (!gidx || !gslots || !groups) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const char *comm, *cid;
		pid_t pid = sample_pid(&p->samples[i], &comm, &cid);
		uint32_t j = ((uint32_t)pid * 2654435761u) & (nslots - 1);

		while (gslots[j] && groups[gslots[j] - 1].pid != pid)
			j = (j + 1) & (nslots - 1);
		if (!gslots[j]) {
			groups[ngroups].pid = pid;
			gslots[j] = ++ngroups;
		}
		gidx[i] = gslots[j] - 1;
		groups[gidx[i]].nsamples++;
		if (!groups[gidx[i]].comm)
			groups[gidx[i]].comm = comm;
		if (!groups[gidx[i]].container_id)
			groups[gidx[i]].container_id = cid;
	}
	for (uint32_t g = 0; g < ngroups; g++)
		for (uint32_t t = 0; t < nt; t++)
			groups[g].samples[t] = otlp_arena_alloc(&e->a, groups[g].nsamples,
							   sizeof(Sample *));

	/* samples: one Sample per sample type, sharing stack and attributes */
	for (uint32_t i = 0; i < p->nsamples && !e->a.err; i++) {
		const struct profile_sample *s = &p->samples[i];
		struct group *g = &groups[gidx[i]];
		int32_t *ai = otlp_arena_alloc(&e->a, s->nlabels, sizeof(*ai));
		uint32_t na = 0;
		int32_t stack;

		for (uint32_t k = 0; k < s->nlocations; k++) {
			if (!s->location_ids[k] || s->location_ids[k] > p->nlocations) {
				err = -EINVAL;
				goto out;
			}
		}
		stack = otlp_stack_index(e, s);
		for (uint32_t k = 0; ai && k < s->nlabels && k < PROFILE_MAX_LABELS; k++) {
			const struct profile_label *l = &s->labels[k];

			if (!l->key || !*l->key || strcmp(l->key, "pid") == 0)
				continue;
			ai[na++] = otlp_attr_index(e, l->key, l->str, l->num,
					      l->str ? NULL : l->num_unit);
		}
		for (uint32_t t = 0; t < nt; t++) {
			Sample *sm = otlp_arena_alloc(&e->a, 1, sizeof(*sm));

			if (!sm)
				break;
			PF(sample__init)(sm);
			sm->stack_index = stack;
			sm->attribute_indices = ai;
			sm->n_attribute_indices = na;
			/* the packer only reads: point at the profile's value */
			sm->values = (int64_t *)&s->values[t];
			sm->n_values = 1;
			g->samples[t][g->filled] = sm;
		}
		g->filled++;
	}
	if (e->a.err) {
		err = e->a.err;
		goto out;
	}

	rps = otlp_arena_alloc(&e->a, ngroups, sizeof(*rps));
	for (uint32_t g = 0; rps && g < ngroups; g++) {
		rps[g] = enc_group(e, &groups[g], res);
		if (!rps[g])
			break;
	}
	if (e->a.err || !rps) {
		err = -ENOMEM;
		goto out;
	}
	e->dict.string_table = e->strs;
	e->dict.n_string_table = e->nstrs;
	e->dict.attribute_table = e->attrs;
	e->dict.n_attribute_table = e->nattrs;
	e->dict.stack_table = e->stacks;
	e->dict.n_stack_table = e->nstacks;
	e->req.dictionary = &e->dict;
	e->req.resource_profiles = rps;
	e->req.n_resource_profiles = ngroups;
	err = 0;
out:
	free(gidx);
	free(gslots);
	free(groups);
	return err;
}

int otlp_profiles_encode(const struct profile *p, struct otlp_resources *res,
			 void **out, size_t *len, uint64_t *nsamples)
{
	struct enc e;
	size_t size;
	int err;

	*out = NULL;
	*len = 0;
	*nsamples = 0;
	if (!p || p->nsample_types > PROFILE_MAX_VALUES)
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	e.p = p;
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(&e.req);
	PF(profiles_dictionary__init)(&e.dict);
	err = enc_build(&e, res);
	if (!err) {
		size = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&e.req);
		*out = malloc(size ? size : 1);
		if (*out) {
			*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&e.req, *out);
			*nsamples = p->nsamples;
		} else {
			err = -ENOMEM;
		}
	}
	otlp_index_free(&e.six);
	otlp_index_free(&e.aix);
	otlp_index_free(&e.stix);
	otlp_arena_free(&e.a);
	return err;
}
