// SPDX-License-Identifier: GPL-2.0
/*
 * metrics.c - the agent's /metrics and /healthz (see metrics.h).
 *
 * Owns: what profd says about itself over HTTP. Each request takes a
 * snapshot of struct agent under agg_lock (plain copies, no syscalls),
 * releases it, then reads what lives elsewhere (BPF counters, ringbuf
 * fill levels, the exporter's figures, /proc/self) and formats the text
 * with src/metrics/prom.c. The server (src/metrics/http.c) runs the
 * handler on its own thread, one request at a time.
 *
 * Families: profd_* for the agent (counters end in _total; every loss,
 * partial and stat counter of the profile comments appears as a label:
 * profd_lost_total{reason}, profd_partial_total{reason},
 * profd_events_total{name}), process_* with the standard names for the
 * agent's own CPU time, memory and file descriptors.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "agent/metrics.h"
#include "bpf/unwind_table.h"
#include "agent/memory.h"
#include "metrics/http.h"
#include "metrics/prom.h"
#include "util/clock.h"

#define PROM_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define SHARD_BYTES		(UNWIND_SHARD_ROWS * 8ULL)	/* 8-byte rows */
/* /healthz fails when no interval was written for this many intervals (+ slack) */
#define HEALTH_STALE_INTERVALS	3
#define HEALTH_STALE_SLACK_NS	(30ULL * 1000000000ULL)
/* /healthz fails while one unwind table build has run longer (stuck in a read) */
#define HEALTH_UNWIND_BUSY_NS	(60ULL * 1000000000ULL)

/* What one request reports, copied from struct agent under agg_lock. */
struct agent_snapshot {
	bool ready;
	bool sampling_on;
	bool last_write_ok;
	int reader_err;
	uint64_t write_errors;		/* counter_write_error */
	struct process_table_stats procs;
	struct unwind_loader_stats unwind;
	struct file_gate_stats gate;	/* live, from the gate's own lock */
	struct unwind_async_stats unwind_async;	/* live, from the loader thread's lock */
	struct object_loader_stats objects;	/* live, from the object loader's lock */
	struct agent_cache_stats caches;
	uint64_t probabilistic_draws;
	uint64_t probabilistic_on;
	uint64_t last_flush_mono;
	uint64_t last_written_mono;
	uint64_t retention_files;
	uint64_t retention_bytes;
	uint64_t total_samples;
	uint64_t intervals;
	uint64_t unwind_memory_limit;	/* bytes; 0: no DWARF unwinding */
	struct tracer *tracer;		/* NULL until ready */
	struct agent_export *exp;
};

/* ... and what is read outside the lock. */
struct agent_readings {
	bool bpf_ok;
	uint64_t bpf[PROFD_CNT_MAX];
	uint64_t *counters;		/* every counter by registry position (malloc'd) */
	bool ringbuf_ok[2];		/* events, cupti_events */
	struct tracer_ringbuf_usage ringbuf[2];
	struct agent_export_stats exp;
};

