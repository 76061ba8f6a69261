// SPDX-License-Identifier: GPL-2.0
/*
 * ruby_runtime.c - CRuby as a runtime of the seam (src/runtime/).
 *
 * Owns: ruby_runtime_ops, the registry's entry for CRuby (bpf/runtime.h:
 * PROFD_RUNTIMES' CRUBY line): each hook is the ruby.h function of the
 * same job.
 */
#include <errno.h>

#include "ruby/ruby.h"
#include "runtime/runtime.h"

static void *rt_create(const struct runtime_env *env)
{
	return ruby_new(env->procs_fd, env->budget, env->verbose);
}

static void rt_destroy(void *rt)
{
	ruby_free(rt);
}

static void rt_maps_read(void *rt, pid_t pid, const struct proc_maps *maps)
{
	ruby_maps_read(rt, pid, maps);
}

static void rt_removed(void *rt, pid_t pid)
{
	ruby_removed(rt, pid);
}

static uint32_t rt_merge_stack(void *rt, pid_t pid, uint32_t flags,
			       const uint64_t *user, uint32_t nuser,
			       const uint64_t *frames, uint32_t nframes,
			       uint64_t *out, uint32_t cap, uint64_t now_ns)
{
	return ruby_merge_stack(rt, pid, flags, user, nuser, frames, nframes, out, cap,
				now_ns);
}

static int rt_frame(void *rt, uint64_t token, struct runtime_frame *out)
{
	struct rt_frame f;

	if (ruby_frame(rt, token, &f))
		return -ENOENT;
	out->function = f.function;
	out->file = f.file;
	out->line = f.line;
	return 0;
}

static void rt_new_interval(void *rt)
{
	ruby_new_interval(rt);
}

static void rt_tick(void *rt)
{
	ruby_tick(rt);
}

static void rt_stats(void *rt, struct runtime_stats *out)
{
	struct ruby_stats st;

	ruby_stats(rt, &st);
	out->processes = st.processes;
	out->bytes = st.bytes;
	out->objects = st.objects;
	out->evictions = st.evictions;
}

const struct runtime_ops ruby_runtime_ops = {
	.name = "ruby",
	.id = PROFD_RUNTIME_CRUBY,
	.mapping = "[ruby]",
	.objects = "ruby_iseqs",
	/* a required file's top-level iseq, eval'd code: garbage soon after */
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
