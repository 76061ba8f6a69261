/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent_internal.h - the state of one profd run, shared by the files of
 * src/agent/ (agent.c: signals and the run loop; setup.c: what a run sets
 * up and takes down; reader.c: the reader thread and the record path;
 * interval.c: the interval a sample goes to, the swap; flush.c: an
 * interval's profiles to the sinks; probabilistic.c: probabilistic profiling;
 * metrics.c: /metrics; debug.c:
 * --debug-pid output). Not for use outside src/agent/.
 */
#ifndef PROFD_AGENT_AGENT_INTERNAL_H
#define PROFD_AGENT_AGENT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/memory.h"
#include "agent/agent.h"
#include "agent/exec.h"
#include "agent/export.h"
#include "aggregate/aggregate.h"
#include "bpf/profd.h"
#include "counters/counters.h"
#include "gpu/gpu.h"
#include "output/sink.h"
#include "proc/file_gate.h"
#include "proc/object_loader.h"
#include "proc/process.h"
#include "runtime/runtime.h"
#include "symbol/debuginfod.h"
#include "symbol/kallsyms.h"
#include "symbol/symbolizer.h"
#include "tracer/tracer.h"
#include "unwind/async.h"
#include "unwind/loader.h"

/* How long shutdown waits for the unwind loader's job in hand (ns). */
#define UNWIND_STOP_WAIT_NS	(300ULL * 1000 * 1000)
#define OBJECTS_STOP_WAIT_NS	(300ULL * 1000 * 1000)
/* libdebuginfod calls the callback that cancels a fetch about once a second */
#define DBGD_STOP_WAIT_NS	(1500ULL * 1000 * 1000)
/*
 * How long one interval's write-out waits for objects still being opened:
 * this, and at most a quarter of the interval (the next swap stays on time).
 */
#define OBJECTS_FLUSH_WAIT_NS	(1000ULL * 1000 * 1000)
#define MAX_STACKS_PER_INTERVAL (1u << 20)
#define READER_SYNC_MS 1000	/* longest wait for the reader to catch up */
#define IDLE_PROCESS_NS (60ULL * 1000 * 1000 * 1000)

/* User frames after merging: native + a runtime's + an error frame. */
#define MERGED_USER_MAX (PROFD_MAX_USER_FRAMES + PROFD_MAX_INTERP_FRAMES + 2)

/* Written profiles and flame graphs that failed (flush.c; also in /metrics). */
COUNTER_EXTERN(write_error);

struct metrics_server;

/* A PID whose exit event was read at @ns (CLOCK_MONOTONIC). */
struct exited_pid {
	pid_t pid;
	uint64_t ns;
};

/* The symbolizer's share of memory, as /metrics shows it (agg_lock). */
struct agent_cache_stats {
	uint64_t sym_bytes;		/* heap of cached objects, at the last trim */
	uint64_t sym_budget;		/* --symbol-cache-limit, bytes */
	uint64_t sym_objects;		/* objects cached (open files) */
	uint64_t sym_sheds;		/* idle objects and address caches dropped,
					 * symbol tables shed, for the budget */
	struct symbolizer_table_stats sym_tables;	/* held tables shed, reloaded */
	uint64_t flame_bytes;		/* CPU + GPU flame graph trees, names */
	uint64_t flame_names;		/* names in those trees */
	uint64_t flame_budget;		/* their share of --memory-limit */
	uint64_t flame_pruned;		/* frames folded for room */
	uint64_t proc_bytes;		/* process maps snapshots */
	/* each registered runtime's caches (registry order) and their share */
	struct runtime_stats runtimes[PROFD_RUNTIME_COUNT];
	uint64_t runtime_budgets[PROFD_RUNTIME_COUNT];
	uint64_t agg_bytes;		/* the open interval's aggregation (and
					 * the next one's, during a flush) */
};

