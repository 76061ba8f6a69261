// SPDX-License-Identifier: GPL-2.0
/*
 * python_runtime.c - CPython as a runtime of the seam (src/runtime/).
 *
 * Owns: python_runtime_ops, the registry's entry for CPython
 * (bpf/runtime.h: PROFD_RUNTIMES' CPYTHON line): each hook is the
 * python.h function of the same job.
 */
#include <errno.h>

#include "python/python.h"
#include "runtime/runtime.h"

static void *rt_create(const struct runtime_env *env)
{
	return python_new(env->procs_fd, env->budget, env->verbose);
}

static void rt_destroy(void *rt)
{
	python_free(rt);
}

static void rt_maps_read(void *rt, pid_t pid, const struct proc_maps *maps)
{
	python_maps_read(rt, pid, maps);
}

static void rt_removed(void *rt, pid_t pid)
{
	python_removed(rt, pid);
}

static uint32_t rt_merge_stack(void *rt, pid_t pid, uint32_t flags,
			       const uint64_t *user, uint32_t nuser,
			       const uint64_t *frames, uint32_t nframes,
			       uint64_t *out, uint32_t cap, uint64_t now_ns)
{
	return python_merge_stack(rt, pid, flags, user, nuser, frames, nframes,
				  out, cap, now_ns);
}

static int rt_frame(void *rt, uint64_t token, struct runtime_frame *out)
{
	struct rt_frame f;

	if (python_frame(rt, token, &f))
		return -ENOENT;
	out->function = f.function;
	out->file = f.file;
	out->line = f.line;
	return 0;
}

static void rt_new_interval(void *rt)
{
	python_new_interval(rt);
}

static void rt_tick(void *rt)
{
	python_forget_exited(rt);
}

static void rt_stats(void *rt, struct runtime_stats *out)
{
	struct python_stats st;

	python_stats(rt, &st);
	out->processes = st.processes;
	out->bytes = st.bytes;
	out->objects = st.code_objects;
	out->evictions = st.code_evictions;
}

const struct runtime_ops python_runtime_ops = {
	.name = "python",
	.id = PROFD_RUNTIME_CPYTHON,
	.mapping = "[python]",
	.objects = "python_code_objects",
	/* import-time module code lives only milliseconds */
	.fast_poll = true,
	.create = rt_create,
	.destroy = rt_destroy,
	.maps_read = rt_maps_read,
	.removed = rt_removed,
	.merge_stack = rt_merge_stack,
	.frame = rt_frame,
	.new_interval = rt_new_interval,
	.tick = rt_tick,
	.stats = rt_stats,
};
