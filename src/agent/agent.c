// SPDX-License-Identifier: GPL-2.0
/*
 * agent.c - one profd run (see agent.h).
 *
 * Threads: the reader thread polls the ringbuf and turns every record into
 * process-table updates and aggregated stacks; the main thread keeps the
 * interval clock, waits for signals, and at each interval end swaps the
 * aggregation table and builds/writes the profile without stopping the
 * reader.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_internal.h"
#include "agent/debug.h"
#include "bpf/unwind_table.h"	/* UNWIND_MAX_SHARDS */
#include "agent/memory.h"
#include "agent/metrics.h"
#include "output/retention.h"
#include "bpf/gpu_events.h"
#include "agent/exec.h"
#include "agent/export.h"
#include "bpf/nvtx_events.h"
#include "aggregate/aggregate.h"
#include "gpu/gpu.h"
#include "output/flamegraph.h"
#include "output/pprof.h"
#include "proc/process.h"
#include "python/python.h"
#include "symbol/kallsyms.h"
#include "symbol/kernel_notes.h"
#include "symbol/symbolizer.h"
#include "tracer/counters.h"
#include "tracer/preflight.h"
#include "tracer/tracer.h"
#include "unwind/async.h"
#include "unwind/loader.h"
#include "util/clock.h"

#define REAP_EVERY_NS (1000ULL * 1000 * 1000)
/* a sampled process's unwind tables are marked used at most this often */
#define UNWIND_TOUCH_EVERY_NS (1000ULL * 1000 * 1000)
/*
 * Most samples do not wake the reader (emit_sample()): it polls. Short
 * enough that a Python code object is usually still alive when its
 * sample is named (import-time module code lives only milliseconds).
 */
#define READER_POLL_MS 20	/* sampling CPython processes: their code objects */
#define READER_POLL_SLOW_MS 100	/* otherwise, and while probabilistic profiling is off */
/* How long profd waits at exit for the OTLP endpoint to take the rest. */
#define EXPORT_STOP_TIMEOUT_MS 5000

/* reader thread */

/*
 * Leading user frames of a launch stack that are the profiler's own (the
 * injection library's callback and CUPTI's dispatch, which call it): the
 * stack should end where the program called CUDA. Never all frames.
 */
static uint16_t trim_profiler_frames(const struct proc_snapshot *snap,
				     const uint64_t *ips, uint16_t nuser)
{
	uint16_t i;

	if (!snap)
		return 0;
	for (i = 0; i < nuser; i++) {
		uint64_t ip = ips[i] & ~PROFD_IP_EXACT;
		const struct proc_mapping *m;
		const char *base;

		if (ips[i] & PY_IP_FRAME)
			break;
		m = proc_maps_find(&snap->maps, i && !(ips[i] & PROFD_IP_EXACT) ? ip - 1 : ip);
		base = m ? strrchr(m->path, '/') : NULL;
		if (!base || (strncmp(base + 1, "libprofd_inject", 15) &&
			      strncmp(base + 1, "libcupti", 8)))
			break;
	}
	return i < nuser ? i : 0;
}

static void handle_sample(struct agent *ag, const struct profd_sample *s,
			  const uint64_t *ips, uint64_t now)
{
	struct proc_snapshot *snap;
	/* the leader's comm is the process's name: no /proc read for it */
	struct process *p = process_get(ag->procs, s->pid, now,
					s->flags & PROFD_SAMPLE_EXITING,
					s->tid == s->pid ? s->comm : NULL);
	struct aggregate *table;
	const char *comm;
	uint32_t nuser;

	if (p) {
		uint64_t read_at = p->refreshed_ns;

		p->last_sample_ns = now;
		/* Open every user frame's object while the process lives. */
		for (int pass = 0; pass < 2; pass++) {
			snap = p->snap;
			for (uint32_t i = 0; i < s->user_len; i++) {
				uint64_t ip = ips[s->kernel_len + i];

				bool exact = !i || (ip & PROFD_IP_EXACT);

				ip &= ~PROFD_IP_EXACT;
				process_find_mapping(ag->procs, p, exact ? ip : ip - 1, now);
			}
			if (p->snap == snap)
				break;	/* no re-read happened mid-walk */
		}
		if (s->flags & PROFD_SAMPLE_UNWIND_MISSING)
			process_request_unwind(ag->procs, p, now);
		if (p->refreshed_ns != read_at)	/* re-read (exec): maybe too late */
			process_drop_remains(ag->procs, p);
		if (ag->unwind && (s->flags & PROFD_SAMPLE_DWARF) &&
		    now - p->unwind_touched_ns >= UNWIND_TOUCH_EVERY_NS) {
			p->unwind_touched_ns = now;	/* LRU order for eviction */
			unwind_async_touch(ag->unwind, s->pid, now);
		}
	}
	snap = p ? p->snap : NULL;
	if (p && p->exited && (s->flags & PROFD_SAMPLE_EXITING) &&
	    !(s->flags & PROFD_SAMPLE_NO_USER) &&
	    (!snap || !snap->meta.executable || !snap->maps.n)) {
		/* first seen exiting, too late to tell what it was (its memory
		 * gone): dropped, never given the labels of a zombie */
		pthread_mutex_lock(&ag->agg_lock);
		ag->counters[AGENT_CNT_EXITED_UNIDENTIFIED]++;
		pthread_mutex_unlock(&ag->agg_lock);
		return;
	}
	comm = p && p->comm[0] ? p->comm : s->comm;
	nuser = s->user_len;
	if (!ag->py || !(s->flags & PROFD_SAMPLE_PYTHON)) {
		pthread_mutex_lock(&ag->agg_lock);
		goto add;
	}
	for (;;) {
		/*
		 * Python frames take the place of the eval loop's frames. The
		 * merge reads process memory, so it runs outside agg_lock; a
		 * stack must name its frames in its interval's generation of
		 * the frame table, so it is merged again if the interval
		 * changed meanwhile (rare: the frames are cached by then).
		 */
		uint64_t interval = __atomic_load_n(&ag->interval, __ATOMIC_ACQUIRE);
		/* the interval the sample goes to: one more during a flush */
		uint64_t gen = agent_sample_interval(ag, s->ktime_ns);

		if (ag->py_interval < gen) {
			python_new_interval(ag->py);
			ag->py_interval = gen;
		}
		memcpy(ag->merged, ips, s->kernel_len * sizeof(*ips));
		nuser = python_merge_stack(ag->py, s->pid, s->flags,
					   ips + s->kernel_len, s->user_len,
					   ips + s->kernel_len + s->user_len,
					   s->python_len,
					   ag->merged + s->kernel_len,
					   MERGED_USER_MAX, now);
		pthread_mutex_lock(&ag->agg_lock);
		if (ag->interval == interval)
			break;
		pthread_mutex_unlock(&ag->agg_lock);
	}
	ips = ag->merged;
add:
	if (s->origin == PROFD_ORIGIN_PROBE) {
		/* a GPU launch: its stack waits for the kernels it launched */
		pthread_mutex_unlock(&ag->agg_lock);
		if (ag->gpu) {
			uint64_t first = 0;
			uint16_t trim = s->kernel_len ? 0 :
					trim_profiler_frames(snap, ips, nuser);
			struct gpu_launch_info l = {
				.pid = s->pid, .tid = s->tid, .comm = comm,
				.thread_name = s->comm, .snap = snap,
				.flags = s->flags & PROFD_SAMPLE_USER_TRUNCATED,
				.correlation_id = s->cookie, .ips = ips + trim,
				.nkernel = s->kernel_len, .nuser = nuser - trim,
			};

			if (trim) {
				/*
				 * The new leaf is a return address: name it by
				 * its call instruction (ip - 1), marked exact, in a
				 * scratch copy (@ips may be the ringbuf record).
				 */
				uint64_t *v = ag->launch_ips;

				memcpy(v, ips + trim, (size_t)(nuser - trim) * sizeof(*v));
				first = v[0];
				if (!(first & (PY_IP_FRAME | PROFD_IP_EXACT)))
					v[0] = (first - 1) | PROFD_IP_EXACT;
				l.ips = v;
			}
			gpu_launch(ag->gpu, &l, now);
		}
		return;
	}
	/* the sample's own timestamp picks the interval (interval.c) */
	table = agent_sample_table(ag, s->ktime_ns);
	/* only flags the profile shows are part of a stack's identity */
	if (table && aggregate_add(table, s->pid, s->tid, comm, s->comm, snap,
				   s->flags & PROFD_SAMPLE_USER_TRUNCATED, ips,
				   s->kernel_len, nuser))
		ag->counters[AGENT_CNT_AGGREGATION_FULL]++;
	pthread_mutex_unlock(&ag->agg_lock);

	if (agent_debug_wanted(ag, s->pid))
		agent_debug_sample(ag, s, ips, nuser, snap);
}