struct agent {
	const struct agent_config *cfg;
	struct tracer *tracer;
	struct symbolizer *sym;
	pthread_mutex_t sym_lock;
	struct process_table *procs;	/* reader thread only (but process_jit_read_all()) */
	uint64_t flame_bytes, flame_names;	/* at the last flush (atomic) */
	uint64_t flame_pruned;			/* same */
	struct agent_budgets budgets;		/* --memory-limit's split */
	struct file_gate *gate;		/* reads of mapped files that time out; any thread */
	struct unwind_async *unwind;	/* the loader's thread and queue; NULL: FP only */
	struct object_loader *objects;	/* opens and parses mapped files; any thread */
	struct dbgd_fetcher *dbgd;	/* debuginfod fetches; NULL: none */
	struct dbgd_config dbgd_cfg;	/* agent_debuginfod_env(): its settings */
	bool objects_stuck;		/* its worker could not be stopped: leave what it uses */
	struct runtimes *rts;		/* language runtimes; NULL: native only */
	uint64_t *merged;		/* reader scratch: kernel + merged user IPs */
	struct unwind_walker *walker;	/* stack copies' walker; NULL: none */
	uint64_t *walk_ips;		/* reader scratch: a walked copy's record */
	struct held_sample *held_head, *held_tail;	/* reader: samples waiting
					 * for their unwind tables (stack_copy.c) */
	size_t held_bytes;
	struct callsite_cache *callsites;	/* reader only: return-address verdicts */
	uint64_t launch_ips[MERGED_USER_MAX];	/* reader scratch: trimmed launch stack */
	struct kallsyms *ksyms;
	char kernel_build_id[128];
	struct sink_list sinks;		/* where each interval's profiles go (main thread) */
	struct gpu *gpu;		/* NULL: --no-gpu */
	struct offcpu *offcpu;		/* NULL: no --off-cpu (agg_lock) */
	struct agent_export *exp;	/* OTLP export and NVTX; NULL: neither */
	uint64_t gpu_interval_start;	/* CLOCK_REALTIME start of the GPU interval */
	struct gpu_discovery discovery;	/* reader thread: finding library copies */
	struct exec_child child;	/* `profd exec` */
	int exec_failed;		/* the command could not be run: 126/127 */

	pthread_mutex_t agg_lock;	/* guards cur, next, interval, procs_stats */
	struct aggregate *cur;
	uint64_t cur_start_mono;	/* CLOCK_MONOTONIC start of cur: samples taken
					 * before it are late (0: the first interval) */
	struct aggregate *next;		/* during a flush: the next interval's table,
					 * for samples taken from next_start_mono on */
	uint64_t next_start_mono;	/* 0 when next is NULL */
	uint64_t interval;		/* bumped at each swap of cur */
	struct process_table_stats procs_stats;
	struct unwind_loader_stats unwind_stats;
	uint64_t unwind_queued;		/* unwind jobs waiting (reader publishes) */

	struct exited_pid *exited;	/* reader: `profd exec` children that exited,
					 * oldest first, for tracer_pid_forget() */
	size_t nexited, exited_cap;
	struct agent_cache_stats cache_stats;

	volatile int stop_reader;
	uint32_t batch_records;		/* reader: records since its last poll began */
	unsigned int reader_sync_req;	/* reader_sync(): requests made ... */
	unsigned int reader_sync_done;	/* ... and the last one the reader met */
	int reader_exited;
	bool runtime_fast_poll;		/* a fast_poll runtime knows a process: the
					 * reader polls sooner (atomic) */
	pthread_t reader;
	int reader_err;
	bool workers_deferred;		/* reader: agent_defer_workers() */
	uint64_t workers_deferred_ns;	/* since when (CLOCK_MONOTONIC) */

	uint64_t *counter_prev;		/* main thread: each counter (by registry
					 * position) at the last interval's end */
	uint64_t run_start_mono;
	unsigned int intervals;
	uint64_t total_samples;
	uint64_t total_gpu_kernels;
	unsigned int write_failures;	/* intervals whose profile or flame graph
					 * was not written */

