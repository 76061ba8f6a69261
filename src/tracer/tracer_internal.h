/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tracer_internal.h - the tracer's state, shared by tracer.c (programs,
 * perf events, ringbufs), maps.c (map sizes, ringbuf fill levels) and
 * usdt.c (GPU probe attachment). Not for use outside src/tracer/.
 */
#ifndef PROFD_TRACER_TRACER_INTERNAL_H
#define PROFD_TRACER_TRACER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer/tracer.h"

/*
 * Copies of the injection library attached at once, and probe sites a
 * copy may have (BPF_USDT_MAX_SPEC_CNT in bpf/gpu.bpf.h has room for
 * their product); copies no process maps any more are detached by
 * tracer_gpu_detach_unused().
 */
#define TRACER_GPU_MAX_LIBRARIES 64
#define TRACER_GPU_SITES_PER_COPY 32
/* Probes of provider "profd" (bpf/gpu_events.h, bpf/nvtx_events.h). */
#define TRACER_GPU_PROBES 10

/*
 * One attached copy: libbpf's USDT links (perf-event uprobes), or, where
 * the kernel has them, one uprobe-multi link per probe (usdt_multi.h)
 * whose sites' specs are spec ids slot * TRACER_GPU_SITES_PER_COPY + k.
 */
struct gpu_library {
	dev_t dev;
	ino_t ino;
	struct bpf_link *links[TRACER_GPU_PROBES];
	int link_fds[TRACER_GPU_PROBES];	/* uprobe-multi links; -1: none */
	int slot;				/* its block of spec ids; -1: none */
	bool seen;		/* mapped by a process since the last sweep */
};

/*
 * A map sized by --bpf-map-scale-factor: maps.c creates it before the
 * skeleton loads, halving a size the kernel refuses down to @floor.
 */
struct tracer_map_size {
	struct bpf_map *map;
	uint32_t want;		/* max_entries asked (bytes for a ringbuf) */
	uint32_t floor;		/* the unscaled size: the smallest tried */
	uint32_t got;		/* max_entries created; 0: left to libbpf */
};

/* Maps in the plan: two ringbufs, three per-thread/process LRUs, two tables. */
#define TRACER_SIZED_MAPS 7

/* Read-only views of one ringbuf's consumer and producer position pages. */
struct tracer_rb_view {
	const uint64_t *consumer_pos;	/* NULL: not mapped */
	const uint64_t *producer_pos;
	uint64_t size;			/* data bytes (max_entries) */
};

struct tracer {
	struct profd_bpf *skel;
	struct tracer_rb_view rb_views[2];	/* events, cupti_events */
	struct ring_buffer *rb;
	int ncpus_possible;
	int *perf_fds;			/* per possible CPU, -1 if not open */
	pthread_t detacher;		/* tracer_detach_probes_start() */
	bool detaching;
	struct bpf_link **perf_links;
	unsigned int nsampled;
	tracer_event_fn fn;
	void *ctx;
	struct gpu_library gpu_libs[TRACER_GPU_MAX_LIBRARIES];
	unsigned int ngpu_libs;
	/* threads destroying the links of copies nobody maps any more */
	pthread_t gpu_detachers[TRACER_GPU_MAX_LIBRARIES];
	unsigned int ngpu_detachers;
	bool gpu_multi;			/* programs loaded for uprobe-multi links */
	pthread_mutex_t spec_lock;	/* spec_slots: detach threads free them */
	uint64_t spec_slots;		/* bit s: spec id block s in use */
};

/*
 * tracer_gpu_configure - before @skel loads: if the kernel has
 * uprobe-multi links, load the GPU programs for them (they can then be
 * attached only that way). Returns whether it did.
 */
bool tracer_gpu_configure(struct profd_bpf *skel);

/* tracer_gpu_detach_all - destroy every GPU probe link (tracer_close). */
void tracer_gpu_detach_all(struct tracer *t);

/*
 * tracer_maps_plan - size the maps --bpf-map-scale-factor scales in the
 * opened (not loaded) @skel from @o (bpf_map__set_max_entries) and
 * describe them in @out (TRACER_SIZED_MAPS entries). Returns the count.
 */
unsigned int tracer_maps_plan(struct profd_bpf *skel, const struct tracer_opts *o,
			      struct tracer_map_size *out);

/*
 * tracer_maps_create - create each map of @v (@n entries) asked bigger
 * than its unscaled size: at the unscaled size first, then as large as
 * fits (halving on ENOMEM/E2BIG) while some memory is held back for the
 * rest of profd and the growth of all of them stays within half of
 * MemAvailable and, under a memory cgroup limit, half of the cgroup's
 * room beyond @reserve bytes (what the rest of profd may take), with one
 * "profd: warning: BPF map ..." line per map that got less than asked;
 * hand each to the skeleton (bpf_map__reuse_fd). Others are left to
 * libbpf. Returns 0 or a negative errno after one "profd: error: ..."
 * line (a map that cannot be created even unscaled).
 */
int tracer_maps_create(struct tracer_map_size *v, unsigned int n, uint64_t reserve);

/*
 * tracer_maps_unscaled - set each map of @v back to its unscaled size
 * (for a second copy of the object loaded only for its verifier log).
 */
void tracer_maps_unscaled(struct tracer_map_size *v, unsigned int n);

/*
 * tracer_ringbufs_map - map the position pages of the loaded skeleton's
 * two ringbufs read-only for tracer_ringbuf_usage(). A failure leaves
 * that view unmapped (usage then says -ENODEV).
 */
void tracer_ringbufs_map(struct tracer *t);

/* tracer_ringbufs_unmap - undo tracer_ringbufs_map(). */
void tracer_ringbufs_unmap(struct tracer *t);

#endif /* PROFD_TRACER_TRACER_INTERNAL_H */