static void take_snapshot(struct agent *ag, struct agent_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&ag->agg_lock);
	s->ready = ag->ready;
	s->write_errors = counter_get(&counter_write_error);
	s->procs = ag->procs_stats;
	s->unwind = ag->unwind_stats;
	s->caches = ag->cache_stats;
	/* the fields below belong to the main and reader threads: one load each */
	s->sampling_on = __atomic_load_n(&ag->sampling_on, __ATOMIC_RELAXED);
	s->last_write_ok = __atomic_load_n(&ag->last_write_ok, __ATOMIC_RELAXED);
	s->reader_err = __atomic_load_n(&ag->reader_err, __ATOMIC_RELAXED);
	s->probabilistic_draws = __atomic_load_n(&ag->probabilistic_draws, __ATOMIC_RELAXED);
	s->probabilistic_on = __atomic_load_n(&ag->probabilistic_on, __ATOMIC_RELAXED);
	s->last_flush_mono = __atomic_load_n(&ag->last_flush_mono, __ATOMIC_RELAXED);
	s->last_written_mono = __atomic_load_n(&ag->last_written_mono, __ATOMIC_RELAXED);
	s->retention_files = __atomic_load_n(&ag->retention_removed_files, __ATOMIC_RELAXED);
	s->retention_bytes = __atomic_load_n(&ag->retention_removed_bytes, __ATOMIC_RELAXED);
	s->total_samples = __atomic_load_n(&ag->total_samples, __ATOMIC_RELAXED);
	s->intervals = __atomic_load_n(&ag->intervals, __ATOMIC_RELAXED);
	s->unwind_memory_limit = __atomic_load_n(&ag->unwind_memory_limit, __ATOMIC_RELAXED);
	if (s->ready) {
		/* set up before ready was set under this lock; freed after stop */
		s->tracer = ag->tracer;
		s->exp = ag->exp;
	}
	pthread_mutex_unlock(&ag->agg_lock);
	if (s->ready) {
		file_gate_stats(ag->gate, &s->gate);
		unwind_async_stats(ag->unwind, &s->unwind_async);	/* NULL: zeros */
		object_loader_stats(ag->objects, &s->objects);	/* NULL: zeros */
	}
}

static void take_readings(const struct agent_snapshot *s, struct agent_readings *r)
{
	memset(r, 0, sizeof(*r));
	if (s->tracer) {
		r->bpf_ok = !tracer_read_counters(s->tracer, r->bpf);
		for (int gpu = 0; gpu < 2; gpu++)
			r->ringbuf_ok[gpu] = !tracer_ringbuf_usage(s->tracer, gpu,
								   &r->ringbuf[gpu]);
	}
	if (!r->bpf_ok)
		memset(r->bpf, 0, sizeof(r->bpf));	/* not loaded yet: nothing counted */
	r->counters = calloc(counters_count() + 1, sizeof(*r->counters));
	if (r->counters)
		counters_read(r->bpf, r->counters);
	agent_export_stats(s->exp, &r->exp);		/* NULL: zeros */
}

/* rendering: profd_* */

/* A metric without labels whose value is a uint64_t field of a struct. */
struct field_metric {
	const char *name;
	enum prom_type type;
	const char *help;
	size_t offset;		/* of the field: U64_AT() */
};

/* offsetof() a uint64_t @member of @type; any other type does not compile. */
#define U64_AT(type, member) \
	_Generic(((type *)0)->member, uint64_t: offsetof(type, member))

/* One prom_metric_u64() per row of @rows (@n), the value read at @base. */
static void render_fields(struct prom_buf *b, const void *base,
			  const struct field_metric *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		memcpy(&v, (const char *)base + rows[i].offset, sizeof(v));
		prom_metric_u64(b, rows[i].name, rows[i].type, rows[i].help, v);
	}
}

#define RENDER_FIELDS(b, base, rows) \
	render_fields(b, base, rows, sizeof(rows) / sizeof((rows)[0]))

/* One family with a sample per registered counter of @kind. */
static void counter_family(struct prom_buf *b, const char *name, const char *label,
			   enum counter_kind kind, const char *help,
			   const struct agent_readings *r)
{
	prom_family(b, name, PROM_COUNTER, help);
	for (size_t i = 0; i < counters_count(); i++) {
		const struct counter_def *c = counters_at(i);
		struct prom_label l = { label, c->name };

		if (c->kind == kind)
			prom_sample_u64(b, name, &l, 1, r->counters ? r->counters[i] : 0);
	}
}

