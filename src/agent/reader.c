// SPDX-License-Identifier: GPL-2.0
/*
 * reader.c - the reader thread and the record path (see agent_internal.h).
 *
 * Owns: everything the reader thread does with the ringbuf's records.
 * agent_reader_main() polls the ringbuf; agent_on_event() checks each
 * record and hands it on: samples to the process table (each user frame's
 * object opened while the process lives), their runtime's merge of its
 * frames with the native ones (src/runtime/) and the interval's
 * aggregation table (or, for a GPU launch, to the GPU
 * correlation); process fork/exec/exit events, library mappings, GPU records
 * and NVTX batches to their owners. Between polls the reader ticks the GPU
 * state, reaps exited processes (interval.c) and publishes the figures of
 * the other threads' parts into struct agent for the status line, the
 * profile comments and /metrics (agent_publish_stats()).
 *
 * Also here: the process table's listener callbacks (the reader attaches
 * to copies of the CUDA injection library; the object loader's thread
 * keeps the BPF unwind and runtime maps in step), and the deferral of the
 * workers' wakeups while the reader takes in a batch.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "agent/debug.h"
#include "agent/export.h"
#include "agent/memory.h"
#include "bpf/gpu_events.h"
#include "gpu/gpu.h"
#include "proc/process.h"
#include "proc/process_jit.h"
#include "runtime/runtime.h"
#include "tracer/tracer.h"
#include "unwind/async.h"
#include "unwind/callsite.h"
#include "util/clock.h"

/* The reader's own counters: records and samples it could not use. */
COUNTER_DEFINE(records_malformed, COUNTER_LOST, "records shorter than their header says");
COUNTER_DEFINE(aggregation_full, COUNTER_LOST,
	       "samples dropped: the interval's stack table was full (or out of memory)");
COUNTER_DEFINE(exited_unidentified, COUNTER_LOST,
	       "samples of a process first seen exiting, its memory gone: dropped");
COUNTER_DEFINE(user_frames_before_exec, COUNTER_PARTIAL,
	       "samples taken before their process's exec, read after it, the image "
	       "they ran unknown: user frames left unnamed, no labels");
COUNTER_DEFINE(samples_before_exec_named, COUNTER_STAT,
	       "samples taken before their process's exec, read after it: named by "
	       "the image they ran (a forked child's parent's, or an earlier read)");

#define REAP_EVERY_NS (1000ULL * 1000 * 1000)
/* a sampled process's unwind tables are marked used at most this often */
#define UNWIND_TOUCH_EVERY_NS (1000ULL * 1000 * 1000)
/*
 * Most samples do not wake the reader (emit_sample()): it polls. Short
 * enough that a runtime's short-lived code (module code run once at
 * import lives only milliseconds) is usually still alive
 * when its sample is named (runtime_ops.fast_poll).
 */
#define READER_POLL_MS 20	/* sampling processes of a fast_poll runtime */
#define READER_POLL_SLOW_MS 100	/* otherwise, and while probabilistic profiling is off */
#define READER_BATCH 4096	/* records per poll before the loop runs again */
#define READER_DRAIN_NS (500ULL * 1000 * 1000)	/* the last drain, at most */
/* The last wait for held samples' unwind tables, at most. */
#define READER_HELD_DRAIN_NS (300ULL * 1000 * 1000)
/* The poll timeout while samples wait for their tables (ms). */
#define HELD_POLL_MS 5

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

		if (runtime_ip_ops(ips[i]))
			break;
		m = proc_maps_find(&snap->maps, i && !(ips[i] & PROFD_IP_EXACT) ? ip - 1 : ip);
		base = m ? strrchr(m->path, '/') : NULL;
		if (!base || (strncmp(base + 1, "libprofd_inject", 15) &&
			      strncmp(base + 1, "libcupti", 8)))
			break;
	}
	return i < nuser ? i : 0;
}

