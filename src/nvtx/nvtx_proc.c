// SPDX-License-Identifier: GPL-2.0
/*
 * nvtx_proc.c - the NVTX semantics, one process at a time.
 *
 * Owns: the per-process tables (struct nvtx_proc: threads, open start
 * ranges by id, early ends, domain/category/resource names; strings are
 * nvtx_strings.c's), each thread's list of open ranges, the span budget,
 * and the three expiry lists of the tracer (ends waiting for their start,
 * starts held open until their known end, process exits in their grace).
 *
 * A thread's open ranges are one list in opening order, push/pop and
 * start/end alike (innermost = last): a new range's parent and a mark's
 * span are the last one; a pop closes the innermost push (push_top, a
 * stack threaded through the list); an end unlinks its range wherever it
 * is. Threads with nothing open sit on an idle list, oldest first, and
 * are evicted from there when the thread table is full. All lookups are
 * hash tables; nothing scans per event except a thread that holds starts
 * with a known end (rare: the end arrived first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvtx/nvtx_internal.h"

/* --- processes and threads ------------------------------------------------ */

static struct nvtx_proc *proc_get(struct nvtx_tracer *t, pid_t pid)
{
	struct nvtx_proc *p = idmap_get(&t->procs, (uint32_t)pid);

	if (p)
		return p;
	if (t->procs.n >= NVTX_MAX_PROCS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->tokens = t->max_spans_per_sec;	/* the bucket starts full */
	if (idmap_put(&t->procs, (uint32_t)pid, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static void idle_append(struct nvtx_proc *p, struct nvtx_thread *th)
{
	th->idle_next = NULL;
	th->idle_prev = p->idle_tail;
	if (p->idle_tail)
		p->idle_tail->idle_next = th;
	else
		p->idle_head = th;
	p->idle_tail = th;
}

static void idle_unlink(struct nvtx_proc *p, struct nvtx_thread *th)
{
	if (th->idle_prev)
		th->idle_prev->idle_next = th->idle_next;
	else
		p->idle_head = th->idle_next;
	if (th->idle_next)
		th->idle_next->idle_prev = th->idle_prev;
	else
		p->idle_tail = th->idle_prev;
	th->idle_prev = th->idle_next = NULL;
}

/* Forget idle thread @th (nothing open refers to it). */
static void thread_evict(struct nvtx_proc *p, struct nvtx_thread *th)
{
	idle_unlink(p, th);
	idmap_del(&p->threads, th->tid);
	if (p->last_thread == th)
		p->last_thread = NULL;
	nvtx_str_put(th->name);
	free(th);
}

/* Thread @tid of @p; with @create, made (evicting the longest idle one at the bound). */
static struct nvtx_thread *thread_get(struct nvtx_tracer *t, struct nvtx_proc *p,
				      uint32_t tid, bool create)
{
	struct nvtx_thread *th = p->last_thread;

	if (th && th->tid == tid)
		return th;
	th = idmap_get(&p->threads, tid);
	if (!th && create) {
		if (p->threads.n >= NVTX_MAX_THREADS) {
			if (!p->idle_head) {
				NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
				return NULL;
			}
			thread_evict(p, p->idle_head);
		}
		th = calloc(1, sizeof(*th));
		if (!th || idmap_put(&p->threads, tid, th)) {
			free(th);
			NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
			return NULL;
		}
		th->tid = tid;
		th->proc = p;
		idle_append(p, th);
		nvtx_thread_read_comm(p->pid, th);
	}
	if (th)
		p->last_thread = th;
	return th;
}

/* --- the budget ------------------------------------------------------------- */

/* Refill @p's bucket up to event time @ns (capacity: one second's worth). */
static void budget_fill(struct nvtx_tracer *t, struct nvtx_proc *p, uint64_t ns)
{
	double cap = t->max_spans_per_sec;

	if (ns <= p->tokens_ns)
		return;
	p->tokens += (double)(ns - p->tokens_ns) * cap / 1e9;
	if (p->tokens > cap)
		p->tokens = cap;
	p->tokens_ns = ns;
}

/* --- ranges ----------------------------------------------------------------- */

static struct nvtx_range *range_alloc(struct nvtx_tracer *t)
{
	struct nvtx_range *r = t->free_ranges;
	struct nvtx_mark *marks;
	uint32_t cap;

	if (!r)
		return calloc(1, sizeof(*r));
	t->free_ranges = r->next;
	t->nfree_ranges--;
	marks = r->marks;
	cap = r->marks_cap;
	memset(r, 0, sizeof(*r));
	r->marks = marks;
	r->marks_cap = cap;
	return r;
}

/* Drop @r's references and recycle it. */
static void range_release(struct nvtx_tracer *t, struct nvtx_range *r)
{
	for (uint32_t i = 0; i < r->nmarks; i++)
		nvtx_str_put(r->marks[i].name);
	nvtx_str_put(r->name);
	nvtx_str_put(r->scope);
	if (t->nfree_ranges >= NVTX_FREE_RANGES_KEEP) {
		free(r->marks);
		free(r);
		return;
	}
	if (r->marks_cap > 16) {
		free(r->marks);
		r->marks = NULL;
		r->marks_cap = 0;
	}
	r->next = t->free_ranges;
	t->free_ranges = r;
	t->nfree_ranges++;
}

static void ke_append(struct nvtx_tracer *t, struct nvtx_range *r)
{
	r->ke_next = NULL;
	r->ke_prev = t->ke_tail;
	if (t->ke_tail)
		t->ke_tail->ke_next = r;
	else
		t->ke_head = r;
	t->ke_tail = r;
}

static void ke_unlink(struct nvtx_tracer *t, struct nvtx_range *r)
{
	if (r->ke_prev)
		r->ke_prev->ke_next = r->ke_next;
	else
		t->ke_head = r->ke_next;
	if (r->ke_next)
		r->ke_next->ke_prev = r->ke_prev;
	else
		t->ke_tail = r->ke_prev;
	r->ke_prev = r->ke_next = NULL;
}

/* Take @r out of every table and list (not freed). */
static void range_unlink(struct nvtx_tracer *t, struct nvtx_proc *p, struct nvtx_range *r)
{
	struct nvtx_thread *th = r->thread;

	if (r->prev)
		r->prev->next = r->next;
	else
		th->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		th->tail = r->prev;
	r->prev = r->next = NULL;
	if (r->kind == PROFD_NVTX_PUSH && th->push_top == r)
		th->push_top = r->push_prev;
	if (r->kind == PROFD_NVTX_START && idmap_get(&p->ranges, r->id) == r)
		idmap_del(&p->ranges, r->id);
	if (r->end_known) {
		th->nknown_end--;
		ke_unlink(t, r);
	}
	if (--th->depth == 0)
		idle_append(p, th);
	p->nranges--;
	p->nmarks -= r->nmarks;
}

/*
 * Open a range of event @e on @th: its parent is th's innermost open
 * range; with none it starts a trace, kept or dropped whole by the budget.
 */
static struct nvtx_range *range_open(struct nvtx_tracer *t, struct nvtx_proc *p,
				     struct nvtx_thread *th, const struct profd_nvtx_event *e)
{
	struct nvtx_range *parent = th->tail, *r;

	if (th->depth >= NVTX_MAX_DEPTH || p->nranges >= NVTX_MAX_RANGES ||
	    !(r = range_alloc(t))) {
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return NULL;
	}
	r->kind = e->kind;
	r->thread = th;
	r->start_ns = e->time_ns;
	r->payload = e->payload;
	r->payload_type = e->payload_type;
	r->flags = e->flags;
	r->domain = e->domain_id;
	r->category = e->category;
	r->color = e->color;
	if (parent) {
		memcpy(r->trace_id, parent->trace_id, sizeof(r->trace_id));
		memcpy(r->parent_id, parent->span_id, sizeof(r->parent_id));
		r->dropped = parent->dropped;
	} else if (t->max_spans_per_sec) {
		budget_fill(t, p, e->time_ns);
		r->dropped = p->tokens <= 0;
	}
	if (!r->dropped) {
		struct nvtx_str *scope = NULL;

		if (!parent)
			nvtx_new_trace_id(t, r->trace_id);
		nvtx_new_span_id(t, r->span_id);
		r->name = nvtx_str_get(nvtx_str_lookup(t, p, e->message_id));
		if (e->domain_id)
			scope = idmap_get(&p->domains, e->domain_id);
		r->scope = nvtx_str_get(scope);
	}
	r->prev = th->tail;
	if (th->tail)
		th->tail->next = r;
	else
		th->head = r;
	th->tail = r;
	if (th->depth++ == 0)
		idle_unlink(p, th);
	p->nranges++;
	return r;
}

/* Close @r at @end_ns (CLOCK_MONOTONIC): a span unless its trace was dropped. */
static void range_close(struct nvtx_tracer *t, struct nvtx_proc *p, struct nvtx_range *r,
			uint64_t end_ns, bool unfinished)
{
	range_unlink(t, p, r);
	r->end_ns = end_ns < r->start_ns ? r->start_ns : end_ns;
	if (unfinished)
		NVTX_COUNT(t, unfinished, nvtx_unfinished, 1);
	if (r->dropped) {
		NVTX_COUNT(t, spans_dropped_budget, nvtx_spans_dropped_budget, 1);
	} else {
		if (t->max_spans_per_sec) {
			budget_fill(t, p, r->end_ns);
			p->tokens -= 1;
		}
		nvtx_emit_span(t, p, r, unfinished);
	}
	range_release(t, r);
}

/*
 * Thread @th made a call at @time_ns: the starts it holds whose end (come
 * early from another thread) is at or before it are over.
 */
static void thread_catch_up(struct nvtx_tracer *t, struct nvtx_proc *p,
			    struct nvtx_thread *th, uint64_t time_ns)
{
	struct nvtx_range *r, *next;

	if (!th || !th->nknown_end)
		return;
	for (r = th->head; r && th->nknown_end; r = next) {
		next = r->next;
		if (r->end_known && r->end_ns <= time_ns)
			range_close(t, p, r, r->end_ns, false);
	}
}

/* --- early ends --------------------------------------------------------------- */

/* Unlink @ee from the tracer's FIFO and free it (the caller removed it from its map). */
static void early_free(struct nvtx_tracer *t, struct nvtx_early_end *ee)
{
	if (ee->prev)
		ee->prev->next = ee->next;
	else
		t->early_head = ee->next;
	if (ee->next)
		ee->next->prev = ee->prev;
	else
		t->early_tail = ee->prev;
	free(ee);
}

static void early_add(struct nvtx_tracer *t, struct nvtx_proc *p, const struct profd_nvtx_event *e)
{
	struct nvtx_early_end *ee;

	if (idmap_get(&p->early, e->id)) {
		NVTX_COUNT(t, ends_unknown, nvtx_ends_unknown, 1);	/* a second end of the same unknown id */
		return;
	}
	if (p->early.n >= NVTX_MAX_EARLY_ENDS || !(ee = calloc(1, sizeof(*ee)))) {
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return;
	}
	if (idmap_put(&p->early, e->id, ee)) {
		free(ee);
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return;
	}
	ee->proc = p;
	ee->id = e->id;
	ee->end_ns = e->time_ns;
	ee->deadline_ns = t->now_ns + NVTX_EARLY_END_NS;
	ee->prev = t->early_tail;
	if (t->early_tail)
		t->early_tail->next = ee;
	else
		t->early_head = ee;
	t->early_tail = ee;
}

/* --- events ------------------------------------------------------------------- */

static void ev_push(struct nvtx_tracer *t, struct nvtx_proc *p, const struct profd_nvtx_event *e)
{
	struct nvtx_thread *th = thread_get(t, p, e->tid, true);
	struct nvtx_range *r;

	if (!th)
		return;
	thread_catch_up(t, p, th, e->time_ns);
	r = range_open(t, p, th, e);
	if (!r) {
		th->phantom++;	/* its pop must not close another push */
		return;
	}
	r->push_prev = th->push_top;
	th->push_top = r;
}

static void ev_pop(struct nvtx_tracer *t, struct nvtx_proc *p, const struct profd_nvtx_event *e)
{
	struct nvtx_thread *th = thread_get(t, p, e->tid, false);

	if (!th) {
		NVTX_COUNT(t, pops_unmatched, nvtx_pops_unmatched, 1);
		return;
	}
	thread_catch_up(t, p, th, e->time_ns);
	if (th->phantom) {
		th->phantom--;
		return;
	}
	if (!th->push_top) {
		NVTX_COUNT(t, pops_unmatched, nvtx_pops_unmatched, 1);
		return;
	}
	range_close(t, p, th->push_top, e->time_ns, false);
}

static void ev_start(struct nvtx_tracer *t, struct nvtx_proc *p, const struct profd_nvtx_event *e)
{
	struct nvtx_thread *th = thread_get(t, p, e->tid, true);
	struct nvtx_early_end *ee;
	struct nvtx_range *r;

	if (!th)
		return;
	thread_catch_up(t, p, th, e->time_ns);
	if (idmap_get(&p->ranges, e->id)) {
		t->st.malformed++;	/* that id is open: ids are never reused */
		return;
	}
	r = range_open(t, p, th, e);
	ee = idmap_del(&p->early, e->id);
	if (r) {
		r->id = e->id;
		if (idmap_put(&p->ranges, e->id, r)) {
			NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
			range_unlink(t, p, r);
			range_release(t, r);
			r = NULL;
		}
	}
	if (!ee)
		return;
	if (r) {
		/* its end is known: held open until th's calls pass it */
		r->end_known = true;
		r->end_ns = ee->end_ns;
		r->ke_deadline_ns = t->now_ns + NVTX_KNOWN_END_WAIT_NS;
		th->nknown_end++;
		ke_append(t, r);
	}
	early_free(t, ee);
}

static void ev_end(struct nvtx_tracer *t, struct nvtx_proc *p, const struct profd_nvtx_event *e)
{
	struct nvtx_range *r;

	thread_catch_up(t, p, thread_get(t, p, e->tid, false), e->time_ns);
	r = idmap_get(&p->ranges, e->id);
	if (r)
		range_close(t, p, r, e->time_ns, false);
	else
		early_add(t, p, e);
}

static void ev_mark(struct nvtx_tracer *t, struct nvtx_proc *p, const struct profd_nvtx_event *e)
{
	struct nvtx_thread *th = thread_get(t, p, e->tid, true);
	struct nvtx_range *r;
	struct nvtx_mark *m;

	thread_catch_up(t, p, th, e->time_ns);
	r = th ? th->tail : NULL;
	if (!r) {
		nvtx_emit_log(t, p, th, e, e->tid);
		return;
	}
	if (r->dropped) {
		t->st.marks_dropped_budget++;
		return;
	}
	if (p->nmarks >= NVTX_MAX_MARKS || r->nmarks >= NVTX_MAX_SPAN_EVENTS) {
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return;
	}
	if (r->nmarks == r->marks_cap) {
		uint32_t ncap = r->marks_cap ? r->marks_cap * 2 : 4;
		struct nvtx_mark *nm = realloc(r->marks, ncap * sizeof(*nm));

		if (!nm) {
			NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
			return;
		}
		r->marks = nm;
		r->marks_cap = ncap;
	}
	m = &r->marks[r->nmarks++];
	m->time_ns = e->time_ns;
	m->payload = e->payload;
	m->name = nvtx_str_get(nvtx_str_lookup(t, p, e->message_id));
	m->domain = e->domain_id;
	m->category = e->category;
	m->color = e->color;
	m->payload_type = e->payload_type;
	m->flags = e->flags;
	p->nmarks++;
}

/*
 * Set name @key of @map to string @id (an unknown id unsets it), holding
 * a reference; at most @max names.
 */
static void name_set(struct nvtx_tracer *t, struct nvtx_proc *p, struct idmap *map,
		     uint64_t key, uint32_t id, uint32_t max)
{
	struct nvtx_str *s = nvtx_str_lookup(t, p, id), *old = idmap_get(map, key);

	if (!s || s->is_static) {
		nvtx_str_put(idmap_del(map, key));
		return;
	}
	if (!old && map->n >= max) {
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return;
	}
	if (idmap_put(map, key, nvtx_str_get(s))) {
		nvtx_str_put(s);
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return;
	}
	nvtx_str_put(old);
}

static void ev_name_thread(struct nvtx_tracer *t, struct nvtx_proc *p,
			   const struct profd_nvtx_event *e)
{
	struct nvtx_thread *th;
	struct nvtx_str *s;

	if (e->id > UINT32_MAX) {
		t->st.malformed++;
		return;
	}
	th = thread_get(t, p, (uint32_t)e->id, true);
	if (!th)
		return;
	s = nvtx_str_lookup(t, p, e->message_id);
	nvtx_str_put(th->name);
	th->name = s && !s->is_static ? nvtx_str_get(s) : NULL;
}

/*
 * A STRING event at @ev[i]: its text is the next elements. Returns the
 * elements it used after itself (the rest of the batch if malformed).
 */
static uint32_t ev_string(struct nvtx_tracer *t, struct nvtx_proc *p,
			  const struct profd_nvtx_event *ev, uint32_t i, uint32_t n)
{
	const struct profd_nvtx_event *e = &ev[i];
	uint64_t len = e->payload;
	uint32_t chunks;

	if (len > PROFD_NVTX_STRING_MAX) {
		t->st.malformed++;
		return n - i - 1;
	}
	chunks = (len + PROFD_NVTX_TEXT_CHUNK - 1) / PROFD_NVTX_TEXT_CHUNK;
	if (chunks > n - i - 1) {
		t->st.malformed++;
		return n - i - 1;
	}
	if (!e->id || e->id > UINT32_MAX)
		t->st.malformed++;	/* no event can name it */
	else
		nvtx_str_define(t, p, (uint32_t)e->id, (const char *)&ev[i + 1], len);
	return chunks;
}

/*
 * nvtx_proc_batch - apply @n events of process @h->pid, in order.
 * @ev may be any bytes: every field is checked before use.
 */
void nvtx_proc_batch(struct nvtx_tracer *t, const struct profd_gpu_batch *h,
		     const struct profd_nvtx_event *ev, uint32_t n)
{
	struct nvtx_proc *p = proc_get(t, (pid_t)h->pid);

	if (!p) {
		NVTX_COUNT(t, tables_full, nvtx_tables_full, n);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct profd_nvtx_event *e = &ev[i];

		t->st.events++;
		switch (e->kind) {
		case PROFD_NVTX_PUSH:
			ev_push(t, p, e);
			break;
		case PROFD_NVTX_POP:
			ev_pop(t, p, e);
			break;
		case PROFD_NVTX_START:
			ev_start(t, p, e);
			break;
		case PROFD_NVTX_END:
			ev_end(t, p, e);
			break;
		case PROFD_NVTX_MARK:
			ev_mark(t, p, e);
			break;
		case PROFD_NVTX_STRING:
			i += ev_string(t, p, ev, i, n);
			break;
		case PROFD_NVTX_DOMAIN:
			if (e->domain_id)
				name_set(t, p, &p->domains, e->domain_id, e->message_id,
					 NVTX_MAX_DOMAINS);
			else
				t->st.malformed++;	/* the default domain has its name */
			break;
		case PROFD_NVTX_DOMAIN_DESTROY:
			nvtx_str_put(idmap_del(&p->domains, e->domain_id));
			break;
		case PROFD_NVTX_NAME_CATEGORY:
			name_set(t, p, &p->categories, (uint64_t)e->domain_id << 32 | e->category,
				 e->message_id, NVTX_MAX_CATEGORIES);
			break;
		case PROFD_NVTX_NAME_THREAD:
			ev_name_thread(t, p, e);
			break;
		case PROFD_NVTX_NAME_RESOURCE:
			/* kept for lookups by (handle, kind); no event refers to them yet */
			name_set(t, p, &p->resources, e->id << 3 | (e->category & 7),
				 e->message_id, NVTX_MAX_RESOURCES);
			break;
		case PROFD_NVTX_DROPPED:
			NVTX_COUNT(t, library_dropped, nvtx_library_dropped, e->payload);
			break;
		case PROFD_NVTX_UNSEEN:
			NVTX_COUNT(t, unseen, nvtx_events_unseen, e->payload);
			break;
		case PROFD_NVTX_HELLO:
		case PROFD_NVTX_PROCESS:
			break;	/* the agent read the resource on arrival */
		default:
			t->st.malformed++;
			break;
		}
	}
}

/* --- expiry, exit, stop ---------------------------------------------------------- */

static void put_names(struct idmap *m)
{
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->slots[i].val)
			nvtx_str_put(m->slots[i].val);
	idmap_free(m);
}

/*
 * Close everything @p holds open (unfinished, ending now; a start whose
 * end is known ends then), count its waiting ends unknown, free it.
 */
static void proc_free(struct nvtx_tracer *t, struct nvtx_proc *p)
{
	struct idmap *ths = &p->threads;

	for (uint32_t i = 0; i < ths->cap; i++) {
		struct nvtx_thread *th = ths->slots[i].val;

		while (th && th->tail) {
			struct nvtx_range *r = th->tail;

			if (r->end_known)
				range_close(t, p, r, r->end_ns, false);
			else
				range_close(t, p, r, t->now_ns, true);
		}
	}
	for (uint32_t i = 0; i < p->early.cap; i++) {
		if (p->early.slots[i].val) {
			NVTX_COUNT(t, ends_unknown, nvtx_ends_unknown, 1);
			early_free(t, p->early.slots[i].val);
		}
	}
	for (uint32_t i = 0; i < ths->cap; i++) {
		struct nvtx_thread *th = ths->slots[i].val;

		if (th) {
			nvtx_str_put(th->name);
			free(th);
		}
	}
	idmap_free(ths);
	idmap_free(&p->ranges);
	idmap_free(&p->early);
	put_names(&p->domains);
	put_names(&p->categories);
	put_names(&p->resources);
	nvtx_strtab_free(t, p);
	idmap_del(&t->procs, (uint32_t)p->pid);
	free(p);
}

/* nvtx_proc_exit - @pid exited: free its state at @deadline_ns (tracer clock). */
void nvtx_proc_exit(struct nvtx_tracer *t, pid_t pid, uint64_t deadline_ns)
{
	struct nvtx_exit *x = calloc(1, sizeof(*x));

	if (!x) {
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return;
	}
	x->pid = pid;
	x->deadline_ns = deadline_ns;
	if (t->exit_tail)
		t->exit_tail->next = x;
	else
		t->exit_head = x;
	t->exit_tail = x;
}

/* nvtx_proc_expire - apply what is due at @now_ns (CLOCK_MONOTONIC). */
void nvtx_proc_expire(struct nvtx_tracer *t, uint64_t now_ns)
{
	while (t->early_head && t->early_head->deadline_ns <= now_ns) {
		struct nvtx_early_end *ee = t->early_head;

		idmap_del(&ee->proc->early, ee->id);
		NVTX_COUNT(t, ends_unknown, nvtx_ends_unknown, 1);
		early_free(t, ee);
	}
	while (t->ke_head && t->ke_head->ke_deadline_ns <= now_ns) {
		struct nvtx_range *r = t->ke_head;

		range_close(t, r->thread->proc, r, r->end_ns, false);
	}
	while (t->exit_head && t->exit_head->deadline_ns <= now_ns) {
		struct nvtx_exit *x = t->exit_head;
		struct nvtx_proc *p = idmap_get(&t->procs, (uint32_t)x->pid);

		t->exit_head = x->next;
		if (!t->exit_head)
			t->exit_tail = NULL;
		if (p)
			proc_free(t, p);
		free(x);
	}
}

/*
 * nvtx_proc_next_deadline - when nvtx_proc_expire() has work next that
 * cannot wait for the tick; UINT64_MAX: never. Exited processes' ends of
 * grace are left to the tick (up to NVTX_TICK_NS late): every exec'd
 * process exits, and a wakeup for each was a context switch per process.
 */
uint64_t nvtx_proc_next_deadline(struct nvtx_tracer *t)
{
	uint64_t d = UINT64_MAX;

	if (t->early_head && t->early_head->deadline_ns < d)
		d = t->early_head->deadline_ns;
	if (t->ke_head && t->ke_head->ke_deadline_ns < d)
		d = t->ke_head->ke_deadline_ns;
	return d;
}

/* nvtx_proc_close_all - every process as if it exited now; frees all state. */
void nvtx_proc_close_all(struct nvtx_tracer *t)
{
	struct nvtx_proc **all;
	uint32_t n = 0;

	while (t->exit_head) {
		struct nvtx_exit *x = t->exit_head;

		t->exit_head = x->next;
		free(x);
	}
	t->exit_tail = NULL;
	all = malloc((t->procs.n + 1) * sizeof(*all));
	if (all) {
		for (uint32_t i = 0; i < t->procs.cap; i++)
			if (t->procs.slots[i].val)
				all[n++] = t->procs.slots[i].val;
		for (uint32_t i = 0; i < n; i++)
			proc_free(t, all[i]);
		free(all);
	}
	/* without memory for the list: one at a time */
	while (t->procs.n) {
		for (uint32_t i = 0; i < t->procs.cap; i++) {
			if (t->procs.slots[i].val) {
				proc_free(t, t->procs.slots[i].val);
				break;
			}
		}
	}
	idmap_free(&t->procs);
	while (t->free_ranges) {
		struct nvtx_range *r = t->free_ranges;

		t->free_ranges = r->next;
		free(r->marks);
		free(r);
	}
	t->nfree_ranges = 0;
}
