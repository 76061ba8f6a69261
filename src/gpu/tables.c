// SPDX-License-Identifier: GPL-2.0
/*
 * tables.c - the GPU state kept across intervals (see gpu_internal.h).
 *
 * Owns: interned kernel/function names, stall-reason strings, the
 * per-process tables (name ids, stall reasons, thread names) and
 * interned launching stacks, with their bounds and their sweeps. Only
 * the reader thread uses them; intervals and waiting kernels hold
 * references to names and stacks. What arrives in records is gpu.c; the
 * join is correlate.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_internal.h"
#include "symbol/demangle.h"
#include "util/hash.h"

/* An exited process's tables stay this long (records still in flight). */
#define PROC_GRACE_NS	(10ULL * 1000 * 1000 * 1000)
#define PROC_BUCKETS	1024

/* names */

const struct gpu_name *gpu_name_intern(struct gpu *g, const char *s)
{
	uint64_t h = fnv1a_str(s);
	struct gpu_name *n;
	uint32_t b;

	if (!g->names_cap || g->nnames >= g->names_cap) {
		uint32_t ncap = g->names_cap ? g->names_cap * 2 : 1024;
		struct gpu_name **nb;

		nb = calloc(ncap, sizeof(*nb));
		if (!nb)
			return NULL;
		for (uint32_t i = 0; i < g->names_cap; i++) {
			while (g->names[i]) {
				n = g->names[i];
				g->names[i] = n->next;
				n->next = nb[n->hash & (ncap - 1)];
				nb[n->hash & (ncap - 1)] = n;
			}
		}
		free(g->names);
		g->names = nb;
		g->names_cap = ncap;
	}
	b = h & (g->names_cap - 1);
	for (n = g->names[b]; n; n = n->next)
		if (n->hash == h && !strcmp(n->mangled, s))
			return gpu_name_get(n);
	if (g->nnames >= GPU_MAX_NAMES || g->name_bytes >= GPU_MAX_NAME_BYTES)
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n || !(n->mangled = strdup(s))) {
		free(n);
		return NULL;
	}
	n->demangled = demangle(s);
	if (!n->demangled)
		n->demangled = n->mangled;
	n->hash = h;
	n->refs = 1;
	n->bytes = strlen(n->mangled) + 1 + (n->demangled != n->mangled ?
					       strlen(n->demangled) + 1 : 0);
	g->name_bytes += n->bytes;
	n->next = g->names[b];
	g->names[b] = n;
	g->nnames++;
	return n;
}

const struct gpu_name *gpu_name_get(const struct gpu_name *n)
{
	if (n)
		__atomic_add_fetch(&((struct gpu_name *)n)->refs, 1, __ATOMIC_RELAXED);
	return n;
}

void gpu_name_put(const struct gpu_name *n)
{
	if (n)
		__atomic_sub_fetch(&((struct gpu_name *)n)->refs, 1, __ATOMIC_RELEASE);
}

static void name_free(struct gpu_name *n)
{
	if (n->demangled != n->mangled)
		free(n->demangled);
	free(n->mangled);
	free(n);
}

/* Free names nobody references (only the reader thread takes references). */
static void names_sweep(struct gpu *g, bool all)
{
	for (uint32_t i = 0; i < g->names_cap; i++) {
		struct gpu_name **pp = &g->names[i];

		while (*pp) {
			struct gpu_name *n = *pp;

			if (!all && __atomic_load_n(&n->refs, __ATOMIC_ACQUIRE)) {
				pp = &n->next;
				continue;
			}
			*pp = n->next;
			g->name_bytes -= n->bytes;
			name_free(n);
			g->nnames--;
		}
	}
}

