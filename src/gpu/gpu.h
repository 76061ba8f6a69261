/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpu.h - CUDA kernel time joined with the CPU stacks that launched it.
 *
 * Owns: everything user space does with the records of the CUDA injection
 * library (bpf/gpu_events.h): the join of launch stacks and kernel
 * timings by (pid, correlation id) (correlate.c), kernel and SASS function
 * names, cubins read from process memory and their function symbols
 * (cubin.c), PC samples with stall reasons, device configurations and
 * library errors, and the per-interval tables the GPU profiles are built
 * from (build.c).
 *
 * Threads: the reader thread calls gpu_launch(), gpu_record(), gpu_tick()
 * and gpu_finish(); the main thread calls gpu_swap(), the builders and
 * gpu_stats(). Only the interval tables and the stats cross threads.
 */
#ifndef PROFD_GPU_GPU_H
#define PROFD_GPU_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "aggregate/aggregate.h"
#include "counters/counters.h"
#include "profile/profile.h"
#include "proc/process.h"

struct gpu_opts {
	uint64_t launch_timeout_ns;	/* a launch waits this long for its kernels,
					 * a kernel this long for its launch */
	uint32_t max_launches;		/* correlation entries kept, all processes */
	int verbose;
};

/*
 * Copies of the injection library whose probes could not be attached:
 * counted by the code that attaches (the agent's reader), declared in gpu.c.
 */
COUNTER_EXTERN(gpu_attach_errors);

/* Cumulative counters (see gpu_stats()). */
struct gpu_stats {
	uint64_t launches;		/* launch probes seen (with or without stack) */
	uint64_t launches_no_stack;	/* of which the library sent without a stack */
	uint64_t kernels;		/* kernel records joined into the profile */
	uint64_t kernels_no_launch;	/* kernels whose launch never came: on "[unknown launch]" */
	uint64_t launches_unmatched;	/* launches no kernel record ever joined */
	uint64_t correlation_evicted;	/* launches evicted at the max_launches bound */
	uint64_t records_dropped;	/* activity records CUPTI dropped (library report) */
	uint64_t library_errors;	/* other errors the library reported */
	uint64_t names_unknown;		/* kernels or PC samples with no name */
	uint64_t pc_samples;		/* PC sample counts received */
	uint64_t pc_unresolved;		/* PC samples whose function is not in its cubin */
	uint64_t cubins;		/* distinct cubins parsed */
	uint64_t cubin_errors;		/* cubins unreadable or not ELF */
	uint64_t malformed;		/* records shorter than their header says */
	uint64_t kernels_bogus;		/* kernel records ending before they start or
					 * lasting over an hour: dropped */
	uint64_t stacks_dropped;	/* launch stacks not kept: memory bound */
};

/* One launch, as the reader thread saw it. */
struct gpu_launch_info {
	pid_t pid;
	pid_t tid;
	const char *comm;		/* process name */
	const char *thread_name;
	struct proc_snapshot *snap;	/* may be NULL; a reference is taken */
	uint32_t flags;			/* PROFD_SAMPLE_* of the stack */
	bool no_stack;			/* the library sent the launch without a stack */
	uint64_t correlation_id;
	const uint64_t *ips;		/* as struct agg_stack: kernel then user */
	uint16_t nkernel;
	uint16_t nuser;
};

struct gpu;
struct gpu_interval;

/* gpu_new - empty state. NULL on out of memory. */
struct gpu *gpu_new(const struct gpu_opts *o);

/* gpu_free - free everything, open intervals included. NULL is fine. */
void gpu_free(struct gpu *g);

/*
 * gpu_launch - a launch probe's stack (or a launch sent without one):
 * joins the kernel records of (pid, correlation id) that came first and
 * waits for the rest. Reader thread.
 */
void gpu_launch(struct gpu *g, const struct gpu_launch_info *l, uint64_t now);

/*
 * gpu_record - one cupti_events record of type 17..23 (kernel timings,
 * names, cubins, PC samples, stall reasons, devices, errors). Returns 0,
 * or -EINVAL for a malformed record (counted). Reader thread.
 */
int gpu_record(struct gpu *g, const void *data, size_t size, uint64_t now);

/* gpu_process_exit - @pid exited: its tables go after a grace period. */
void gpu_process_exit(struct gpu *g, pid_t pid, uint64_t now);

/*
 * gpu_tick - expire launches and kernels that waited past the timeout
 * (CLOCK_MONOTONIC @now), forget exited processes. Reader thread, often.
 */
void gpu_tick(struct gpu *g, uint64_t now);

/*
 * gpu_finish - profd stops: every kernel still waiting for its launch goes
 * to "[unknown launch]", every launch still waiting is counted unmatched.
 * Reader thread, after the last drain.
 */
void gpu_finish(struct gpu *g);

/*
 * gpu_swap - hand over the current interval's tables and start new ones.
 * Returns the old interval (caller frees with gpu_interval_free()), or
 * NULL on out of memory (the current tables go on). Main thread.
 */
struct gpu_interval *gpu_swap(struct gpu *g);

