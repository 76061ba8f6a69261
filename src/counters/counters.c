// SPDX-License-Identifier: GPL-2.0
/*
 * counters.c - the counter registry (see counters.h): the section's
 * entries sorted and numbered once, values read by position.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"

/* Bounds of the section the linker makes; weak: a program with no counter. */
extern struct counter_def *const __start_profd_counters[] __attribute__((weak));
extern struct counter_def *const __stop_profd_counters[] __attribute__((weak));

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct counter_def **sorted;	/* by position */
static size_t nsorted;

const char *counter_kind_name(enum counter_kind k)
{
	return k == COUNTER_LOST ? "lost" : k == COUNTER_PARTIAL ? "partial" : "stat";
}

/* lost, partial, stat; then by name */
static int cmp_def(const void *a, const void *b)
{
	const struct counter_def *x = *(struct counter_def *const *)a;
	const struct counter_def *y = *(struct counter_def *const *)b;

	if (x->kind != y->kind)
		return x->kind > y->kind ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void build(void)
{
	size_t n = 0;

	if (__start_profd_counters && __stop_profd_counters)
		n = (size_t)(__stop_profd_counters - __start_profd_counters);
	sorted = n ? calloc(n, sizeof(*sorted)) : NULL;
	if (!sorted)
		return;		/* OOM at start-up: no counter reported */
	memcpy(sorted, __start_profd_counters, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_def);
	for (size_t i = 0; i < n; i++)
		sorted[i]->index = (uint32_t)i;
	nsorted = n;
}

size_t counters_count(void)
{
	pthread_once(&once, build);
	return nsorted;
}

const struct counter_def *counters_at(size_t i)
{
	return i < counters_count() ? sorted[i] : NULL;
}

void counters_read(const uint64_t *bpf, uint64_t *out)
{
	size_t n = counters_count();

	for (size_t i = 0; i < n; i++) {
		const struct counter_def *c = sorted[i];

		if (c->bpf_slot >= 0)
			out[i] = bpf ? bpf[c->bpf_slot] : 0;
		else
			out[i] = counter_get(c);
	}
}

int counters_check(int nrequired, int nslots, char *err, size_t errlen)
{
	size_t n = counters_count();

	for (int s = 0; s < nslots; s++) {
		int seen = 0;

		for (size_t i = 0; i < n; i++)
			seen += sorted[i]->bpf_slot == s;
		if (seen > 1 || (seen != 1 && s < nrequired)) {
			snprintf(err, errlen, "BPF counter slot %d declared %d times", s, seen);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (sorted[i]->bpf_slot >= nslots) {
			snprintf(err, errlen, "counter %s: BPF slot %d past %d",
				 sorted[i]->name, sorted[i]->bpf_slot, nslots);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(sorted[j]->name, sorted[i]->name)) {
				snprintf(err, errlen, "counter %s declared twice",
					 sorted[i]->name);
				return -EINVAL;
			}
		}
	}
	return 0;
}
