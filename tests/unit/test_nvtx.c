// SPDX-License-Identifier: GPL-2.0
/*
 * test_nvtx.c - src/nvtx/ through its API (nvtx.h) on synthetic NVTX
 * batch records built as BPF builds them (struct profd_gpu_batch + n
 * struct profd_nvtx_event, bpf/nvtx_events.h), and util/clock.h.
 *
 * Owns the checks of: the MONOTONIC -> Unix clock; nested push/pop on
 * three threads (the exact span tree, trace ids, converted times); a
 * start/end range ending on another thread, and its end arriving first;
 * marks as span events and as log records; the budget (whole traces kept
 * or dropped, exact counts); unmatched pops and ends; process exit and
 * stop closing open ranges as unfinished; strings in chunks (a cut
 * 1024-byte one, invalid UTF-8, the LRU bound); domain, category and
 * thread names, colors and every payload type; the depth bound; malformed
 * records; the process identity a session begins with
 * (nvtx_batch_process_info); a full queue; random records (the fuzz). Every number asserted
 * is exact. Prints one line per check; exits 1 if any failed.
 *
 * "--fuzz SECONDS": only the fuzz, that long. "--bench [SPANS]": spans/s
 * through nvtx_record() -> tracer -> a no-op output (no checks).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpf/gpu_events.h"
#include "bpf/nvtx_events.h"
#include "nvtx/nvtx.h"
#include "util/clock.h"

#include "check.h"

#define SEC	1000000000ULL
#define MS	1000000ULL
#define OFFSET	1700000000000000000LL	/* the fixed clock: Unix = MONOTONIC + OFFSET */
#define PID	5000001			/* above any pid_max: no /proc entry */

static uint64_t T0;	/* event times: T0 + x, in the past of CLOCK_MONOTONIC */

/* --- capturing the output ------------------------------------------------------- */

struct c_attr {
	char *key;
	enum otlp_value_type type;
	char *str;
	int64_t i;
	double d;
	bool b;
};

struct c_event {
	uint64_t time;
	char *name;
	struct c_attr *attrs;
	uint32_t nattrs;
};

struct c_span {
	pid_t pid;
	char *scope;
	uint8_t trace[16], span[8], parent[8];
	char *name;
	uint64_t start, end;
	struct c_attr *attrs;
	uint32_t nattrs;
	struct c_event *events;
	uint32_t nevents;
};

struct c_log {
	pid_t pid;
	char *scope;
	uint64_t time, observed;
	int severity;
	char *severity_text, *body;
	struct c_attr *attrs;
	uint32_t nattrs;
};

struct capture {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct c_span *spans;
	size_t nspans, scap;
	struct c_log *logs;
	size_t nlogs, lcap;
	uint64_t ticks;
	bool count_only;	/* fuzz and bench: validate and count, keep nothing */
	uint64_t nbad;		/* count_only: records with a bad field */
	bool gate_closed;	/* the span callback waits while set */
	bool blocked;		/* it is waiting */
};

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "(null)");

	if (!d)
		exit(2);
	return d;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		exit(2);
	return p;
}

