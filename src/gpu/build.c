// SPDX-License-Identifier: GPL-2.0
/*
 * build.c - the GPU profiles of one interval (see gpu.h).
 *
 * Owns: the layout of gpu-*.pb.gz (kernel time on launching stacks) and
 * gpu-pc-*.pb.gz (PC samples on SASS locations). Launching stacks are
 * symbolized by the CPU profile's stack builder, so a launch site looks
 * exactly like the same code in the CPU profile.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu/gpu_internal.h"

#define CUDA_MAPPING_NAME "[cuda]"

static void set_common(struct profile *p, const struct build_opts *o,
		       uint64_t start_ns)
{
	p->time_nanos = start_ns;
	p->duration_nanos = o->end_ns > start_ns ? o->end_ns - start_ns : 0;
}

static int add_comments(struct profile *p, const struct build_opts *o)
{
	for (uint32_t i = 0; i < o->ncomments; i++)
		if (profile_add_comment(p, o->comments[i]))
			return -ENOMEM;
	return 0;
}

/* The frame standing for a stack profd has not got. */
static uint32_t placeholder(struct profile *p, const char *what)
{
	return profile_location_id(p, 0, 0, profile_function_id(p, what, what, ""), 0);
}

static int add_kernel_sample(struct profile *p, struct stack_builder *sb,
			     uint32_t cuda_mapping, uint32_t *locs,
			     const struct gpu_kernel_entry *e)
{
	const struct gpu_stack *s = e->stack;
	struct profile_label labels[7 + PROC_META_LABELS];
	char dev[12], stream[12], graph[12];
	uint32_t nl = 0;
	int64_t values[2] = { (int64_t)e->count, (int64_t)e->total_ns };
	const char *name = e->name ? e->name->demangled : "[unknown kernel]";
	uint32_t n = 0, fn;
	int ret;

	fn = profile_function_id(p, name, e->name ? e->name->mangled : name, "");
	locs[0] = profile_location_id(p, cuda_mapping, 0, fn, 0);
	if (!fn || !locs[0])
		return -ENOMEM;
	if (s->flags & GPU_STACK_UNKNOWN) {
		locs[1] = placeholder(p, "[unknown launch]");
		n = 1;
	} else if (s->flags & GPU_STACK_NOT_CAPTURED) {
		locs[1] = placeholder(p, "[launch stack not captured]");
		n = 1;
	} else {
		ret = stack_builder_locations(sb, s->snap, s->flags, 0, s->ips,
					      s->nkernel, s->nuser, locs + 1, &n);
		if (ret)
			return ret;
	}
	if (!locs[n])
		return -ENOMEM;
	labels[nl++] = (struct profile_label){ .key = "pid", .num = s->pid };
	if (s->tid) {	/* an unknown launch has no thread */
		labels[nl++] = (struct profile_label){ .key = "tid", .num = s->tid };
		labels[nl++] = (struct profile_label){ .key = "thread_name",
						       .str = s->thread_name };
	}
	labels[nl++] = (struct profile_label){ .key = "comm", .str = s->comm };
	/* string labels: pprof drops numeric labels equal to 0 (device 0!) */
	snprintf(dev, sizeof(dev), "%u", e->device);
	snprintf(stream, sizeof(stream), "%u", e->stream);
	snprintf(graph, sizeof(graph), "%u", e->graph);
	labels[nl++] = (struct profile_label){ .key = "cuda_device", .str = dev };
	labels[nl++] = (struct profile_label){ .key = "cuda_stream", .str = stream };
	labels[nl++] = (struct profile_label){ .key = "cuda_graph", .str = graph };
	nl += proc_meta_labels(s->snap, labels + nl);
	return profile_add_sample(p, locs, n + 1, values, labels, nl);
}