/*
 * The workers' wakeups wait until the reader has taken in a batch of
 * records (reader_main() ends the deferral), at most DEFER_MAX_NS: one
 * wakeup per burst, not one per job (a context switch each, under process
 * churn), and a new process's tables and files still start within a
 * millisecond (a batch under load takes tens: the workers must not wait
 * for all of it).
 */
#define DEFER_MAX_NS (1000ULL * 1000)

static void defer_workers(struct agent *ag, bool on, uint64_t now)
{
	if (ag->workers_deferred == on) {
		if (on && now - ag->workers_deferred_ns > DEFER_MAX_NS) {
			object_loader_defer(ag->objects, false);
			unwind_async_defer(ag->unwind, false);
			object_loader_defer(ag->objects, true);
			unwind_async_defer(ag->unwind, true);
			ag->workers_deferred_ns = now;
		}
		return;
	}
	ag->workers_deferred = on;
	ag->workers_deferred_ns = now;
	object_loader_defer(ag->objects, on);
	unwind_async_defer(ag->unwind, on);
}

static int on_event(void *ctx, const void *data, size_t size)
{
	struct agent *ag = ctx;
	uint32_t type = *(const uint32_t *)data;
	uint64_t now = clock_mono_ns();

	defer_workers(ag, true, now);

	switch (type) {
	case PROFD_EVENT_SAMPLE: {
		const struct profd_sample *s = data;

		if (ag->discard_samples)
			return 0;
		if (size < sizeof(*s) ||
		    size < sizeof(*s) + ((size_t)s->kernel_len + s->user_len +
					 2 * (size_t)s->python_len) * 8 ||
		    s->kernel_len > PROFD_MAX_KERNEL_FRAMES ||
		    s->user_len > PROFD_MAX_USER_FRAMES ||
		    s->python_len > PROFD_MAX_PYTHON_FRAMES)
			goto malformed;
		handle_sample(ag, s, (const uint64_t *)(s + 1), now);
		return 0;
	}
	case PROFD_EVENT_PROC_EXEC:
	case PROFD_EVENT_PROC_EXIT: {
		const struct profd_proc_event *e = data;
		char comm[PROFD_TASK_COMM_LEN + 1] = { 0 };

		if (size < sizeof(*e))
			goto malformed;
		memcpy(comm, e->comm, PROFD_TASK_COMM_LEN);
		if (type == PROFD_EVENT_PROC_EXEC) {
			process_exec(ag->procs, e->pid, comm);
		} else {
			process_exit(ag->procs, e->pid, now);
			agent_exit_seen(ag, e->pid, now);
			if (ag->gpu)
				gpu_process_exit(ag->gpu, e->pid, now);
			agent_export_process_exit(ag->exp, e->pid);
		}
		return 0;
	}
	case PROFD_EVENT_LIB_MAPPED: {
		const struct profd_proc_event *e = data;

		if (size < sizeof(*e))
			goto malformed;
		if (ag->gpu)
			gpu_discovery_dlopen(&ag->discovery, e->pid, now);
		return 0;
	}
	case PROFD_EVENT_GPU_LAUNCH: {
		const struct profd_gpu_launch *l = data;
		char comm[PROFD_TASK_COMM_LEN + 1] = { 0 };
		struct process *p;

		if (size < sizeof(*l))
			goto malformed;
		if (!ag->gpu)
			return 0;
		memcpy(comm, l->comm, PROFD_TASK_COMM_LEN);
		p = process_get(ag->procs, l->pid, now, false, NULL);
		struct gpu_launch_info li = {
			.pid = l->pid, .tid = l->tid,
			.comm = p && p->comm[0] ? p->comm : comm,
			.thread_name = comm, .no_stack = true,
			.correlation_id = l->correlation_id,
		};
		gpu_launch(ag->gpu, &li, now);
		return 0;
	}
	case PROFD_EVENT_NVTX:
		if (agent_export_nvtx(ag->exp, data, size))
			goto malformed;
		return 0;
	default:
		if (type >= PROFD_EVENT_GPU_KERNELS && type <= PROFD_EVENT_GPU_LAUNCHES) {
			if (ag->gpu && gpu_record(ag->gpu, data, size, now))
				goto malformed;
			return 0;
		}
		goto malformed;
	}
malformed:
	pthread_mutex_lock(&ag->agg_lock);
	ag->counters[AGENT_CNT_RECORDS_MALFORMED]++;
	pthread_mutex_unlock(&ag->agg_lock);
	return 0;
}

/*
 * A process mapped a copy of the injection library profd is not attached
 * to yet (another path, a container's copy): attach to it too. Uprobes
 * are per file, so this covers every process using that copy.
 */
static void attach_gpu_library(void *ctx, pid_t pid, const char *path)
{
	struct agent *ag = ctx;
	char root_path[PATH_MAX];
	int ret;

	/* the path as the process sees it: through its root */
	snprintf(root_path, sizeof(root_path), "/proc/%d/root%s", pid, path);
	ret = tracer_gpu_attach(ag->tracer, root_path);
	if (ret == 1 && ag->cfg->verbose)
		fprintf(stderr, "profd: GPU probes attached to %s (pid %d)\n", path, pid);
	if (ret < 0 && ret != -ENOENT) {
		ag->gpu_attach_errors++;
		if (ag->gpu_attach_errors <= 3)
			fprintf(stderr, "profd: warning: cannot attach to the CUDA "
				"injection library %s of pid %d: %s\n", path, pid,
				ret == -ESRCH ? "not a profd injection library" :
				strerror(-ret));
	}
}

/*
 * Process table listener, on the reader: attach to the CUDA injection
 * library (the tracer is the reader's; no file is parsed here).
 */
static void on_maps_seen(void *ctx, pid_t pid, const struct proc_maps *maps)
{
	struct agent *ag = ctx;

	if (ag->gpu)
		gpu_library_mappings(pid, maps, attach_gpu_library, ag);
}

/*
 * Process table listener, on the object loader's thread: keep the BPF
 * unwind and Python maps in step (CPython detection parses the files).
 */
static void on_maps_read(void *ctx, pid_t pid, const struct proc_maps *maps)
{
	struct agent *ag = ctx;

	if (ag->unwind)
		unwind_async_update(ag->unwind, pid, maps);
	if (ag->py)
		python_maps_read(ag->py, pid, maps);
}

static void on_removed(void *ctx, pid_t pid)
{
	struct agent *ag = ctx;

	if (ag->unwind)
		unwind_async_remove(ag->unwind, pid);
	if (ag->py)
		python_removed(ag->py, pid);
}