/* Is @s valid UTF-8 (checked independently of the tracer's own code)? */
static bool utf8_ok(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		uint32_t cp;
		int n;

		if (*u < 0x80) {
			u++;
			continue;
		}
		if ((*u & 0xe0) == 0xc0) {
			n = 1;
			cp = *u & 0x1f;
		} else if ((*u & 0xf0) == 0xe0) {
			n = 2;
			cp = *u & 0x0f;
		} else if ((*u & 0xf8) == 0xf0) {
			n = 3;
			cp = *u & 0x07;
		} else {
			return false;
		}
		for (int k = 1; k <= n; k++) {
			if ((u[k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (u[k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		u += n + 1;
	}
	return true;
}

static bool attrs_ok(const struct otlp_attr *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!a[i].key || !*a[i].key ||
		    (a[i].type == OTLP_VALUE_STRING && (!a[i].str || !utf8_ok(a[i].str))))
			return false;
	return true;
}

static struct c_attr *copy_attrs(const struct otlp_attr *a, uint32_t n)
{
	struct c_attr *c = xcalloc(n, sizeof(*c));

	for (uint32_t i = 0; i < n; i++) {
		c[i].key = xstrdup(a[i].key);
		c[i].type = a[i].type;
		c[i].str = a[i].type == OTLP_VALUE_STRING ? xstrdup(a[i].str) : NULL;
		c[i].i = a[i].i;
		c[i].d = a[i].d;
		c[i].b = a[i].b;
	}
	return c;
}

static void free_attrs(struct c_attr *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(a[i].key);
		free(a[i].str);
	}
	free(a);
}

static void on_span(void *ctx, pid_t pid, const struct otlp_scope *scope,
		    const struct otlp_span *s, uint64_t now_ns)
{
	struct capture *c = ctx;
	struct c_span *d;

	pthread_mutex_lock(&c->lock);
	if (c->gate_closed) {
		c->blocked = true;
		pthread_cond_broadcast(&c->cond);
		while (c->gate_closed)
			pthread_cond_wait(&c->cond, &c->lock);
		c->blocked = false;
	}
	if (c->count_only) {
		bool ok = s->name && utf8_ok(s->name) && scope->name && utf8_ok(scope->name) &&
			  attrs_ok(s->attrs, s->nattrs) && s->end_unix_ns >= s->start_unix_ns;

		for (uint32_t i = 0; ok && i < s->nevents; i++)
			ok = s->events[i].name && utf8_ok(s->events[i].name) &&
			     attrs_ok(s->events[i].attrs, s->events[i].nattrs);
		c->nbad += !ok;
		c->nspans++;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (c->nspans == c->scap) {
		c->scap = c->scap ? c->scap * 2 : 64;
		c->spans = realloc(c->spans, c->scap * sizeof(*c->spans));
		if (!c->spans)
			exit(2);
	}
	d = &c->spans[c->nspans++];
	memset(d, 0, sizeof(*d));
	d->pid = pid;
	d->scope = xstrdup(scope->name);
	memcpy(d->trace, s->trace_id, 16);
	memcpy(d->span, s->span_id, 8);
	memcpy(d->parent, s->parent_span_id, 8);
	d->name = xstrdup(s->name);
	d->start = s->start_unix_ns;
	d->end = s->end_unix_ns;
	d->attrs = copy_attrs(s->attrs, s->nattrs);
	d->nattrs = s->nattrs;
	d->events = xcalloc(s->nevents, sizeof(*d->events));
	d->nevents = s->nevents;
	for (uint32_t i = 0; i < s->nevents; i++) {
		d->events[i].time = s->events[i].time_unix_ns;
		d->events[i].name = xstrdup(s->events[i].name);
		d->events[i].attrs = copy_attrs(s->events[i].attrs, s->events[i].nattrs);
		d->events[i].nattrs = s->events[i].nattrs;
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void on_log(void *ctx, pid_t pid, const struct otlp_scope *scope,
		   const struct otlp_log *l, uint64_t now_ns)
{
	struct capture *c = ctx;
	struct c_log *d;

	pthread_mutex_lock(&c->lock);
	if (c->count_only) {
		c->nbad += !(l->body && utf8_ok(l->body) && attrs_ok(l->attrs, l->nattrs) &&
			     scope->name && utf8_ok(scope->name));
		c->nlogs++;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (c->nlogs == c->lcap) {
		c->lcap = c->lcap ? c->lcap * 2 : 64;
		c->logs = realloc(c->logs, c->lcap * sizeof(*c->logs));
		if (!c->logs)
			exit(2);
	}
	d = &c->logs[c->nlogs++];
	d->pid = pid;
	d->scope = xstrdup(scope->name);
	d->time = l->time_unix_ns;
	d->observed = l->observed_unix_ns;
	d->severity = l->severity_number;
	d->severity_text = xstrdup(l->severity_text);
	d->body = xstrdup(l->body);
	d->attrs = copy_attrs(l->attrs, l->nattrs);
	d->nattrs = l->nattrs;
	pthread_mutex_unlock(&c->lock);
}

static void on_tick(void *ctx, uint64_t now_ns)
{
	struct capture *c = ctx;

	pthread_mutex_lock(&c->lock);
	c->ticks++;
	pthread_mutex_unlock(&c->lock);
}

static void capture_init(struct capture *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
}

static void capture_free(struct capture *c)
{
	for (size_t i = 0; i < c->nspans && !c->count_only; i++) {
		struct c_span *s = &c->spans[i];

		free(s->scope);
		free(s->name);
		free_attrs(s->attrs, s->nattrs);
		for (uint32_t k = 0; k < s->nevents; k++) {
			free(s->events[k].name);
			free_attrs(s->events[k].attrs, s->events[k].nattrs);
		}
		free(s->events);
	}
	for (size_t i = 0; i < c->nlogs && !c->count_only; i++) {
		free(c->logs[i].scope);
		free(c->logs[i].severity_text);
		free(c->logs[i].body);
		free_attrs(c->logs[i].attrs, c->logs[i].nattrs);
	}
	free(c->spans);
	free(c->logs);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
}

static struct clock_sync fixed_clock;

/* A tracer writing into @c, on the fixed clock (@clock NULL) or its own. */
static struct nvtx_tracer *tracer(struct capture *c, unsigned int max_spans,
				  size_t queue_bytes, bool own_clock)
{
	struct nvtx_opts o = {
		.max_spans_per_sec = max_spans,
		.queue_bytes = queue_bytes,
		.out = { .ctx = c, .span = on_span, .log = on_log, .tick = on_tick },
		.clock = own_clock ? NULL : &fixed_clock,
	};
	struct nvtx_tracer *t;

	capture_init(c);
	t = nvtx_new(&o);
	if (!t) {
		fprintf(stderr, "nvtx_new: %s\n", strerror(errno));
		exit(2);
	}
	return t;
}

static struct nvtx_stats stats(struct nvtx_tracer *t)
{
	struct nvtx_stats st;

	nvtx_get_stats(t, &st);
	return st;
}

/* --- looking at the output -------------------------------------------------------- */

static const struct c_span *span_named(const struct capture *c, const char *name)
{
	for (size_t i = 0; i < c->nspans; i++)
		if (!strcmp(c->spans[i].name, name))
			return &c->spans[i];
	return NULL;
}

static size_t spans_named(const struct capture *c, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nspans; i++)
		n += !strcmp(c->spans[i].name, name);
	return n;
}

static size_t span_index(const struct capture *c, const struct c_span *s)
{
	return s ? (size_t)(s - c->spans) : SIZE_MAX;
}

static const struct c_attr *attr(const struct c_attr *a, uint32_t n, const char *key)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(a[i].key, key))
			return &a[i];
	return NULL;
}

static bool attr_is_int(const struct c_attr *a, uint32_t n, const char *key, int64_t v)
{
	const struct c_attr *x = attr(a, n, key);

	return x && x->type == OTLP_VALUE_INT && x->i == v;
}

static bool attr_is_str(const struct c_attr *a, uint32_t n, const char *key, const char *v)
{
	const struct c_attr *x = attr(a, n, key);

	return x && x->type == OTLP_VALUE_STRING && !strcmp(x->str, v);
}

static bool attr_is_double(const struct c_attr *a, uint32_t n, const char *key, double v)
{
	const struct c_attr *x = attr(a, n, key);

	return x && x->type == OTLP_VALUE_DOUBLE && x->d == v;
}

static bool zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static bool child_of(const struct c_span *c, const struct c_span *p)
{
	return c && p && !memcmp(c->parent, p->span, 8) && !memcmp(c->trace, p->trace, 16);
}

static bool root(const struct c_span *s)
{
	return s && zero(s->parent, 8) && !zero(s->trace, 16) && !zero(s->span, 8);
}

static bool unfinished(const struct c_span *s)
{
	const struct c_attr *a = attr(s->attrs, s->nattrs, "nvtx.unfinished");

	return a && a->type == OTLP_VALUE_BOOL && a->b;
}

/* Wait (up to @ms) until @c holds at least @n spans. */
static bool wait_spans(struct capture *c, size_t n, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		size_t have;

		pthread_mutex_lock(&c->lock);
		have = c->nspans;
		pthread_mutex_unlock(&c->lock);
		if (have >= n)
			return true;
		usleep(10000);
	}
	return false;
}

/* --- building records ------------------------------------------------------------- */

struct rec {
	struct profd_gpu_batch h;
	struct profd_nvtx_event ev[PROFD_NVTX_BATCH_MAX];
};

static struct nvtx_tracer *cur;	/* where send() goes */

static void rec_init(struct rec *r, uint32_t pid, uint32_t tid)
{
	memset(r, 0, sizeof(*r));
	r->h.type = PROFD_EVENT_NVTX;
	r->h.pid = pid;
	r->h.tid = tid;
}

static void send(struct rec *r)
{
	if (nvtx_record(cur, r, sizeof(r->h) + r->h.n * sizeof(r->ev[0])) != 0) {
		fprintf(stderr, "nvtx_record refused a well-formed record\n");
		exit(2);
	}
	r->h.n = 0;
}

static struct profd_nvtx_event *add(struct rec *r, uint16_t kind, uint32_t tid, uint64_t t)
{
	struct profd_nvtx_event *e;

	if (r->h.n == PROFD_NVTX_BATCH_MAX)
		send(r);
	e = &r->ev[r->h.n++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->tid = tid;
	e->time_ns = T0 + t;
	return e;
}

static struct profd_nvtx_event *push(struct rec *r, uint32_t tid, uint64_t t, uint32_t msg)
{
	struct profd_nvtx_event *e = add(r, PROFD_NVTX_PUSH, tid, t);

	e->message_id = msg;
	return e;
}

static void pop(struct rec *r, uint32_t tid, uint64_t t)
{
	add(r, PROFD_NVTX_POP, tid, t);
}

static struct profd_nvtx_event *start(struct rec *r, uint32_t tid, uint64_t t, uint64_t id,
				      uint32_t msg)
{
	struct profd_nvtx_event *e = add(r, PROFD_NVTX_START, tid, t);

	e->id = id;
	e->message_id = msg;
	return e;
}

static void end(struct rec *r, uint32_t tid, uint64_t t, uint64_t id)
{
	add(r, PROFD_NVTX_END, tid, t)->id = id;
}

static struct profd_nvtx_event *mark(struct rec *r, uint32_t tid, uint64_t t, uint32_t msg)
{
	struct profd_nvtx_event *e = add(r, PROFD_NVTX_MARK, tid, t);

	e->message_id = msg;
	return e;
}

/* STRING @id = @len bytes of @text, its chunks in the same record. */
static void string_n(struct rec *r, uint32_t id, const char *text, size_t len, uint8_t flags)
{
	uint32_t chunks = (len + PROFD_NVTX_TEXT_CHUNK - 1) / PROFD_NVTX_TEXT_CHUNK;
	struct profd_nvtx_event *e;

	if (r->h.n + 1 + chunks > PROFD_NVTX_BATCH_MAX)
		send(r);
	e = add(r, PROFD_NVTX_STRING, r->h.tid, 0);
	e->id = id;
	e->payload = len;
	e->flags = flags;
	memcpy(&r->ev[r->h.n], text, len);
	r->h.n += chunks;
}

static void string(struct rec *r, uint32_t id, const char *text)
{
	string_n(r, id, text, strlen(text), 0);
}

static void name_event(struct rec *r, uint16_t kind, uint32_t domain, uint32_t category,
		       uint64_t id, uint32_t msg)
{
	struct profd_nvtx_event *e = add(r, kind, r->h.tid, 0);

	e->domain_id = domain;
	e->category = category;
	e->id = id;
	e->message_id = msg;
}

/* --- the clock ---------------------------------------------------------------------- */

static void test_clock(void)
{
	struct clock_sync c, f;
	int64_t worst = 0;

	clock_sync_init(&c);
	for (int i = 0; i < 100; i++) {
		uint64_t mono = clock_mono_ns(), real = clock_real_ns();
		int64_t d = (int64_t)(real - clock_sync_to_unix(&c, mono));

		if (d < 0)
			d = -d;
		if (d > worst)
			worst = d;
	}
	CHECK(worst < 1000000, "clock: |REALTIME - converted MONOTONIC| = %lld ns < 1 ms",
	      (long long)worst);
	CHECK(clock_sync_offset(&c) > 0, "clock: offset REALTIME - MONOTONIC > 0");
	CHECK(!clock_sync_maybe(&c, c.synced_mono_ns + CLOCK_SYNC_PERIOD_NS - 1) &&
	      clock_sync_maybe(&c, c.synced_mono_ns + CLOCK_SYNC_PERIOD_NS),
	      "clock: re-synced after CLOCK_SYNC_PERIOD_NS, not before");
	clock_sync_init_fixed(&f, OFFSET);
	CHECK(clock_sync_to_unix(&f, 5) == (uint64_t)OFFSET + 5 && !clock_sync_maybe(&f, 1ULL << 62) &&
	      clock_sync_offset(&f) == OFFSET, "clock: a fixed clock converts exactly and stays");
	CHECK(clock_sync_to_unix(&f, UINT64_MAX - 10) == UINT64_MAX,
	      "clock: garbage times saturate instead of wrapping");
	clock_sync_init_fixed(&f, -100);
	CHECK(clock_sync_to_unix(&f, 50) == 0 && clock_sync_to_unix(&f, 150) == 50,
	      "clock: no time before the epoch");
}

/* A range opened now on the tracer's own clock starts at about REALTIME now. */
static void test_own_clock(void)
{
	struct capture c;
	struct rec r;
	uint64_t mono, real;
	int64_t d;

	cur = tracer(&c, 0, 0, true);
	rec_init(&r, PID, 1);
	mono = clock_mono_ns();
	real = clock_real_ns();
	push(&r, 1, mono - T0, 0);
	pop(&r, 1, mono - T0 + 1000);
	send(&r);
	nvtx_free(cur);
	d = c.nspans == 1 ? (int64_t)(c.spans[0].start - real) : INT64_MAX;
	CHECK(d > -1000000 && d < 1000000, "own clock: span start within 1 ms of REALTIME (%lld ns)",
	      (long long)d);
	CHECK(c.nspans == 1 && !strcmp(c.spans[0].name, "(unnamed)") &&
	      c.spans[0].end - c.spans[0].start == 1000,
	      "own clock: a range with no message is \"(unnamed)\", its length kept");
	capture_free(&c);
}

/* --- spans ------------------------------------------------------------------------- */

/*
 * Thread 101: A(B(C), D); thread 102: E(F); thread 103: G. Thread 101's
 * batch is split in two with the others in between.
 */
static void test_nested(void)
{
	static const char *names[] = { "", "A", "B", "C", "D", "E", "F", "G" };
	const struct c_span *s[8] = { 0 };
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	bool ok = true;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 101);
	for (uint32_t i = 1; i <= 7; i++)
		string(&r, i, names[i]);
	send(&r);
	push(&r, 101, 100, 1);
	push(&r, 101, 200, 2);
	push(&r, 101, 300, 3);
	pop(&r, 101, 400);
	send(&r);
	rec_init(&r, PID, 102);
	push(&r, 102, 150, 5);
	push(&r, 102, 250, 6);
	pop(&r, 102, 350);
	pop(&r, 102, 450);
	send(&r);
	rec_init(&r, PID, 103);
	push(&r, 103, 160, 7);
	pop(&r, 103, 170);
	send(&r);
	rec_init(&r, PID, 101);
	pop(&r, 101, 500);
	push(&r, 101, 600, 4);
	pop(&r, 101, 700);
	pop(&r, 101, 800);
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);

	CHECK(c.nspans == 7, "nested: 7 spans (%zu)", c.nspans);
	for (int i = 1; i <= 7; i++) {
		s[i] = span_named(&c, names[i]);
		ok = ok && s[i] && spans_named(&c, names[i]) == 1 && s[i]->pid == PID &&
		     !strcmp(s[i]->scope, "profd.nvtx");
	}
	CHECK(ok, "nested: one span per range, pid and default scope \"profd.nvtx\"");
	if (!ok)
		goto out;
	CHECK(root(s[1]) && child_of(s[2], s[1]) && child_of(s[3], s[2]) && child_of(s[4], s[1]),
	      "nested: thread 101's tree A(B(C), D)");
	CHECK(root(s[5]) && child_of(s[6], s[5]), "nested: thread 102's tree E(F)");
	CHECK(root(s[7]), "nested: thread 103's G is a root");
	CHECK(memcmp(s[1]->trace, s[5]->trace, 16) && memcmp(s[1]->trace, s[7]->trace, 16) &&
	      memcmp(s[5]->trace, s[7]->trace, 16), "nested: one trace per top-level range");
	ok = true;
	for (int i = 1; i <= 7; i++)
		for (int k = i + 1; k <= 7; k++)
			ok = ok && memcmp(s[i]->span, s[k]->span, 8);
	CHECK(ok, "nested: span ids distinct and non-zero");
	CHECK(s[1]->start == OFFSET + T0 + 100 && s[1]->end == OFFSET + T0 + 800 &&
	      s[3]->start == OFFSET + T0 + 300 && s[3]->end == OFFSET + T0 + 400 &&
	      s[4]->start == OFFSET + T0 + 600 && s[4]->end == OFFSET + T0 + 700 &&
	      s[6]->start == OFFSET + T0 + 250 && s[6]->end == OFFSET + T0 + 350,
	      "nested: times are MONOTONIC + the clock's offset, exactly");
	CHECK(span_index(&c, s[3]) < span_index(&c, s[2]) &&
	      span_index(&c, s[2]) < span_index(&c, s[1]) &&
	      span_index(&c, s[4]) < span_index(&c, s[1]), "nested: children emitted before parents");
	CHECK(attr_is_int(s[3]->attrs, s[3]->nattrs, "thread.id", 101) &&
	      attr_is_int(s[6]->attrs, s[6]->nattrs, "thread.id", 102) &&
	      !attr(s[3]->attrs, s[3]->nattrs, "thread.name") &&
	      !attr(s[3]->attrs, s[3]->nattrs, "nvtx.category") &&
	      !attr(s[3]->attrs, s[3]->nattrs, "nvtx.color") &&
	      !attr(s[3]->attrs, s[3]->nattrs, "nvtx.payload") && !unfinished(s[3]),
	      "nested: thread.id; no name, category, color, payload, unfinished");
	CHECK(st.spans == 7 && st.events == 7 + 14 && st.logs == 0 && st.unfinished == 0 &&
	      st.pops_unmatched == 0 && st.strings_unknown == 0 && st.malformed == 0,
	      "nested: stats spans 7, events 21, nothing else");
out:
	nvtx_free(cur);
	capture_free(&c);
}

/* A start on thread 201 inside push P, ended on thread 202; a mark in it. */
static void test_cross_thread(void)
{
	const struct c_span *p, *a;
	struct capture c;
	struct rec r;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 201);
	string(&r, 1, "P");
	string(&r, 2, "async");
	string(&r, 3, "inside");
	string(&r, 4, "outside");
	push(&r, 201, 10, 1);
	start(&r, 201, 20, 77, 2);
	pop(&r, 201, 30);
	mark(&r, 201, 40, 3);
	send(&r);
	rec_init(&r, PID, 202);
	end(&r, 202, 50, 77);
	send(&r);
	rec_init(&r, PID, 201);
	mark(&r, 201, 60, 4);
	send(&r);
	nvtx_stop(cur);

	p = span_named(&c, "P");
	a = span_named(&c, "async");
	CHECK(c.nspans == 2 && p && a && root(p) && child_of(a, p),
	      "start/end: one span, its parent the push open on the starting thread");
	CHECK(a && a->start == OFFSET + T0 + 20 && a->end == OFFSET + T0 + 50 &&
	      attr_is_int(a->attrs, a->nattrs, "thread.id", 201),
	      "start/end: from the start to the end on the other thread; thread.id the starter");
	CHECK(a && a->nevents == 1 && !strcmp(a->events[0].name, "inside") &&
	      a->events[0].time == OFFSET + T0 + 40,
	      "start/end: a mark after the push popped is an event of the start range");
	CHECK(c.nlogs == 1 && !strcmp(c.logs[0].body, "outside"),
	      "start/end: a mark after the end is a log record");
	nvtx_free(cur);
	capture_free(&c);
}

/*
 * Thread 302's end of range 78 arrives before thread 301's batch with its
 * start (and a push inside it, a mark inside, a mark after the end).
 * Range 79's end also comes first and nothing follows on its thread.
 */
static void test_end_first(void)
{
	const struct c_span *a, *in, *b;
	struct nvtx_stats st;
	struct capture c;
	struct rec r;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 301);
	string(&r, 1, "early");
	string(&r, 2, "child");
	string(&r, 3, "m-in");
	string(&r, 4, "m-after");
	string(&r, 5, "lonely");
	send(&r);
	rec_init(&r, PID, 302);
	end(&r, 302, 500, 78);
	end(&r, 302, 900, 79);
	send(&r);
	rec_init(&r, PID, 301);
	start(&r, 301, 100, 78, 1);
	push(&r, 301, 200, 2);
	pop(&r, 301, 300);
	mark(&r, 301, 400, 3);
	mark(&r, 301, 600, 4);
	send(&r);
	rec_init(&r, PID, 303);
	start(&r, 303, 800, 79, 5);
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);

	a = span_named(&c, "early");
	in = span_named(&c, "child");
	b = span_named(&c, "lonely");
	CHECK(c.nspans == 3 && a && spans_named(&c, "early") == 1 && root(a) &&
	      a->start == OFFSET + T0 + 100 && a->end == OFFSET + T0 + 500,
	      "end first: still one span, from its start to the end that came first");
	CHECK(child_of(in, a), "end first: a push inside it is its child");
	CHECK(a && a->nevents == 1 && !strcmp(a->events[0].name, "m-in") && c.nlogs == 1 &&
	      !strcmp(c.logs[0].body, "m-after"),
	      "end first: a mark before the end is its event, one after it a log");
	CHECK(b && b->start == OFFSET + T0 + 800 && b->end == OFFSET + T0 + 900 && !unfinished(b),
	      "end first: with no later call on its thread, it ends at its end by stop");
	CHECK(st.ends_unknown == 0 && st.unfinished == 0, "end first: no end unknown, none unfinished");
	nvtx_free(cur);
	capture_free(&c);
}

