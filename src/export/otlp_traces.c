// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_traces.c - batching spans and log records into OTLP requests
 * (see otlp_traces.h).
 *
 * Owns: the pending ExportTraceServiceRequest and ExportLogsServiceRequest,
 * their grouping by resource key and scope, and when they are sent.
 *
 * How it fits: the deep copy of an item *is* its encoding. Each span or
 * log record is packed by protobuf-c (opentelemetry/proto/trace/v1,
 * logs/v1) the moment it is added, straight from the caller's borrowed
 * strings, into the byte buffer of its (resource, scope) group, already
 * framed as field 2 of ScopeSpans / ScopeLogs. The Resource and the
 * InstrumentationScope are packed once per group. Sending only frames
 * those buffers as the request's ResourceSpans/ScopeSpans (three
 * length-delimited fields) and copies them out, so a batch costs one
 * protobuf-c pass per item and a memcpy, there is no per-item heap
 * allocation, and the batch's size is known exactly. Groups are found by
 * hash (and a one-entry cache for runs of one group), never by a scan.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp_traces.h"
#include "util/utf8.h"
#include "util/hash.h"
#include "opentelemetry/proto/common/v1/common.pb-c.h"
#include "opentelemetry/proto/logs/v1/logs.pb-c.h"
#include "opentelemetry/proto/resource/v1/resource.pb-c.h"
#include "opentelemetry/proto/trace/v1/trace.pb-c.h"

typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;
typedef Opentelemetry__Proto__Trace__V1__Span Span;
typedef Opentelemetry__Proto__Trace__V1__Span__Event SpanEvent;
typedef Opentelemetry__Proto__Logs__V1__LogRecord LogRecord;

/* Protobuf framing: the key of a length-delimited field, and lengths. */
#define PB_LEN_KEY(field)	((uint8_t)((field) << 3 | 2))

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Copy @len bytes of @src (NULL when @len is 0) to @p; returns the end. */
static uint8_t *put_bytes(uint8_t *p, const void *src, size_t len)
{
	if (len)
		memcpy(p, src, len);
	return p + len;
}

/* Size of field @len bytes long, with its one-byte key and length. */
static size_t framed(size_t len)
{
	return 1 + varint_size(len) + len;
}

/* A growable byte buffer. */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->len + more <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* One (resource, scope): its items, packed and framed. */
struct group {
	uint64_t rkey;
	uint64_t hash;
	char *scope_name;		/* owned; never NULL */
	char *scope_version;		/* owned; never NULL */
	struct buf scope;		/* packed InstrumentationScope */
	struct buf items;		/* framed Span / LogRecord messages */
	uint32_t next;			/* next group of its resource, + 1 */
};

struct res {
	uint64_t key;
	struct buf packed;		/* packed Resource */
	uint32_t first, last;		/* its groups, + 1 */
};

struct batch {
	enum otlp_signal sig;
	struct group *groups;
	uint32_t ngroups, cap_groups;
	struct res *res;
	uint32_t nres, cap_res;
	uint32_t *gslots, *rslots;	/* index + 1, 0 = empty */
	uint32_t nslots;		/* power of two, both tables */
	uint32_t last;			/* group of the last item, + 1 */
	uint64_t items;
	size_t bytes;			/* framed items */
	uint64_t first_ns;		/* when its first item came */
};

/* Scratch protobuf-c structs for one item (under the lock). */
struct scratch {
	KeyValue *kv;
	AnyValue *av;
	KeyValue **kvp;
	uint32_t cap_kv;
	SpanEvent *ev;
	SpanEvent **evp;
	uint32_t cap_ev;
	char **repaired;		/* strings made valid UTF-8 for this item */
	uint32_t nrepaired, cap_repaired;
};

struct otlp_batcher {
	struct otlp_exporter *e;
	pthread_mutex_t lock;
	struct batch traces, logs;
	struct scratch s;
};

/* ---- strings ---- */

/*
 * str - @s ready for a protobuf string field: "" for NULL, @s when valid
 * UTF-8, else a repaired copy kept in @sc until scratch_done(). NULL
 * only on out of memory.
 */