static void publish_proc_stats(struct agent *ag)
{
	struct process_table_stats st;

	struct unwind_async_stats uast;
	struct unwind_loader_stats ust;
	struct python_stats pst = { 0 };
	struct gpu_stats gst = { 0 };
	struct agent_cache_stats cst = { 0 };
	struct agent_export_stats xst;

	struct file_gate_stats fst;
	uint64_t unreadable;

	process_table_stats(ag->procs, &st);
	file_gate_stats(ag->gate, &fst);
	pthread_mutex_lock(&ag->sym_lock);
	unreadable = symbolizer_symbols_unreadable(ag->sym);
	pthread_mutex_unlock(&ag->sym_lock);
	pthread_mutex_lock(&ag->sym_lock);
	symbolizer_memory(ag->sym, &cst.sym_bytes, &cst.sym_sheds);
	symbolizer_table_stats(ag->sym, &cst.sym_tables);
	cst.sym_sheds += cst.sym_tables.shed;
	symbolizer_stats(ag->sym, &cst.sym_objects, NULL);
	pthread_mutex_unlock(&ag->sym_lock);
	cst.sym_budget = ag->budgets.symbols;
	cst.flame_budget = ag->budgets.flamegraph + ag->budgets.flamegraph / 8;
	cst.flame_pruned = __atomic_load_n(&ag->flame_pruned, __ATOMIC_RELAXED);
	cst.flame_bytes = __atomic_load_n(&ag->flame_bytes, __ATOMIC_RELAXED);
	cst.flame_names = __atomic_load_n(&ag->flame_names, __ATOMIC_RELAXED);
	agent_export_stats(ag->exp, &xst);
	unwind_async_stats(ag->unwind, &uast);	/* NULL: zeros */
	ust = uast.loader;
	if (ag->py)
		python_stats(ag->py, &pst);
	if (ag->gpu)
		gpu_stats(ag->gpu, &gst);
	pthread_mutex_lock(&ag->agg_lock);
	ag->counters[AGENT_CNT_GPU_KERNELS] = gst.kernels;
	ag->counters[AGENT_CNT_GPU_LAUNCHES_NO_STACK] = gst.launches_no_stack;
	ag->counters[AGENT_CNT_GPU_KERNELS_NO_LAUNCH] = gst.kernels_no_launch;
	ag->counters[AGENT_CNT_GPU_LAUNCHES_UNMATCHED] = gst.launches_unmatched;
	ag->counters[AGENT_CNT_GPU_CORRELATION_EVICTED] = gst.correlation_evicted;
	ag->counters[AGENT_CNT_GPU_RECORDS_DROPPED] = gst.records_dropped;
	ag->counters[AGENT_CNT_GPU_LIBRARY_ERRORS] = gst.library_errors;
	ag->counters[AGENT_CNT_GPU_NAMES_UNKNOWN] = gst.names_unknown;
	ag->counters[AGENT_CNT_GPU_PC_SAMPLES] = gst.pc_samples;
	ag->counters[AGENT_CNT_GPU_PC_UNRESOLVED] = gst.pc_unresolved;
	ag->counters[AGENT_CNT_GPU_CUBIN_ERRORS] = gst.cubin_errors;
	ag->counters[AGENT_CNT_GPU_ATTACH_ERRORS] = ag->gpu_attach_errors;
	ag->counters[AGENT_CNT_GPU_KERNELS_BOGUS] = gst.kernels_bogus;
	ag->counters[AGENT_CNT_GPU_STACKS_DROPPED] = gst.stacks_dropped;
	ag->counters[AGENT_CNT_NVTX_SPANS] = xst.nvtx_spans;
	ag->counters[AGENT_CNT_NVTX_LOGS] = xst.nvtx_logs;
	ag->counters[AGENT_CNT_NVTX_SPANS_DROPPED_BUDGET] = xst.nvtx_spans_dropped_budget;
	ag->counters[AGENT_CNT_NVTX_QUEUE_FULL] = xst.nvtx_queue_full;
	ag->counters[AGENT_CNT_NVTX_POPS_UNMATCHED] = xst.nvtx_pops_unmatched;
	ag->counters[AGENT_CNT_NVTX_ENDS_UNKNOWN] = xst.nvtx_ends_unknown;
	ag->counters[AGENT_CNT_NVTX_STRINGS_UNKNOWN] = xst.nvtx_strings_unknown;
	ag->counters[AGENT_CNT_NVTX_UNFINISHED] = xst.nvtx_unfinished;
	ag->counters[AGENT_CNT_NVTX_LIBRARY_DROPPED] = xst.nvtx_library_dropped;
	ag->counters[AGENT_CNT_NVTX_TABLES_FULL] = xst.nvtx_tables_full;
	ag->counters[AGENT_CNT_OTLP_ITEMS_SENT] = xst.otlp_items_sent;
	ag->counters[AGENT_CNT_OTLP_ITEMS_DROPPED] = xst.otlp_items_dropped;
	ag->counters[AGENT_CNT_OTLP_RETRIES] = xst.otlp_retries;
	ag->procs_stats = st;
	ag->unwind_stats = ust;
	ag->cache_stats = cst;
	ag->counters[AGENT_CNT_UNWIND_CFI_REJECTED] = ust.build_errors;
	ag->counters[AGENT_CNT_UNWIND_EVICTIONS] = ust.evictions;
	ag->counters[AGENT_CNT_UNWIND_RANGES_TRUNCATED] = ust.ranges_truncated;
	ag->counters[AGENT_CNT_UNWIND_UPDATE_ERRORS] = ust.update_errors;
	ag->counters[AGENT_CNT_UNWIND_QUEUE_FULL] = uast.dropped;
	ag->unwind_queued = uast.queued;
	ag->counters[AGENT_CNT_UNWIND_RELOADS] = ust.reloads;
	ag->counters[AGENT_CNT_MAPS_READ_ERRORS] = st.maps_read_errors;
	ag->counters[AGENT_CNT_ELF_OPEN_ERRORS] = st.elf_open_errors;
	ag->counters[AGENT_CNT_FILE_HUNG] = __atomic_load_n(&ag->frames_hung, __ATOMIC_RELAXED);
	ag->counters[AGENT_CNT_FILE_PENDING] = __atomic_load_n(&ag->frames_pending,
								 __ATOMIC_RELAXED);
	ag->counters[AGENT_CNT_SYMBOLS_SHED] = __atomic_load_n(&ag->frames_shed,
							       __ATOMIC_RELAXED);
	ag->counters[AGENT_CNT_OBJECT_QUEUE_FULL] = st.loader_dropped;
	ag->counters[AGENT_CNT_FILE_READ_TIMEOUTS] = fst.timeouts;
	ag->counters[AGENT_CNT_SYMBOLS_UNREADABLE] = unreadable;
	ag->counters[AGENT_CNT_SAMPLES_AFTER_EXIT] = st.samples_after_exit;
	ag->counters[AGENT_CNT_EXITED_REMOVED] = st.exited_removed;
	ag->counters[AGENT_CNT_PYTHON_CODE_ERRORS] = pst.code_errors;
	ag->counters[AGENT_CNT_PYTHON_FRAMES_FULL] = pst.frames_full;
	ag->counters[AGENT_CNT_PYTHON_UNSUPPORTED] = pst.unsupported;
	ag->counters[AGENT_CNT_PYTHON_UPDATE_ERRORS] = pst.map_errors;
	ag->counters[AGENT_CNT_PYTHON_READ_TIMEOUTS] = pst.read_timeouts;
	ag->counters[AGENT_CNT_PYTHON_FRAME_TABLES] = pst.frame_rotations;
	__atomic_store_n(&ag->python_processes, pst.processes, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ag->agg_lock);
}