/* Marks: span events and log records, with every attribute. */
static void test_marks(void)
{
	const struct c_span *s;
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	struct profd_nvtx_event *e;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 401);
	string(&r, 1, "range");
	string(&r, 2, "tick");
	string(&r, 3, "alone");
	string(&r, 4, "dom");
	name_event(&r, PROFD_NVTX_DOMAIN, 9, 0, 0, 4);
	push(&r, 401, 10, 1);
	e = mark(&r, 401, 20, 2);
	e->category = 3;
	e->flags = PROFD_NVTX_F_COLOR;
	e->color = 0x80abcdef;
	e->payload_type = PROFD_NVTX_PAYLOAD_U32;
	e->payload = 7;
	mark(&r, 401, 25, 0);
	pop(&r, 401, 30);
	e = mark(&r, 401, 40, 3);
	e->domain_id = 9;
	e->category = 4;
	e->flags = PROFD_NVTX_F_COLOR;
	e->color = 0x00ff0000;
	e->payload_type = PROFD_NVTX_PAYLOAD_DOUBLE;
	{
		double d = -0.25;

		memcpy(&e->payload, &d, 8);
	}
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);

	s = span_named(&c, "range");
	CHECK(s && s->nevents == 2 && !strcmp(s->events[0].name, "tick") &&
	      s->events[0].time == OFFSET + T0 + 20 && !strcmp(s->events[1].name, "(unnamed)"),
	      "marks: inside a range, span events in order (a message-less one \"(unnamed)\")");
	CHECK(s && s->nevents == 2 && s->events[0].nattrs == 3 &&
	      attr_is_int(s->events[0].attrs, 3, "nvtx.category", 3) &&
	      attr_is_str(s->events[0].attrs, 3, "nvtx.color", "#abcdef") &&
	      attr_is_int(s->events[0].attrs, 3, "nvtx.payload", 7) && s->events[1].nattrs == 0,
	      "marks: event attributes category, color, payload");
	CHECK(c.nlogs == 1 && !strcmp(c.logs[0].body, "alone") && c.logs[0].severity == 9 &&
	      !strcmp(c.logs[0].severity_text, "INFO") && c.logs[0].time == OFFSET + T0 + 40 &&
	      !strcmp(c.logs[0].scope, "dom") && c.logs[0].pid == PID,
	      "marks: outside, a log record: body, INFO, time, domain scope");
	CHECK(c.nlogs == 1 && attr_is_int(c.logs[0].attrs, c.logs[0].nattrs, "thread.id", 401) &&
	      attr_is_int(c.logs[0].attrs, c.logs[0].nattrs, "nvtx.category", 4) &&
	      attr_is_str(c.logs[0].attrs, c.logs[0].nattrs, "nvtx.color", "#ff0000") &&
	      attr_is_double(c.logs[0].attrs, c.logs[0].nattrs, "nvtx.payload", -0.25),
	      "marks: log attributes thread.id, category, color, payload");
	CHECK(st.span_events == 2 && st.logs == 1 && st.spans == 1, "marks: stats 2 events, 1 log");
	nvtx_free(cur);
	capture_free(&c);
}

