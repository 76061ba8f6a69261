// SPDX-License-Identifier: GPL-2.0
/*
 * v8_runtime.c - V8 (Node) as a runtime of the seam (src/runtime/).
 *
 * Owns: v8_runtime_ops, the registry's entry for V8 (bpf/runtime.h:
 * PROFD_RUNTIMES' V8 line): each hook is the v8.h function of the same job.
 */
#include <errno.h>

#include "runtime/runtime.h"
#include "v8/v8.h"

static void *rt_create(const struct runtime_env *env)
{
	return v8_new(env->procs_fd, env->budget, env->verbose);
}

static void rt_destroy(void *rt)
{
	v8_free(rt);
}

static void rt_maps_read(void *rt, pid_t pid, const struct proc_maps *maps)
{
	v8_maps_read(rt, pid, maps);
}

static void rt_removed(void *rt, pid_t pid)
{
	v8_removed(rt, pid);
}

static uint32_t rt_merge_stack(void *rt, pid_t pid, uint32_t flags,
			       const uint64_t *user, uint32_t nuser,
			       const uint64_t *frames, uint32_t nframes,
			       uint64_t *out, uint32_t cap, uint64_t now_ns)
{
	return v8_merge_stack(rt, pid, flags, user, nuser, frames, nframes, out, cap);
}

static int rt_frame(void *rt, uint64_t token, struct runtime_frame *out)
{
	struct rt_frame f;

	if (v8_frame(rt, token, &f))
		return -ENOENT;
	out->function = f.function;
	out->file = f.file;
	out->line = f.line;
	return 0;
}

static void rt_new_interval(void *rt)
{
	v8_new_interval(rt);
}

static void rt_stats(void *rt, struct runtime_stats *out)
{
	out->processes = v8_processes(rt);
	v8_cache_stats(rt, &out->bytes, &out->objects, &out->evictions);
}

const struct runtime_ops v8_runtime_ops = {
	.name = "v8",
	.id = PROFD_RUNTIME_V8,
	.mapping = "[v8]",
	.objects = "v8_functions",
	/* the GC moves young objects within milliseconds: name them soon */
	.fast_poll = true,
	.create = rt_create,
	.destroy = rt_destroy,
	.maps_read = rt_maps_read,
	.removed = rt_removed,
	.merge_stack = rt_merge_stack,
	.frame = rt_frame,
	.new_interval = rt_new_interval,
	.stats = rt_stats,
};