static void *reader_main(void *arg)
{
	struct agent *ag = arg;
	uint64_t last_reap = clock_mono_ns();

	while (!__atomic_load_n(&ag->stop_reader, __ATOMIC_ACQUIRE)) {
		unsigned int sync = __atomic_load_n(&ag->reader_sync_req, __ATOMIC_ACQUIRE);
		/*
		 * 50 wakeups a second cost ~0.3 % of a core on an idle host:
		 * only samples of CPython processes need naming that soon
		 * (the first sample of an unknown process wakes the reader)
		 */
		bool soon = __atomic_load_n(&ag->sampling_on, __ATOMIC_RELAXED) &&
			    __atomic_load_n(&ag->python_processes, __ATOMIC_RELAXED);
		int n = tracer_poll(ag->tracer, soon ? READER_POLL_MS : READER_POLL_SLOW_MS);
		uint64_t now;

		defer_workers(ag, false, 0);
		if (n < 0) {
			ag->reader_err = n;
			fprintf(stderr, "profd: error: reading the ringbuf: %s\n",
				strerror(-n));
			break;
		}
		now = clock_mono_ns();
		if (ag->gpu) {
			gpu_tick(ag->gpu, now);
			/* after a scan of every process: copies nobody maps
			 * any more free their USDT specs */
			if (gpu_discovery_tick(&ag->discovery, now))
				tracer_gpu_detach_unused(ag->tracer);
		}
		if (now - last_reap >= REAP_EVERY_NS) {
			defer_workers(ag, true, now);	/* removals: one wakeup */
			agent_reap(ag, now);
			defer_workers(ag, false, 0);
			last_reap = now;
			agent_memory_tick(now);	/* give back what exited processes freed */
		}
		publish_proc_stats(ag);
		/* every record committed before @sync was consumed above */
		__atomic_store_n(&ag->reader_sync_done, sync, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&ag->reader_exited, 1, __ATOMIC_RELEASE);
	/* Sampling is off: whatever is left in the ringbuf is the last data. */
	tracer_drain(ag->tracer);
	defer_workers(ag, false, 0);
	if (ag->gpu)
		gpu_finish(ag->gpu);	/* nothing more will join: count the rest */
	publish_proc_stats(ag);
	return NULL;
}

static int make_dir(const char *dir)
{
	char tmp[PATH_MAX];
	struct stat st;

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	if (stat(tmp, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (access(tmp, W_OK | X_OK))
		return -errno;
	return 0;
}

/*
 * Remove temporary files a killed profd left in @dir (the atomic writes'
 * "NAME.tmpXXXXXX"): nothing else ever reads or removes them.
 */
static void remove_stale_temps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *t = strstr(e->d_name, ".tmp");

		if (t && strlen(t) == 10 &&
		    (!strncmp(e->d_name, "cpu-", 4) || !strncmp(e->d_name, "gpu-", 4) ||
		     !strncmp(e->d_name, "flamegraph.html", 15)))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/* interval flush */

static int output_path(const char *dir, const char *kind, uint64_t start_ns,
		       char *out, size_t len)
{
	time_t secs = start_ns / 1000000000ULL;
	struct tm tm;
	char stamp[32];

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int i = 0; i < 1000; i++) {
		if (i)
			snprintf(out, len, "%s/%s-%s-%d.pb.gz", dir, kind, stamp, i);
		else
			snprintf(out, len, "%s/%s-%s.pb.gz", dir, kind, stamp);
		if (access(out, F_OK))
			return 0;
	}
	return -EEXIST;
}

/* Build the comments: version, config, and every counter by name. */
static void counter_comments(struct agent *ag, const uint64_t *bpf_delta,
			     const uint64_t *agent_delta,
			     const struct unwind_loader_stats *us, uint64_t sampled_ns,
			     char comments[][96], uint32_t *n)
{
	char host[64] = "";

	gethostname(host, sizeof(host) - 1);
	snprintf(comments[(*n)++], 96, "profd %s on %s", PROFD_VERSION, host);
	snprintf(comments[(*n)++], 96, "sampling_frequency_hz=%u",
		 ag->cfg->frequency_hz);
	if (ag->cfg->probabilistic_threshold < 100)
		/* the part of the interval the perf events were on */
		snprintf(comments[(*n)++], 96, "probabilistic_sampled_ms=%llu",
			 (unsigned long long)(sampled_ns / 1000000));
	for (int c = 0; c < PROFD_CNT_MAX; c++)
		snprintf(comments[(*n)++], 96, "%s.%s=%llu",
			 counter_kind_name(profd_counter_kind(c)),
			 profd_counter_name(c), (unsigned long long)bpf_delta[c]);
	for (int c = 0; c < AGENT_CNT_MAX; c++)
		snprintf(comments[(*n)++], 96, "%s.%s=%llu",
			 counter_kind_name(agent_counter_kinds[c]),
			 agent_counter_names[c], (unsigned long long)agent_delta[c]);
	snprintf(comments[(*n)++], 96,
		 "stat.unwind: tables=%llu no_cfi=%llu processes=%llu rows=%llu shards=%u",
		 (unsigned long long)us->objects,
		 (unsigned long long)us->objects_failed,
		 (unsigned long long)us->processes,
		 (unsigned long long)us->rows, us->shards);
}

/* Append " name=N" for @val to @buf of @size at *@off when non-zero. */
static void note_counter(char *buf, size_t size, size_t *off, const char *name,
			 uint64_t val)
{
	if (val && *off < size)
		*off += snprintf(buf + *off, size - *off, " %s=%llu", name,
				 (unsigned long long)val);
}

static void status_line(struct agent *ag, const struct aggregate *a,
			const uint64_t *bpf_delta, const uint64_t *agent_delta,
			uint64_t processes, const char *path, int write_err,
			const char *flame_path, int flame_err)
{
	char lost[512] = "", partial[512] = "";
	uint64_t nlost = 0, npartial = 0;
	size_t lo = 0, po = 0;

	for (int c = 0; c < PROFD_CNT_MAX; c++) {
		enum counter_kind k = profd_counter_kind(c);

		if (k == COUNTER_LOST) {
			nlost += bpf_delta[c];
			note_counter(lost, sizeof(lost), &lo, profd_counter_name(c), bpf_delta[c]);
		} else if (k == COUNTER_PARTIAL) {
			npartial += bpf_delta[c];
			note_counter(partial, sizeof(partial), &po, profd_counter_name(c),
				     bpf_delta[c]);
		}
	}
	for (int c = 0; c < AGENT_CNT_MAX; c++) {
		if (agent_counter_kinds[c] == COUNTER_LOST) {
			nlost += agent_delta[c];
			note_counter(lost, sizeof(lost), &lo, agent_counter_names[c],
				     agent_delta[c]);
		} else if (agent_counter_kinds[c] == COUNTER_PARTIAL) {
			npartial += agent_delta[c];
			note_counter(partial, sizeof(partial), &po, agent_counter_names[c],
				     agent_delta[c]);
		}
	}
	fprintf(stderr, "profd: interval %u: %llu samples, %llu stacks, "
		"%llu processes tracked, %llu lost%s%s%s, %llu partial%s%s%s, %s %s%s%s\n",
		ag->intervals, (unsigned long long)a->nsamples,
		(unsigned long long)a->nstacks, (unsigned long long)processes,
		(unsigned long long)nlost, lo ? " (" : "", lost + (lo ? 1 : 0),
		lo ? ")" : "", (unsigned long long)npartial, po ? " (" : "",
		partial + (po ? 1 : 0), po ? ")" : "",
		write_err ? "FAILED to write" : "wrote", path,
		flame_err ? "; FAILED to write " : "", flame_err ? flame_path : "");
}

/* Most device lines in a profile's comments. */
#define GPU_COMMENT_DEVICES 8

/*
 * Write profile @p (NULL: it could not be built) to DIR/KIND-<time>.pb.gz,
 * its path into @path; an error is printed. Returns 0 or -errno.
 */
static int write_profile(struct agent *ag, const char *kind, struct profile *p,
			 uint64_t start_ns, char *path, size_t len)
{
	/* the name first: an error line and the status line name the file */
	int err = output_path(ag->cfg->output_dir, kind, start_ns, path, len);

	/* the directory may have been removed meanwhile: recreate it */
	if (!err)
		err = make_dir(ag->cfg->output_dir);
	if (!err && !p)
		err = -ENOMEM;
	/* --label: on every sample of the file, on every OTLP resource */
	for (size_t i = 0; !err && i < ag->cfg->nlabels; i++)
		err = profile_add_common_label(p, ag->cfg->labels[i].key,
					       ag->cfg->labels[i].value);
	if (!err)
		err = pprof_write(p, path);
	agent_export_profile(ag->exp, p);	/* also when the file failed */
	if (err)
		fprintf(stderr, "profd: error: writing %s: %s\n",
			path[0] ? path : "the profile", strerror(-err));
	return err;
}

/*
 * The GPU profiles of the interval: kernel time by launching stack
 * (gpu-*.pb.gz) and PC samples (gpu-pc-*.pb.gz), each only when the
 * interval has some. @paths gets what was written, for the status line.
 */
static int write_gpu_profiles(struct agent *ag, const struct build_opts *bo,
			      uint64_t end, char *paths, size_t len,
			      uint64_t *kernels, uint64_t *ns)
{
	struct gpu_interval *iv;
	char path[PATH_MAX] = "";
	uint64_t start = ag->gpu_interval_start;
	int err = 0, e;

	if (!ag->gpu || !(iv = gpu_swap(ag->gpu)))
		return 0;
	ag->gpu_interval_start = end;
	*kernels = gpu_interval_kernels(iv);
	*ns = gpu_interval_time_ns(iv);
	if (gpu_interval_kernels(iv)) {
		struct profile *p = gpu_build_kernel_profile(iv, bo, start);

		e = write_profile(ag, "gpu", p, start, path, sizeof(path));
		err = err ? err : e;
		if (!e)
			snprintf(paths, len, "%s", path);
		if (p && ag->gpu_flame)
			flamegraph_add_profile(ag->gpu_flame, p, 1);
		profile_free(p);
	}
	if (gpu_interval_pc_samples(iv)) {
		struct profile *p = gpu_build_pc_profile(iv, bo, start);
		size_t used = strlen(paths);

		path[0] = '\0';
		e = write_profile(ag, "gpu-pc", p, start, path, sizeof(path));
		err = err ? err : e;
		if (!e)
			snprintf(paths + used, len - used, "%s%s", used ? ", " : "", path);
		profile_free(p);
	}
	gpu_interval_free(iv);
	return err;
}

/*
 * --output-retention: delete the oldest profiles beyond the age or size
 * limit, after the interval's files were written.
 */
static void apply_retention(struct agent *ag)
{
	const struct agent_config *cfg = ag->cfg;
	struct retention_result r = { 0 };
	int err;

	if (!cfg->retention_age_s && !cfg->retention_bytes)
		return;
	err = retention_apply(cfg->output_dir, cfg->retention_age_s,
			      cfg->retention_bytes, clock_real_ns() / 1000000000ULL, &r);
	if (err) {
		fprintf(stderr, "profd: warning: --output-retention: cannot read %s: %s\n",
			cfg->output_dir, strerror(-err));
		return;
	}
	if (r.files_removed && cfg->verbose)
		fprintf(stderr, "profd: --output-retention: removed %llu old profiles "
			"(%llu bytes); %llu kept (%llu bytes)\n",
			(unsigned long long)r.files_removed,
			(unsigned long long)r.bytes_removed,
			(unsigned long long)r.files_kept, (unsigned long long)r.bytes_kept);
	pthread_mutex_lock(&ag->agg_lock);
	ag->retention_removed_files += r.files_removed;
	ag->retention_removed_bytes += r.bytes_removed;
	ag->counters[AGENT_CNT_RETENTION_REMOVED] = ag->retention_removed_files;
	pthread_mutex_unlock(&ag->agg_lock);
}

/*
 * What the flame graph's CPU view says while it has no samples: for how
 * long, the likely reason by the BPF counters (@bpf_now, totals since
 * the start) and what to run. Written to @buf of @len bytes.
 */
static void cpu_empty_note(const struct agent *ag, const uint64_t *bpf_now,
			   char *buf, size_t len)
{
	const struct agent_config *cfg = ag->cfg;
	bool filtered = cfg->exec_argv || cfg->npids;
	unsigned long long secs = (clock_mono_ns() - ag->run_start_mono +
				   500000000ULL) / 1000000000ULL;
	unsigned long long n = bpf_now[PROFD_CNT_SAMPLES];
	unsigned long long idle = bpf_now[PROFD_CNT_IDLE_SKIPPED];
	unsigned long long other = bpf_now[PROFD_CNT_FILTERED];
	char counts[160] = "";
	int off = 0;

	if (n)
		off = snprintf(counts, sizeof(counts), " (%llu samples: %llu of "
			       "the idle task, dropped unless --include-idle",
			       n, idle);
	if (n && filtered)
		off += snprintf(counts + off, sizeof(counts) - off,
				", %llu of other processes", other);
	if (n)
		snprintf(counts + off, sizeof(counts) - off, ")");
	snprintf(buf, len, "No CPU samples in %llu s: %s%s. %s", secs,
		 !n ? "the sampler never fired" :
		 cfg->exec_argv ? "the command did not run on a CPU" :
		 cfg->npids ? "the --pid processes did not run" :
		 idle == n ? "the machine was idle" : "no sample was kept",
		 counts,
		 cfg->exec_argv ? "Run a command that works longer, or raise "
				  "--sampling-frequency." :
		 cfg->npids ? "Record while they work, or profile a command "
			      "with `profd exec -- COMMAND`." :
		 "Run a workload while profd records, or "
		 "`profd exec -- COMMAND`.");
}

static void flush(struct agent *ag)
{
	uint64_t bpf_now[PROFD_CNT_MAX] = { 0 }, bpf_delta[PROFD_CNT_MAX];
	uint64_t agent_now[AGENT_CNT_MAX], agent_delta[AGENT_CNT_MAX];
	uint64_t end, processes;
	char comments[PROFD_CNT_MAX + AGENT_CNT_MAX + 8 + GPU_COMMENT_DEVICES][96];
	const char *comment_ptrs[PROFD_CNT_MAX + AGENT_CNT_MAX + 8 + GPU_COMMENT_DEVICES];
	struct unwind_loader_stats us;
	char path[PATH_MAX] = "", flame_path[PATH_MAX] = "";
	struct aggregate *a;
	struct profile *p;
	uint32_t ncomments = 0;
	char gpu_path[PATH_MAX] = "";
	uint64_t gpu_kernels = 0, gpu_ns = 0;
	int err = 0, ferr = 0, gerr = 0;
	bool skip;

	a = agent_interval_swap(ag, &end, agent_probabilistic_boundary);
	if (!a)
		return;	/* no boundary (no callback): keep aggregating */
	pthread_mutex_lock(&ag->agg_lock);
	memcpy(agent_now, ag->counters, sizeof(agent_now));
	processes = ag->procs_stats.processes;
	us = ag->unwind_stats;
	pthread_mutex_unlock(&ag->agg_lock);

	tracer_read_counters(ag->tracer, bpf_now);
	for (int c = 0; c < PROFD_CNT_MAX; c++)
		bpf_delta[c] = bpf_now[c] - ag->bpf_prev[c];
	for (int c = 0; c < AGENT_CNT_MAX; c++)
		agent_delta[c] = agent_now[c] - ag->agent_prev[c];
	memcpy(ag->bpf_prev, bpf_now, sizeof(bpf_now));
	memcpy(ag->agent_prev, agent_now, sizeof(agent_now));
	pthread_mutex_lock(&ag->agg_lock);
	ag->intervals++;
	pthread_mutex_unlock(&ag->agg_lock);
	counter_comments(ag, bpf_delta, agent_delta, &us,
			 ag->ended_on_ns, comments, &ncomments);
	if (ag->gpu)
		ncomments += gpu_device_comments(ag->gpu, comments + ncomments,
						 GPU_COMMENT_DEVICES);
	for (uint32_t i = 0; i < ncomments; i++)
		comment_ptrs[i] = comments[i];

	struct build_opts bo = {
		.period_ns = 1000000000ULL / ag->cfg->frequency_hz,
		.end_ns = end,
		.ksyms = ag->ksyms,
		.kernel_build_id = ag->kernel_build_id,
		.sym_lock = &ag->sym_lock,
		.py = ag->py,
		.comments = comment_ptrs,
		.ncomments = ncomments,
		.frames_pending = &ag->frames_pending,
		.frames_hung = &ag->frames_hung,
		.frames_shed = &ag->frames_shed,
	};
	/* probabilistic profiling: an interval never sampled has no profile */
	skip = !a->nsamples && !ag->ended_sampled;
	ag->interval_sampled = ag->sampling_on;
	/* objects still being opened for this interval's samples: a bounded wait */
	if (!skip) {
		uint64_t wait = (uint64_t)ag->cfg->interval_s * 1000000000ULL / 4;

		object_loader_wait(ag->objects, wait < OBJECTS_FLUSH_WAIT_NS ?
				   wait : OBJECTS_FLUSH_WAIT_NS);
	}
	p = skip ? NULL : aggregate_build_profile(a, &bo);
	err = skip ? 0 : write_profile(ag, "cpu", p, a->start_ns, path, sizeof(path));
	if (err) {
		agent_delta[AGENT_CNT_WRITE_ERRORS]++;
		agent_delta[AGENT_CNT_WRITE_FAILED_SAMPLES] += a->nsamples;
	} else if (!skip) {
		/* written means written: counted as soon as the file is there */
		pthread_mutex_lock(&ag->agg_lock);
		ag->total_samples += a->nsamples;
		pthread_mutex_unlock(&ag->agg_lock);
	}
	ag->skipped_intervals += skip;
	gerr = write_gpu_profiles(ag, &bo, end, gpu_path, sizeof(gpu_path),
				  &gpu_kernels, &gpu_ns);
	if (gerr)
		agent_delta[AGENT_CNT_WRITE_ERRORS]++;
	if (p && !flamegraph_add_profile(ag->flame, p, 0)) {
		uint64_t fb, fn, gb, gn;

		fb = flamegraph_bytes(ag->flame, &fn);
		gb = flamegraph_bytes(ag->gpu_flame, &gn);
		__atomic_store_n(&ag->flame_bytes, fb + gb, __ATOMIC_RELAXED);
		__atomic_store_n(&ag->flame_names, fn + gn, __ATOMIC_RELAXED);
		__atomic_store_n(&ag->flame_pruned, flamegraph_pruned(ag->flame) +
				 (ag->gpu_flame ? flamegraph_pruned(ag->gpu_flame) : 0),
				 __ATOMIC_RELAXED);
		char cpu_note[320];
		struct flamegraph_view views[2] = {
			{ .name = "CPU", .fg = ag->flame, .unit = "samples",
			  .empty_note = cpu_note },
			{ .name = "GPU kernel time", .fg = ag->gpu_flame, .unit = "ns",
			  .empty_note = "No GPU kernels were timed: no CUDA program "
					"ran with profd's injection library (`profd "
					"exec -- COMMAND` loads it; CUDA_INJECTION64_PATH "
					"names it for other programs)." },
		};

		cpu_empty_note(ag, bpf_now, cpu_note, sizeof(cpu_note));

		snprintf(flame_path, sizeof(flame_path), "%s/flamegraph.html",
			 ag->cfg->output_dir);
		ferr = flamegraph_write_views(flame_path, "profd flame graph", views,
					      ag->gpu_flame ? 2 : 1);
		if (ferr) {
			fprintf(stderr, "profd: error: writing %s: %s\n",
				flame_path, strerror(-ferr));
			agent_delta[AGENT_CNT_WRITE_ERRORS]++;
		}
	}
	pthread_mutex_lock(&ag->agg_lock);
	/* a profile that failed to write counts as lost */
	ag->counters[AGENT_CNT_WRITE_FAILED_SAMPLES] += agent_delta[AGENT_CNT_WRITE_FAILED_SAMPLES];
	ag->agent_prev[AGENT_CNT_WRITE_FAILED_SAMPLES] += agent_delta[AGENT_CNT_WRITE_FAILED_SAMPLES];
	ag->counters[AGENT_CNT_FLAMEGRAPH_TRUNCATED] = flamegraph_truncated(ag->flame);
	ag->counters[AGENT_CNT_FLAMEGRAPH_FOLDED] = flamegraph_pruned(ag->flame);
	ag->counters[AGENT_CNT_WRITE_ERRORS] += agent_delta[AGENT_CNT_WRITE_ERRORS];
	ag->agent_prev[AGENT_CNT_WRITE_ERRORS] += agent_delta[AGENT_CNT_WRITE_ERRORS];
	/* for /healthz and /metrics */
	ag->write_failures += err || ferr || gerr;
	ag->total_gpu_kernels += gpu_kernels;
	ag->last_write_ok = !(err || ferr || gerr);
	ag->last_flush_mono = clock_mono_ns();
	if (ag->last_write_ok)
		ag->last_written_mono = ag->last_flush_mono;
	pthread_mutex_unlock(&ag->agg_lock);
	if (skip)
		fprintf(stderr, "profd: interval %u: not profiled (--probabilistic-threshold "
			"%u), no profile written\n", ag->intervals,
			ag->cfg->probabilistic_threshold);
	else
		status_line(ag, a, bpf_delta, agent_delta, processes, path, err,
			    flame_path, ferr);
	apply_retention(ag);
	agent_export_warn(ag->exp);
	if (gpu_path[0] || gerr)
		fprintf(stderr, "profd: interval %u: %llu GPU kernels, %.3f s of GPU time%s; "
			"%s %s\n", ag->intervals, (unsigned long long)gpu_kernels,
			gpu_ns / 1e9, gpu_kernels ? "" : " (PC samples only)",
			gerr ? "FAILED to write" : "wrote",
			gpu_path[0] ? gpu_path : "the GPU profile");
	profile_free(p);
	aggregate_free(a);
}

/* run */

/*
 * Close the NVTX ranges still open, send what is pending (the endpoint
 * gets a few seconds) and say what was exported.
 */
static void export_finish(struct agent *ag)
{
	struct agent_export_stats st;

	if (!ag->exp)
		return;
	agent_export_stop(ag->exp, EXPORT_STOP_TIMEOUT_MS);
	agent_export_stats(ag->exp, &st);
	if (agent_export_endpoint(ag->exp)[0])
		fprintf(stderr, "profd: OTLP: %llu spans, %llu log records from NVTX; "
			"%llu items sent to %s, %llu dropped\n",
			(unsigned long long)st.nvtx_spans, (unsigned long long)st.nvtx_logs,
			(unsigned long long)st.otlp_items_sent, agent_export_endpoint(ag->exp),
			(unsigned long long)st.otlp_items_dropped);
	else if (st.nvtx_spans || st.nvtx_logs)
		fprintf(stderr, "profd: NVTX: %llu spans, %llu log records not exported "
			"(no --otlp-endpoint / OTEL_EXPORTER_OTLP_ENDPOINT)\n",
			(unsigned long long)st.nvtx_spans, (unsigned long long)st.nvtx_logs);
}


/* A process is alive while /proc/PID/stat exists and it is not a zombie. */
static bool pid_alive(pid_t pid)
{
	char path[64], buf[512], *paren;
	FILE *f;
	bool alive = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		paren = strrchr(buf, ')');	/* comm may hold spaces and ')' */
		alive = paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
	}
	fclose(f);
	return alive;
}

static bool pids_alive(const struct agent_config *cfg)
{
	for (size_t i = 0; i < cfg->npids; i++)
		if (pid_alive(cfg->pids[i]))
			return true;
	return false;
}

/*
 * The injection library profd attaches to at start: --inject-library, or
 * libprofd_inject.so next to the binary, or in ../lib/profd/ (installed).
 * Resolved to an absolute path (the child's environment gets it). NULL
 * when there is none.
 */
static char *find_inject_library(const struct agent_config *cfg)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64], *slash;
	ssize_t n;

	if (cfg->inject_library)
		return realpath(cfg->inject_library, NULL);	/* checked in agent_run */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/libprofd_inject.so", exe);
	if (!access(cand, R_OK))
		return realpath(cand, NULL);
	snprintf(cand, sizeof(cand), "%s/../lib/profd/libprofd_inject.so", exe);
	if (!access(cand, R_OK))
		return realpath(cand, NULL);
	return NULL;
}