struct process *agent_sample_process(struct agent *ag, const struct profd_sample *s,
				     const uint64_t *ips, uint64_t now)
{
	struct proc_snapshot *snap;
	/* the leader's comm is the process's name: no /proc read for it */
	struct process *p = process_get(ag->procs, s->pid, now,
					s->flags & PROFD_SAMPLE_EXITING,
					s->tid == s->pid ? s->comm : NULL, s->ktime_ns);

	if (p) {
		uint64_t read_at = p->refreshed_ns;

		p->last_sample_ns = now;
		snap = process_sample_snapshot(p, s->ktime_ns);
		if (snap != p->snap) {
			/* taken before the exec of the image read: no re-read for it */
			for (uint32_t i = 0; snap && i < s->user_len; i++) {
				uint64_t ip = ips[s->kernel_len + i];
				bool exact = !i || (ip & PROFD_IP_EXACT);

				ip &= ~PROFD_IP_EXACT;
				process_snapshot_mapping(ag->procs, snap, exact ? ip : ip - 1, now);
			}
			return p;
		}
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
	return p;
}

void agent_handle_sample(struct agent *ag, const struct profd_sample *s,
			 const uint64_t *ips, uint64_t now)
{
	struct process *p = agent_sample_process(ag, s, ips, now);
	struct proc_snapshot *snap;
	struct aggregate *table;
	const char *comm;
	uint32_t nuser, verified, time_bin;
	pid_t code_pid;
	/* a walk stopped by a read error was cut short: it ends in [truncated] */
	uint32_t flags = s->flags | (s->flags & PROFD_SAMPLE_USER_ERROR ?
				     PROFD_SAMPLE_USER_TRUNCATED : 0);
	bool cut = false;

	snap = p ? process_sample_snapshot(p, s->ktime_ns) : NULL;
	if (p && snap != p->snap) {
		/* taken before the exec of the image p->snap describes */
		if (snap)
			counter_inc(&counter_samples_before_exec_named);
		else
			counter_inc(&counter_user_frames_before_exec);
	}
	if (p && p->exited && (s->flags & PROFD_SAMPLE_EXITING) &&
	    !(s->flags & PROFD_SAMPLE_NO_USER) &&
	    (!p->snap || !p->snap->meta.executable || !p->snap->maps.n)) {
		/* first seen exiting, too late to tell what it was (its memory
		 * gone): dropped, never given the labels of a zombie */
		counter_inc(&counter_exited_unidentified);
		return;
	}
	comm = p && p->comm[0] ? p->comm : s->comm;
	nuser = s->user_len;
	if (!ag->rts || !(s->flags & PROFD_SAMPLE_INTERP)) {
		pthread_mutex_lock(&ag->agg_lock);
		goto add;
	}
	for (;;) {
		/*
		 * The runtime's frames take the place of its interpreter
		 * loop's native frames. The merge may read
		 * process memory, so it runs outside agg_lock; a stack must
		 * name its frames in its interval's generation of the
		 * runtime's frame table, so it is merged again if the
		 * interval changed meanwhile (rare: the frames are cached by
		 * then).
		 */
		uint64_t interval = __atomic_load_n(&ag->interval, __ATOMIC_ACQUIRE);
		/* the interval the sample goes to: one more during a flush */
		uint64_t gen = agent_sample_interval(ag, s->ktime_ns);

		runtimes_new_interval(ag->rts, gen);
		memcpy(ag->merged, ips, s->kernel_len * sizeof(*ips));
		nuser = runtimes_merge_stack(ag->rts, s->runtime, s->pid, s->flags,
					     ips + s->kernel_len, s->user_len,
					     ips + s->kernel_len + s->user_len,
					     s->interp_len,
					     ag->merged + s->kernel_len,
					     MERGED_USER_MAX, s->ktime_ns);
		pthread_mutex_lock(&ag->agg_lock);
		if (ag->interval == interval)
			break;
		pthread_mutex_unlock(&ag->agg_lock);
	}
	ips = ag->merged;
add:
	/* a caller not after a call instruction ends the stack (callsite.h) */
	/*
	 * Whose memory holds @snap's code: the sample's process for its
	 * current image; the parent for a fork view (the same file-backed
	 * code); nobody's for an image the process has left since (an exec:
	 * its memory is the next image's): the files alone.
	 */
	code_pid = !p || snap == p->snap ? (pid_t)s->pid :
		   snap && snap->pid != (pid_t)s->pid ? snap->pid : 0;
	verified = callsite_verify(ag->callsites, snap, code_pid, ips + s->kernel_len,
				   nuser, s->flags & PROFD_SAMPLE_USER_COMPLETE);
	if (verified < nuser) {
		nuser = verified;
		flags |= PROFD_SAMPLE_USER_TRUNCATED;
		cut = true;
	}
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
				.flags = flags & PROFD_SAMPLE_USER_TRUNCATED,
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
				if (!runtime_ip_ops(first) && !(first & PROFD_IP_EXACT))
					v[0] = (first - 1) | PROFD_IP_EXACT;
				l.ips = v;
			}
			gpu_launch(ag->gpu, &l, now);
		}
		return;
	}
	/* JIT frames are named by the code there then: the time is kept */
	time_bin = p && snap == p->snap ? process_jit_bin(ag->procs, p, ips + s->kernel_len,
							  nuser, s->ktime_ns, now) : 0;
	if (s->origin == PROFD_ORIGIN_OFF_CPU) {
		/* a blocked thread: its time comes with the period's end */
		agent_offcpu_stack(ag, s, comm, snap, flags & PROFD_SAMPLE_USER_TRUNCATED,
				   time_bin, ips, nuser);
		pthread_mutex_unlock(&ag->agg_lock);
		if (agent_debug_wanted(ag, s->pid))
			agent_debug_sample(ag, s, ips, nuser, snap, cut);
		return;
	}
	/* the sample's own timestamp picks the interval (interval.c) */
	table = agent_sample_table(ag, s->ktime_ns);
	/* only flags the profile shows are part of a stack's identity */
	if (table && aggregate_add(table, s->pid, s->tid, comm, s->comm, snap,
				   flags & PROFD_SAMPLE_USER_TRUNCATED, time_bin, ips,
				   s->kernel_len, nuser))
		counter_inc(&counter_aggregation_full);
	pthread_mutex_unlock(&ag->agg_lock);

	if (agent_debug_wanted(ag, s->pid))
		agent_debug_sample(ag, s, ips, nuser, snap, cut);
}

