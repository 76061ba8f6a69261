// SPDX-License-Identifier: GPL-2.0
/*
 * gpu.c - GPU records into per-interval tables (see gpu.h).
 *
 * Owns: the dispatch of cupti_events records, the current interval's
 * kernel and PC-sample tables, devices, counters and the life of struct
 * gpu. Names, processes and launching stacks are tables.c; the join
 * itself is correlate.c; cubins are cubin.c; profiles are build.c.
 */
#include <errno.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_internal.h"

#define SWEEP_EVERY_NS	(1000ULL * 1000 * 1000)
#define MAX_WARNINGS	10
/* The GPU's counters (GPU_COUNT() in gpu.c, correlate.c, cubin.c; BPF: gpu.bpf.h). */
COUNTER_DEFINE(gpu_kernels, COUNTER_STAT,
	       "CUDA kernel records joined into a GPU profile");
COUNTER_DEFINE(gpu_launches_no_stack, COUNTER_PARTIAL,
	       "launches the injection library sent without a stack");
COUNTER_DEFINE(gpu_kernels_no_launch, COUNTER_PARTIAL,
	       "kernels whose launch never came: on \"[unknown launch]\"");
COUNTER_DEFINE(gpu_launches_unmatched, COUNTER_PARTIAL,
	       "launches no kernel record joined in time");
COUNTER_DEFINE(gpu_correlation_evicted, COUNTER_PARTIAL,
	       "launches evicted at the correlation table's bound");
COUNTER_DEFINE(gpu_records_dropped, COUNTER_LOST,
	       "kernel records CUPTI dropped (the injection library's report)");
COUNTER_DEFINE(gpu_library_errors, COUNTER_PARTIAL,
	       "other errors the injection library reported");
COUNTER_DEFINE(gpu_names_unknown, COUNTER_PARTIAL,
	       "kernels or PC samples without a name");
COUNTER_DEFINE(gpu_pc_samples, COUNTER_STAT, "GPU PC samples");
COUNTER_DEFINE(gpu_pc_unresolved, COUNTER_PARTIAL,
	       "GPU PC samples not placed in their cubin");
COUNTER_DEFINE(gpu_cubin_errors, COUNTER_PARTIAL, "cubins unreadable or not ELF");
COUNTER_DEFINE(gpu_kernels_bogus, COUNTER_LOST,
	       "kernel records with impossible times: dropped");
COUNTER_DEFINE(gpu_launch_stacks_dropped, COUNTER_PARTIAL,
	       "launch stacks over the memory bound: not kept");
COUNTER_DEFINE(gpu_attach_errors, COUNTER_PARTIAL,
	       "copies of the injection library profd could not attach to");
COUNTER_DEFINE_BPF(gpu_launches, COUNTER_STAT, PROFD_CNT_GPU_LAUNCHES,
		   "GPU launch probes fired");
COUNTER_DEFINE_BPF(gpu_events_lost, COUNTER_LOST, PROFD_CNT_GPU_EVENTS_LOST,
		   "GPU records other than kernels dropped: cupti_events full");
COUNTER_DEFINE_BPF(gpu_kernels_lost, COUNTER_LOST, PROFD_CNT_GPU_KERNELS_LOST,
		   "kernel timings dropped: cupti_events full");
COUNTER_DEFINE_BPF(gpu_bad_batch, COUNTER_LOST, PROFD_CNT_GPU_BAD_BATCH,
		   "GPU probes with an oversized or unreadable batch");


/* intervals */

struct gpu_interval *gpu_interval_new(void)
{
	struct gpu_interval *iv = calloc(1, sizeof(*iv));

	if (!iv)
		return NULL;
	iv->nkbuckets = 4096;
	iv->npbuckets = 4096;
	iv->kbuckets = calloc(iv->nkbuckets, sizeof(*iv->kbuckets));
	iv->pbuckets = calloc(iv->npbuckets, sizeof(*iv->pbuckets));
	if (!iv->kbuckets || !iv->pbuckets) {
		gpu_interval_free(iv);
		return NULL;
	}
	return iv;
}

