// SPDX-License-Identifier: GPL-2.0
/*
 * nvtx_emit.c - NVTX ranges and marks as OTLP records.
 *
 * Owns: the attributes of spans, span events and log records (thread.id,
 * thread.name, nvtx.category, nvtx.color, nvtx.payload, nvtx.unfinished),
 * reading a thread's comm (once, when first seen), the scratch
 * arrays span events are built in, and the calls to the output.
 *
 * Names: a range or mark without a message, or with an empty one, is
 * NVTX_UNNAMED ("(unnamed)"); one whose string id was never defined (or
 * was evicted) is NVTX_UNKNOWN_STRING. The scope is the domain's name,
 * NVTX_DEFAULT_SCOPE for the default domain and unnamed ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvtx/nvtx_internal.h"
#include "proc/process.h"

#define SPAN_ATTRS_MAX	6
#define MARK_ATTRS_MAX	3

static const char *name_of(const struct nvtx_str *s)
{
	return s && s->len ? s->text : NVTX_UNNAMED;
}

static const char *scope_of(const struct nvtx_str *s)
{
	return s && s->len ? s->text : NVTX_DEFAULT_SCOPE;
}

/*
 * nvtx_thread_read_comm - read /proc/PID/task/TID/comm into th->comm:
 * once per thread, when it is first seen (while it most likely lives).
 */
void nvtx_thread_read_comm(pid_t pid, struct nvtx_thread *th)
{
	size_t n;

	th->comm_state = 2;
	proc_read_comm(pid, (pid_t)th->tid, th->comm, sizeof(th->comm));
	n = strlen(th->comm);
	if (!n)
		return;
	nvtx_utf8_sanitize(th->comm, n);
	th->comm_state = 1;
}

/* thread.name: the NVTX name, else the comm; NULL if neither. */
static const char *thread_name(struct nvtx_proc *p, struct nvtx_thread *th)
{
	if (!th)
		return NULL;
	if (th->name)
		return th->name->text;
	if (th->comm_state == 0)
		nvtx_thread_read_comm(p->pid, th);
	return th->comm_state == 1 ? th->comm : NULL;
}

static void attr_int(struct otlp_attr *a, uint32_t *n, const char *key, int64_t v)
{
	a[*n] = (struct otlp_attr){ .key = key, .type = OTLP_VALUE_INT, .i = v };
	(*n)++;
}

static void attr_str(struct otlp_attr *a, uint32_t *n, const char *key, const char *v)
{
	a[*n] = (struct otlp_attr){ .key = key, .type = OTLP_VALUE_STRING, .str = v };
	(*n)++;
}

static void attr_double(struct otlp_attr *a, uint32_t *n, const char *key, double v)
{
	a[*n] = (struct otlp_attr){ .key = key, .type = OTLP_VALUE_DOUBLE, .d = v };
	(*n)++;
}

/* nvtx.category, nvtx.color, nvtx.payload (each when set); @color: 8 bytes. */
static void nvtx_attrs(struct nvtx_proc *p, struct otlp_attr *a, uint32_t *n,
		       uint32_t domain, uint32_t category, uint32_t color, uint8_t flags,
		       uint8_t payload_type, uint64_t payload, char *colorbuf)
{
	if (category) {
		struct nvtx_str *s = idmap_get(&p->categories, (uint64_t)domain << 32 | category);

		if (s)
			attr_str(a, n, "nvtx.category", s->text);
		else
			attr_int(a, n, "nvtx.category", category);
	}
	if (flags & PROFD_NVTX_F_COLOR) {
		snprintf(colorbuf, 8, "#%06x", color & 0xffffff);
		attr_str(a, n, "nvtx.color", colorbuf);
	}
	switch (payload_type) {
	case PROFD_NVTX_PAYLOAD_U64:
		if (payload > INT64_MAX) {
			/* OTLP ints are signed: the exact value, as a string */
			snprintf(colorbuf + 8, NVTX_ATTR_BUF - 8, "%llu",
				 (unsigned long long)payload);
			attr_str(a, n, "nvtx.payload", colorbuf + 8);
			break;
		}
		/* fallthrough */
	case PROFD_NVTX_PAYLOAD_I64:
		attr_int(a, n, "nvtx.payload", (int64_t)payload);
		break;
	case PROFD_NVTX_PAYLOAD_U32:
		attr_int(a, n, "nvtx.payload", (uint32_t)payload);
		break;
	case PROFD_NVTX_PAYLOAD_I32:
		attr_int(a, n, "nvtx.payload", (int32_t)(uint32_t)payload);
		break;
	case PROFD_NVTX_PAYLOAD_DOUBLE: {
		double d;

		memcpy(&d, &payload, sizeof(d));
		attr_double(a, n, "nvtx.payload", d);
		break;
	}
	case PROFD_NVTX_PAYLOAD_FLOAT: {
		uint32_t bits = (uint32_t)payload;
		float f;

		memcpy(&f, &bits, sizeof(f));
		attr_double(a, n, "nvtx.payload", f);
		break;
	}
	default:
		break;
	}
}