/*
 * The workers' wakeups wait until the reader has taken in a batch of
 * records (agent_reader_main() ends the deferral), at most DEFER_MAX_NS: one
 * wakeup per burst, not one per job (a context switch each, under process
 * churn), and a new process's tables and files still start within a
 * millisecond (a batch under load takes tens: the workers must not wait
 * for all of it).
 */
#define DEFER_MAX_NS (1000ULL * 1000)

void agent_defer_workers(struct agent *ag, bool on, uint64_t now)
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

static int on_event(struct agent *ag, const void *data, size_t size);

/*
 * The ringbuf callback: one record, then -ECANCELED once READER_BATCH
 * records were taken since the reader last reset ag->batch_records, which
 * ends libbpf's consume loop (the record is consumed). A producer that
 * writes as fast as the reader reads (an NVTX flood) never empties the
 * ring: without the cut, the reader never got back to its loop, to the
 * interval clock or to a stop request.
 */
int agent_on_event(void *ctx, const void *data, size_t size)
{
	struct agent *ag = ctx;
	int ret = on_event(ag, data, size);

	if (!ret && ++ag->batch_records >= READER_BATCH)
		return -ECANCELED;
	return ret;
}

static int on_event(struct agent *ag, const void *data, size_t size)
{
	uint32_t type = *(const uint32_t *)data;
	uint64_t now = clock_mono_ns();

	agent_defer_workers(ag, true, now);

	switch (type) {
	case PROFD_EVENT_SAMPLE: {
		const struct profd_sample *s = data;

		if (ag->discard_samples)
			return 0;
		if (size < sizeof(*s) ||
		    size < sizeof(*s) + ((size_t)s->kernel_len + s->user_len +
					 2 * (size_t)s->interp_len) * 8 ||
		    s->kernel_len > PROFD_MAX_KERNEL_FRAMES ||
		    s->user_len > PROFD_MAX_USER_FRAMES ||
		    s->interp_len > PROFD_MAX_INTERP_FRAMES)
			goto malformed;
		if (agent_stack_copy_take(ag, s, size, now))
			return 0;	/* held until its tables are loaded */
		agent_handle_sample(ag, s, (const uint64_t *)(s + 1), now);
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
			process_exit(ag->procs, e->pid, now, e->ktime_ns);
			agent_exit_seen(ag, e->pid, now);
			agent_offcpu_proc_exit(ag, e->pid, e->ktime_ns);
			if (ag->gpu)
				gpu_process_exit(ag->gpu, e->pid, now);
			agent_export_process_exit(ag->exp, e->pid);
		}
		return 0;
	}
	case PROFD_EVENT_PROC_FORK: {
		const struct profd_proc_fork *f = data;

		if (size < sizeof(*f))
			goto malformed;
		process_fork(ag->procs, f->pid, f->ppid, now, f->ktime_ns);
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
		p = process_get(ag->procs, l->pid, now, false, NULL, 0);
		struct gpu_launch_info li = {
			.pid = l->pid, .tid = l->tid,
			.comm = p && p->comm[0] ? p->comm : comm,
			.thread_name = comm, .no_stack = true,
			.correlation_id = l->correlation_id,
		};
		gpu_launch(ag->gpu, &li, now);
		return 0;
	}
	case PROFD_EVENT_OFFCPU_END:
		if (size < sizeof(struct profd_offcpu_end))
			goto malformed;
		if (!ag->discard_samples)
			agent_offcpu_end(ag, data);
		return 0;
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
	counter_inc(&counter_records_malformed);
	return 0;
}