	/* Probabilistic profiling (main thread; read by /metrics). */
	bool sampling_on;		/* perf events enabled this probabilistic interval */
	bool interval_sampled;		/* ... at some time since the last flush */
	uint64_t on_since;		/* CLOCK_MONOTONIC ns the events went on, 0: off */
	uint64_t on_ns;			/* time on since the last flush, before on_since */
	/* set at an interval boundary (agent_probabilistic_boundary()), main thread */
	uint64_t ended_on_ns;		/* the ended interval's time on */
	bool ended_sampled;		/* the ended interval was sampled at all */
	bool draw_on_pending;		/* a draw said on: switch on at the boundary */
	bool draw_switched;		/* that switch changed the state */
	bool discard_samples;		/* agent_setup(): samples before the first draw */
	unsigned int skipped_intervals;	/* flushes with no profile: never sampled */
	uint64_t probabilistic_draws;	/* probabilistic intervals started */
	uint64_t probabilistic_on;	/* ... of which profiled */

	/* /metrics and /healthz (--http-address); NULL: off. */
	struct metrics_server *metrics;
	bool ready;			/* set up and sampling (under agg_lock) */
	uint64_t last_flush_mono;	/* CLOCK_MONOTONIC of the last interval ended */
	uint64_t last_written_mono;	/* ... of the last one whose files were all written */
	bool last_write_ok;		/* the last interval's files were all written */
	uint64_t retention_removed_files;	/* files deleted by --output-retention */
	uint64_t retention_removed_bytes;
	uint64_t unwind_memory_limit;	/* bytes of unwind shards allowed: --unwind-memory-limit,
					 * x 2^--bpf-map-scale-factor unless given; 0: no DWARF */
};

/* interval.c: which interval a sample belongs to; the swap; the reaper */

/*
 * agent_reader_sync - wait (at most READER_SYNC_MS) until the reader thread
 * has consumed every ringbuf record committed before this call. Main thread.
 */
void agent_reader_sync(struct agent *ag);

/* agent_reader_sync_for - agent_reader_sync() waiting at most @ms_max ms. */
void agent_reader_sync_for(struct agent *ag, unsigned int ms_max);

/*
 * agent_sample_table - the table a CPU sample taken at @ktime_ns
 * (CLOCK_MONOTONIC, the BPF timestamp) is aggregated into: the current
 * interval's, the next one's while a flush is under way and the sample was
 * taken after the boundary, or NULL when its interval was swapped out
 * already (counted: lost.late). Call under agg_lock.
 */
struct aggregate *agent_sample_table(struct agent *ag, uint64_t ktime_ns);

/*
 * agent_sample_interval - the interval number (ag->interval, or one more
 * while a flush is under way and the sample was taken after the boundary)
 * a sample taken at @ktime_ns belongs to, read without agg_lock: the
 * runtimes' frame table generation is chosen by it. Reader thread.
 */
uint64_t agent_sample_interval(struct agent *ag, uint64_t ktime_ns);

/*
 * agent_interval_swap - end the current interval: open the next table with
 * its boundary now (CLOCK_MONOTONIC; CLOCK_REALTIME into @end_real), call
 * @at_boundary (may be NULL) with the boundary, let the reader take in
 * what was sampled before it (agent_reader_sync_for(), up to the
 * interval's length, 1 to 10 s), then swap. Returns the ended interval's table (the caller writes and
 * frees it), or NULL when no table could be allocated (the current one
 * keeps aggregating). Main thread; takes agg_lock.
 */
struct aggregate *agent_interval_swap(struct agent *ag, uint64_t *end_real,
				     void (*at_boundary)(struct agent *, uint64_t));

/*
 * agent_exit_seen - reader thread: @pid's exit event was read at @now_mono.
 * Under `profd exec` its PID filter entry is deleted by agent_reap() after
 * EXIT_GRACE_NS (BPF marked it exited; its last samples still pass).
 */
