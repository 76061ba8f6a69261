/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tracer_internal.h - the tracer's state, shared by tracer.c (programs,
 * perf events, ringbufs) and usdt.c (GPU probe attachment). Not for use
 * outside src/tracer/.
 */
#ifndef PROFD_TRACER_TRACER_INTERNAL_H
#define PROFD_TRACER_TRACER_INTERNAL_H

#include <sys/types.h>

#include "tracer/tracer.h"

/*
 * Copies of the injection library attached at once (BPF_USDT_MAX_SPEC_CNT
 * in bpf/gpu.bpf.h has room for them); copies no process maps any more
 * are detached by tracer_gpu_detach_unused().
 */
#define TRACER_GPU_MAX_LIBRARIES 64
/* Probes of provider "profd" (bpf/gpu_events.h, bpf/nvtx_events.h). */
#define TRACER_GPU_PROBES 10

struct gpu_library {
	dev_t dev;
	ino_t ino;
	struct bpf_link *links[TRACER_GPU_PROBES];
	bool seen;		/* mapped by a process since the last sweep */
};

struct tracer {
	struct profd_bpf *skel;
	struct ring_buffer *rb;
	int ncpus_possible;
	int *perf_fds;			/* per possible CPU, -1 if not open */
	struct bpf_link **perf_links;
	unsigned int nsampled;
	tracer_event_fn fn;
	void *ctx;
	struct gpu_library gpu_libs[TRACER_GPU_MAX_LIBRARIES];
	unsigned int ngpu_libs;
};

/* tracer_gpu_detach_all - destroy every GPU probe link (tracer_close). */
void tracer_gpu_detach_all(struct tracer *t);

#endif /* PROFD_TRACER_TRACER_INTERNAL_H */