/* One trace X(Y(mark), Z) on thread @tid at T0 + @t. */
static void trace3(struct rec *r, uint32_t tid, uint64_t t)
{
	push(r, tid, t, 1);
	push(r, tid, t, 2);
	mark(r, tid, t, 4);
	pop(r, tid, t);
	push(r, tid, t, 3);
	pop(r, tid, t);
	pop(r, tid, t);
}

/*
 * max 10 spans/s: 100 traces of 3 spans at one instant keep 4 (10 -> 7
 * -> 4 -> 1 -> -2), one second later 10 more keep 3 (8 -> 5 -> 2 -> -1).
 */
static void test_budget(void)
{
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	size_t complete = 0, ntraces = 0;

	cur = tracer(&c, 10, 0, false);
	rec_init(&r, PID, 501);
	string(&r, 1, "X");
	string(&r, 2, "Y");
	string(&r, 3, "Z");
	string(&r, 4, "m");
	for (int i = 0; i < 100; i++)
		trace3(&r, 501 + i % 3, 1000);
	for (int i = 0; i < 10; i++)
		trace3(&r, 501 + i % 3, 1000 + SEC);
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);

	CHECK(st.spans == 21 && c.nspans == 21 && st.spans_dropped_budget == 309,
	      "budget: 7 traces kept (21 spans), 103 dropped (309 spans) (%llu, %llu)",
	      (unsigned long long)st.spans, (unsigned long long)st.spans_dropped_budget);
	CHECK(st.span_events == 7 && st.marks_dropped_budget == 103,
	      "budget: marks of dropped traces dropped (103), of kept ones events (7)");
	for (size_t i = 0; i < c.nspans; i++) {
		const struct c_span *x = &c.spans[i], *y = NULL, *z = NULL;
		size_t same = 0;

		if (strcmp(x->name, "X"))
			continue;
		ntraces++;
		for (size_t k = 0; k < c.nspans; k++) {
			if (memcmp(c.spans[k].trace, x->trace, 16))
				continue;
			same++;
			if (!strcmp(c.spans[k].name, "Y"))
				y = &c.spans[k];
			if (!strcmp(c.spans[k].name, "Z"))
				z = &c.spans[k];
		}
		complete += same == 3 && root(x) && child_of(y, x) && child_of(z, x) &&
			    y->nevents == 1;
	}
	CHECK(ntraces == 7 && complete == 7, "budget: every kept trace complete (%zu of %zu)",
	      complete, ntraces);
	nvtx_free(cur);
	capture_free(&c);
}