/*
 * --inject-library PATH must be a profd injection library: one line saying
 * what is wrong with it otherwise. @resolved is realpath(PATH) or NULL.
 */
static int check_inject_library(const char *path, const char *resolved)
{
	unsigned char magic[4] = { 0 };
	struct stat st;
	const char *why = NULL;
	FILE *f;

	if (!resolved || stat(resolved, &st))
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (!(f = fopen(resolved, "re")))
		why = strerror(errno);
	else {
		if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "\177ELF", 4))
			why = "not an ELF shared library";
		fclose(f);
	}
	if (why)
		fprintf(stderr, "profd: error: --inject-library %s: %s\n", path, why);
	return why ? -1 : 0;
}

/* GPU: the correlation state and the probes of profd's own library. */
static int gpu_setup(struct agent *ag, const char *lib)
{
	const struct agent_config *cfg = ag->cfg;
	struct gpu_opts go = {
		.launch_timeout_ns = (uint64_t)cfg->gpu_timeout_s * 1000000000ULL,
		.verbose = cfg->verbose,
	};
	int ret;

	ag->gpu = gpu_new(&go);
	ag->gpu_flame = flamegraph_new(0);
	if (ag->gpu_flame)
		flamegraph_set_budget(ag->gpu_flame, ag->budgets.flamegraph / 8);
	if (!ag->gpu || !ag->gpu_flame) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	ag->gpu_interval_start = clock_real_ns();
	/* --pid / exec: only the chosen processes' libraries, no full scans */
	gpu_discovery_init(&ag->discovery, !cfg->npids && !cfg->exec_argv,
			   attach_gpu_library, ag);
	if (!lib) {
		if (cfg->exec_argv || cfg->verbose)
			fprintf(stderr, "profd: warning: no CUDA injection library "
				"(libprofd_inject.so) next to profd or in ../lib/profd/: "
				"GPU kernels are profiled only in processes that load a "
				"copy profd finds (use --inject-library PATH)\n");
		return 0;
	}
	/*
	 * Uprobes cost time to attach and more to detach (~0.1 s per probe
	 * site at exit), so system-wide and --pid runs attach to a copy of
	 * the library only once a process maps it (discovery below); a
	 * `profd exec` command maps its private copy from the start.
	 */
	if (!cfg->exec_argv && !cfg->inject_library)
		return 0;
	ret = tracer_gpu_attach(ag->tracer, lib);
	if (ret < 0) {
		fprintf(stderr, "profd: error: cannot attach to the CUDA injection "
			"library %s: %s\n", cfg->inject_library ? cfg->inject_library : lib,
			ret == -ESRCH ? "it has no profd probes" :
			ret == -EBADF || ret == -EINVAL || ret == -ENOEXEC ?
			"not a profd injection library (bad ELF or no USDT notes)" :
			strerror(-ret));
		return -1;
	}
	return 0;
}