void agent_exit_seen(struct agent *ag, pid_t pid, uint64_t now_mono);

/*
 * agent_reap - reader thread, every REAP_EVERY_NS: remove the processes
 * whose exit was seen before the last interval swap and at least
 * EXIT_GRACE_NS ago (their BPF map entries go with them through the
 * process listener), and idle ones that are gone.
 */
void agent_reap(struct agent *ag, uint64_t now_mono);

/* agent_exited_free - free what agent_exit_seen() kept. */
void agent_exited_free(struct agent *ag);

/* reader.c: the reader thread, the record path, the process listener */

/*
 * agent_reader_main - the reader thread (pthread start routine, @arg: the
 * struct agent): polls the ringbuf until stop_reader is set or a poll
 * fails (reader_err: the negative errno, printed), ticks the GPU state,
 * reaps exited processes every second and publishes the figures
 * (agent_publish_stats()) after each poll; at the end drains what is left
 * in the ringbuf. Returns NULL.
 */
void *agent_reader_main(void *arg);

/*
 * agent_on_event - the ringbuf callback (tracer_open(), @ctx: the struct
 * agent): check one record of @size bytes at @data and hand it on to the
 * process table, the aggregation, the GPU correlation or the NVTX tracer.
 * A malformed record is counted (lost.records_malformed). Returns 0
 * (polling goes on). Reader thread, or setup's drain before it starts.
 */
int agent_on_event(void *ctx, const void *data, size_t size);

/*
 * agent_sample_process - the process side of sample @s (user IPs at
 * @ips + s->kernel_len): look up (or read) its process, open every user
 * frame's object while it lives, ask for its maps again when BPF had no
 * unwind info (PROFD_SAMPLE_UNWIND_MISSING). Returns the process or NULL.
 * Reader thread.
 */
struct process *agent_sample_process(struct agent *ag, const struct profd_sample *s,
				     const uint64_t *ips, uint64_t now);

/*
 * agent_handle_sample - the record path of one CPU or probe sample @s with
 * its IPs (kernel, user, runtime frames) at @ips: agent_sample_process(),
 * the runtime merge, then the aggregation of its interval or the GPU
 * correlation. Reader thread.
 */
void agent_handle_sample(struct agent *ag, const struct profd_sample *s,
			 const uint64_t *ips, uint64_t now);

/* stack_copy.c: samples that carry their user stack (reader thread) */

/*
 * agent_stack_copies_init - the walker of stack copies, when DWARF
 * unwinding and --stack-copy-bytes are on. 0 or -ENOMEM. Setup.
 */
int agent_stack_copies_init(struct agent *ag);

/* agent_stack_copies_free - drop held samples, free the walker. */
void agent_stack_copies_free(struct agent *ag);

/*
 * agent_stack_copy_take - sample record @s (@size bytes, checked up to
 * its runtime frames) carries a stack copy: one without unwind tables in
 * BPF is held (its process read now, its maps asked for) and true
 * returned; under --check-unwinder one that BPF walked is walked again
 * from the copy and compared (counted), and false returned: the caller
 * handles the record as BPF walked it, as it does one without a copy or
 * with a malformed one.
 */
bool agent_stack_copy_take(struct agent *ag, const struct profd_sample *s, size_t size,
			   uint64_t now);

/*
 * agent_stack_copies_poll - walk the held samples whose tables are loaded
 * now and hand them down the record path; those held HOLD_MAX_NS, or all
 * when @all, go as BPF walked them (counted stack_copy_unwalked) unless
 * they can be walked.
 */
void agent_stack_copies_poll(struct agent *ag, uint64_t now, bool all);

/* agent_stack_copies_pending_before - a held sample was taken before @ktime_ns. */
bool agent_stack_copies_pending_before(const struct agent *ag, uint64_t ktime_ns);

/*
 * agent_defer_workers - hold back (@on) or let go the object and unwind
 * loaders' wakeups while the reader takes in a batch of records; held
 * back longer than a millisecond (@now, CLOCK_MONOTONIC ns) they are
 * woken anyway. @now is unused when @on is false. Reader thread, or
 * setup's drain before it starts.
 */