/* A pop with nothing open (known and unknown thread), an end of an unknown id. */
static void test_unmatched(void)
{
	struct nvtx_stats st;
	struct capture c;
	struct rec r;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 601);
	push(&r, 601, 10, 0);
	pop(&r, 601, 20);
	pop(&r, 601, 30);
	pop(&r, 602, 30);
	end(&r, 601, 40, 999);
	end(&r, 601, 41, 999);
	push(&r, 601, 50, 12345);
	pop(&r, 601, 60);
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(st.pops_unmatched == 2, "unmatched: 2 pops with nothing open (%llu)",
	      (unsigned long long)st.pops_unmatched);
	CHECK(st.ends_unknown == 2, "unmatched: an end of an unknown id (twice) counted at stop (%llu)",
	      (unsigned long long)st.ends_unknown);
	CHECK(c.nspans == 2 && span_named(&c, "[nvtx: unknown string]") && st.strings_unknown == 1,
	      "unmatched: an undefined message id names \"[nvtx: unknown string]\", counted");
	nvtx_free(cur);
	capture_free(&c);
}

/* Process exit (after the grace) and stop close open ranges as unfinished. */
static void test_exit_and_stop(void)
{
	const struct c_span *outer, *inner, *async, *held;
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	uint64_t before, after;
	size_t early;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID + 1, 701);
	string(&r, 1, "outer");
	string(&r, 2, "inner");
	string(&r, 3, "async");
	push(&r, 701, 10, 1);
	push(&r, 701, 20, 2);
	start(&r, 702, 30, 5, 3);
	send(&r);
	rec_init(&r, PID + 2, 703);
	string(&r, 1, "held");
	end(&r, 704, 40, 9);
	send(&r);
	start(&r, 703, 30, 9, 1);	/* its end came first, nothing follows */
	push(&r, 703, 10, 0);
	send(&r);
	before = clock_mono_ns();
	nvtx_process_exit(cur, PID + 1);
	usleep(300000);
	pthread_mutex_lock(&c.lock);
	early = c.nspans;
	pthread_mutex_unlock(&c.lock);
	CHECK(early == 0, "exit: nothing closed within the grace");
	CHECK(wait_spans(&c, 4, 5000), "exit: 3 spans closed after the grace");
	after = clock_mono_ns();
	st = stats(cur);
	pthread_mutex_lock(&c.lock);
	outer = span_named(&c, "outer");
	inner = span_named(&c, "inner");
	async = span_named(&c, "async");
	held = span_named(&c, "held");
	CHECK(held && held->start == OFFSET + T0 + 30 && held->end == OFFSET + T0 + 40 &&
	      !unfinished(held) && held->pid == PID + 2,
	      "end first: a start held for its thread's next call closes at its end after 1 s");
	CHECK(c.nspans == 4 && outer && inner && async && unfinished(outer) && unfinished(inner) &&
	      unfinished(async) && child_of(inner, outer) && root(async),
	      "exit: open ranges as spans with nvtx.unfinished = true");
	CHECK(outer && outer->end >= OFFSET + before + NVTX_EXIT_GRACE_NS &&
	      outer->end <= OFFSET + after && span_index(&c, inner) < span_index(&c, outer),
	      "exit: they end when closed (after the grace), inner first");
	pthread_mutex_unlock(&c.lock);
	CHECK(st.unfinished == 3, "exit: unfinished 3 (%llu)", (unsigned long long)st.unfinished);

	before = clock_mono_ns();
	nvtx_stop(cur);
	after = clock_mono_ns();
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(c.nspans == 5 && unfinished(&c.spans[4]) && c.spans[4].pid == PID + 2 &&
	      c.spans[4].end >= OFFSET + before && c.spans[4].end <= OFFSET + after &&
	      st.unfinished == 4, "stop: the other process's open range, unfinished, ends at stop");
	rec_init(&r, PID, 701);
	push(&r, 701, 10, 0);
	send(&r);
	st = stats(cur);
	CHECK(c.nspans == 5 && st.queue_full == 1, "stop: idempotent; records after it are lost, counted");
	CHECK(c.ticks > 0, "ticks: the output ticked (%llu)", (unsigned long long)c.ticks);
	nvtx_free(cur);
	capture_free(&c);
}

/* --- strings and names -------------------------------------------------------------- */

/* Texts of every chunk boundary, a cut 1024-byte one, invalid UTF-8, a redefinition. */
static void test_strings(void)
{
	static const size_t lens[] = { 0, 1, 47, 48, 49, 96, 100, 1023 };
	char text[PROFD_NVTX_STRING_MAX], want[PROFD_NVTX_STRING_MAX + 1];
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	bool ok = true;
	uint32_t id = 1;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 801);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (size_t k = 0; k < lens[i]; k++)
			text[k] = 'a' + (k + i) % 26;
		string_n(&r, id, text, lens[i], 0);
		push(&r, 801, 10, id);
		pop(&r, 801, 20);
		id++;
	}
	for (size_t k = 0; k < sizeof(text); k++)
		text[k] = 'A' + k % 26;
	string_n(&r, 100, text, sizeof(text), PROFD_NVTX_F_CUT);
	push(&r, 801, 10, 100);
	pop(&r, 801, 20);
	string_n(&r, 101, "a\xff" "b\xc3", 4, 0);
	string(&r, 102, "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80");
	string_n(&r, 103, "ov\xc0\xaf sur\xed\xa0\x80 big\xf4\x90\x80\x80", 19, 0);
	string_n(&r, 104, "nul\0in", 6, 0);
	string(&r, 105, "first");
	string(&r, 105, "second");
	for (uint32_t s = 101; s <= 105; s++) {
		push(&r, 801, 10, s);
		pop(&r, 801, 20);
	}
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (size_t k = 0; k < lens[i]; k++)
			want[k] = 'a' + (k + i) % 26;
		want[lens[i]] = '\0';
		ok = ok && spans_named(&c, lens[i] ? want : "(unnamed)") == 1;
	}
	CHECK(ok, "strings: texts of 0, 1, 47, 48, 49, 96, 100, 1023 bytes whole (empty: \"(unnamed)\")");
	for (size_t k = 0; k < sizeof(text); k++)
		want[k] = 'A' + k % 26;
	want[sizeof(text)] = '\0';
	CHECK(span_named(&c, want) != NULL, "strings: a cut 1024-byte text kept as its 1024 bytes");
	CHECK(span_named(&c, "a?b?") && span_named(&c, "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80") &&
	      span_named(&c, "ov?? sur??? big????") && span_named(&c, "nul?in"),
	      "strings: invalid UTF-8 (and NUL) bytes become '?', valid UTF-8 stays");
	CHECK(span_named(&c, "second") && !span_named(&c, "first"),
	      "strings: a redefinition replaces the text");
	CHECK(c.nspans == 14 && st.strings_unknown == 0 && st.malformed == 0,
	      "strings: 14 spans, nothing unknown or malformed");
	nvtx_free(cur);
	capture_free(&c);
}