static void render_counters(struct prom_buf *b, const struct agent_snapshot *s,
			    const struct agent_readings *r)
{
	prom_metric_u64(b, "profd_samples_total", PROM_COUNTER,
			"Samples taken by the BPF sampler (perf_event program runs, "
			"bpf_samples).", r->bpf[PROFD_CNT_SAMPLES]);
	prom_metric_u64(b, "profd_samples_written_total", PROM_COUNTER,
			"Samples in the CPU profiles written so far (a profile that "
			"failed to write counts in lost{reason=\"write_failed\"}).",
			s->total_samples);
	counter_family(b, "profd_lost_total", "reason", COUNTER_LOST,
		       "Samples, records or files that never reached the output, "
		       "by reason (lost.REASON in profile comments).", r);
	counter_family(b, "profd_partial_total", "reason", COUNTER_PARTIAL,
		       "Samples kept with a stack cut short or frames left "
		       "unsymbolized, by reason (partial.REASON in profile comments).",
		       r);
	counter_family(b, "profd_events_total", "name", COUNTER_STAT,
		       "Other events profd counts, by name (stat.NAME in profile "
		       "comments).", r);
}

#define SNAP(member)	U64_AT(struct agent_snapshot, member)

static const struct field_metric table_rows[] = {
	{ "profd_processes_tracked", PROM_GAUGE,
	  "Processes in profd's process table now.", SNAP(procs.processes) },
	{ "profd_maps_reads_total", PROM_COUNTER,
	  "/proc/PID/maps reads.", SNAP(procs.maps_reads) },
	{ "profd_unwind_rows", PROM_GAUGE,
	  "Unwind table rows loaded in the BPF shards.", SNAP(unwind.rows) },
	{ "profd_file_reads_stuck", PROM_GAUGE,
	  "Reads of mapped files past their deadline and still blocked "
	  "(their files' frames stay unsymbolized; /healthz fails).",
	  SNAP(gate.stuck_now) },
	{ "profd_unwind_jobs_queued", PROM_GAUGE,
	  "Unwind table updates waiting for the loader thread.",
	  SNAP(unwind_async.queued) },
	{ "profd_unwind_inline_runs_total", PROM_COUNTER,
	  "Unwind updates and removals done without the loader thread (every "
	  "table cached, nothing queued).",
	  SNAP(unwind_async.inline_runs) },
	{ "profd_object_jobs_queued", PROM_GAUGE,
	  "Mapped files (symbols, build IDs, runtime detection) waiting for the "
	  "object loader thread.",
	  SNAP(objects.queued) },
	{ "profd_file_reads_total", PROM_COUNTER,
	  "Mapped files read ahead of parsing, with a deadline.",
	  SNAP(gate.checks) },
};

static const struct field_metric unwind_rows[] = {
	{ "profd_unwind_memory_limit_bytes", PROM_GAUGE,
	  "--unwind-memory-limit: most shard memory (0: no DWARF unwinding).",
	  SNAP(unwind_memory_limit) },
	{ "profd_unwind_tables", PROM_GAUGE,
	  "Files with unwind tables cached (shared by the processes mapping them).",
	  SNAP(unwind.objects) },
	{ "profd_unwind_tables_without_cfi", PROM_GAUGE,
	  "Files without usable CFI: walked with frame pointers.",
	  SNAP(unwind.objects_failed) },
	{ "profd_unwind_processes", PROM_GAUGE,
	  "Processes with an unwind_procs entry.", SNAP(unwind.processes) },
	{ "profd_unwind_evictions_in_use_total", PROM_COUNTER,
	  "Tables evicted for room while a process used them (its ranges "
	  "fall back to frame pointers until the table is reloaded).",
	  SNAP(unwind.evictions_in_use) },
	{ "profd_unwind_reloads_total", PROM_COUNTER,
	  "Evicted tables loaded again because their process was sampled.",
	  SNAP(unwind.reloads) },
	{ "profd_unwind_reloads_deferred_total", PROM_COUNTER,
	  "Reloads put off by the rate limit (4 a second); asked again by "
	  "the next samples.", SNAP(unwind.reloads_deferred) },
};