void agent_attach_gpu_library(void *ctx, pid_t pid, const struct proc_mapping *m)
{
	struct agent *ag = ctx;
	const char *path = m->path;
	char root_path[PATH_MAX];
	int ret;

	/* a file on a hung mount would block the reader in open() or read() */
	if (ag->gate && file_gate_check(ag->gate, pid, m))
		return;
	/*
	 * The file the process maps, even deleted or replaced at its path (a
	 * new build installed under a running job); without map_files (no
	 * CAP_SYS_ADMIN), the path as the process sees it, through its root.
	 */
	snprintf(root_path, sizeof(root_path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 pid, m->start, m->end);
	ret = tracer_gpu_attach(ag->tracer, root_path);
	if (ret == -EPERM || ret == -EACCES) {
		snprintf(root_path, sizeof(root_path), "/proc/%d/root%s", pid, path);
		ret = tracer_gpu_attach(ag->tracer, root_path);
	}
	if (ret == 1 && ag->cfg->verbose)
		fprintf(stderr, "profd: GPU probes attached to %s (pid %d)\n", path, pid);
	if (ret < 0 && ret != -ENOENT) {
		counter_inc(&counter_gpu_attach_errors);
		if (counter_get(&counter_gpu_attach_errors) <= 3)
			fprintf(stderr, "profd: warning: cannot attach to the CUDA "
				"injection library %s of pid %d: %s\n", path, pid,
				ret == -ESRCH ? "not a profd injection library" :
				strerror(-ret));
	}
}

/*
 * Process table listener, on the reader: attach to the CUDA injection
 * library (the tracer is the reader's; its notes are parsed here, once
 * the file gate read them).
 */
static void on_maps_seen(void *ctx, pid_t pid, const struct proc_maps *maps)
{
	struct agent *ag = ctx;

	if (ag->gpu)
		gpu_library_mappings(pid, maps, agent_attach_gpu_library, ag);
}

/*
 * Process table listener, on the object loader's thread: keep the BPF
 * unwind and runtime maps in step (runtimes are recognised by the files'
 * symbols).
 */
static void on_maps_read(void *ctx, pid_t pid, const struct proc_maps *maps)
{
	struct agent *ag = ctx;

	if (ag->unwind)
		unwind_async_update(ag->unwind, pid, maps);
	if (ag->rts)
		runtimes_maps_read(ag->rts, pid, maps);
}

static void on_removed(void *ctx, pid_t pid)
{
	struct agent *ag = ctx;

	if (ag->unwind)
		unwind_async_remove(ag->unwind, pid);
	if (ag->rts)
		runtimes_removed(ag->rts, pid);
}

void agent_listen_processes(struct agent *ag)
{
	struct process_listener pl = {
		.maps_seen = on_maps_seen,
		.maps_read = on_maps_read,
		.removed = on_removed,
		.ctx = ag,
	};

	process_table_set_listener(ag->procs, &pl);
}

void agent_publish_stats(struct agent *ag)
{
	struct process_table_stats st;
	struct unwind_async_stats uast;
	struct unwind_loader_stats ust;
	struct agent_cache_stats cst = { 0 };

	process_table_stats(ag->procs, &st);
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
	unwind_async_stats(ag->unwind, &uast);	/* NULL: zeros */
	ust = uast.loader;
	cst.proc_bytes = st.snapshot_bytes;
	for (unsigned int i = 0; ag->rts && i < runtimes_count(); i++)
		runtimes_stats(ag->rts, i, &cst.runtimes[i], &cst.runtime_budgets[i]);
	pthread_mutex_lock(&ag->agg_lock);
	cst.agg_bytes = (ag->cur ? ag->cur->bytes : 0) + (ag->next ? ag->next->bytes : 0);
	ag->procs_stats = st;
	ag->unwind_stats = ust;
	ag->cache_stats = cst;
	ag->unwind_queued = uast.queued;
	__atomic_store_n(&ag->runtime_fast_poll, runtimes_fast_poll(cst.runtimes),
			 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ag->agg_lock);
}

/*
 * runtimes_reap_tick - on the reap tick: the runtimes drop what exited
 * processes left (their code objects), and renew their frame
 * tables at each new interval even when none of their samples came (an
 * idle table of gone processes' frames is freed).
 */
static void runtimes_reap_tick(struct agent *ag)
{
	uint64_t gen = __atomic_load_n(&ag->interval, __ATOMIC_ACQUIRE);

	runtimes_tick(ag->rts);
	runtimes_new_interval(ag->rts, gen);
}

void *agent_reader_main(void *arg)
{
	struct agent *ag = arg;
	uint64_t last_reap = clock_mono_ns();

	while (!__atomic_load_n(&ag->stop_reader, __ATOMIC_ACQUIRE)) {
		unsigned int sync = __atomic_load_n(&ag->reader_sync_req, __ATOMIC_ACQUIRE);
		/*
		 * 50 wakeups a second cost ~0.3 % of a core on an idle host:
		 * only samples of a fast_poll runtime need naming that soon
		 * (the first sample of an unknown process wakes the reader)
		 */
		bool soon = __atomic_load_n(&ag->sampling_on, __ATOMIC_RELAXED) &&
			    __atomic_load_n(&ag->runtime_fast_poll, __ATOMIC_RELAXED);
		int n;
		uint64_t now;

		ag->batch_records = 0;
		n = tracer_poll(ag->tracer, ag->held_head ? HELD_POLL_MS :
				    soon ? READER_POLL_MS : READER_POLL_SLOW_MS);

		agent_defer_workers(ag, false, 0);
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
			agent_defer_workers(ag, true, now);	/* removals: one wakeup */
			agent_reap(ag, now);
			agent_defer_workers(ag, false, 0);
			last_reap = now;
			if (ag->rts)
				runtimes_reap_tick(ag);
			agent_memory_tick(now);	/* give back what exited processes freed */
		}
		if (ag->held_head)
			agent_stack_copies_poll(ag, now, false);
		agent_publish_stats(ag);
		/*
		 * every record committed before @sync was consumed above, and
		 * the interval that ends gets its held samples first
		 */
		if (!agent_stack_copies_pending_before(ag, __atomic_load_n(
				&ag->next_start_mono, __ATOMIC_ACQUIRE)))
			__atomic_store_n(&ag->reader_sync_done, sync, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&ag->reader_exited, 1, __ATOMIC_RELEASE);
	/*
	 * Sampling is off: whatever is left in the ringbuf is the last data
	 * (at most READER_DRAIN_NS of it: a flooding probe never lets it run dry).
	 */
	for (uint64_t t0 = clock_mono_ns(); clock_mono_ns() - t0 < READER_DRAIN_NS;) {
		ag->batch_records = 0;
		if (tracer_drain(ag->tracer) < READER_BATCH)
			break;
	}
	agent_defer_workers(ag, false, 0);
	/* held samples: their tables may be a build away */
	for (uint64_t t0 = clock_mono_ns(); ag->held_head &&
	     clock_mono_ns() - t0 < READER_HELD_DRAIN_NS; usleep(5000))
		agent_stack_copies_poll(ag, clock_mono_ns(), false);
	agent_stack_copies_poll(ag, clock_mono_ns(), true);
	if (ag->gpu)
		gpu_finish(ag->gpu);	/* nothing more will join: count the rest */
	agent_publish_stats(ag);
	return NULL;
}