/* Over NVTX_MAX_STRINGS (65536): least recently used strings are evicted. */
static void test_string_lru(void)
{
	const uint32_t total = 65536 + 100;
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	char text[16];

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 901);
	for (uint32_t id = 1; id <= total; id++) {
		snprintf(text, sizeof(text), "s%u", id);
		string(&r, id, text);
		if (id == 60000)
			mark(&r, 901, 5, 1);	/* uses string 1: now recent */
	}
	push(&r, 901, 10, 1);
	pop(&r, 901, 20);
	push(&r, 901, 10, 2);
	pop(&r, 901, 20);
	push(&r, 901, 10, 101);
	pop(&r, 901, 20);
	push(&r, 901, 10, 102);
	pop(&r, 901, 20);
	push(&r, 901, 10, total);
	pop(&r, 901, 20);
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(c.nspans == 5 && !strcmp(c.spans[0].name, "s1") &&
	      !strcmp(c.spans[1].name, "[nvtx: unknown string]") &&
	      !strcmp(c.spans[2].name, "[nvtx: unknown string]") && !strcmp(c.spans[3].name, "s102") &&
	      !strcmp(c.spans[4].name, "s65636") && st.strings_unknown == 2,
	      "strings: over 65536, the 100 least recently used evicted (a used old one kept)");
	nvtx_free(cur);
	capture_free(&c);
}

static void test_names(void)
{
	const struct c_span *s;
	struct capture c;
	struct rec r;
	struct profd_nvtx_event *e;
	char comm[32] = "";
	FILE *f;
	bool ok;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 1001);
	string(&r, 1, "my.domain");
	string(&r, 2, "io");
	string(&r, 3, "worker-1");
	string(&r, 4, "dom-range");
	string(&r, 5, "payload");
	string(&r, 6, "after-destroy");
	string(&r, 7, "stream 7");
	name_event(&r, PROFD_NVTX_DOMAIN, 3, 0, 0, 1);
	name_event(&r, PROFD_NVTX_NAME_CATEGORY, 3, 7, 0, 2);
	name_event(&r, PROFD_NVTX_NAME_THREAD, 0, 0, 1001, 3);
	name_event(&r, PROFD_NVTX_NAME_RESOURCE, 0, PROFD_NVTX_RES_CUDA_STREAM, 0x7f00, 7);
	e = push(&r, 1001, 10, 4);
	e->domain_id = 3;
	e->category = 7;
	e->flags = PROFD_NVTX_F_COLOR;
	e->color = 0xff123456;
	e->payload_type = PROFD_NVTX_PAYLOAD_I64;
	e->payload = (uint64_t)-5;
	pop(&r, 1001, 20);
	/* category 7 of the default domain is not named */
	e = push(&r, 1001, 30, 5);
	e->category = 7;
	pop(&r, 1001, 40);
	{
		static const struct { uint8_t type; uint64_t bits; } pl[] = {
			{ PROFD_NVTX_PAYLOAD_U64, 1ULL << 40 },
			{ PROFD_NVTX_PAYLOAD_U32, 0xffffffffULL },
			{ PROFD_NVTX_PAYLOAD_I32, 0x12345678fffffffeULL },
			{ PROFD_NVTX_PAYLOAD_DOUBLE, 0x4004000000000000ULL },	/* 2.5 */
			{ PROFD_NVTX_PAYLOAD_FLOAT, 0x3fc00000ULL },		/* 1.5f */
			{ 77, 1 },						/* unknown type */
		};

		for (size_t i = 0; i < sizeof(pl) / sizeof(pl[0]); i++) {
			e = push(&r, 1002, 50 + i, 5);
			e->payload_type = pl[i].type;
			e->payload = pl[i].bits;
			pop(&r, 1002, 60 + i);
		}
	}
	name_event(&r, PROFD_NVTX_DOMAIN_DESTROY, 3, 0, 0, 0);
	e = push(&r, 1001, 70, 6);
	e->domain_id = 3;
	pop(&r, 1001, 80);
	send(&r);
	/* our own thread: its thread.name is read from /proc once */
	rec_init(&r, getpid(), gettid());
	push(&r, gettid(), 90, 0);
	pop(&r, gettid(), 100);
	send(&r);
	nvtx_stop(cur);

	s = span_named(&c, "dom-range");
	CHECK(s && !strcmp(s->scope, "my.domain"), "names: a domain's name is the scope name");
	CHECK(s && attr_is_str(s->attrs, s->nattrs, "nvtx.category", "io") &&
	      attr_is_str(s->attrs, s->nattrs, "nvtx.color", "#123456") &&
	      attr_is_int(s->attrs, s->nattrs, "nvtx.payload", -5) &&
	      attr_is_str(s->attrs, s->nattrs, "thread.name", "worker-1") && s->nattrs == 5,
	      "names: category name, color #rrggbb, I64 payload, NVTX thread name");
	ok = c.nspans == 10;
	for (size_t i = 0; ok && i < c.nspans; i++) {
		if (strcmp(c.spans[i].name, "payload") ||
		    !attr_is_int(c.spans[i].attrs, c.spans[i].nattrs, "thread.id", 1001))
			continue;
		ok = attr_is_int(c.spans[i].attrs, c.spans[i].nattrs, "nvtx.category", 7) &&
		     !strcmp(c.spans[i].scope, "profd.nvtx");
	}
	CHECK(ok, "names: an unnamed category is its number (domains keep their own)");
	ok = c.nspans == 10;
	if (ok) {
		const struct c_span *p = &c.spans[2];

		ok = attr_is_int(p[0].attrs, p[0].nattrs, "nvtx.payload", 1LL << 40) &&
		     attr_is_int(p[1].attrs, p[1].nattrs, "nvtx.payload", 4294967295LL) &&
		     attr_is_int(p[2].attrs, p[2].nattrs, "nvtx.payload", -2) &&
		     attr_is_double(p[3].attrs, p[3].nattrs, "nvtx.payload", 2.5) &&
		     attr_is_double(p[4].attrs, p[4].nattrs, "nvtx.payload", 1.5) &&
		     !attr(p[5].attrs, p[5].nattrs, "nvtx.payload") &&
		     !attr(p[0].attrs, p[0].nattrs, "thread.name");
	}
	CHECK(ok, "names: payloads U64, U32, I32, DOUBLE, FLOAT; none of an unknown type");
	s = span_named(&c, "after-destroy");
	CHECK(s && !strcmp(s->scope, "profd.nvtx"), "names: a destroyed domain's ranges: default scope");
	f = fopen("/proc/thread-self/comm", "r");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	s = c.nspans == 10 ? &c.spans[9] : NULL;
	CHECK(s && *comm && attr_is_str(s->attrs, s->nattrs, "thread.name", comm),
	      "names: a thread without an NVTX name: its comm \"%s\"", comm);
	nvtx_free(cur);
	capture_free(&c);
}

/* --- bounds and bad input --------------------------------------------------------------- */

static void test_depth(void)
{
	struct nvtx_stats st;
	struct capture c;
	struct rec r;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 1101);
	for (int i = 0; i < 1030; i++)
		push(&r, 1101, 10 + i, 0);
	for (int i = 0; i < 1030; i++)
		pop(&r, 1101, 2000 + i);
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(c.nspans == 1024 && st.tables_full == 6 && st.pops_unmatched == 0 &&
	      c.spans[c.nspans - 1].start == OFFSET + T0 + 10 &&
	      c.spans[c.nspans - 1].end == OFFSET + T0 + 2000 + 1029 && c.spans[0].end == OFFSET + T0 + 2006,
	      "depth: 1024 open per thread; the pops of 6 refused pushes close nothing");
	nvtx_free(cur);
	capture_free(&c);
}