static void render_tables(struct prom_buf *b, const struct agent_snapshot *s)
{
	RENDER_FIELDS(b, s, table_rows);
	prom_metric_u64(b, "profd_unwind_shards_used", PROM_GAUGE,
			"Unwind table shards created (1 MiB each).", s->unwind.shards);
	prom_metric_u64(b, "profd_unwind_memory_bytes", PROM_GAUGE,
			"BPF memory of the unwind table shards created.",
			(uint64_t)s->unwind.shards * SHARD_BYTES);
	RENDER_FIELDS(b, s, unwind_rows);
	prom_metric(b, "profd_unwind_build_seconds_total", PROM_COUNTER,
		    "Time spent compiling unwind tables.", s->unwind.build_ns / 1e9);
	/* profd_<runtime>_processes, one gauge per language runtime */
	for (unsigned int i = 0; i < runtimes_count(); i++) {
		const struct runtime_ops *ops = runtime_registry[i];
		char name[64], help[128];

		snprintf(name, sizeof(name), "profd_%s_processes", ops->name);
		snprintf(help, sizeof(help), "Processes of the %s runtime with a "
			 "runtime_procs entry.", ops->name);
		prom_metric_u64(b, name, PROM_GAUGE, help, s->caches.runtimes[i].processes);
	}
}

/* One family, one sample per (label value, number). */
static void labelled(struct prom_buf *b, const char *name, enum prom_type type,
		     const char *help, const char *label, int n,
		     const char *const *values, const uint64_t *v)
{
	prom_family(b, name, type, help);
	for (int i = 0; i < n; i++) {
		struct prom_label l = { label, values[i] };

		prom_sample_u64(b, name, &l, 1, v[i]);
	}
}

