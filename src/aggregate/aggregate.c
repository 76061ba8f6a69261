// SPDX-License-Identifier: GPL-2.0
/*
 * aggregate.c - per-interval table of distinct stacks (see aggregate.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/aggregate.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

struct aggregate *aggregate_new(uint64_t max_stacks, uint64_t start_ns)
{
	struct aggregate *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->nbuckets = 4096;
	a->buckets = calloc(a->nbuckets, sizeof(*a->buckets));
	if (!a->buckets) {
		free(a);
		return NULL;
	}
	a->max_stacks = max_stacks;
	a->start_ns = start_ns;
	a->bytes = sizeof(*a) + a->nbuckets * sizeof(*a->buckets);
	return a;
}

void aggregate_free(struct aggregate *a)
{
	if (!a)
		return;
	for (uint32_t b = 0; b < a->nbuckets; b++) {
		struct agg_stack *s = a->buckets[b], *next;

		for (; s; s = next) {
			next = s->next;
			proc_snapshot_put(s->snap);
			free(s);
		}
	}
	free(a->buckets);
	free(a);
}

static void grow(struct aggregate *a)
{
	uint32_t nb = a->nbuckets * 2;
	struct agg_stack **buckets = calloc(nb, sizeof(*buckets));

	if (!buckets)
		return;	/* keep going with longer chains */
	for (uint32_t b = 0; b < a->nbuckets; b++) {
		struct agg_stack *s = a->buckets[b], *next;

		for (; s; s = next) {
			next = s->next;
			s->next = buckets[s->hash & (nb - 1)];
			buckets[s->hash & (nb - 1)] = s;
		}
	}
	free(a->buckets);
	a->bytes += (nb - a->nbuckets) * sizeof(*buckets);
	a->buckets = buckets;
	a->nbuckets = nb;
}

int aggregate_add(struct aggregate *a, pid_t pid, pid_t tid,
		  const char *comm, const char *thread_name,
		  struct proc_snapshot *snap, uint32_t flags, uint32_t time_bin,
		  const uint64_t *ips, uint16_t nkernel, uint16_t nuser)
{
	return aggregate_add_value(a, AGG_CPU, pid, tid, comm, thread_name, snap, flags,
				   time_bin, ips, nkernel, nuser, 1, 0);
}

int aggregate_add_value(struct aggregate *a, uint32_t kind, pid_t pid, pid_t tid,
			const char *comm, const char *thread_name,
			struct proc_snapshot *snap, uint32_t flags, uint32_t time_bin,
			const uint64_t *ips, uint16_t nkernel, uint16_t nuser,
			uint64_t count, uint64_t value)
{
	uint32_t nips = (uint32_t)nkernel + nuser;
	char c[PROCESS_COMM_LEN] = { 0 }, t[PROCESS_COMM_LEN] = { 0 };
	uint64_t h = mix(mix(mix(mix(kind, pid), tid), (uintptr_t)snap),
			 flags | (uint64_t)time_bin << 32);
	struct agg_stack *s;

	strncpy(c, comm, sizeof(c) - 1);
	strncpy(t, thread_name, sizeof(t) - 1);
	h = mix(h, ((uint64_t)nkernel << 16) | nuser);
	for (uint32_t i = 0; i < nips; i++)
		h = mix(h, ips[i]);
	for (size_t i = 0; i < sizeof(c); i += 8) {
		uint64_t v1, v2;

		memcpy(&v1, c + i, 8);
		memcpy(&v2, t + i, 8);
		h = mix(mix(h, v1), v2);
	}

	if (kind >= AGG_KINDS)
		return -EINVAL;
	a->nsamples += kind == AGG_CPU;
	a->nadded[kind]++;
	for (s = a->buckets[h & (a->nbuckets - 1)]; s; s = s->next) {
		if (s->hash == h && s->kind == kind && s->pid == pid && s->tid == tid &&
		    s->snap == snap && s->flags == flags &&
		    s->time_bin == time_bin && s->nkernel == nkernel && s->nuser == nuser &&
		    !memcmp(s->comm, c, sizeof(c)) &&
		    !memcmp(s->thread_name, t, sizeof(t)) &&
		    !memcmp(s->ips, ips, nips * sizeof(*ips))) {
			s->count += count;
			s->value += value;
			return 0;
		}
	}
	if (a->nstacks >= a->max_stacks) {
		a->dropped++;
		return -ENOSPC;
	}
	s = malloc(sizeof(*s) + nips * sizeof(*ips));
	if (!s) {
		a->dropped++;
		return -ENOMEM;
	}
	s->hash = h;
	s->kind = kind;
	s->pid = pid;
	s->tid = tid;
	memcpy(s->comm, c, sizeof(c));
	memcpy(s->thread_name, t, sizeof(t));
	s->snap = proc_snapshot_get(snap);
	s->flags = flags;
	s->time_bin = time_bin;
	s->count = count;
	s->value = value;
	s->nkernel = nkernel;
	s->nuser = nuser;
	memcpy(s->ips, ips, nips * sizeof(*ips));
	s->next = a->buckets[h & (a->nbuckets - 1)];
	a->buckets[h & (a->nbuckets - 1)] = s;
	a->bytes += sizeof(*s) + nips * sizeof(*ips);
	if (++a->nstacks > (uint64_t)a->nbuckets * 2)
		grow(a);
	return 0;
}

static int by_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

struct proc_snapshot **aggregate_snapshots(const struct aggregate *a, size_t *n)
{
	struct proc_snapshot **v;
	size_t k = 0, u = 0;

	*n = 0;
	if (!a->nstacks)
		return NULL;
	v = malloc(a->nstacks * sizeof(*v));
	if (!v)
		return NULL;
	for (uint32_t b = 0; b < a->nbuckets; b++)
		for (const struct agg_stack *s = a->buckets[b]; s && k < a->nstacks; s = s->next)
			if (s->snap)
				v[k++] = s->snap;
	qsort(v, k, sizeof(*v), by_ptr);
	for (size_t i = 0; i < k; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*n = u;
	return v;
}
