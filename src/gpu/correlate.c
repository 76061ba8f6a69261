// SPDX-License-Identifier: GPL-2.0
/*
 * correlate.c - joining kernel records with their launching stacks.
 *
 * Owns: the (pid, correlation id) table and its four expiry lists.
 *
 * A launch and its kernel records travel through different ringbufs and
 * CUPTI hands kernel records back in buffers, late, so either may come
 * first:
 *  - a launch waits in `launches` for its first kernel, at most the
 *    launch timeout (then it is counted unmatched);
 *  - kernels whose launch is not there wait, chained on their id's entry
 *    in `pending`, as long; when the launch comes, they all join it; past
 *    the timeout they are counted under "[unknown launch]" (time kept);
 *  - a joined launch stays a while (`matched`), since more records may
 *    carry its id: a graph launch is one correlation id for all of the
 *    graph's kernels (`graph_matched` keeps those longer), a cooperative
 *    multi-device launch one record per device.
 * Each list has one delay, so its entries expire in list order. The
 * table holds at most max_launches launches; beyond, the oldest waiting
 * launch is evicted (counted).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_internal.h"

#define MATCHED_KEEP_NS		(2ULL * 1000 * 1000 * 1000)
#define GRAPH_MATCHED_KEEP_NS	(30ULL * 1000 * 1000 * 1000)

static uint64_t corr_hash(pid_t pid, uint64_t id)
{
	uint64_t h = ((uint64_t)(uint32_t)pid << 40) ^ id;

	h ^= h >> 31;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

static void list_push(struct gpu_list *l, struct gpu_corr *c, uint64_t now)
{
	c->list = l;
	c->expires_ns = now + l->delay_ns;
	c->next = NULL;
	c->prev = l->tail;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
	l->n++;
}

static void list_del(struct gpu_corr *c)
{
	struct gpu_list *l = c->list;

	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	l->n--;
	c->list = NULL;
	c->prev = c->next = NULL;
}

static int table_grow(struct gpu *g)
{
	uint32_t ncap = g->corr_cap * 2;
	struct gpu_corr **nb = calloc(ncap, sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->corr_cap; i++) {
		while (g->corr[i]) {
			struct gpu_corr *c = g->corr[i];
			uint32_t b = corr_hash(c->pid, c->correlation_id) & (ncap - 1);

			g->corr[i] = c->hnext;
			c->hnext = nb[b];
			nb[b] = c;
		}
	}
	free(g->corr);
	g->corr = nb;
	g->corr_cap = ncap;
	return 0;
}

static void table_add(struct gpu *g, struct gpu_corr *c)
{
	uint32_t b;

	if (g->ncorr >= g->corr_cap)
		table_grow(g);	/* on failure the chains just get longer */
	b = corr_hash(c->pid, c->correlation_id) & (g->corr_cap - 1);
	c->hnext = g->corr[b];
	g->corr[b] = c;
	g->ncorr++;
}

static void table_del(struct gpu *g, struct gpu_corr *c)
{
	struct gpu_corr **pp = &g->corr[corr_hash(c->pid, c->correlation_id) &
					(g->corr_cap - 1)];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = c->hnext;
		g->ncorr--;
	}
}

/* The entry of (pid, id), NULL if none. */
static struct gpu_corr *table_find(struct gpu *g, pid_t pid, uint64_t id)
{
	struct gpu_corr *c = g->corr[corr_hash(pid, id) & (g->corr_cap - 1)];

	for (; c; c = c->hnext)
		if (c->pid == pid && c->correlation_id == id)
			return c;
	return NULL;
}

static struct gpu_corr *corr_new(struct gpu *g, pid_t pid, uint64_t id)
{
	struct gpu_corr *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->pid = pid;
	c->correlation_id = id;
	table_add(g, c);
	return c;
}

/* A stack standing for launches profd never saw. */
static struct gpu_stack *unknown_stack(struct gpu *g, pid_t pid)
{
	struct gpu_proc *p = gpu_proc_get(g, pid, false);
	struct gpu_launch_info l = {
		.pid = pid,
		.comm = p ? p->comm : "",
		.thread_name = "",
	};

	return gpu_stack_intern(g, &l, GPU_STACK_UNKNOWN);
}

/* A launch entry was joined: keep it a while for more records of its id. */
static void joined(struct gpu *g, struct gpu_corr *launch, bool graph, uint64_t now)
{
	struct gpu_list *to = graph ? &g->graph_matched : &g->matched;

	launch->matched = true;
	if (launch->list == to || (launch->list == &g->graph_matched && !graph))
		return;		/* a graph launch keeps its longer stay */
	list_del(launch);
	list_push(to, launch, now);
}

/* Count the waiting kernels of @c on "[unknown launch]" and drop them. */
static void kernels_unknown(struct gpu *g, struct gpu_corr *c)
{
	struct gpu_stack *s = c->kernels ? unknown_stack(g, c->pid) : NULL;

	while (c->kernels) {
		struct gpu_pending *k = c->kernels;

		c->kernels = k->next;
		GPU_COUNT(g, kernels_no_launch, gpu_kernels_no_launch, 1);
		if (s)
			gpu_add_kernel(g, s, k->name, &k->k);
		gpu_name_put(k->name);
		free(k);
		g->npending--;
	}
	gpu_stack_put(s);
}