/* Where profd's memory goes: heap, and the caches that make it up. */
static void render_memory(struct prom_buf *b, const struct agent_snapshot *s)
{
	static const char *const heap[] = { "in_use", "free", "mmapped" };
	static const char *const table_events[] = { "shed", "reloaded", "reload_refused",
						      "too_big" };
	/* the fixed caches, then one per language runtime (its name) */
	const char *bytes[5 + PROFD_RUNTIME_COUNT] = {
		"symbols", "flamegraph", "processes", "aggregation",
	};
	uint64_t vbytes[5 + PROFD_RUNTIME_COUNT] = {
		s->caches.sym_bytes, s->caches.flame_bytes, s->caches.proc_bytes,
		s->caches.agg_bytes,
	};
	const char *budgets[2 + PROFD_RUNTIME_COUNT] = { "symbols", "flamegraph" };
	uint64_t vbudgets[2 + PROFD_RUNTIME_COUNT] = {
		s->caches.sym_budget, s->caches.flame_budget,
	};
	const char *entries[5 + PROFD_RUNTIME_COUNT] = {
		"symbol_objects", "processes", "unwind_tables", "unwind_processes",
		"flamegraph_names",
	};
	uint64_t ventries[5 + PROFD_RUNTIME_COUNT] = {
		s->caches.sym_objects, s->procs.processes, s->unwind.objects,
		s->unwind.processes, s->caches.flame_names,
	};
	const char *evicted[3 + PROFD_RUNTIME_COUNT] = {
		"symbols", "unwind_tables", "flamegraph",
	};
	uint64_t vevicted[3 + PROFD_RUNTIME_COUNT] = {
		s->caches.sym_sheds, s->unwind.evictions, s->caches.flame_pruned,
	};
	int nbytes = 4, nbudgets = 2, nentries = 5, nevicted = 3;
	struct agent_memory_stats m;

	for (unsigned int i = 0; i < runtimes_count(); i++) {
		const struct runtime_ops *ops = runtime_registry[i];
		const struct runtime_stats *rs = &s->caches.runtimes[i];

		bytes[nbytes] = ops->name;
		vbytes[nbytes++] = rs->bytes;
		budgets[nbudgets] = ops->name;
		vbudgets[nbudgets++] = s->caches.runtime_budgets[i];
		entries[nentries] = ops->objects;
		ventries[nentries++] = rs->objects;
		evicted[nevicted] = ops->name;
		vevicted[nevicted++] = rs->evictions;
	}
	agent_memory_read(&m);
	labelled(b, "profd_heap_bytes", PROM_GAUGE,
		 "malloc heap: in use, free but kept by glibc, mmapped chunks.",
		 "state", 3, heap,
		 (uint64_t[]){ m.heap_in_use, m.heap_free, m.heap_mmapped });
	prom_metric_u64(b, "profd_heap_trims_total", PROM_COUNTER,
			"malloc_trim() calls (every 10 s).", m.trims);
	labelled(b, "profd_cache_bytes", PROM_GAUGE,
		 "Heap bytes of a cache (symbols: the symbolizer's open objects, "
		 "their symbol tables and address caches; flamegraph: the "
		 "run-long flame graph trees and their names; processes: the "
		 "maps snapshots; aggregation: the open interval's stacks; a "
		 "language runtime's name: its code cache and frame tables).",
		 "cache", nbytes, bytes, vbytes);
	labelled(b, "profd_cache_budget_bytes", PROM_GAUGE,
		 "The most a cache may hold before it sheds (its share of "
		 "--memory-limit; symbols: at most --symbol-cache-limit; a "
		 "language runtime: its code objects and frame tables).", "cache",
		 nbudgets, budgets, vbudgets);
	labelled(b, "profd_cache_entries", PROM_GAUGE,
		 "Entries of a cache or table.", "cache", nentries, entries, ventries);
	labelled(b, "profd_cache_evictions_total", PROM_COUNTER,
		 "Entries shed for room, least recently used first (symbols: "
		 "idle objects freed, address caches emptied and symbol tables "
		 "of mapped files freed; unwind_tables: "
		 "tables evicted; flamegraph: lightest frames folded into their "
		 "callers; a language runtime: code objects dropped).", "cache",
		 nevicted, evicted, vevicted);
	labelled(b, "profd_symbol_tables_total", PROM_COUNTER,
		 "Symbol tables of files live processes map: freed for the "
		 "symbol budget (shed), read back when their code was sampled "
		 "again (reloaded), reloads refused (over 4 a second, or the "
		 "file changed since), tables refused as larger than the whole "
		 "budget (too_big: not read again under it).", "event", 4,
		 table_events,
		 (uint64_t[]){ s->caches.sym_tables.shed,
			       s->caches.sym_tables.reloaded,
			       s->caches.sym_tables.reloads_refused,
			       s->caches.sym_tables.too_big });
}

static void render_ringbufs(struct prom_buf *b, const struct agent_readings *r)
{
	static const char *const names[2] = { "events", "cupti_events" };

	if (!r->ringbuf_ok[0] && !r->ringbuf_ok[1])
		return;		/* not loaded, or not supported: say nothing */
	prom_family(b, "profd_ringbuf_used_bytes", PROM_GAUGE,
		    "Bytes written to a BPF ringbuf and not consumed yet.");
	for (int i = 0; i < 2; i++) {
		struct prom_label l = { "ringbuf", names[i] };

		if (r->ringbuf_ok[i])
			prom_sample_u64(b, "profd_ringbuf_used_bytes", &l, 1,
					r->ringbuf[i].used);
	}
	prom_family(b, "profd_ringbuf_size_bytes", PROM_GAUGE,
		    "Size of a BPF ringbuf.");
	for (int i = 0; i < 2; i++) {
		struct prom_label l = { "ringbuf", names[i] };

		if (r->ringbuf_ok[i])
			prom_sample_u64(b, "profd_ringbuf_size_bytes", &l, 1,
					r->ringbuf[i].size);
	}
}

#define EXPORT(member)	U64_AT(struct agent_export_stats, member)