/* Threads (idle ones evicted), processes, open ranges per process. */
static void test_bounds(void)
{
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	uint32_t ntid = 65536 + 1;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 1);
	string(&r, 1, "t");
	for (uint32_t tid = 1; tid <= ntid; tid++)
		name_event(&r, PROFD_NVTX_NAME_THREAD, 0, 0, tid, 1);
	push(&r, 1, 10, 0);
	pop(&r, 1, 20);
	push(&r, ntid, 10, 0);
	pop(&r, ntid, 20);
	send(&r);
	for (uint32_t pid = 0; pid < 4096; pid++) {
		rec_init(&r, PID + 10 + pid, 7);
		mark(&r, 7, 10, 0);
		send(&r);
	}
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(c.nspans == 2 && !attr(c.spans[0].attrs, c.spans[0].nattrs, "thread.name") &&
	      attr_is_str(c.spans[1].attrs, c.spans[1].nattrs, "thread.name", "t"),
	      "bounds: over 65536 threads the longest idle is forgotten (its name with it)");
	CHECK(c.nlogs == 4095 && st.tables_full == 1,
	      "bounds: 4096 processes; the next one's events dropped, counted (%llu)",
	      (unsigned long long)st.tables_full);
	nvtx_free(cur);
	capture_free(&c);

	cur = tracer(&c, 0, 0, false);
	c.count_only = true;
	rec_init(&r, PID, 1);
	for (uint64_t id = 0; id < 65536 + 3; id++)
		start(&r, 1 + id / 1000, 10, id, 0);
	for (uint64_t id = 0; id < 65536 + 3; id++)
		end(&r, 1, 20, id);
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(c.nspans == 65536 && st.tables_full == 3 && st.ends_unknown == 3 && c.nbad == 0,
	      "bounds: 65536 open ranges per process; starts beyond refused, their ends unknown");
	nvtx_free(cur);
	capture_free(&c);
}

static void test_malformed(void)
{
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	struct profd_nvtx_event *e;

	cur = tracer(&c, 0, 0, false);
	rec_init(&r, PID, 1201);
	CHECK(nvtx_record(cur, &r, sizeof(r.h) - 1) == -EINVAL, "malformed: short header -EINVAL");
	r.h.type = PROFD_EVENT_NVTX + 1;
	CHECK(nvtx_record(cur, &r, sizeof(r)) == -EINVAL, "malformed: wrong type -EINVAL");
	r.h.type = PROFD_EVENT_NVTX;
	r.h.n = PROFD_NVTX_BATCH_MAX + 1;
	CHECK(nvtx_record(cur, &r, sizeof(r)) == -EINVAL, "malformed: n > 64 -EINVAL");
	r.h.n = 3;
	CHECK(nvtx_record(cur, &r, sizeof(r.h) + 2 * sizeof(r.ev[0])) == -EINVAL,
	      "malformed: fewer bytes than n events -EINVAL");
	r.h.n = 0;
	CHECK(nvtx_record(cur, &r, sizeof(r.h)) == 0 && nvtx_record(cur, &r, sizeof(r)) == 0,
	      "malformed: an empty batch, and trailing bytes, are fine");
	add(&r, 99, 1201, 0);
	e = add(&r, PROFD_NVTX_STRING, 1201, 0);
	e->id = 1;
	e->payload = 100;	/* 3 chunks, only 1 follows */
	add(&r, PROFD_NVTX_PUSH, 1201, 0);
	send(&r);
	e = add(&r, PROFD_NVTX_STRING, 1201, 0);
	e->id = 2;
	e->payload = 5000;	/* over PROFD_NVTX_STRING_MAX */
	add(&r, PROFD_NVTX_PUSH, 1201, 0);
	send(&r);
	start(&r, 1201, 10, 5, 0);
	start(&r, 1201, 11, 5, 0);
	end(&r, 1201, 12, 5);
	send(&r);
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(st.malformed == 4 && c.nspans == 1 && st.events == 6,
	      "malformed: unknown kind, cut and oversized strings (rest skipped), a start of an open id");
	nvtx_free(cur);
	capture_free(&c);
}

/* The tracer held in its output: records beyond the 64 KiB queue are dropped, counted. */
/*
 * nvtx_batch_process_info: the identity a session begins with, found by
 * the message ids of its PROFD_NVTX_PROCESS events; text chunks that
 * look like events, a cut executable path and broken records are not
 * taken.
 */
static void test_process_info(void)
{
	struct profd_nvtx_event fake = { .kind = PROFD_NVTX_PROCESS, .id = 1, .message_id = 9 };
	struct nvtx_process_info info;
	char cut[PROFD_NVTX_STRING_MAX];
	struct rec r;
	size_t size;
	int n;

	rec_init(&r, PID, 901);
	string(&r, 7, "/opt/app/bin/train");
	string(&r, 8, "train --epochs 3");
	string_n(&r, 9, (const char *)&fake, sizeof(fake), 0);	/* looks like an event */
	name_event(&r, PROFD_NVTX_PROCESS, 0, 0, PROFD_NVTX_PROC_EXE_PATH, 7);
	name_event(&r, PROFD_NVTX_PROCESS, 0, 0, PROFD_NVTX_PROC_COMMAND_LINE, 8);
	name_event(&r, PROFD_NVTX_PROCESS, 0, 0, 77, 8);		/* unknown attribute */
	name_event(&r, PROFD_NVTX_HELLO, 0, 0, 0, 0);
	size = sizeof(r.h) + r.h.n * sizeof(r.ev[0]);
	n = nvtx_batch_process_info(&r, size, &info);
	CHECK(n == 2 && !strcmp(info.exe_path, "/opt/app/bin/train") &&
	      !strcmp(info.command_line, "train --epochs 3") && !info.service_name[0],
	      "process info: %d attributes, exe '%s', command line '%s', service '%s'",
	      n, info.exe_path, info.command_line, info.service_name);
	CHECK(nvtx_batch_process_info(&r, size - 1, &info) == 0 && !info.exe_path[0],
	      "process info: a record shorter than its events is not read");
	r.ev[0].payload = PROFD_NVTX_STRING_MAX + 1;
	CHECK(nvtx_batch_process_info(&r, size, &info) == 0,
	      "process info: a string longer than the bound spoils the record");

	rec_init(&r, PID, 901);
	memset(cut, 'x', sizeof(cut));
	string_n(&r, 5, cut, sizeof(cut), PROFD_NVTX_F_CUT);
	string(&r, 6, "svc-a");
	name_event(&r, PROFD_NVTX_PROCESS, 0, 0, PROFD_NVTX_PROC_EXE_PATH, 5);
	name_event(&r, PROFD_NVTX_PROCESS, 0, 0, PROFD_NVTX_PROC_SERVICE_NAME, 6);
	name_event(&r, PROFD_NVTX_PROCESS, 0, 0, PROFD_NVTX_PROC_COMMAND_LINE, 99);
	n = nvtx_batch_process_info(&r, sizeof(r.h) + r.h.n * sizeof(r.ev[0]), &info);
	CHECK(n == 1 && !info.exe_path[0] && !info.command_line[0] &&
	      !strcmp(info.service_name, "svc-a"),
	      "process info: a cut path and an undefined string are left out (%d)", n);
}

static void test_queue_full(void)
{
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	uint64_t sent = 0;
	bool blocked = false;

	cur = tracer(&c, 0, 1, false);	/* at least 64 KiB */
	c.gate_closed = true;
	rec_init(&r, PID, 1301);
	push(&r, 1301, 10, 0);
	pop(&r, 1301, 20);
	sent += r.h.n;
	send(&r);
	for (int i = 0; i < 500 && !blocked; i++) {
		usleep(2000);
		pthread_mutex_lock(&c.lock);
		blocked = c.blocked;
		pthread_mutex_unlock(&c.lock);
	}
	for (int i = 0; i < 40; i++) {
		for (int k = 0; k < 32; k++) {
			push(&r, 1301, 100, 0);
			pop(&r, 1301, 200);
		}
		sent += r.h.n;
		send(&r);
	}
	st = stats(cur);
	CHECK(blocked && st.queue_full > 0 && st.queue_full % 64 == 0,
	      "queue full: whole records dropped, their events counted (%llu)",
	      (unsigned long long)st.queue_full);
	pthread_mutex_lock(&c.lock);
	c.gate_closed = false;
	pthread_cond_broadcast(&c.cond);
	pthread_mutex_unlock(&c.lock);
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(st.events + st.queue_full == sent && c.nspans == st.events / 2,
	      "queue full: events processed + dropped = sent (%llu + %llu = %llu)",
	      (unsigned long long)st.events, (unsigned long long)st.queue_full,
	      (unsigned long long)sent);
	nvtx_free(cur);
	capture_free(&c);
}