void gpu_interval_free(struct gpu_interval *iv)
{
	if (!iv)
		return;
	for (uint32_t i = 0; iv->kbuckets && i < iv->nkbuckets; i++) {
		while (iv->kbuckets[i]) {
			struct gpu_kernel_entry *e = iv->kbuckets[i];

			iv->kbuckets[i] = e->next;
			gpu_stack_put(e->stack);
			gpu_name_put(e->name);
			free(e);
		}
	}
	for (uint32_t i = 0; iv->pbuckets && i < iv->npbuckets; i++) {
		while (iv->pbuckets[i]) {
			struct gpu_pc_entry *e = iv->pbuckets[i];

			iv->pbuckets[i] = e->next;
			gpu_name_put(e->function);
			free(e);
		}
	}
	free(iv->kbuckets);
	free(iv->pbuckets);
	free(iv);
}

uint64_t gpu_interval_kernels(const struct gpu_interval *iv)
{
	return iv ? iv->kernels : 0;
}

uint64_t gpu_interval_time_ns(const struct gpu_interval *iv)
{
	return iv ? iv->time_ns : 0;
}

uint64_t gpu_interval_pc_samples(const struct gpu_interval *iv)
{
	return iv ? iv->pc_samples : 0;
}

/* Count one kernel's time on (stack, name, device, stream, graph). */
void gpu_add_kernel(struct gpu *g, struct gpu_stack *s, const struct gpu_name *name,
		    const struct profd_gpu_kernel *k)
{
	uint64_t dur = k->end_ns > k->start_ns ? k->end_ns - k->start_ns : 0;
	uint64_t h = gpu_mix((uintptr_t)s ^ gpu_mix((uintptr_t)name) ^
			 gpu_mix(((uint64_t)k->device_id << 32 | k->stream_id) ^
			     (uint64_t)k->graph_id << 17));
	struct gpu_kernel_entry *e;
	struct gpu_interval *iv;

	if (!name)
		GPU_COUNT(g, names_unknown, gpu_names_unknown, 1);
	GPU_COUNT(g, kernels, gpu_kernels, 1);
	pthread_mutex_lock(&g->lock);
	iv = g->cur;
	for (e = iv->kbuckets[h & (iv->nkbuckets - 1)]; e; e = e->next)
		if (e->stack == s && e->name == name && e->device == k->device_id &&
		    e->stream == k->stream_id && e->graph == k->graph_id)
			break;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&g->lock);
			return;
		}
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
		e->stack = s;
		e->name = gpu_name_get(name);
		e->device = k->device_id;
		e->stream = k->stream_id;
		e->graph = k->graph_id;
		e->next = iv->kbuckets[h & (iv->nkbuckets - 1)];
		iv->kbuckets[h & (iv->nkbuckets - 1)] = e;
		iv->nkentries++;
	}
	e->count++;
	e->total_ns += dur;
	iv->kernels++;
	iv->time_ns += dur;
	pthread_mutex_unlock(&g->lock);
}

/* records */

static void on_kernels(struct gpu *g, const struct profd_gpu_batch *b,
		       const struct profd_gpu_kernel *v, uint64_t now)
{
	struct gpu_proc *p = gpu_proc_get(g, b->pid, true);

	for (uint32_t i = 0; i < b->n; i++) {
		const struct gpu_name *n;

		/* time running backwards or for hours: a broken or hostile record */
		if (v[i].end_ns < v[i].start_ns ||
		    v[i].end_ns - v[i].start_ns > GPU_MAX_KERNEL_NS) {
			GPU_COUNT(g, kernels_bogus, gpu_kernels_bogus, 1);
			continue;
		}
		n = gpu_proc_name(g, p, v[i].name_id, v[i].name_ptr);
		gpu_corr_kernel(g, b->pid, &v[i], n, now);
	}
}