static const struct field_metric export_rows[] = {
	{ "profd_export_queue_items", PROM_GAUGE,
	  "OTLP items (spans, log records, profile samples) queued or in flight.",
	  EXPORT(otlp_items_queued) },
	{ "profd_export_queue_bytes", PROM_GAUGE,
	  "OTLP request bytes queued or in flight (before compression).",
	  EXPORT(otlp_queue_bytes) },
	{ "profd_export_queue_budget_bytes", PROM_GAUGE,
	  "The most OTLP request bytes queued (a 16th of --memory-limit's "
	  "share, at most 64 MiB); past it requests are dropped, counted.",
	  EXPORT(otlp_queue_budget) },
	{ "profd_export_requests_total", PROM_COUNTER,
	  "OTLP requests the endpoint accepted.", EXPORT(otlp_requests_sent) },
	{ "profd_export_errors_total", PROM_COUNTER,
	  "OTLP requests given up (rejected, or retries exhausted).",
	  EXPORT(otlp_requests_dropped) },
	{ "profd_export_retries_total", PROM_COUNTER,
	  "OTLP requests sent again after a retryable failure.", EXPORT(otlp_retries) },
	{ "profd_export_items_sent_total", PROM_COUNTER,
	  "OTLP items the endpoint took.", EXPORT(otlp_items_sent) },
	{ "profd_export_items_dropped_total", PROM_COUNTER,
	  "OTLP items not delivered: queue full, rejected, retries exhausted.",
	  EXPORT(otlp_items_dropped) },
	{ "profd_export_bytes_sent_total", PROM_COUNTER,
	  "OTLP request bytes the endpoint accepted (after compression).",
	  EXPORT(otlp_bytes_sent) },
	{ "profd_nvtx_queue_bytes", PROM_GAUGE,
	  "Bytes of the NVTX tracer's queue that may hold pages: its backlog "
	  "and consumed bytes not yet given back (at most 256 KiB).",
	  EXPORT(nvtx_queue_bytes) },
	{ "profd_nvtx_queue_budget_bytes", PROM_GAUGE,
	  "The NVTX tracer's queue size (a 32nd of --memory-limit's share, "
	  "at most 64 MiB); events past it are lost, counted.",
	  EXPORT(nvtx_queue_budget) },
};

static const struct field_metric run_rows[] = {
	{ "profd_probabilistic_intervals_total", PROM_COUNTER,
	  "Probabilistic profiling intervals started.", SNAP(probabilistic_draws) },
	{ "profd_probabilistic_intervals_profiled_total", PROM_COUNTER,
	  "Probabilistic profiling intervals that sampled.", SNAP(probabilistic_on) },
	{ "profd_intervals_total", PROM_COUNTER,
	  "Profile intervals ended (written or not).", SNAP(intervals) },
	{ "profd_write_errors_total", PROM_COUNTER,
	  "Profiles or flame graphs that could not be written (lost.write_error).",
	  SNAP(write_errors) },
	{ "profd_retention_removed_files_total", PROM_COUNTER,
	  "Profile files deleted by --output-retention.", SNAP(retention_files) },
	{ "profd_retention_removed_bytes_total", PROM_COUNTER,
	  "Bytes of profile files deleted by --output-retention.", SNAP(retention_bytes) },
};

static void render_run(struct prom_buf *b, const struct agent *ag,
		       const struct agent_snapshot *s)
{
	prom_metric_u64(b, "profd_sampling_frequency_hertz", PROM_GAUGE,
			"--sampling-frequency: samples per second per CPU.",
			ag->cfg->frequency_hz);
	prom_metric_u64(b, "profd_profiling_active", PROM_GAUGE,
			"1 while the perf events sample (probabilistic profiling "
			"turns them off in some intervals).", s->ready && s->sampling_on);
	RENDER_FIELDS(b, s, run_rows);
	if (s->intervals)
		prom_metric_u64(b, "profd_last_write_success", PROM_GAUGE,
				"1 if every file of the last interval was written.",
				s->last_write_ok);
	if (s->last_written_mono) {
		uint64_t mono = clock_mono_ns(), real = clock_real_ns();
		uint64_t ago = mono > s->last_written_mono ? mono - s->last_written_mono : 0;

		/* only intervals whose files were all written */
		prom_metric(b, "profd_last_write_timestamp_seconds", PROM_GAUGE,
			    "When the files of an interval were last all written (Unix time).",
			    (real - ago) / 1e9);
	}
}