/* gpu_interval_free - free an interval from gpu_swap(). NULL is fine. */
void gpu_interval_free(struct gpu_interval *iv);

/*
 * gpu_interval_kernels / _time_ns / _pc_samples - kernels, their summed
 * GPU time (ns) and PC samples the interval holds.
 */
uint64_t gpu_interval_kernels(const struct gpu_interval *iv);
uint64_t gpu_interval_time_ns(const struct gpu_interval *iv);
uint64_t gpu_interval_pc_samples(const struct gpu_interval *iv);

/*
 * gpu_build_kernel_profile - the GPU kernel-time profile of @iv: sample
 * types kernels/count and gpu_kernel_time/nanoseconds; each sample is one
 * (launching stack, kernel, device, stream, graph) with the kernel's
 * demangled name as the leaf (mapping "[cuda]") above the launching CPU
 * stack; labels pid, tid, comm, thread_name, cuda_device, cuda_stream,
 * cuda_graph (decimal strings: pprof drops numeric labels of 0). @o
 * gives symbol sources, comments and the interval's end;
 * @start_ns is its start (Unix ns). NULL on out of memory.
 */
struct profile *gpu_build_kernel_profile(const struct gpu_interval *iv,
					 const struct build_opts *o,
					 uint64_t start_ns);

/*
 * gpu_build_pc_profile - the PC-sampling profile of @iv: sample type
 * pc_samples/count; each sample is one SASS location (function + offset
 * in its cubin, mapping "cubin:<crc>") with labels stall_reason, pid,
 * comm, cuda_device. NULL on out of memory.
 */
struct profile *gpu_build_pc_profile(const struct gpu_interval *iv,
				     const struct build_opts *o,
				     uint64_t start_ns);

/*
 * gpu_device_comments - one line per device seen ("cuda_device 0: NAME,
 * 132 SMs, 1980 MHz, ...") into @out (@n lines of @len bytes at most).
 * Returns the lines written. Main thread.
 */
unsigned int gpu_device_comments(struct gpu *g, char (*out)[96], unsigned int n);

/* The injection library's file name starts with this. */
#define GPU_INJECT_LIBRARY_NAME "libprofd_inject"

/* @m: the file's first mapping in @pid; its path as the process sees it. */
typedef void (*gpu_library_fn)(void *ctx, pid_t pid, const struct proc_mapping *m);

/*
 * gpu_discover_libraries - call @fn for every (process, mapped file)
 * whose file name contains GPU_INJECT_LIBRARY_NAME, once per file per
 * process, in process @pid, or in every process when @pid <= 0. Processes that vanish while being read are
 * skipped. Returns the number of calls.
 */
unsigned int gpu_discover_libraries(pid_t pid, gpu_library_fn fn, void *ctx);

/*
 * gpu_library_mappings - call @fn once per injection library file (file
 * name containing GPU_INJECT_LIBRARY_NAME) mapped in @maps of @pid.
 * Returns the number of calls.
 */
unsigned int gpu_library_mappings(pid_t pid, const struct proc_maps *maps,
				  gpu_library_fn fn, void *ctx);

/*
 * Finding processes that map the injection library (discover.c): a look
 * at a process right after it dlopens (PROFD_EVENT_LIB_MAPPED) and again
 * GPU_DISCOVERY_RECHECK_NS later, and a scan of every process each
 * GPU_DISCOVERY_SCAN_NS. @fn is called for each library file found.
 * Reader thread.
 */
#define GPU_DISCOVERY_RECHECK_NS (500ULL * 1000 * 1000)
#define GPU_DISCOVERY_SCAN_NS (30ULL * 1000 * 1000 * 1000)
#define GPU_DISCOVERY_CHECKS 64

struct gpu_discovery {
	gpu_library_fn fn;
	void *ctx;
	bool full_scans;		/* false: --pid / exec runs */
	uint64_t last_scan_ns;
	struct {
		pid_t pid;
		uint64_t due_ns;
		bool again;		/* one more look later */
	} checks[GPU_DISCOVERY_CHECKS];
	unsigned int nchecks;
};

/* gpu_discovery_init - @full_scans: also scan every process now and then. */
void gpu_discovery_init(struct gpu_discovery *d, bool full_scans,
			gpu_library_fn fn, void *ctx);

/*
 * gpu_discovery_dlopen - @pid loaded a library: look at its maps at the
 * next tick (one pending look per process; beyond GPU_DISCOVERY_CHECKS
 * pending, the scans find it).
 */
void gpu_discovery_dlopen(struct gpu_discovery *d, pid_t pid, uint64_t now);

/*
 * gpu_discovery_tick - the looks that are due, and the full scan when it
 * is time (first at the first tick). Returns true when it scanned every
 * process.
 */
bool gpu_discovery_tick(struct gpu_discovery *d, uint64_t now);

/* gpu_stats - the cumulative counters. Any thread. */
void gpu_stats(struct gpu *g, struct gpu_stats *st);

#endif /* PROFD_GPU_GPU_H */