/* Launches the library sent without a stack, a batch per thread. */
static void on_launches(struct gpu *g, const struct profd_gpu_batch *b,
			const struct profd_gpu_launch_rec *v, uint64_t now)
{
	struct gpu_proc *p = gpu_proc_get(g, b->pid, true);

	for (uint32_t i = 0; i < b->n; i++) {
		struct gpu_launch_info l = {
			.pid = b->pid,
			.tid = v[i].tid,
			.comm = p ? p->comm : "",
			.thread_name = p ? gpu_thread_name(p, v[i].tid) : "",
			.no_stack = true,
			.correlation_id = v[i].correlation_id,
		};

		gpu_launch(g, &l, now);
	}
}

static void on_pc_samples(struct gpu *g, const struct profd_gpu_batch *b,
			  const struct profd_gpu_pc_sample *v)
{
	struct gpu_proc *p = gpu_proc_get(g, b->pid, true);

	for (uint32_t i = 0; i < b->n; i++) {
		const struct gpu_name *fn = gpu_proc_name(g, p, v[i].function_name_id, 0);
		const char *stall = "";
		struct gpu_pc_entry *e;
		struct gpu_interval *iv;
		uint64_t addr = 0, h;
		bool resolved;

		for (uint32_t s = 0; p && s < p->nstalls; s++)
			if (p->stalls[s].device == v[i].device_id &&
			    p->stalls[s].index == v[i].stall_reason)
				stall = p->stalls[s].name;
		resolved = fn && gpu_cubin_resolve(g, v[i].cubin_crc, fn->mangled,
						   v[i].pc_offset, &addr);
		if (!fn)
			GPU_COUNT(g, names_unknown, gpu_names_unknown, v[i].samples);
		else if (!resolved)
			GPU_COUNT(g, pc_unresolved, gpu_pc_unresolved, v[i].samples);
		GPU_COUNT(g, pc_samples, gpu_pc_samples, v[i].samples);
		h = gpu_mix(v[i].cubin_crc ^ gpu_mix(v[i].pc_offset) ^ gpu_mix((uintptr_t)stall) ^
			gpu_mix((uint64_t)b->pid << 8 | v[i].device_id) ^ (uintptr_t)fn);
		pthread_mutex_lock(&g->lock);
		iv = g->cur;
		for (e = iv->pbuckets[h & (iv->npbuckets - 1)]; e; e = e->next)
			if (e->pid == (pid_t)b->pid && e->crc == v[i].cubin_crc &&
			    e->function == fn && e->pc_offset == v[i].pc_offset &&
			    e->stall == stall && e->device == v[i].device_id)
				break;
		if (!e && (e = calloc(1, sizeof(*e)))) {
			e->pid = b->pid;
			snprintf(e->comm, sizeof(e->comm), "%s", p ? p->comm : "");
			e->crc = v[i].cubin_crc;
			e->function = gpu_name_get(fn);
			e->pc_offset = v[i].pc_offset;
			e->address = addr;
			e->resolved = resolved;
			e->stall = stall;
			e->device = v[i].device_id;
			e->next = iv->pbuckets[h & (iv->npbuckets - 1)];
			iv->pbuckets[h & (iv->npbuckets - 1)] = e;
			iv->npentries++;
		}
		if (e) {
			e->samples += v[i].samples;
			iv->pc_samples += v[i].samples;
		}
		pthread_mutex_unlock(&g->lock);
	}
}

static void on_stall_reasons(struct gpu *g, const struct profd_gpu_batch *b,
			     const struct profd_gpu_stall_reason *v)
{
	struct gpu_proc *p = gpu_proc_get(g, b->pid, true);
	char name[sizeof(v->name) + 1];

	if (!p)
		return;
	for (uint32_t i = 0; i < b->n; i++) {
		struct gpu_stall *ns;
		const char *s;
		uint32_t j;

		memcpy(name, v[i].name, sizeof(v[i].name));
		name[sizeof(v[i].name)] = '\0';
		/* "smsp__pcsamp_warps_issue_stalled_barrier" -> "barrier" */
		s = strstr(name, "_stalled_");
		s = gpu_stall_intern(g, s ? s + strlen("_stalled_") : name);
		if (!s)
			continue;
		for (j = 0; j < p->nstalls; j++)
			if (p->stalls[j].device == v[i].device_id &&
			    p->stalls[j].index == v[i].index)
				break;
		if (j == p->nstalls) {
			if (p->nstalls >= GPU_MAX_STALL_REASONS * 4)
				continue;
			ns = realloc(p->stalls, (p->nstalls + 1) * sizeof(*ns));
			if (!ns)
				continue;
			p->stalls = ns;
			p->nstalls++;
		}
		p->stalls[j].device = v[i].device_id;
		p->stalls[j].index = v[i].index;
		p->stalls[j].name = s;
	}
}