static char *str(struct scratch *sc, const char *s)
{
	char *r, **n;

	if (!s)
		return (char *)"";
	if (utf8_valid(s))
		return (char *)s;
	if (sc->nrepaired == sc->cap_repaired) {
		uint32_t cap = sc->cap_repaired ? sc->cap_repaired * 2 : 8;

		n = realloc(sc->repaired, cap * sizeof(*n));
		if (!n)
			return NULL;
		sc->repaired = n;
		sc->cap_repaired = cap;
	}
	r = utf8_repair(s);
	if (r)
		sc->repaired[sc->nrepaired++] = r;
	return r;
}

static void scratch_done(struct scratch *sc)
{
	for (uint32_t i = 0; i < sc->nrepaired; i++)
		free(sc->repaired[i]);
	sc->nrepaired = 0;
}

static int scratch_reserve(struct scratch *sc, uint32_t nkv, uint32_t nev)
{
	if (nkv > sc->cap_kv) {
		uint32_t cap = nkv < 64 ? 64 : nkv;
		KeyValue *kv = realloc(sc->kv, cap * sizeof(*kv));
		AnyValue *av = kv ? realloc(sc->av, cap * sizeof(*av)) : NULL;
		KeyValue **kvp = av ? realloc(sc->kvp, cap * sizeof(*kvp)) : NULL;

		if (kv)
			sc->kv = kv;
		if (av)
			sc->av = av;
		if (!kvp)
			return -ENOMEM;
		sc->kvp = kvp;
		sc->cap_kv = cap;
	}
	if (nev > sc->cap_ev) {
		uint32_t cap = nev < 16 ? 16 : nev;
		SpanEvent *ev = realloc(sc->ev, cap * sizeof(*ev));
		SpanEvent **evp = ev ? realloc(sc->evp, cap * sizeof(*evp)) : NULL;

		if (ev)
			sc->ev = ev;
		if (!evp)
			return -ENOMEM;
		sc->evp = evp;
		sc->cap_ev = cap;
	}
	return 0;
}

/*
 * fill_attrs - point @n KeyValues of the scratch, from slot @at on, at
 * @a's keys and values. Returns 0 or -ENOMEM.
 */
static int fill_attrs(struct scratch *sc, uint32_t at, const struct otlp_attr *a,
		      uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		KeyValue *kv = &sc->kv[at + i];
		AnyValue *av = &sc->av[at + i];

		opentelemetry__proto__common__v1__key_value__init(kv);
		opentelemetry__proto__common__v1__any_value__init(av);
		kv->key = str(sc, a[i].key);
		kv->value = av;
		switch (a[i].type) {
		case OTLP_VALUE_STRING:
			av->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
			av->string_value = str(sc, a[i].str);
			if (!av->string_value)
				return -ENOMEM;
			break;
		case OTLP_VALUE_INT:
			av->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
			av->int_value = a[i].i;
			break;
		case OTLP_VALUE_DOUBLE:
			av->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
			av->double_value = a[i].d;
			break;
		case OTLP_VALUE_BOOL:
			av->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
			av->bool_value = a[i].b;
			break;
		default:	/* unknown type: an empty value, not garbage */
			break;
		}
		if (!kv->key)
			return -ENOMEM;
		sc->kvp[at + i] = kv;
	}
	return 0;
}

/* ---- batches ---- */

static uint64_t group_hash(uint64_t rkey, const char *name, const char *version)
{
	uint64_t h = fnv1a(&rkey, sizeof(rkey), FNV1A_SEED);

	h = fnv1a(name, strlen(name) + 1, h);
	return fnv1a(version, strlen(version), h);
}

static uint64_t key_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return key;
}

static int batch_grow_slots(struct batch *b)
{
	uint32_t n = b->nslots ? b->nslots * 2 : 64, m = n - 1;
	uint32_t *g = calloc(n, sizeof(*g)), *r = calloc(n, sizeof(*r));

	if (!g || !r) {
		free(g);
		free(r);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < b->ngroups; i++) {
		uint32_t j = b->groups[i].hash & m;

		while (g[j])
			j = (j + 1) & m;
		g[j] = i + 1;
	}
	for (uint32_t i = 0; i < b->nres; i++) {
		uint32_t j = key_hash(b->res[i].key) & m;

		while (r[j])
			j = (j + 1) & m;
		r[j] = i + 1;
	}
	free(b->gslots);
	free(b->rslots);
	b->gslots = g;
	b->rslots = r;
	b->nslots = n;
	return 0;
}