/* --- random records ------------------------------------------------------------------ */

static uint64_t fz_state = 0x2545f4914f6cdd1dULL;

static uint64_t fz(void)
{
	fz_state ^= fz_state >> 12;
	fz_state ^= fz_state << 25;
	fz_state ^= fz_state >> 27;
	return fz_state * 0x2545f4914f6cdd1dULL;
}

/*
 * Mostly 3 processes; now and then one of 6000 (about half of them live:
 * near the 4096 bound), rarely any pid.
 */
static uint32_t fuzz_pid(void)
{
	if (fz() % 64)
		return PID + fz() % 3;
	return fz() % 256 ? PID + 3 + fz() % 6000 : (uint32_t)fz();
}

/* A record of plausible-but-wrong events: small id spaces so they interact. */
static void fuzz_record(struct rec *r)
{
	uint32_t n = fz() % (PROFD_NVTX_BATCH_MAX + 1);

	rec_init(r, fuzz_pid(), 1 + fz() % 4);
	for (uint32_t i = 0; i < n; i++) {
		struct profd_nvtx_event *e = &r->ev[i];

		if (fz() % 8 == 0) {
			uint64_t *w = (uint64_t *)e;

			for (size_t k = 0; k < sizeof(*e) / 8; k++)
				w[k] = fz();
			continue;
		}
		e->kind = fz() % 14;
		e->tid = fz() % 16 ? 1 + fz() % 4 : (uint32_t)fz();
		e->time_ns = fz() % 32 ? T0 + fz() % 100000 : fz();
		e->id = fz() % 16 ? fz() % 24 : fz();
		e->message_id = fz() % 24;
		e->domain_id = fz() % 4;
		e->category = fz() % 5;
		e->color = fz();
		e->flags = fz() % 4;
		e->payload_type = fz() % 8;
		e->payload = e->kind == PROFD_NVTX_STRING ? fz() % 1100 : fz();
		if (e->kind == PROFD_NVTX_NAME_THREAD && fz() % 2)
			e->id = 1 + fz() % 4;
	}
	r->h.n = n;
}

static void test_fuzz(double seconds)
{
	static struct nvtx_process_info pinfo;
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	uint64_t until, nrec = 0, bad = 0, qfull = 0;

	cur = tracer(&c, fz() % 2 ? 0 : 1000, 1 << 20, false);
	c.count_only = true;
	until = clock_mono_ns() + (uint64_t)(seconds * SEC);
	while (clock_mono_ns() < until) {
		for (int i = 0; i < 256; i++, nrec++) {
			size_t size;

			fuzz_record(&r);
			size = sizeof(r.h) + r.h.n * sizeof(r.ev[0]);
			switch (fz() % 32) {
			case 0:
				size = fz() % (sizeof(r) + 1);
				break;
			case 1:
				r.h.n = fz() % 256;
				break;
			case 2:
				r.h.type = fz() % 64;
				break;
			case 3:
				nvtx_process_exit(cur, fz() % 2 ? PID + fz() % 3 :
							  PID + 3 + fz() % 6000);
				break;
			}
			nvtx_batch_process_info(&r, size, &pinfo);	/* the reader's look first */
			if (nvtx_record(cur, &r, size) < 0 &&
			    size >= sizeof(r.h) + r.h.n * sizeof(r.ev[0]) &&
			    r.h.type == PROFD_EVENT_NVTX && r.h.n <= PROFD_NVTX_BATCH_MAX)
				bad++;
		}
		/* let the tracer keep up, so most records are processed */
		st = stats(cur);
		if (st.queue_full > qfull)
			usleep(2000);
		qfull = st.queue_full;
	}
	nvtx_stop(cur);
	st = stats(cur);
	CHECK(bad == 0, "fuzz: %llu records in %.1f s; no well-formed one refused",
	      (unsigned long long)nrec, seconds);
	CHECK(c.nbad == 0 && c.nspans == st.spans && c.nlogs == st.logs,
	      "fuzz: every span and log well-formed (valid UTF-8, end >= start) (%llu bad, "
	      "%zu/%zu seen); %llu events, "
	      "%llu spans, %llu logs, %llu malformed, %llu tables_full, %llu queue_full",
	      (unsigned long long)c.nbad, c.nspans, c.nlogs, (unsigned long long)st.events, (unsigned long long)st.spans,
	      (unsigned long long)st.logs, (unsigned long long)st.malformed,
	      (unsigned long long)st.tables_full, (unsigned long long)st.queue_full);
	nvtx_free(cur);
	capture_free(&c);
}

/* --- the benchmark ------------------------------------------------------------------ */

static void bench(uint64_t nspans)
{
	struct nvtx_stats st;
	struct capture c;
	struct rec r;
	uint64_t t0, t1, sent = 0;
	uint32_t tid = 0;

	cur = tracer(&c, 0, 0, false);
	c.count_only = true;
	rec_init(&r, PID, 1);
	string(&r, 1, "forward");
	string(&r, 2, "matmul");
	send(&r);
	t0 = clock_mono_ns();
	while (sent < nspans) {
		uint64_t t = clock_mono_ns() - T0;

		rec_init(&r, PID, 100 + tid);
		for (int i = 0; i < PROFD_NVTX_BATCH_MAX / 4; i++) {
			push(&r, 100 + tid, t, 1);
			push(&r, 100 + tid, t + 10, 2);
			pop(&r, 100 + tid, t + 20);
			pop(&r, 100 + tid, t + 30);
		}
		send(&r);
		sent += PROFD_NVTX_BATCH_MAX / 2;
		tid = (tid + 1) % 16;
		/* keep at most ~16 MiB in flight: measure the tracer, not drops */
		while (sent % 4096 == 0) {
			st = stats(cur);
			if (2 * sent - st.events - st.queue_full < 16 * 1024 * 1024 / 48)
				break;
			usleep(50);
		}
	}
	t1 = clock_mono_ns();
	nvtx_stop(cur);
	st = stats(cur);
	{
		double offered = sent / ((t1 - t0) / 1e9);
		double done = (clock_mono_ns() - t0) / 1e9;

		printf("bench: %llu spans offered in %.3f s (%.0f/s); %llu spans emitted in %.3f s: "
		       "%.0f spans/s end to end; queue_full %llu events\n",
		       (unsigned long long)sent, (t1 - t0) / 1e9, offered,
		       (unsigned long long)st.spans, done, st.spans / done,
		       (unsigned long long)st.queue_full);
	}
	nvtx_free(cur);
	capture_free(&c);
}

int main(int argc, char **argv)
{
	uint64_t mono = clock_mono_ns();

	setvbuf(stdout, NULL, _IOLBF, 0);
	T0 = mono > 100 * SEC ? mono - 100 * SEC : 0;
	clock_sync_init_fixed(&fixed_clock, OFFSET);
	if (argc >= 2 && !strcmp(argv[1], "--bench")) {
		bench(argc >= 3 ? strtoull(argv[2], NULL, 0) : 2000000);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--fuzz")) {
		test_fuzz(strtod(argv[2], NULL));
	} else {
		test_clock();
		test_own_clock();
		test_nested();
		test_cross_thread();
		test_end_first();
		test_marks();
		test_budget();
		test_unmatched();
		test_strings();
		test_string_lru();
		test_names();
		test_depth();
		test_bounds();
		test_malformed();
		test_process_info();
		test_queue_full();
		test_exit_and_stop();
		test_fuzz(2.0);
	}
	printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
	return failures ? 1 : 0;
}