/* rendering: process_* (the agent itself) */

/* Field @n (1-based, as in proc(5)) of /proc/self/stat, or 0. */
static uint64_t self_stat_field(int n)
{
	char buf[1024], *p, *end;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t len;

	if (!f)
		return 0;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	p = strrchr(buf, ')');	/* comm may hold spaces and ')' */
	if (!p)
		return 0;
	p++;
	for (int field = 3; field <= n; field++) {
		uint64_t v = strtoull(p + 1, &end, 10);

		if (field == n)
			return field == 3 ? 0 : v;	/* 3 is the state letter */
		p = strchr(p + 1, ' ');
		if (!p)
			return 0;
	}
	return 0;
}

/* "btime" of /proc/stat: boot time, Unix seconds; 0 if unknown. */
static uint64_t boot_time(void)
{
	char line[256];
	uint64_t bt = 0;
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "btime ", 6)) {
			bt = strtoull(line + 6, NULL, 10);
			break;
		}
	fclose(f);	/* long lines (intr) are read in pieces: harmless */
	return bt;
}

/* Open file descriptors of this process (without the one counting them). */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

static void render_process(struct prom_buf *b)
{
	struct rusage ru;
	struct rlimit rl;
	unsigned long long size = 0, resident = 0;
	long page = sysconf(_SC_PAGESIZE), fds = open_fds(), ticks = sysconf(_SC_CLK_TCK);
	uint64_t btime = boot_time(), start = self_stat_field(22);
	FILE *f;

	if (!getrusage(RUSAGE_SELF, &ru))
		prom_metric(b, "process_cpu_seconds_total", PROM_COUNTER,
			    "Total user and system CPU time spent in seconds.",
			    ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%llu %llu", &size, &resident) == 2) {
			prom_metric_u64(b, "process_resident_memory_bytes", PROM_GAUGE,
					"Resident memory size in bytes.",
					(uint64_t)resident * page);
			prom_metric_u64(b, "process_virtual_memory_bytes", PROM_GAUGE,
					"Virtual memory size in bytes.",
					(uint64_t)size * page);
		}
		fclose(f);
	}
	if (btime && start && ticks > 0)
		prom_metric(b, "process_start_time_seconds", PROM_GAUGE,
			    "Start time of the process since unix epoch in seconds.",
			    btime + (double)start / ticks);
	if (fds >= 0)
		prom_metric_u64(b, "process_open_fds", PROM_GAUGE,
				"Number of open file descriptors.", fds);
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		prom_metric(b, "process_max_fds", PROM_GAUGE,
			    "Maximum number of open file descriptors.",
			    rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur);
}

static int render_metrics(struct agent *ag, struct metrics_response *resp)
{
	struct agent_snapshot s;
	struct agent_readings r;
	struct prom_buf b;
	struct prom_label version = { "version", PROFD_VERSION };

	take_snapshot(ag, &s);
	take_readings(&s, &r);
	prom_init(&b);
	prom_family(&b, "profd_build_info", PROM_GAUGE, "profd's version; always 1.");
	prom_sample_u64(&b, "profd_build_info", &version, 1, 1);
	prom_metric_u64(&b, "profd_up", PROM_GAUGE,
			"1 once the BPF programs are loaded and sampling is set up.",
			s.ready);
	render_counters(&b, &s, &r);
	render_tables(&b, &s);
	render_memory(&b, &s);
	render_ringbufs(&b, &r);
	RENDER_FIELDS(&b, &r.exp, export_rows);
	render_run(&b, ag, &s);
	render_process(&b);
	free(r.counters);
	resp->content_type = PROM_CONTENT_TYPE;
	return prom_finish(&b, &resp->body, &resp->len);
}