/* Room for @n span events in the scratch arrays. */
static bool ev_reserve(struct nvtx_tracer *t, uint32_t n)
{
	struct otlp_span_event *evs;
	struct otlp_attr *attrs;
	char (*colors)[NVTX_ATTR_BUF];

	if (n <= t->evcap)
		return true;
	evs = realloc(t->evs, n * sizeof(*evs));
	if (evs)
		t->evs = evs;
	attrs = realloc(t->evattrs, n * MARK_ATTRS_MAX * sizeof(*attrs));
	if (attrs)
		t->evattrs = attrs;
	colors = realloc(t->evcolors, n * sizeof(*colors));
	if (colors)
		t->evcolors = colors;
	if (!evs || !attrs || !colors)
		return false;
	t->evcap = n;
	return true;
}

/* nvtx_emit_span - hand closed range @r to the output, its marks as events. */
void nvtx_emit_span(struct nvtx_tracer *t, struct nvtx_proc *p, struct nvtx_range *r,
		    bool unfinished)
{
	struct otlp_attr a[SPAN_ATTRS_MAX];
	struct otlp_scope scope = { .name = scope_of(r->scope) };
	struct otlp_span s = {
		.name = name_of(r->name),
		.start_unix_ns = clock_sync_to_unix(t->clock, r->start_ns),
		.end_unix_ns = clock_sync_to_unix(t->clock, r->end_ns),
		.attrs = a,
	};
	const char *tname = thread_name(p, r->thread);
	char color[NVTX_ATTR_BUF];
	uint32_t n = 0;

	memcpy(s.trace_id, r->trace_id, sizeof(s.trace_id));
	memcpy(s.span_id, r->span_id, sizeof(s.span_id));
	memcpy(s.parent_span_id, r->parent_id, sizeof(s.parent_span_id));
	attr_int(a, &n, "thread.id", r->thread->tid);
	if (tname)
		attr_str(a, &n, "thread.name", tname);
	nvtx_attrs(p, a, &n, r->domain, r->category, r->color, r->flags,
		   r->payload_type, r->payload, color);
	if (unfinished)
		a[n++] = (struct otlp_attr){ .key = "nvtx.unfinished", .type = OTLP_VALUE_BOOL,
					     .b = true };
	s.nattrs = n;
	if (r->nmarks && ev_reserve(t, r->nmarks)) {
		for (uint32_t i = 0; i < r->nmarks; i++) {
			const struct nvtx_mark *m = &r->marks[i];
			struct otlp_span_event *ev = &t->evs[i];
			uint32_t na = 0;

			ev->time_unix_ns = clock_sync_to_unix(t->clock, m->time_ns);
			ev->name = name_of(m->name);
			ev->attrs = &t->evattrs[i * MARK_ATTRS_MAX];
			nvtx_attrs(p, &t->evattrs[i * MARK_ATTRS_MAX], &na, m->domain,
				   m->category, m->color, m->flags, m->payload_type,
				   m->payload, t->evcolors[i]);
			ev->nattrs = na;
		}
		s.events = t->evs;
		s.nevents = r->nmarks;
		t->st.span_events += r->nmarks;
	}
	NVTX_COUNT(t, spans, nvtx_spans, 1);
	if (t->out.span)
		t->out.span(t->out.ctx, p->pid, &scope, &s, t->now_ns);
}

/*
 * nvtx_emit_log - mark @e of thread @tid (@th: its state, NULL if none)
 * with no range open: a log record of severity INFO, body the message.
 */
void nvtx_emit_log(struct nvtx_tracer *t, struct nvtx_proc *p, struct nvtx_thread *th,
		   const struct profd_nvtx_event *e, uint32_t tid)
{
	struct otlp_attr a[SPAN_ATTRS_MAX];
	struct nvtx_str *dom = e->domain_id ? idmap_get(&p->domains, e->domain_id) : NULL;
	struct otlp_scope scope = { .name = scope_of(dom) };
	struct otlp_log l = {
		.time_unix_ns = clock_sync_to_unix(t->clock, e->time_ns),
		.observed_unix_ns = clock_sync_to_unix(t->clock, t->now_ns),
		.severity_number = 9,
		.severity_text = "INFO",
		.body = name_of(nvtx_str_lookup(t, p, e->message_id)),
		.attrs = a,
	};
	const char *tname = thread_name(p, th);
	char color[NVTX_ATTR_BUF];
	uint32_t n = 0;

	attr_int(a, &n, "thread.id", tid);
	if (tname)
		attr_str(a, &n, "thread.name", tname);
	nvtx_attrs(p, a, &n, e->domain_id, e->category, e->color, e->flags,
		   e->payload_type, e->payload, color);
	l.nattrs = n;
	NVTX_COUNT(t, logs, nvtx_logs, 1);
	if (t->out.log)
		t->out.log(t->out.ctx, p->pid, &scope, &l, t->now_ns);
}

/* nvtx_emit_free - free the scratch arrays. */
void nvtx_emit_free(struct nvtx_tracer *t)
{
	free(t->evs);
	free(t->evattrs);
	free(t->evcolors);
	t->evs = NULL;
	t->evattrs = NULL;
	t->evcolors = NULL;
	t->evcap = 0;
}