/* OTLP export (--otlp-endpoint or OTEL_*) and NVTX ranges (with the GPU library). */
static int export_setup(struct agent *ag)
{
	const struct agent_config *cfg = ag->cfg;
	struct agent_export_config xc = {
		.endpoint = cfg->otlp_endpoint,
		.protocol = cfg->otlp_protocol,
		.insecure = cfg->otlp_insecure,
		.nvtx = cfg->gpu,
		.nvtx_max_spans_per_sec = cfg->nvtx_max_spans_per_sec,
		.labels = cfg->labels,
		.nlabels = cfg->nlabels,
		.verbose = cfg->verbose,
	};
	char err[256] = "";

	if (agent_export_new(&xc, &ag->exp, err, sizeof(err))) {
		if (cfg->otlp_endpoint || cfg->otlp_protocol) {
			fprintf(stderr, "profd: error: OTLP export: %s\n",
				err[0] ? err : "cannot start");
			return -1;
		}
		/* a bad OTEL_* variable must not stop profiling: go on without */
		fprintf(stderr, "profd: warning: OTLP export and NVTX off: %s\n",
			err[0] ? err : "cannot start");
		ag->exp = NULL;
	}
	if (ag->exp && agent_export_endpoint(ag->exp)[0])
		fprintf(stderr, "profd: exporting OTLP to %s\n", agent_export_endpoint(ag->exp));
	return 0;
}