struct profile *gpu_build_kernel_profile(const struct gpu_interval *iv,
					 const struct build_opts *o,
					 uint64_t start_ns)
{
	struct profile *p = profile_new();
	struct stack_builder *sb = NULL;
	uint32_t *locs = malloc((STACK_BUILDER_MAX_LOCATIONS + 1) * sizeof(*locs));
	uint32_t cuda_mapping;
	int ret = -ENOMEM;

	if (!p || !locs)
		goto out;
	if (profile_add_sample_type(p, "kernels", "count") ||
	    profile_add_sample_type(p, "gpu_kernel_time", "nanoseconds") ||
	    add_comments(p, o))
		goto out;
	p->period_type.type = profile_intern(p, "gpu_kernel_time");
	p->period_type.unit = profile_intern(p, "nanoseconds");
	p->period = 1;
	set_common(p, o, start_ns);
	sb = stack_builder_new(p, o);
	cuda_mapping = profile_add_mapping(p, 0, 0, 0, CUDA_MAPPING_NAME, "");
	if (!sb || !cuda_mapping)
		goto out;
	for (uint32_t i = 0; i < iv->nkbuckets; i++) {
		for (const struct gpu_kernel_entry *e = iv->kbuckets[i]; e; e = e->next) {
			ret = add_kernel_sample(p, sb, cuda_mapping, locs, e);
			if (ret)
				goto out;
		}
	}
	ret = 0;
out:
	stack_builder_free(sb);
	free(locs);
	if (ret) {
		profile_free(p);
		return NULL;
	}
	return p;
}

/* (crc) -> mapping id, linear: a process loads few cubins. */
struct cubin_mapping {
	uint64_t crc;
	uint32_t id;
};

static uint32_t cubin_mapping_id(struct profile *p, struct cubin_mapping **v,
				 uint32_t *n, uint64_t crc)
{
	char name[40], build_id[20];
	struct cubin_mapping *nv;

	for (uint32_t i = 0; i < *n; i++)
		if ((*v)[i].crc == crc)
			return (*v)[i].id;
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return 0;
	*v = nv;
	snprintf(name, sizeof(name), "cubin:%016" PRIx64, crc);
	snprintf(build_id, sizeof(build_id), "%016" PRIx64, crc);
	nv[*n].crc = crc;
	nv[*n].id = profile_add_mapping(p, 0, UINT64_MAX, 0, name, build_id);
	return nv[(*n)++].id;
}

struct profile *gpu_build_pc_profile(const struct gpu_interval *iv,
				     const struct build_opts *o,
				     uint64_t start_ns)
{
	struct profile *p = profile_new();
	struct cubin_mapping *maps = NULL;
	uint32_t nmaps = 0;
	int ret = -ENOMEM;

	if (!p)
		goto out;
	if (profile_add_sample_type(p, "pc_samples", "count") || add_comments(p, o))
		goto out;
	p->period_type.type = profile_intern(p, "pc_samples");
	p->period_type.unit = profile_intern(p, "count");
	p->period = 1;
	set_common(p, o, start_ns);
	for (uint32_t i = 0; i < iv->npbuckets; i++) {
		for (const struct gpu_pc_entry *e = iv->pbuckets[i]; e; e = e->next) {
			char dev[12];
			struct profile_label labels[4] = {
				{ .key = "stall_reason", .str = e->stall[0] ? e->stall : "unknown" },
				{ .key = "pid", .num = e->pid },
				{ .key = "comm", .str = e->comm },
				{ .key = "cuda_device", .str = dev },
			};
			int64_t value = (int64_t)e->samples;

			snprintf(dev, sizeof(dev), "%u", e->device);
			const char *name = e->function ? e->function->demangled :
					   "[unknown function]";
			uint32_t mid = cubin_mapping_id(p, &maps, &nmaps, e->crc);
			uint32_t fn = profile_function_id(p, name, e->function ?
							  e->function->mangled : name, "");
			/* unresolved: the offset in the function stands alone */
			uint32_t loc = profile_location_id(p, mid,
				e->resolved ? e->address : e->pc_offset, fn, 0);

			if (!mid || !fn || !loc ||
			    profile_add_sample(p, &loc, 1, &value, labels, 4))
				goto out;
		}
	}
	ret = 0;
out:
	free(maps);
	if (ret) {
		profile_free(p);
		return NULL;
	}
	return p;
}