void agent_defer_workers(struct agent *ag, bool on, uint64_t now);

/*
 * agent_attach_gpu_library - attach the GPU probes to the copy of the
 * CUDA injection library that process @pid maps as @m (opened through
 * /proc/PID/map_files, so a copy deleted or replaced at its path is still
 * the one traced; else /proc/PID/root), once the file gate says its file reads without
 * blocking (a pending or hung file is left for a later maps read or
 * scan). Errors are counted (gpu_attach_errors) and the first three
 * printed. A gpu_discovery and gpu_library_mappings() callback, @ctx:
 * the struct agent. Reader thread.
 */
void agent_attach_gpu_library(void *ctx, pid_t pid, const struct proc_mapping *m);

/*
 * agent_listen_processes - install the process table's listener: the
 * reader attaches to injection library copies a snapshot maps; the object
 * loader's thread keeps the BPF unwind and runtime maps in step with each
 * process's mappings and removal. Setup, before the reader starts.
 */
void agent_listen_processes(struct agent *ag);

/*
 * agent_publish_stats - copy the figures of the process table,
 * symbolizer, flame graphs, unwind loader and runtimes into struct
 * agent (procs_stats, unwind_stats, cache_stats; takes sym_lock, then
 * agg_lock). Counters are not copied: the registry holds them
 * (src/counters/). The reader after each
 * poll; the main thread once more after it joined the reader.
 */
void agent_publish_stats(struct agent *ag);

/* flush.c: the end of an interval, its files; the output directory */

/*
 * agent_flush - end the current interval: build its profiles (CPU, none
 * for an interval probabilistic profiling never sampled; GPU kernels and
 * PC samples) and hand each to every sink (ag->sinks: pprof files, the
 * flame graph, OTLP), end the interval for each, print the status line,
 * let the sinks prune (--output-retention). Write errors are printed and
 * counted (write_failures, lost.write_error), never returned. When no
 * table can be allocated for the next interval nothing happens (the
 * current one keeps aggregating; agent_probabilistic_boundary() is not
 * called). Main thread; takes agg_lock.
 */
void agent_flush(struct agent *ag);

/* setup.c: the injection library; what a run sets up and takes down */

/*
 * agent_inject_library - the CUDA/NVTX injection library of the run
 * (none without --gpu): --inject-library PATH, or libprofd_inject.so next
 * to profd or in ../lib/profd/; under `profd exec` a private copy only the
 * command's tree maps (its path into *@private_out, for
 * exec_private_library_remove()), or the profd library the inherited
 * CUDA_INJECTION64_PATH names. *@lib_out (absolute, NULL: none) and
 * *@private_out are the caller's to free. Returns 0, or -1 when
 * --inject-library names no usable library (printed; nothing to free).
 */
int agent_inject_library(const struct agent_config *cfg, char **lib_out,
			 char **private_out);

/*
 * agent_debuginfod_env - libdebuginfod's environment from
 * --debuginfod-urls (or $DEBUGINFOD_URLS), --debuginfod-cache and
 * --debuginfod-cache-size (dbgd_env_setup()); before any thread starts:
 * setenv() is not thread-safe. agent_setup() starts the fetcher. Returns
 * 0, or -1 (out of memory, printed).
 */
int agent_debuginfod_env(struct agent *ag);

/*
 * agent_setup - everything a run needs before the reader starts: checks,
 * the output directory, symbols, tables, budgets, the BPF programs
 * loaded and attached (sampling on or off by @ag->sampling_on), the GPU
 * probes on @inject_lib (may be NULL), OTLP export, the unwinders.
 * Returns 0, or -1 with the reason printed; what was set up is freed by
 * agent_teardown() either way. Main thread.
 */
int agent_setup(struct agent *ag, const char *inject_lib);