static int agent_setup(struct agent *ag, const char *inject_lib)
{
	const struct agent_config *cfg = ag->cfg;
	unsigned int scale = cfg->bpf_map_scale_factor;
	struct tracer_opts to = {
		.frequency_hz = cfg->frequency_hz,
		.pids = cfg->exec_argv ? &ag->child.pid : cfg->pids,
		.npids = cfg->exec_argv ? 1 : cfg->npids,
		.follow_children = cfg->exec_argv != NULL,
		.include_idle = cfg->include_idle,
		.max_stack_depth = cfg->max_stack_depth,
		.ringbuf_bytes = 8u << 20,
		.gpu_ringbuf_bytes = cfg->gpu ? 8u << 20 : 4096,
		.verbose = cfg->verbose,
		.dwarf_unwinding = cfg->dwarf_unwinding,
		.max_processes = cfg->max_processes,
		.verifier_log_level = cfg->bpf_verifier_log_level,
		.start_disabled = !ag->sampling_on,
	};
	uint64_t unwind_mib = cfg->unwind_memory_set ? cfg->unwind_memory_mib :
			      (uint64_t)cfg->unwind_memory_mib << scale;
	int err;

	/* the shards: at most UNWIND_MAX_SHARDS of 1 MiB (--unwind-memory-limit's range) */
	if (unwind_mib > UNWIND_MAX_SHARDS)
		unwind_mib = UNWIND_MAX_SHARDS;

	/* --bpf-map-scale-factor: x 2^N (tracer_open() makes a map that
	 * cannot be created that big smaller, with a warning) */
	tracer_scale_opts(&to, scale, !cfg->max_processes_set);
	if (!cfg->gpu)
		to.gpu_ringbuf_bytes = 4096;	/* --no-gpu: nothing writes it */
	/* /metrics reads it from its own thread */
	__atomic_store_n(&ag->unwind_memory_limit,
			 cfg->dwarf_unwinding ? unwind_mib << 20 : 0, __ATOMIC_RELAXED);

	if (preflight_check(cfg->check_kernel_version, cfg->gpu))
		return -1;
	err = make_dir(cfg->output_dir);
	if (err) {
		fprintf(stderr, "profd: error: cannot use output directory %s: %s\n",
			cfg->output_dir, strerror(-err));
		return -1;
	}
	remove_stale_temps(cfg->output_dir);
	ag->ksyms = kallsyms_load("/proc/kallsyms", &err);
	if (!ag->ksyms)
		fprintf(stderr, "profd: warning: no kernel symbols from /proc/kallsyms "
			"(%s): kernel frames stay addresses\n", strerror(-err));
	kernel_build_id("/sys/kernel/notes", ag->kernel_build_id,
			sizeof(ag->kernel_build_id));
	agent_memory_budgets(cfg->memory_limit_mib, cfg->symbol_cache_mib,
			     &ag->budgets);
	ag->sym = symbolizer_new();
	if (ag->sym)
		symbolizer_set_budget(ag->sym, ag->budgets.symbols);
	ag->procs = ag->sym ? process_table_new(ag->sym, &ag->sym_lock) : NULL;
	ag->gate = file_gate_new(0);
	ag->objects = object_loader_new();
	if (ag->procs) {
		process_table_set_gate(ag->procs, ag->gate);
		process_table_set_loader(ag->procs, ag->objects);
	}
	ag->flame = flamegraph_new(0);
	if (ag->flame)
		flamegraph_set_budget(ag->flame, ag->budgets.flamegraph);
	ag->cur = aggregate_new(MAX_STACKS_PER_INTERVAL, clock_real_ns());
	if (!ag->procs || !ag->gate || !ag->objects || !ag->flame || !ag->cur) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	if (export_setup(ag))
		return -1;
	ag->tracer = tracer_open(&to, on_event, ag);
	if (!ag->tracer)
		return -1;
	if (!ag->sampling_on) {
		/* not profiling this probabilistic interval: drop the samples
		 * taken while the events were being attached */
		ag->discard_samples = true;
		tracer_drain(ag->tracer);
		defer_workers(ag, false, 0);
		ag->discard_samples = false;
	}
	if (cfg->gpu && gpu_setup(ag, inject_lib))
		return -1;
	if (cfg->python_unwinding) {
		ag->py = python_new(tracer_python_procs_fd(ag->tracer), cfg->verbose);
		ag->merged = malloc((PROFD_MAX_KERNEL_FRAMES + MERGED_USER_MAX) *
				    sizeof(*ag->merged));
		if (!ag->py || !ag->merged) {
			fprintf(stderr, "profd: error: out of memory\n");
			return -1;
		}
	}
	if (cfg->dwarf_unwinding) {
		int shards_fd, procs_fd;
		struct unwind_loader *l;

		tracer_unwind_maps(ag->tracer, &shards_fd, &procs_fd);
		l = unwind_loader_new(shards_fd, procs_fd, unwind_mib << 20);
		ag->unwind = l ? unwind_async_new(l) : NULL;
		if (!ag->unwind) {
			unwind_loader_free(l);
			fprintf(stderr, "profd: error: out of memory\n");
			return -1;
		}
	}
	if (ag->unwind || ag->py) {
		struct process_listener pl = {
			.maps_seen = on_maps_seen,
			.maps_read = on_maps_read,
			.removed = on_removed,
			.ctx = ag,
		};

		process_table_set_listener(ag->procs, &pl);
	}
	return 0;
}

static void agent_teardown(struct agent *ag)
{
	agent_metrics_stop(ag);		/* first: it reads everything below */
	/*
	 * The object loader uses the process table, symbolizer, unwind loader
	 * and Python state: stopped first; stuck in a file read, it is left
	 * alone with all of them (the process is exiting anyway).
	 */
	ag->objects_stuck = !object_loader_free(ag->objects, OBJECTS_STOP_WAIT_NS);
	ag->objects = NULL;
	/* before the BPF maps it writes are closed; one stuck in a read is left */
	if (!ag->objects_stuck)
		unwind_async_free(ag->unwind, UNWIND_STOP_WAIT_NS);
	tracer_close(ag->tracer);
	if (!ag->objects_stuck)
		python_free(ag->py);
	gpu_free(ag->gpu);
	flamegraph_free(ag->gpu_flame);
	agent_export_free(ag->exp);
	free(ag->merged);
	aggregate_free(ag->cur);
	aggregate_free(ag->next);
	agent_exited_free(ag);
	if (!ag->objects_stuck) {
		process_table_free(ag->procs);
		file_gate_free(ag->gate);	/* stays allocated while a read hangs */
		symbolizer_free(ag->sym);
	}
	flamegraph_free(ag->flame);
	kallsyms_free(ag->ksyms);
}

/* Wait for a signal until @deadline (CLOCK_MONOTONIC ns); true if one came. */
static bool wait_signal(const sigset_t *set, uint64_t deadline, int *sig,
			bool *from_tty)
{
	siginfo_t info;
	uint64_t now = clock_mono_ns();
	uint64_t left = deadline > now ? deadline - now : 0;
	struct timespec ts = {
		.tv_sec = left / 1000000000ULL,
		.tv_nsec = left % 1000000000ULL,
	};
	int s = sigtimedwait(set, &info, &ts);

	if (s > 0) {
		*sig = s;
		/* the terminal signals its whole foreground group (Ctrl-C) */
		*from_tty = info.si_code == SI_KERNEL;
		return true;
	}
	return false;
}