static void corr_free(struct gpu *g, struct gpu_corr *c)
{
	table_del(g, c);
	if (c->list)
		list_del(c);
	kernels_unknown(g, c);
	gpu_stack_put(c->stack);
	free(c);
}

void gpu_corr_launch(struct gpu *g, pid_t pid, uint64_t correlation_id,
		     struct gpu_stack *s, uint64_t now)
{
	struct gpu_corr *c = table_find(g, pid, correlation_id);

	if (c && c->stack) {
		/* the same id again (a process that exec'ed reuses ids): newest wins */
		corr_free(g, c);
		c = NULL;
	}
	if (!c && !(c = corr_new(g, pid, correlation_id)))
		return;
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	c->stack = s;
	if (c->list)
		list_del(c);	/* from `pending` */
	list_push(&g->launches, c, now);
	/* kernels that came first: oldest first */
	if (c->kernels) {
		struct gpu_pending *rev = NULL, *k;
		bool graph = false;

		while ((k = c->kernels)) {
			c->kernels = k->next;
			k->next = rev;
			rev = k;
		}
		while ((k = rev)) {
			rev = k->next;
			gpu_add_kernel(g, s, k->name, &k->k);
			graph |= k->k.graph_id != 0;
			gpu_name_put(k->name);
			free(k);
			g->npending--;
		}
		joined(g, c, graph, now);
	}
	/* the bound: evict the oldest launch still waiting, then the oldest joined */
	while (g->launches.n + g->matched.n + g->graph_matched.n > g->o.max_launches) {
		struct gpu_corr *old = g->launches.head ? g->launches.head :
				       g->matched.head ? g->matched.head :
				       g->graph_matched.head;

		if (!old || old == c)
			break;
		if (!old->matched)
			GPU_COUNT(g, correlation_evicted, gpu_correlation_evicted, 1);
		corr_free(g, old);
	}
}

void gpu_corr_kernel(struct gpu *g, pid_t pid, const struct profd_gpu_kernel *k,
		     const struct gpu_name *name, uint64_t now)
{
	struct gpu_corr *c = table_find(g, pid, k->correlation_id);
	struct gpu_pending *pk;

	if (c && c->stack) {
		gpu_add_kernel(g, c->stack, name, k);
		joined(g, c, k->graph_id != 0, now);
		return;
	}
	pk = g->npending < g->o.max_launches ? malloc(sizeof(*pk)) : NULL;
	if (pk && !c && (c = corr_new(g, pid, k->correlation_id)))
		list_push(&g->pending, c, now);
	if (!pk || !c) {
		/* no room to wait: count it now, on the unknown launch */
		struct gpu_stack *s = unknown_stack(g, pid);

		free(pk);
		GPU_COUNT(g, kernels_no_launch, gpu_kernels_no_launch, 1);
		if (s) {
			gpu_add_kernel(g, s, name, k);
			gpu_stack_put(s);
		}
		return;
	}
	pk->k = *k;
	pk->name = gpu_name_get(name);	/* the process's table may go first */
	pk->next = c->kernels;
	c->kernels = pk;
	g->npending++;
}

void gpu_corr_expire(struct gpu *g, uint64_t now, bool all)
{
	struct gpu_list *lists[] = {
		&g->launches, &g->matched, &g->graph_matched, &g->pending,
	};

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		struct gpu_list *l = lists[i];

		while (l->head && (all || l->head->expires_ns <= now)) {
			struct gpu_corr *c = l->head;

			/* a pending entry's kernels go to "[unknown launch]" in corr_free */
			if (c->stack && !c->matched)
				GPU_COUNT(g, launches_unmatched, gpu_launches_unmatched, 1);
			corr_free(g, c);
		}
	}
}

int gpu_corr_init(struct gpu *g)
{
	g->corr_cap = 4096;
	g->corr = calloc(g->corr_cap, sizeof(*g->corr));
	g->launches.delay_ns = g->o.launch_timeout_ns;
	g->pending.delay_ns = g->o.launch_timeout_ns;
	g->matched.delay_ns = MATCHED_KEEP_NS < g->o.launch_timeout_ns ?
			      MATCHED_KEEP_NS : g->o.launch_timeout_ns;
	g->graph_matched.delay_ns = GRAPH_MATCHED_KEEP_NS < g->o.launch_timeout_ns ?
				    GRAPH_MATCHED_KEEP_NS : g->o.launch_timeout_ns;
	return g->corr ? 0 : -ENOMEM;
}

void gpu_corr_free(struct gpu *g)
{
	struct gpu_list *lists[] = {
		&g->launches, &g->matched, &g->graph_matched, &g->pending,
	};

	if (!g->corr)
		return;
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		while (lists[i]->head)
			corr_free(g, lists[i]->head);
	free(g->corr);
	g->corr = NULL;
}
