/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tracer.h - loading and running profd's BPF programs.
 *
 * Owns: the libbpf skeleton (bpf/profd.bpf.c), one software cpu-clock
 * perf event per online CPU with the sampler attached, the lifecycle
 * tracepoints, the `events` ringbuf consumer and the BPF counters; the
 * map sizes of --bpf-map-scale-factor and the ringbufs' fill levels
 * (maps.c); libbpf's messages and the verifier log (bpf_log.c).
 */
#ifndef PROFD_TRACER_TRACER_H
#define PROFD_TRACER_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bpf/profd.h"

struct tracer_opts {
	unsigned int frequency_hz;	/* samples per second per CPU */
	const pid_t *pids;		/* NULL: every process */
	size_t npids;
	bool include_idle;		/* keep pid 0 samples */
	unsigned int max_stack_depth;	/* user frames, <= PROFD_MAX_USER_FRAMES */
	unsigned int ringbuf_bytes;	/* power of two, >= page size */
	int verbose;			/* 1: libbpf warnings, 2: its debug log too */
	bool dwarf_unwinding;		/* walk with unwind tables where loaded */
	uint32_t stack_copy_bytes;	/* stack a sample without tables carries */
	bool stack_copy_always;		/* every sample carries its stack */
	unsigned int max_processes;	/* entries of unwind_procs */
	bool follow_children;		/* children of --pid processes join the filter */
	unsigned int gpu_ringbuf_bytes;	/* cupti_events size, power of two; 0: default */
	unsigned int map_scale_factor;	/* --bpf-map-scale-factor: the fixed-size maps
					 * (threads, library events) x 2^N; the sizes
					 * above come scaled already */
	bool start_disabled;		/* perf events off until tracer_set_sampling()
					 * (a sample or two taken while attaching
					 * may be in the ringbuf) */
	unsigned int verifier_log_level;/* --bpf-verifier-log-level 0..2: the kernel's
					 * verifier log of a program that fails to load */
	bool max_processes_scaled;	/* max_processes is x 2^map_scale_factor: it may
					 * fall back to the unscaled size (tracer_scale_opts) */
	bool off_cpu;			/* attach the sched_switch program (off-CPU) */
	double off_cpu_threshold;	/* P(a blocking switch-out is recorded), 0..1 */
	uint64_t memcg_reserve_bytes;	/* what the rest of profd may take in its memory
					 * cgroup (RSS ceiling, unwind tables): the
					 * scaled maps grow only into the cgroup's
					 * room beyond it (util/memcg.h) */
};

/* Largest size tracer_scale_opts() gives a ringbuf (bytes). */
#define TRACER_RINGBUF_MAX	(1u << 31)
/* Largest --bpf-map-scale-factor. */
#define TRACER_MAP_SCALE_MAX	8

/*
 * tracer_scale_opts - apply --bpf-map-scale-factor @factor (0..8) to @o,
 * which holds the unscaled sizes: ringbuf_bytes and gpu_ringbuf_bytes
 * (non-zero ones) become x 2^@factor (at most TRACER_RINGBUF_MAX), and
 * max_processes too when @scale_processes (false: --max-processes was
 * given). Sets map_scale_factor, which makes tracer_open() scale the maps
 * it sizes itself (runtime_threads, dl_events) and lets every scaled map
 * fall back, halving, to its unscaled size when the kernel refuses it
 * (a warning per map). A @factor above 8 counts as 8.
 */
void tracer_scale_opts(struct tracer_opts *o, unsigned int factor,
		       bool scale_processes);

/* Fill level of one BPF ringbuf. */
struct tracer_ringbuf_usage {
	uint64_t size;		/* bytes */
	uint64_t used;		/* bytes written and not consumed yet, now */
};


/* Processes the PID filter holds when it follows children. */
#define PID_FILTER_TREE_MAX 65536

/*
 * Called on the polling thread for every ringbuf record; @data starts with
 * a __u32 enum profd_event_type. Return 0 to go on.
 */
typedef int (*tracer_event_fn)(void *ctx, const void *data, size_t size);

struct tracer;

/*
 * tracer_open - load the BPF programs and attach them (sampling starts at
 * once unless opts->start_disabled). Maps sized by --bpf-map-scale-factor
 * that the kernel refuses are made smaller, one "profd: warning: BPF map
 * ..." line each. Prints one "profd: error: ..." line (after the verifier
 * log when opts->verifier_log_level asks for it) and returns NULL on
 * failure.
 */
struct tracer *tracer_open(const struct tracer_opts *opts, tracer_event_fn fn,
			   void *ctx);

/*
 * tracer_poll - wait up to @timeout_ms for a wakeup, then hand every
 * record in the ringbuf to the callback (most records do not wake the
 * reader: see emit_sample(), so call this periodically). The callback may
 * end the batch early by returning -ECANCELED (that record is consumed):
 * then INT_MAX is returned (more may wait). Otherwise returns the number
 * consumed, or a negative errno (-EINTR is not an error).
 */