/*
 * agent_teardown - stop /metrics and the workers and free what
 * agent_setup() made (the reader has stopped). An object loader stuck in
 * a file read is left running with what it uses (objects_stuck). Main
 * thread.
 */
void agent_teardown(struct agent *ag);

/* probabilistic.c: the draws, the perf events' switch, their time on */

/*
 * agent_probabilistic_draw - draw a number in [0, 100): this probabilistic
 * interval is profiled when it is below --probabilistic-threshold (100:
 * always). Counted (probabilistic_draws, probabilistic_on and
 * stat.probabilistic_intervals_off, under agg_lock); the caller switches
 * the perf events. Main thread.
 */
bool agent_probabilistic_draw(struct agent *ag);

/*
 * agent_probabilistic_set - enable or disable the perf events (no
 * reload), keeping their time on (on_since, on_ns). Switching off waits
 * for the reader to take in what was sampled before
 * (agent_reader_sync()). A failed switch is warned about and otherwise
 * taken as done. Returns whether the state changed. Main thread.
 */
bool agent_probabilistic_set(struct agent *ag, bool on);

/*
 * agent_probabilistic_boundary - the interval boundary @boundary
 * (CLOCK_MONOTONIC ns), the callback of agent_interval_swap(): the ended
 * interval's time on (ended_on_ns, ns) and whether it was sampled at all
 * (ended_sampled) are taken, then a draw's pending "on" (draw_on_pending)
 * takes effect (draw_switched), so the next interval is sampled from its
 * first moment however long the flush takes. Main thread.
 */
void agent_probabilistic_boundary(struct agent *ag, uint64_t boundary);

/* offcpu.c: off-CPU periods (bpf/offcpu.bpf.h) */
struct offcpu;
struct profd_offcpu_end;

/*
 * agent_offcpu_new - the blocked threads' stacks of a --off-cpu run;
 * waits shorter than @min_block_ns are dropped (counted). @ksyms (NULL
 * when there are none; only read here) places __schedule, where each
 * stack's kernel part starts. NULL on out of memory. agent_offcpu_free()
 * frees it and its stacks.
 */
struct offcpu *agent_offcpu_new(uint64_t min_block_ns, const struct kallsyms *ksyms);
void agent_offcpu_free(struct offcpu *o);

/*
 * agent_offcpu_stack - keep the stack of off-CPU sample @s (@ips: its
 * kernel frames, then @nuser user frames as merged and checked; @comm the
 * process name, @snap its maps (a reference is taken), @flags and
 * @time_bin as for aggregate_add()) until its end comes; the kernel frames
 * above __schedule are left out. Reader thread, under agg_lock.
 */
void agent_offcpu_stack(struct agent *ag, const struct profd_sample *s, const char *comm,
			struct proc_snapshot *snap, uint32_t flags, uint32_t time_bin,
			const uint64_t *ips, uint16_t nuser);

/*
 * agent_offcpu_end - end the period @e names: its time (the part not
 * counted at a boundary) into the interval tables, or dropped when the
 * whole wait was shorter than --off-cpu-min-block; an end without its
 * stack is counted. Reader thread; takes agg_lock.
 */
void agent_offcpu_end(struct agent *ag, const struct profd_offcpu_end *e);

/*
 * agent_offcpu_proc_exit - end every period of process @pid at its exit
 * (@ktime_ns, CLOCK_MONOTONIC). Reader thread; takes agg_lock.
 */
void agent_offcpu_proc_exit(struct agent *ag, pid_t pid, uint64_t ktime_ns);

/*
 * agent_offcpu_boundary - count the threads still blocked at @boundary
 * (CLOCK_MONOTONIC ns) in @ending, the interval that ends there, up to
 * it; the rest counts where they end. Main thread, under agg_lock, at the
 * swap.
 */
void agent_offcpu_boundary(struct agent *ag, struct aggregate *ending, uint64_t boundary);

#endif /* PROFD_AGENT_AGENT_INTERNAL_H */