static void on_error(struct gpu *g, const struct profd_gpu_batch *b,
		     const struct profd_gpu_error *v)
{
	for (uint32_t i = 0; i < b->n; i++) {
		char msg[sizeof(v->message) + 1];

		if (v[i].code == PROFD_GPU_ERR_RECORDS_DROPPED) {
			GPU_COUNT(g, records_dropped, gpu_records_dropped, v[i].count);
			continue;
		}
		GPU_COUNT(g, library_errors, gpu_library_errors, 1);
		if (g->warnings >= MAX_WARNINGS && !g->o.verbose)
			continue;
		g->warnings++;
		memcpy(msg, v[i].message, sizeof(v[i].message));
		msg[sizeof(v[i].message)] = '\0';
		/* the process wrote it: no terminal control characters */
		for (char *c = msg; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		fprintf(stderr, "profd: warning: CUDA injection library in pid %u: "
			"%s (error %u, result %d)\n", b->pid, msg, v[i].code,
			v[i].result);
	}
}

int gpu_record(struct gpu *g, const void *data, size_t size, uint64_t now)
{
	const struct profd_gpu_batch *b = data;
	uint32_t elem;
	const void *v = b + 1;

	if (size < sizeof(uint32_t))
		goto malformed;
	if (b->type == PROFD_EVENT_GPU_NAME) {
		const struct profd_gpu_name *n = data;
		const char *s = (const char *)(n + 1);
		struct gpu_proc *p;
		const struct gpu_name *gn;

		if (size < sizeof(*n) || !n->len || n->len > PROFD_GPU_NAME_MAX ||
		    size < sizeof(*n) + n->len || s[n->len - 1] != '\0')
			goto malformed;
		p = gpu_proc_get(g, n->pid, true);
		gn = p && gpu_proc_name_budget(p, n->len) ? gpu_name_intern(g, s) : NULL;
		if (gn)
			gpu_proc_set_name(p, n->name_id, gn);	/* takes the reference */
		return 0;
	}
	elem = size >= sizeof(*b) ? profd_gpu_batch_elem_size(b->type) : 0;
	if (!elem || b->n > PROFD_GPU_BATCH_MAX ||
	    size < sizeof(*b) + (size_t)b->n * elem)
		goto malformed;
	switch (b->type) {
	case PROFD_EVENT_GPU_KERNELS:
		on_kernels(g, b, v, now);
		break;
	case PROFD_EVENT_GPU_CUBIN:
		for (uint32_t i = 0; i < b->n; i++)
			gpu_cubin_seen(g, b->pid, (const struct profd_gpu_cubin *)v + i);
		break;
	case PROFD_EVENT_GPU_PC_SAMPLES:
		on_pc_samples(g, b, v);
		break;
	case PROFD_EVENT_GPU_STALL_REASONS:
		on_stall_reasons(g, b, v);
		break;
	case PROFD_EVENT_GPU_DEVICE:
		pthread_mutex_lock(&g->lock);
		for (uint32_t i = 0; i < b->n; i++) {
			const struct profd_gpu_device *d = (const struct profd_gpu_device *)v + i;

			if (d->device_id < GPU_MAX_DEVICES) {
				g->devices[d->device_id] = *d;
				g->devices[d->device_id].name[sizeof(d->name) - 1] = '\0';
				g->device_seen[d->device_id] = true;
			}
		}
		pthread_mutex_unlock(&g->lock);
		break;
	case PROFD_EVENT_GPU_ERROR:
		on_error(g, b, v);
		break;
	case PROFD_EVENT_GPU_LAUNCHES:
		on_launches(g, b, v, now);
		break;
	}
	return 0;
malformed:
	GPU_STAT_ADD(g, malformed, 1);
	return -EINVAL;
}

void gpu_launch(struct gpu *g, const struct gpu_launch_info *l, uint64_t now)
{
	struct gpu_stack *s;
	struct gpu_proc *p = gpu_proc_get(g, l->pid, true);

	if (p && l->comm && l->comm != p->comm)
		snprintf(p->comm, sizeof(p->comm), "%s", l->comm);
	GPU_STAT_ADD(g, launches, 1);
	if (l->no_stack)
		GPU_COUNT(g, launches_no_stack, gpu_launches_no_stack, 1);
	s = gpu_stack_intern(g, l, l->no_stack ? GPU_STACK_NOT_CAPTURED : 0);
	if (!s && !l->no_stack) {
		/* over the stack memory bound: keep the launch, not its stack */
		struct gpu_launch_info bare = *l;

		bare.nkernel = bare.nuser = 0;
		bare.ips = NULL;
		s = gpu_stack_intern(g, &bare, GPU_STACK_NOT_CAPTURED);
	}
	if (!s)
		return;
	gpu_corr_launch(g, l->pid, l->correlation_id, s, now);
	gpu_stack_put(s);
}

void gpu_process_exit(struct gpu *g, pid_t pid, uint64_t now)
{
	struct gpu_proc *p = gpu_proc_get(g, pid, false);

	if (p && !p->exited_ns)
		p->exited_ns = now ? now : 1;
}

void gpu_tick(struct gpu *g, uint64_t now)
{
	gpu_corr_expire(g, now, false);
	if (now - g->last_sweep_ns >= SWEEP_EVERY_NS) {
		g->last_sweep_ns = now;
		gpu_tables_sweep(g, now);
	}
}

void gpu_finish(struct gpu *g)
{
	gpu_corr_expire(g, 0, true);
}

struct gpu_interval *gpu_swap(struct gpu *g)
{
	struct gpu_interval *fresh = gpu_interval_new(), *old;

	if (!fresh)
		return NULL;
	pthread_mutex_lock(&g->lock);
	old = g->cur;
	g->cur = fresh;
	pthread_mutex_unlock(&g->lock);
	return old;
}

unsigned int gpu_device_comments(struct gpu *g, char (*out)[96], unsigned int n)
{
	unsigned int k = 0;

	pthread_mutex_lock(&g->lock);
	for (unsigned int i = 0; i < GPU_MAX_DEVICES && k < n; i++) {
		const struct profd_gpu_device *d = &g->devices[i];

		if (!g->device_seen[i])
			continue;
		snprintf(out[k++], 96, "cuda_device %u: %.32s, %u SMs, %u MHz, "
			 "cc %u.%u, %llu MiB", d->device_id, d->name, d->sm_count,
			 d->clock_khz / 1000, d->cc_major, d->cc_minor,
			 (unsigned long long)(d->total_memory >> 20));
	}
	pthread_mutex_unlock(&g->lock);
	return k;
}

void gpu_stats(struct gpu *g, struct gpu_stats *st)
{
	const uint64_t *src = (const uint64_t *)&g->st;
	uint64_t *dst = (uint64_t *)st;

	for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

struct gpu *gpu_new(const struct gpu_opts *o)
{
	struct gpu *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->o = *o;
	elf_version(EV_CURRENT);
	if (!g->o.launch_timeout_ns)
		g->o.launch_timeout_ns = 30ULL * 1000 * 1000 * 1000;
	if (!g->o.max_launches)
		g->o.max_launches = 1u << 18;	/* ~50 MiB at most with waiting kernels */
	pthread_mutex_init(&g->lock, NULL);
	g->cur = gpu_interval_new();
	g->remote = remote_reader_new();
	if (!g->cur || !g->remote || gpu_tables_init(g) || gpu_corr_init(g)) {
		gpu_free(g);
		return NULL;
	}
	return g;
}

void gpu_free(struct gpu *g)
{
	if (!g)
		return;
	gpu_corr_free(g);
	gpu_interval_free(g->cur);
	gpu_cubins_free(g);
	gpu_tables_free(g);
	remote_reader_free(g->remote);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