/* Pack @r's attributes as a Resource into @out. */
static int pack_resource(struct scratch *sc, const struct otlp_resource *r,
			 struct buf *out)
{
	Resource m = OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	size_t n;
	int err;

	err = scratch_reserve(sc, r->nattrs, 0);
	if (!err)
		err = fill_attrs(sc, 0, r->attrs, r->nattrs);
	if (err)
		return err;
	m.n_attributes = r->nattrs;
	m.attributes = sc->kvp;
	n = opentelemetry__proto__resource__v1__resource__get_packed_size(&m);
	if (buf_reserve(out, n))
		return -ENOMEM;
	out->len = opentelemetry__proto__resource__v1__resource__pack(&m, out->p);
	return 0;
}

/* The resource entry of @r in @b, added (its attributes packed) if new. */
static int batch_res(struct batch *b, struct scratch *sc,
		     const struct otlp_resource *r, uint32_t *idx)
{
	uint32_t m = b->nslots - 1, j;
	struct res *x;

	for (j = key_hash(r->key) & m; b->rslots[j]; j = (j + 1) & m) {
		if (b->res[b->rslots[j] - 1].key == r->key) {
			*idx = b->rslots[j] - 1;
			return 0;
		}
	}
	if (b->nres == b->cap_res) {
		uint32_t cap = b->cap_res ? b->cap_res * 2 : 16;
		struct res *n = realloc(b->res, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		b->res = n;
		b->cap_res = cap;
	}
	x = &b->res[b->nres];
	memset(x, 0, sizeof(*x));
	x->key = r->key;
	if (pack_resource(sc, r, &x->packed)) {
		free(x->packed.p);
		return -ENOMEM;
	}
	b->rslots[j] = ++b->nres;
	*idx = b->nres - 1;
	return 0;
}

/*
 * batch_group - the group of (@r, @scope) in @b, added if new. Returns
 * it, or NULL on out of memory.
 */
static struct group *batch_group(struct batch *b, struct scratch *sc,
				 const struct otlp_resource *r,
				 const struct otlp_scope *scope)
{
	const char *name = scope && scope->name ? scope->name : "";
	const char *version = scope && scope->version ? scope->version : "";
	Scope sm = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	struct group *g;
	uint32_t m, j, ri;
	uint64_t h;

	if (b->last) {
		g = &b->groups[b->last - 1];
		if (g->rkey == r->key && strcmp(g->scope_name, name) == 0 &&
		    strcmp(g->scope_version, version) == 0)
			return g;
	}
	/* keep both tables at most half full */
	if ((b->ngroups + 1) * 2 > b->nslots || (b->nres + 1) * 2 > b->nslots)
		if (batch_grow_slots(b))
			return NULL;
	h = group_hash(r->key, name, version);
	m = b->nslots - 1;
	for (j = h & m; b->gslots[j]; j = (j + 1) & m) {
		g = &b->groups[b->gslots[j] - 1];
		if (g->hash == h && g->rkey == r->key &&
		    strcmp(g->scope_name, name) == 0 &&
		    strcmp(g->scope_version, version) == 0) {
			b->last = b->gslots[j];
			return g;
		}
	}
	if (batch_res(b, sc, r, &ri))
		return NULL;
	if (b->ngroups == b->cap_groups) {
		uint32_t cap = b->cap_groups ? b->cap_groups * 2 : 16;
		struct group *n = realloc(b->groups, cap * sizeof(*n));

		if (!n)
			return NULL;
		b->groups = n;
		b->cap_groups = cap;
	}
	g = &b->groups[b->ngroups];
	memset(g, 0, sizeof(*g));
	g->rkey = r->key;
	g->hash = h;
	g->scope_name = strdup(name);
	g->scope_version = strdup(version);
	sm.name = str(sc, name);
	sm.version = str(sc, version);
	if (!g->scope_name || !g->scope_version || !sm.name || !sm.version ||
	    buf_reserve(&g->scope,
			opentelemetry__proto__common__v1__instrumentation_scope__get_packed_size(&sm)))
		goto oom;
	g->scope.len = opentelemetry__proto__common__v1__instrumentation_scope__pack(&sm, g->scope.p);

	/* link it last in its resource's list, so order is arrival order */
	if (b->res[ri].last)
		b->groups[b->res[ri].last - 1].next = b->ngroups + 1;
	else
		b->res[ri].first = b->ngroups + 1;
	b->res[ri].last = b->ngroups + 1;
	b->gslots[j] = ++b->ngroups;
	b->last = b->ngroups;
	return g;
oom:
	free(g->scope_name);
	free(g->scope_version);
	free(g->scope.p);
	return NULL;
}

/* Forget @b's contents, keeping its tables' memory. */
static void batch_reset(struct batch *b)
{
	for (uint32_t i = 0; i < b->ngroups; i++) {
		free(b->groups[i].scope_name);
		free(b->groups[i].scope_version);
		free(b->groups[i].scope.p);
		free(b->groups[i].items.p);
	}
	for (uint32_t i = 0; i < b->nres; i++)
		free(b->res[i].packed.p);
	if (b->nslots) {
		memset(b->gslots, 0, b->nslots * sizeof(*b->gslots));
		memset(b->rslots, 0, b->nslots * sizeof(*b->rslots));
	}
	b->ngroups = b->nres = b->last = 0;
	b->items = 0;
	b->bytes = 0;
}

static void batch_free(struct batch *b)
{
	batch_reset(b);
	free(b->groups);
	free(b->res);
	free(b->gslots);
	free(b->rslots);
}

/*
 * batch_send - frame @b as an Export{Trace,Logs}ServiceRequest and queue
 * it on @e; reset @b. Field numbers are the same for both signals:
 * request.resource_{spans,logs} = 1, Resource{Spans,Logs}.resource = 1,
 * .scope_{spans,logs} = 2, Scope{Spans,Logs}.scope = 1, items = 2.
 * Returns 0 or the error of otlp_export() (items counted dropped there),
 * -ENOMEM (counted here).
 */
static int batch_send(struct batch *b, struct otlp_exporter *e)
{
	size_t total = 0, *rsize, *gsize;
	uint8_t *out, *p;
	uint64_t items = b->items;
	int err;

	if (!items)
		return 0;
	rsize = malloc(b->nres * sizeof(*rsize));
	gsize = malloc(b->ngroups * sizeof(*gsize));
	if (!rsize || !gsize)
		goto oom;
	for (uint32_t i = 0; i < b->nres; i++) {
		struct res *r = &b->res[i];

		rsize[i] = framed(r->packed.len);
		for (uint32_t g = r->first; g; g = b->groups[g - 1].next) {
			struct group *x = &b->groups[g - 1];

			gsize[g - 1] = framed(x->scope.len) + x->items.len;
			rsize[i] += framed(gsize[g - 1]);
		}
		total += framed(rsize[i]);
	}
	out = p = malloc(total ? total : 1);
	if (!out)
		goto oom;
	for (uint32_t i = 0; i < b->nres; i++) {
		struct res *r = &b->res[i];

		*p++ = PB_LEN_KEY(1);
		p = put_varint(p, rsize[i]);
		*p++ = PB_LEN_KEY(1);
		p = put_varint(p, r->packed.len);
		p = put_bytes(p, r->packed.p, r->packed.len);
		for (uint32_t g = r->first; g; g = b->groups[g - 1].next) {
			struct group *x = &b->groups[g - 1];

			*p++ = PB_LEN_KEY(2);
			p = put_varint(p, gsize[g - 1]);
			*p++ = PB_LEN_KEY(1);
			p = put_varint(p, x->scope.len);
			p = put_bytes(p, x->scope.p, x->scope.len);
			p = put_bytes(p, x->items.p, x->items.len);
		}
	}
	free(rsize);
	free(gsize);
	batch_reset(b);
	err = otlp_export(e, b->sig, out, total, items);
	return err == -ENOMEM ? -ENOBUFS : err;
oom:
	free(rsize);
	free(gsize);
	batch_reset(b);
	otlp_exporter_drop(e, items, b->sig == OTLP_SIGNAL_TRACES ?
			   "traces: out of memory framing a batch" :
			   "logs: out of memory framing a batch");
	return -ENOMEM;
}

/* ---- items ---- */

/* What an item without a resource is grouped under: key 0, no attributes. */
static const struct otlp_resource no_resource;

/*
 * append_item - pack @msg (a Span or LogRecord) at the end of @g's items,
 * framed as field 2 of its ScopeSpans / ScopeLogs. Returns the bytes
 * added, 0 on out of memory.
 */
static size_t append_item(struct group *g, const ProtobufCMessage *msg)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t *p;

	if (buf_reserve(&g->items, framed(n)))
		return 0;
	p = g->items.p + g->items.len;
	*p++ = PB_LEN_KEY(2);
	p = put_varint(p, n);
	p += protobuf_c_message_pack(msg, p);
	g->items.len = p - g->items.p;
	return framed(n);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Common tail of add_span/add_log: account, send when full. Under lock. */
static int added(struct otlp_batcher *bt, struct batch *b, size_t n, uint64_t now_ns)
{
	if (!n) {
		otlp_exporter_drop(bt->e, 1, b->sig == OTLP_SIGNAL_TRACES ?
				   "traces: out of memory batching a span" :
				   "logs: out of memory batching a log record");
		return -ENOMEM;
	}
	if (!b->items)
		b->first_ns = now_ns;
	b->items++;
	b->bytes += n;
	if (b->items >= OTLP_BATCH_MAX_ITEMS || b->bytes >= OTLP_BATCH_MAX_BYTES)
		return batch_send(b, bt->e);
	return 0;
}

int otlp_batcher_add_span(struct otlp_batcher *bt, const struct otlp_resource *r,
			  const struct otlp_scope *scope, const struct otlp_span *s,
			  uint64_t now_ns)
{
	Span m = OPENTELEMETRY__PROTO__TRACE__V1__SPAN__INIT;
	struct scratch *sc;
	uint32_t nkv, at;
	struct group *g;
	size_t n = 0;
	int err;

	if (!bt || !s)
		return -EINVAL;
	sc = &bt->s;
	nkv = s->nattrs;
	for (uint32_t i = 0; i < s->nevents; i++)
		nkv += s->events[i].nattrs;
	if (!r)
		r = &no_resource;
	pthread_mutex_lock(&bt->lock);
	g = batch_group(&bt->traces, sc, r, scope);
	if (!g || scratch_reserve(sc, nkv, s->nevents))
		goto out;
	m.trace_id.len = sizeof(s->trace_id);
	m.trace_id.data = (uint8_t *)s->trace_id;
	m.span_id.len = sizeof(s->span_id);
	m.span_id.data = (uint8_t *)s->span_id;
	if (!all_zero(s->parent_span_id, sizeof(s->parent_span_id))) {
		m.parent_span_id.len = sizeof(s->parent_span_id);
		m.parent_span_id.data = (uint8_t *)s->parent_span_id;
	}
	m.name = str(sc, s->name);
	m.kind = OPENTELEMETRY__PROTO__TRACE__V1__SPAN__SPAN_KIND__SPAN_KIND_INTERNAL;
	m.start_time_unix_nano = s->start_unix_ns;
	m.end_time_unix_nano = s->end_unix_ns;
	if (!m.name || fill_attrs(sc, 0, s->attrs, s->nattrs))
		goto out;
	m.n_attributes = s->nattrs;
	m.attributes = sc->kvp;
	at = s->nattrs;
	for (uint32_t i = 0; i < s->nevents; i++) {
		const struct otlp_span_event *ev = &s->events[i];
		SpanEvent *em = &sc->ev[i];

		opentelemetry__proto__trace__v1__span__event__init(em);
		em->time_unix_nano = ev->time_unix_ns;
		em->name = str(sc, ev->name);
		if (!em->name || fill_attrs(sc, at, ev->attrs, ev->nattrs))
			goto out;
		em->n_attributes = ev->nattrs;
		em->attributes = sc->kvp + at;
		at += ev->nattrs;
		sc->evp[i] = em;
	}
	m.n_events = s->nevents;
	m.events = sc->evp;
	n = append_item(g, &m.base);
out:
	scratch_done(sc);
	err = added(bt, &bt->traces, n, now_ns);
	pthread_mutex_unlock(&bt->lock);
	return err;
}

int otlp_batcher_add_log(struct otlp_batcher *bt, const struct otlp_resource *r,
			 const struct otlp_scope *scope, const struct otlp_log *l,
			 uint64_t now_ns)
{
	LogRecord m = OPENTELEMETRY__PROTO__LOGS__V1__LOG_RECORD__INIT;
	AnyValue body = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	struct scratch *sc;
	struct group *g;
	size_t n = 0;
	int err;

	if (!bt || !l)
		return -EINVAL;
	sc = &bt->s;
	if (!r)
		r = &no_resource;
	pthread_mutex_lock(&bt->lock);
	g = batch_group(&bt->logs, sc, r, scope);
	if (!g || scratch_reserve(sc, l->nattrs, 0))
		goto out;
	m.time_unix_nano = l->time_unix_ns;
	m.observed_time_unix_nano = l->observed_unix_ns;
	if (l->severity_number >= 0 && l->severity_number <= 24)
		m.severity_number = l->severity_number;
	m.severity_text = str(sc, l->severity_text);
	if (l->body) {
		body.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		body.string_value = str(sc, l->body);
		if (!body.string_value)
			goto out;
		m.body = &body;
	}
	if (!all_zero(l->trace_id, sizeof(l->trace_id))) {
		m.trace_id.len = sizeof(l->trace_id);
		m.trace_id.data = (uint8_t *)l->trace_id;
	}
	if (!all_zero(l->span_id, sizeof(l->span_id))) {
		m.span_id.len = sizeof(l->span_id);
		m.span_id.data = (uint8_t *)l->span_id;
	}
	if (!m.severity_text || fill_attrs(sc, 0, l->attrs, l->nattrs))
		goto out;
	m.n_attributes = l->nattrs;
	m.attributes = sc->kvp;
	n = append_item(g, &m.base);
out:
	scratch_done(sc);
	err = added(bt, &bt->logs, n, now_ns);
	pthread_mutex_unlock(&bt->lock);
	return err;
}

/* ---- lifecycle ---- */

struct otlp_batcher *otlp_batcher_new(struct otlp_exporter *e)
{
	struct otlp_batcher *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	pthread_mutex_init(&b->lock, NULL);
	b->e = e;
	b->traces.sig = OTLP_SIGNAL_TRACES;
	b->logs.sig = OTLP_SIGNAL_LOGS;
	if (batch_grow_slots(&b->traces) || batch_grow_slots(&b->logs) ||
	    scratch_reserve(&b->s, 64, 16)) {
		otlp_batcher_free(b);
		return NULL;
	}
	return b;
}

void otlp_batcher_tick(struct otlp_batcher *b, uint64_t now_ns)
{
	const uint64_t delay = OTLP_BATCH_DELAY_MS * 1000000ull;

	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	if (b->traces.items && now_ns - b->traces.first_ns >= delay)
		batch_send(&b->traces, b->e);
	if (b->logs.items && now_ns - b->logs.first_ns >= delay)
		batch_send(&b->logs, b->e);
	pthread_mutex_unlock(&b->lock);
}

void otlp_batcher_flush(struct otlp_batcher *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	batch_send(&b->traces, b->e);
	batch_send(&b->logs, b->e);
	pthread_mutex_unlock(&b->lock);
}

void otlp_batcher_free(struct otlp_batcher *b)
{
	if (!b)
		return;
	batch_free(&b->traces);
	batch_free(&b->logs);
	free(b->s.kv);
	free(b->s.av);
	free(b->s.kvp);
	free(b->s.ev);
	free(b->s.evp);
	free(b->s.repaired);
	pthread_mutex_destroy(&b->lock);
	free(b);
}
