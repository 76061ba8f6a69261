// SPDX-License-Identifier: GPL-2.0
/*
 * registry.c - the runtimes profd knows, and the set of their instances
 * the hub calls (see runtime.h).
 *
 * Owns: runtime_registry[] (generated from PROFD_RUNTIMES in
 * bpf/runtime.h: a runtime's line there names its struct runtime_ops
 * <name>_runtime_ops) and struct runtimes: one instance per runtime, the
 * dispatch of samples and frame tokens by runtime id, and the
 * once-per-interval renewal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

#define RUNTIME_OPS_DECL_(ID, name, a, b, c) extern const struct runtime_ops name##_runtime_ops;
PROFD_RUNTIMES(RUNTIME_OPS_DECL_, _, _, _)

#define RUNTIME_OPS_REF_(ID, name, a, b, c) &name##_runtime_ops,
const struct runtime_ops *const runtime_registry[] = {
	PROFD_RUNTIMES(RUNTIME_OPS_REF_, _, _, _)
	NULL,
};

struct runtimes {
	void *inst[PROFD_RUNTIME_COUNT];	/* by registry index */
	uint64_t budget[PROFD_RUNTIME_COUNT];
	uint64_t interval;			/* last new_interval() generation */
};

unsigned int runtimes_count(void)
{
	return PROFD_RUNTIME_COUNT;
}

const struct runtime_ops *runtimes_ops(unsigned int id)
{
	if (!id || id > PROFD_RUNTIME_COUNT)
		return NULL;
	return runtime_registry[id - 1];
}

void *runtimes_instance(struct runtimes *rts, unsigned int id)
{
	return rts && runtimes_ops(id) ? rts->inst[id - 1] : NULL;
}

struct runtimes *runtimes_new(const struct runtime_env *env, uint32_t enabled)
{
	struct runtimes *rts = calloc(1, sizeof(*rts));
	unsigned int n = 0;

	if (!rts)
		goto oom;
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++)
		n += !!(enabled & (1u << (i + 1)));
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++) {
		const struct runtime_ops *ops = runtime_registry[i];
		struct runtime_env e = *env;

		if (ops->id != i + 1) {
			fprintf(stderr, "profd: runtime %s: id %u out of registry order\n",
				ops->name, ops->id);
			runtimes_free(rts);
			return NULL;
		}
		if (!(enabled & (1u << ops->id)))
			continue;
		e.budget = env->budget / n;
		rts->budget[i] = e.budget;
		rts->inst[i] = ops->create(&e);
		if (!rts->inst[i]) {
			runtimes_free(rts);
			goto oom;
		}
	}
	return rts;
oom:
	fprintf(stderr, "profd: language runtimes: out of memory\n");
	return NULL;
}

void runtimes_free(struct runtimes *rts)
{
	if (!rts)
		return;
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++)
		if (rts->inst[i])
			runtime_registry[i]->destroy(rts->inst[i]);
	free(rts);
}

void runtimes_maps_read(struct runtimes *rts, pid_t pid, const struct proc_maps *maps)
{
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++)
		if (rts->inst[i])
			runtime_registry[i]->maps_read(rts->inst[i], pid, maps);
}

void runtimes_removed(struct runtimes *rts, pid_t pid)
{
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++)
		if (rts->inst[i])
			runtime_registry[i]->removed(rts->inst[i], pid);
}

uint32_t runtimes_merge_stack(struct runtimes *rts, unsigned int id, pid_t pid,
			      uint32_t flags, const uint64_t *user, uint32_t nuser,
			      const uint64_t *frames, uint32_t nframes,
			      uint64_t *out, uint32_t cap, uint64_t now_ns)
{
	const struct runtime_ops *ops = runtimes_ops(id);
	uint32_t n = 0;

	if (ops && rts->inst[id - 1])
		return ops->merge_stack(rts->inst[id - 1], pid, flags, user, nuser,
					frames, nframes, out, cap, now_ns);
	for (uint32_t i = 0; i < nuser && n < cap; i++)
		out[n++] = user[i];
	return n;
}

int runtimes_frame(struct runtimes *rts, uint64_t token, struct runtime_frame *out)
{
	unsigned int id = runtime_ip_id(token);
	const struct runtime_ops *ops = runtimes_ops(id);

	if (!rts || !ops || !rts->inst[id - 1])
		return -ENOENT;
	return ops->frame(rts->inst[id - 1], token, out);
}

void runtimes_new_interval(struct runtimes *rts, uint64_t gen)
{
	if (rts->interval >= gen)
		return;
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++)
		if (rts->inst[i] && runtime_registry[i]->new_interval)
			runtime_registry[i]->new_interval(rts->inst[i]);
	rts->interval = gen;
}

void runtimes_tick(struct runtimes *rts)
{
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++)
		if (rts->inst[i] && runtime_registry[i]->tick)
			runtime_registry[i]->tick(rts->inst[i]);
}

void runtimes_stats(struct runtimes *rts, unsigned int i, struct runtime_stats *out,
		    uint64_t *budget)
{
	memset(out, 0, sizeof(*out));
	*budget = 0;
	if (!rts || i >= PROFD_RUNTIME_COUNT || !rts->inst[i])
		return;
	if (runtime_registry[i]->stats)
		runtime_registry[i]->stats(rts->inst[i], out);
	*budget = rts->budget[i];
}

bool runtimes_is_mapping(const char *name)
{
	if (!name)
		return false;
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++)
		if (runtime_registry[i]->mapping && !strcmp(runtime_registry[i]->mapping, name))
			return true;
	return false;
}

bool runtimes_fast_poll(const struct runtime_stats *st)
{
	for (unsigned int i = 0; i < PROFD_RUNTIME_COUNT; i++)
		if (runtime_registry[i]->fast_poll && st[i].processes)
			return true;
	return false;
}