const char *gpu_stall_intern(struct gpu *g, const char *s)
{
	char **nv;

	for (uint32_t i = 0; i < g->nstall_names; i++)
		if (!strcmp(g->stall_names[i], s))
			return g->stall_names[i];
	if (g->nstall_names >= 4096)
		return NULL;
	nv = realloc(g->stall_names, (g->nstall_names + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	g->stall_names = nv;
	nv[g->nstall_names] = strdup(s);
	return nv[g->nstall_names] ? nv[g->nstall_names++] : NULL;
}

/* processes */

/* The name of thread @tid of @p, cached (a few threads launch kernels). */
const char *gpu_thread_name(struct gpu_proc *p, pid_t tid)
{
	uint32_t i;

	for (i = 0; i < p->nthreads && i < 16; i++)
		if (p->threads[i].tid == tid)
			return p->threads[i].name;
	i = p->nthreads++ % 16;
	p->threads[i].tid = tid;
	proc_read_comm(p->pid, tid, p->threads[i].name, sizeof(p->threads[i].name));
	return p->threads[i].name;
}

struct gpu_proc *gpu_proc_get(struct gpu *g, pid_t pid, bool create)
{
	uint32_t b = gpu_mix(pid) & (g->procs_cap - 1);
	struct gpu_proc *p;

	for (p = g->procs[b]; p; p = p->next)
		if (p->pid == pid)
			return p;
	if (!create)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	proc_read_comm(pid, 0, p->comm, sizeof(p->comm));	/* a launch may tell it later */
	p->next = g->procs[b];
	g->procs[b] = p;
	return p;
}

static void proc_free(struct gpu_proc *p)
{
	for (uint32_t i = 0; i < p->ids_cap; i++)
		if (p->ids[i].id)
			gpu_name_put(p->ids[i].name);
	free(p->ids);
	free(p->stalls);
	free(p);
}

/*
 * gpu_proc_name_budget - may @p intern one more name of @len bytes? Counted
 * cumulatively (names replaced or refused still count), so a process
 * cannot churn names: at most GPU_PROC_MAX_NAMES names and
 * GPU_PROC_MAX_NAME_BYTES over its life. Checked before interning.
 */
bool gpu_proc_name_budget(struct gpu_proc *p, size_t len)
{
	if (p->names_interned >= GPU_PROC_MAX_NAMES ||
	    p->name_bytes + len > GPU_PROC_MAX_NAME_BYTES)
		return false;
	p->names_interned++;
	p->name_bytes += len;
	return true;
}

/*
 * gpu_proc_set_name - id @id of @p names @n; takes over the caller's reference
 * to @n (dropped on failure). The caller charged gpu_proc_name_budget().
 */
int gpu_proc_set_name(struct gpu_proc *p, uint32_t id, const struct gpu_name *n)
{
	uint32_t j;

	if (!id) {
		gpu_name_put(n);
		return -EINVAL;
	}
	if ((p->ids_n + 1) * 2 > p->ids_cap) {
		uint32_t ncap = p->ids_cap ? p->ids_cap * 2 : 64;
		__typeof__(p->ids) nv = calloc(ncap, sizeof(*nv));

		if (!nv) {
			gpu_name_put(n);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < p->ids_cap; i++) {
			if (!p->ids[i].id)
				continue;
			j = gpu_mix(p->ids[i].id) & (ncap - 1);
			while (nv[j].id)
				j = (j + 1) & (ncap - 1);
			nv[j] = p->ids[i];
		}
		free(p->ids);
		p->ids = nv;
		p->ids_cap = ncap;
	}
	j = gpu_mix(id) & (p->ids_cap - 1);
	while (p->ids[j].id && p->ids[j].id != id)
		j = (j + 1) & (p->ids_cap - 1);
	if (!p->ids[j].id)
		p->ids_n++;
	else
		gpu_name_put(p->ids[j].name);
	p->ids[j].id = id;
	p->ids[j].name = n;
	return 0;
}

/*
 * The name of id @id in @p; if the name probe was missed (profd attached
 * after the library interned it), read it at @ptr in the process.
 */
const struct gpu_name *gpu_proc_name(struct gpu *g, struct gpu_proc *p,
				     uint32_t id, uint64_t ptr)
{
	char buf[PROFD_GPU_NAME_MAX];
	const struct gpu_name *n;
	size_t first;
	uint32_t j;

	if (!id || !p)
		return NULL;
	if (p->ids_cap) {
		j = gpu_mix(id) & (p->ids_cap - 1);
		while (p->ids[j].id) {
			if (p->ids[j].id == id)
				return p->ids[j].name;
			j = (j + 1) & (p->ids_cap - 1);
		}
	}
	if (!ptr || p->exited_ns)
		return NULL;
	/*
	 * Two reads: most names fit the first one, which stops at the page
	 * end (the next page may be unmapped); the rest up to the limit.
	 */
	first = 4096 - (ptr & 4095);
	if (first > 256)
		first = 256;
	if (remote_read(g->remote, p->pid, ptr, buf, first))
		return NULL;
	if (!memchr(buf, '\0', first) &&
	    remote_read(g->remote, p->pid, ptr + first, buf + first,
			sizeof(buf) - first))
		return NULL;
	buf[sizeof(buf) - 1] = '\0';
	if (!gpu_proc_name_budget(p, strnlen(buf, sizeof(buf)) + 1))
		return NULL;
	n = gpu_name_intern(g, buf);
	/* the table holds it from now on; on failure: read again next time */
	if (!n || gpu_proc_set_name(p, id, n))
		return NULL;
	return n;
}

/* stacks */

static uint64_t stack_hash(const struct gpu_launch_info *l, uint32_t flags)
{
	uint64_t h = fnv1a(&l->pid, sizeof(l->pid), 0xcbf29ce484222325ULL);

	h = fnv1a(&l->tid, sizeof(l->tid), h);
	h = fnv1a(&flags, sizeof(flags), h);
	h = fnv1a(&l->snap, sizeof(l->snap), h);
	h = fnv1a(l->thread_name, strlen(l->thread_name), h);
	return fnv1a(l->ips, ((size_t)l->nkernel + l->nuser) * sizeof(*l->ips), h);
}

static bool stack_equal(const struct gpu_stack *s, const struct gpu_launch_info *l,
			uint32_t flags)
{
	return s->pid == l->pid && s->tid == l->tid && s->flags == flags &&
	       s->snap == l->snap && s->nkernel == l->nkernel &&
	       s->nuser == l->nuser && !strncmp(s->thread_name, l->thread_name, 15) &&
	       !strncmp(s->comm, l->comm, 15) &&
	       (!(l->nkernel + l->nuser) ||
		!memcmp(s->ips, l->ips, ((size_t)l->nkernel + l->nuser) * sizeof(*l->ips)));
}

static int stacks_grow(struct gpu *g)
{
	uint32_t ncap = g->stacks_cap ? g->stacks_cap * 2 : 1024;
	struct gpu_stack **nb = calloc(ncap, sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->stacks_cap; i++) {
		while (g->stacks[i]) {
			struct gpu_stack *s = g->stacks[i];

			g->stacks[i] = s->next;
			s->next = nb[s->hash & (ncap - 1)];
			nb[s->hash & (ncap - 1)] = s;
		}
	}
	free(g->stacks);
	g->stacks = nb;
	g->stacks_cap = ncap;
	return 0;
}

struct gpu_stack *gpu_stack_intern(struct gpu *g, const struct gpu_launch_info *l,
				   uint32_t extra_flags)
{
	uint32_t flags = l->flags | extra_flags;
	uint64_t h = stack_hash(l, flags);
	size_t nips = (size_t)l->nkernel + l->nuser;
	struct gpu_stack *s;
	uint32_t b;

	if (g->nstacks >= g->stacks_cap && stacks_grow(g) && !g->stacks_cap)
		return NULL;
	b = h & (g->stacks_cap - 1);
	for (s = g->stacks[b]; s; s = s->next) {
		if (s->hash == h && stack_equal(s, l, flags)) {
			__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
			return s;
		}
	}
	if (nips && g->stack_bytes + nips * sizeof(*s->ips) > GPU_MAX_STACK_BYTES) {
		GPU_COUNT(g, stacks_dropped, gpu_launch_stacks_dropped, 1);
		return NULL;	/* the caller keeps the launch, without a stack */
	}
	s = calloc(1, sizeof(*s) + nips * sizeof(*s->ips));
	if (!s)
		return NULL;
	g->stack_bytes += nips * sizeof(*s->ips);
	s->hash = h;
	s->refs = 1;
	s->pid = l->pid;
	s->tid = l->tid;
	snprintf(s->comm, sizeof(s->comm), "%s", l->comm ? l->comm : "");
	snprintf(s->thread_name, sizeof(s->thread_name), "%s",
		 l->thread_name ? l->thread_name : "");
	s->snap = l->snap ? proc_snapshot_get(l->snap) : NULL;
	s->flags = flags;
	s->nkernel = l->nkernel;
	s->nuser = l->nuser;
	if (nips)	/* stack-less launches have no ips (NULL) */
		memcpy(s->ips, l->ips, nips * sizeof(*s->ips));
	s->next = g->stacks[b];
	g->stacks[b] = s;
	g->nstacks++;
	return s;
}

void gpu_stack_put(struct gpu_stack *s)
{
	if (s)
		__atomic_sub_fetch(&s->refs, 1, __ATOMIC_RELEASE);
}

/* Free stacks nobody references (only this thread takes references). */
static void stacks_sweep(struct gpu *g, bool all)
{
	for (uint32_t i = 0; i < g->stacks_cap; i++) {
		struct gpu_stack **pp = &g->stacks[i];

		while (*pp) {
			struct gpu_stack *s = *pp;

			if (!all && __atomic_load_n(&s->refs, __ATOMIC_ACQUIRE)) {
				pp = &s->next;
				continue;
			}
			*pp = s->next;
			g->stack_bytes -= ((size_t)s->nkernel + s->nuser) * sizeof(*s->ips);
			proc_snapshot_put(s->snap);
			free(s);
			g->nstacks--;
		}
	}
}

static void procs_sweep(struct gpu *g, uint64_t now, bool all)
{
	for (uint32_t i = 0; i < g->procs_cap; i++) {
		struct gpu_proc **pp = &g->procs[i];

		while (*pp) {
			struct gpu_proc *p = *pp;

			if (!all && (!p->exited_ns || now - p->exited_ns < PROC_GRACE_NS)) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			proc_free(p);
		}
	}
}

int gpu_tables_init(struct gpu *g)
{
	g->procs_cap = PROC_BUCKETS;
	g->procs = calloc(g->procs_cap, sizeof(*g->procs));
	if (!g->procs)
		return -ENOMEM;
	return stacks_grow(g);
}

void gpu_tables_sweep(struct gpu *g, uint64_t now)
{
	procs_sweep(g, now, false);
	stacks_sweep(g, false);
	names_sweep(g, false);
}

void gpu_tables_free(struct gpu *g)
{
	stacks_sweep(g, true);
	free(g->stacks);
	if (g->procs)
		procs_sweep(g, 0, true);
	free(g->procs);
	names_sweep(g, true);
	free(g->names);
	for (uint32_t i = 0; i < g->nstall_names; i++)
		free(g->stall_names[i]);
	free(g->stall_names);
}