int agent_run(const struct agent_config *cfg)
{
	struct agent ag = { .cfg = cfg };
	uint64_t start, next_flush, end, interval_ns, now, next_draw, draw_ns;
	char *inject_lib = NULL, *private_lib = NULL;
	sigset_t set;
	int sig = 0, ret = 1;
	bool stop = false, forwarded = false, from_tty = false;

	pthread_mutex_init(&ag.sym_lock, NULL);
	pthread_mutex_init(&ag.agg_lock, NULL);
	/* Block the stop signals in every thread; the main thread waits on them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);	/* the terminal or ssh session went away */
	if (cfg->exec_argv)
		sigaddset(&set, SIGCHLD);	/* the command exited */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* a closed stderr pipe must not kill profd before it writes its files */
	signal(SIGPIPE, SIG_IGN);

	if (cfg->exec_argv) {
		/* before the BPF load: a typo should not cost seconds */
		int err = exec_find_command(cfg->exec_argv[0]);

		if (err) {
			fprintf(stderr, "profd: error: cannot run %s: %s\n",
				cfg->exec_argv[0], err == -ENOENT ?
				"command not found" : strerror(-err));
			ret = err == -EACCES ? 126 : 127;
			goto out;
		}
	}
	if (cfg->gpu) {
		inject_lib = find_inject_library(cfg);
		if (cfg->inject_library && check_inject_library(cfg->inject_library, inject_lib))
			goto out;
	}
	if (cfg->exec_argv && inject_lib) {
		/* a copy only the command's tree maps: other CUDA programs using
		 * the library file are left alone (uprobes are per file) */
		private_lib = exec_private_library(inject_lib);
		if (private_lib) {
			free(inject_lib);
			inject_lib = strdup(private_lib);
		} else if (cfg->verbose) {
			fprintf(stderr, "profd: note: no private copy of %s (%s): other "
				"processes using it are traced too (their data is "
				"filtered out)\n", inject_lib, strerror(errno));
		}
		const char *env = getenv("CUDA_INJECTION64_PATH");
		char *preset = env && strstr(env, GPU_INJECT_LIBRARY_NAME) ?
			       realpath(env, NULL) : NULL;

		if (preset) {
			/* a profd library already: attach to that one before the start */
			exec_private_library_remove(private_lib);
			private_lib = NULL;
			free(inject_lib);
			inject_lib = preset;
		} else if (env) {
			fprintf(stderr, "profd: warning: CUDA_INJECTION64_PATH is already "
				"set (%s) and is kept: it is not profd's injection library, "
				"so GPU kernels are not profiled\n", env);
		}
		env = getenv("NVTX_INJECTION64_PATH");
		if (env && !strstr(env, GPU_INJECT_LIBRARY_NAME))
			fprintf(stderr, "profd: warning: NVTX_INJECTION64_PATH is already "
				"set (%s) and is kept: it is not profd's injection library, "
				"so NVTX ranges are not traced\n", env);
	}
	if (cfg->exec_argv) {
		/* the child waits for the programs to load before it execs */
		int err = exec_child_start(&ag.child, cfg->exec_argv, inject_lib);

		if (err) {
			fprintf(stderr, "profd: error: cannot start %s: %s\n",
				cfg->exec_argv[0], strerror(-err));
			goto out;
		}
	}
	/* the first probabilistic interval: sampling starts on or off */
	ag.sampling_on = agent_probabilistic_draw(&ag);
	ag.interval_sampled = ag.sampling_on;
	/* before the BPF load: a taken port should not cost seconds */
	if (cfg->http_address && agent_metrics_start(&ag))
		goto out;
	if (agent_setup(&ag, inject_lib))
		goto out;
	if (pthread_create(&ag.reader, NULL, reader_main, &ag)) {
		fprintf(stderr, "profd: error: cannot start the reader thread\n");
		goto out;
	}
	pthread_setname_np(ag.reader, "profd-reader");
	start = clock_mono_ns();
	ag.run_start_mono = start;
	ag.on_since = ag.sampling_on ? start : 0;
	/* the first profile covers sampling time, not the BPF load before it */
	pthread_mutex_lock(&ag.agg_lock);
	ag.cur->start_ns = clock_real_ns();
	ag.ready = true;
	ag.last_write_ok = true;
	pthread_mutex_unlock(&ag.agg_lock);
	interval_ns = (uint64_t)cfg->interval_s * 1000000000ULL;
	end = cfg->duration_s ? start + (uint64_t)cfg->duration_s * 1000000000ULL : UINT64_MAX;
	next_flush = start + interval_ns;
	draw_ns = (uint64_t)cfg->probabilistic_interval_s * 1000000000ULL;
	next_draw = cfg->probabilistic_threshold < 100 ? start + draw_ns : UINT64_MAX;
	fprintf(stderr, "profd: sampling %u CPUs at %u Hz%s, writing to %s\n",
		tracer_ncpus(ag.tracer), cfg->frequency_hz,
		cfg->npids ? " (--pid)" : cfg->exec_argv ? " (exec)" : "",
		cfg->output_dir);
	if (cfg->probabilistic_threshold < 100)
		fprintf(stderr, "profd: probabilistic profiling: %u%% of %u s intervals; "
			"this one: %s\n", cfg->probabilistic_threshold,
			cfg->probabilistic_interval_s, ag.sampling_on ? "on" : "off");
	if (cfg->exec_argv) {
		int err = exec_child_release(&ag.child);

		if (err) {
			fprintf(stderr, "profd: error: cannot run %s: %s\n",
				cfg->exec_argv[0], strerror(-err));
			ag.exec_failed = err == -EACCES ? 126 : 127;
			stop = true;
		}
	}

	while (!stop) {
		uint64_t deadline = next_flush < end ? next_flush : end;
		bool draw_due, draw_on, switched, flushed;

		if (next_draw < deadline)
			deadline = next_draw;

		/* wake at least once a second to notice --pid targets exiting */
		now = clock_mono_ns();
		if (deadline > now + 1000000000ULL)
			deadline = now + 1000000000ULL;
		if (wait_signal(&set, deadline, &sig, &from_tty) && sig != SIGCHLD) {
			if (cfg->exec_argv && !forwarded && !ag.child.exited) {
				/* let the command stop (and flush its GPU records)
				 * first; a terminal's signal reached it already */
				fprintf(stderr, "profd: %s: %s %s; again to stop profd "
					"at once\n", strsignal(sig),
					from_tty ? "waiting for" : "passing it to",
					cfg->exec_argv[0]);
				if (!from_tty)
					kill(ag.child.pid, sig);
				forwarded = true;
				continue;
			}
			fprintf(stderr, "profd: %s: writing what was collected\n",
				strsignal(sig));
			break;
		}
		if (cfg->exec_argv && exec_child_reap(&ag.child, false)) {
			if (WIFSIGNALED(ag.child.status))
				fprintf(stderr, "profd: %s killed by %s (status %d)\n",
					cfg->exec_argv[0], strsignal(WTERMSIG(ag.child.status)),
					exec_child_exit_code(&ag.child));
			else
				fprintf(stderr, "profd: %s exited (status %d)\n",
					cfg->exec_argv[0], exec_child_exit_code(&ag.child));
			break;
		}
		if (ag.reader_err)
			break;
		now = clock_mono_ns();
		if (now >= end)
			break;
		/*
		 * Switching off comes before the flush: the samples still in the
		 * ringbuf then are read into the interval ending now, not into
		 * the next one, which is not profiled.
		 */
		flushed = false;
		draw_due = now >= next_draw;
		draw_on = draw_due && agent_probabilistic_draw(&ag);
		switched = draw_due && !draw_on && agent_probabilistic_set(&ag, false);
		if (cfg->npids && !pids_alive(cfg)) {
			fprintf(stderr, "profd: every --pid process exited\n");
			stop = true;
		} else if (now >= next_flush) {
			/* a draw's "on" takes effect at the boundary, in flush() */
			ag.draw_on_pending = draw_on;
			ag.draw_switched = false;
			flush(&ag);
			if (ag.draw_on_pending) {	/* no boundary: the swap failed */
				ag.draw_on_pending = false;
				ag.draw_switched = agent_probabilistic_set(&ag, true);
			}
			flushed = true;
			next_flush += interval_ns;
			if (next_flush <= now)
				next_flush = now + interval_ns;
		}
		/* after the flush: a draw at an interval's end is the next one's */
		if (draw_due) {
			if (draw_on)
				switched = flushed ? ag.draw_switched :
					   agent_probabilistic_set(&ag, true);
			if (switched && cfg->verbose)
				fprintf(stderr, "profd: probabilistic profiling: sampling %s "
					"for %u s\n", draw_on ? "on" : "off",
					cfg->probabilistic_interval_s);
			next_draw += draw_ns;
			if (next_draw <= now)
				next_draw = now + draw_ns;
		}
	}
	/* Stop sampling, let the reader drain the ringbuf, write the rest. */
	tracer_set_sampling(ag.tracer, false);
	__atomic_store_n(&ag.stop_reader, 1, __ATOMIC_RELEASE);
	pthread_join(ag.reader, NULL);
	/* the last interval counts every NVTX record the reader queued */
	agent_export_quiesce(ag.exp);
	publish_proc_stats(&ag);
	flush(&ag);
	if (ag.write_failures)
		fprintf(stderr, "profd: error: the files of %u of %u intervals could "
			"not all be written to %s (see above)\n", ag.write_failures, ag.intervals,
			cfg->output_dir);
	else {
		char gpu[48] = "";

		if (ag.total_gpu_kernels)
			snprintf(gpu, sizeof(gpu), " and %llu GPU kernels",
				 (unsigned long long)ag.total_gpu_kernels);
		char off[64] = "";

		if (ag.skipped_intervals)
			snprintf(off, sizeof(off), " (%u intervals not profiled)",
				 ag.skipped_intervals);
		if (ag.intervals && ag.skipped_intervals == ag.intervals && !gpu[0])
			fprintf(stderr, "profd: done: no interval was profiled "
				"(--probabilistic-threshold %u): nothing written\n",
				cfg->probabilistic_threshold);
		else
			fprintf(stderr, "profd: done: %llu samples%s in %u profiles%s; "
				"flame graph: %s/flamegraph.html\n",
				(unsigned long long)ag.total_samples, gpu,
				ag.intervals - ag.skipped_intervals, off, cfg->output_dir);
	}
	export_finish(&ag);
	ret = ag.reader_err || ag.write_failures ? 1 : 0;
	if (cfg->exec_argv && !ret) {
		if (ag.exec_failed)
			ret = ag.exec_failed;
		else if (exec_child_reap(&ag.child, false))
			ret = exec_child_exit_code(&ag.child);
		else {
			fprintf(stderr, "profd: %s (pid %d) is still running, "
				"no longer profiled\n", cfg->exec_argv[0], ag.child.pid);
			ret = sig ? 128 + sig : 1;
		}
	}
out:
	if (cfg->exec_argv && ag.child.go_fd >= 0)
		exec_child_kill(&ag.child);	/* never released: it must not run */
	agent_teardown(&ag);
	exec_private_library_remove(private_lib);
	free(inject_lib);
	return ret;
}