/* /healthz */

/* Why profd is unhealthy, in one line, or NULL when it is healthy. */
static const char *unhealthy(const struct agent *ag, const struct agent_snapshot *s,
			     char *buf, size_t len)
{
	uint64_t interval_ns = (uint64_t)ag->cfg->interval_s * 1000000000ULL;
	uint64_t now = clock_mono_ns();

	if (!s->ready)
		return "starting: the BPF programs are not loaded yet\n";
	if (s->reader_err)
		return "the reader thread stopped on an error\n";
	if (!s->last_write_ok)
		return "the last interval's files could not all be written\n";
	if (s->gate.stuck_now) {
		snprintf(buf, len, "degraded: %llu file read(s) hung, the oldest for %llu s "
			 "(see partial.file_hung)\n", (unsigned long long)s->gate.stuck_now,
			 (unsigned long long)(s->gate.stuck_oldest_ns / 1000000000ULL));
		return buf;
	}
	if (s->objects.busy_ns > OBJECT_LOADER_STUCK_NS) {
		snprintf(buf, len, "degraded: opening one mapped file has taken %llu s "
			 "(object loader)\n",
			 (unsigned long long)(s->objects.busy_ns / 1000000000ULL));
		return buf;
	}
	if (s->unwind_async.busy_ns > HEALTH_UNWIND_BUSY_NS) {
		snprintf(buf, len, "degraded: one unwind table build has run for %llu s\n",
			 (unsigned long long)(s->unwind_async.busy_ns / 1000000000ULL));
		return buf;
	}
	if (s->last_flush_mono &&
	    now > s->last_flush_mono + HEALTH_STALE_INTERVALS * interval_ns +
		  HEALTH_STALE_SLACK_NS) {
		snprintf(buf, len, "no interval written for %llu s\n",
			 (unsigned long long)((now - s->last_flush_mono) / 1000000000ULL));
		return buf;
	}
	return NULL;
}

static int render_health(struct agent *ag, struct metrics_response *resp)
{
	struct agent_snapshot s;
	char why[128];
	const char *msg;

	take_snapshot(ag, &s);
	msg = unhealthy(ag, &s, why, sizeof(why));
	resp->status = msg ? 503 : 200;
	resp->body = strdup(msg ? msg : "ok\n");
	if (!resp->body)
		return -ENOMEM;
	resp->len = strlen(resp->body);
	return 0;
}

static int handle(void *ctx, const char *path, struct metrics_response *resp)
{
	struct agent *ag = ctx;

	if (!strcmp(path, "/metrics"))
		return render_metrics(ag, resp);
	if (!strcmp(path, "/healthz"))
		return render_health(ag, resp);
	if (!strcmp(path, "/")) {
		resp->body = strdup("profd: /metrics (Prometheus), /healthz\n");
		resp->len = resp->body ? strlen(resp->body) : 0;
		return resp->body ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

int agent_metrics_start(struct agent *ag)
{
	char err[256];

	ag->metrics = metrics_server_start(ag->cfg->http_address, handle, ag,
					   err, sizeof(err));
	if (!ag->metrics) {
		fprintf(stderr, "profd: error: --http-address %s: %s\n",
			ag->cfg->http_address, err);
		return -1;
	}
	fprintf(stderr, "profd: serving /metrics on %s\n",
		metrics_server_url(ag->metrics));
	return 0;
}

void agent_metrics_stop(struct agent *ag)
{
	metrics_server_stop(ag->metrics);
	ag->metrics = NULL;
}