int tracer_poll(struct tracer *t, int timeout_ms);

/*
 * tracer_drain - consume whatever is in the ringbuf without waiting (or
 * until the callback returns -ECANCELED: INT_MAX). Returns as
 * tracer_poll().
 */
int tracer_drain(struct tracer *t);

/*
 * tracer_set_sampling - enable or disable the perf events (no reload).
 * Returns 0 or the first negative errno.
 */
int tracer_set_sampling(struct tracer *t, bool on);

/* tracer_read_counters - sum each BPF counter over CPUs into @out. */
int tracer_read_counters(struct tracer *t, uint64_t out[PROFD_CNT_MAX]);

/*
 * tracer_ringbuf_usage - how full the `events` (@gpu false) or
 * `cupti_events` (@gpu true) ringbuf is now: its size and the bytes
 * written but not consumed yet (records and their 8-byte headers), read
 * from read-only mappings of the ringbuf's position pages. Any thread,
 * lock-free. Returns 0, or -ENODEV when the pages could not be mapped at
 * start (@out zeroed).
 */
int tracer_ringbuf_usage(struct tracer *t, bool gpu, struct tracer_ringbuf_usage *out);

/*
 * tracer_pid_forget - `profd exec`: delete @pid from the PID filter if it
 * is still marked exited (PROFD_PID_EXITED); a process that reused the PID
 * keeps its entry. Returns 0 or -errno.
 */
int tracer_pid_forget(struct tracer *t, uint32_t pid);

/*
 * tracer_exec_ns - when process @pid last exec'd (bpf_ktime_get_ns(), the
 * CLOCK_MONOTONIC ns `exec_times` keeps: the start of the exec's point of
 * no return, its task_rename in begin_new_exec(), then its end,
 * sched_process_exec), 0 if no
 * exec of it was seen (or its entry was evicted). One map lookup; any
 * thread.
 */
uint64_t tracer_exec_ns(const struct tracer *t, pid_t pid);

/*
 * tracer_unwind_maps - fds of the `unwind_shards` (array of maps),
 * `unwind_procs` (tgid -> struct unwind_proc) and `exec_times` (tgid ->
 * ns of its last exec) maps, owned by @t.
 */
void tracer_unwind_maps(const struct tracer *t, int *shards_fd, int *procs_fd,
			int *exec_fd);

/*
 * tracer_runtime_procs_fd - fd of the `runtime_procs` map (tgid -> struct
 * profd_runtime_proc, bpf/runtime.h), owned by @t.
 */
int tracer_runtime_procs_fd(const struct tracer *t);

/*
 * tracer_gpu_attach - attach the GPU probe programs (bpf/gpu.bpf.h) to
 * every USDT probe of provider "profd" in the CUDA injection library at
 * @path, for every process that maps it now or later (uprobes are per
 * file). A file already attached (same device and inode) is skipped.
 * Returns 1 when newly attached, 0 when already attached, or a negative
 * errno: -ENOENT (no such file), -ENOSPC (too many library copies),
 * -ESRCH (not a profd injection library: a probe is missing), others from
 * libbpf. Prints nothing; the caller decides what to report.
 */
int tracer_gpu_attach(struct tracer *t, const char *path);

/*
 * tracer_gpu_detach_unused - detach from library copies that
 * tracer_gpu_attach() did not see since the last call; call it after a
 * scan of every process. Their links are destroyed on threads of their
 * own (~1 s a copy on a loaded guest); tracer_close() waits for them.
 * Returns how many.
 */
unsigned int tracer_gpu_detach_unused(struct tracer *t);

/* tracer_gpu_libraries - number of library files attached. */
unsigned int tracer_gpu_libraries(const struct tracer *t);

/* tracer_ncpus - number of CPUs sampled (online at start). */
unsigned int tracer_ncpus(const struct tracer *t);

/*
 * tracer_detach_probes_start - start destroying the uprobes (the GPU
 * library probes, the dlopen probe) on a thread of its own: the kernel
 * takes them one at a time (~0.1 s each on a loaded guest), so this runs
 * while the last profile is written. Call once the ringbuf is no longer
 * read (no other thread uses the tracer's GPU state after); tracer_close()
 * waits for it. NULL is fine.
 */
void tracer_detach_probes_start(struct tracer *t);

/* tracer_close - detach and free everything. NULL is fine. */
void tracer_close(struct tracer *t);

/*
 * parse_cpu_list - parse a kernel CPU list ("0-3,5") into @online (array
 * of @n bools, true for listed CPUs). Returns 0 or -EINVAL.
 */
int parse_cpu_list(const char *s, bool *online, int n);

#endif /* PROFD_TRACER_TRACER_H */
