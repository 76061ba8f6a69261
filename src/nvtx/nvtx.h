/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvtx.h - the NVTX tracer: NVTX ranges and marks become OTLP spans,
 * span events and log records.
 *
 * Owns: a bounded queue of NVTX batch records (bpf/nvtx_events.h) filled
 * by the ringbuf reader (which never blocks on it) and drained in order
 * by the tracer's own thread; per process: the string, domain, category
 * and thread-name tables, each thread's stack of open ranges, start/end
 * ranges by id, the span budget; trace and span ids; the conversion of
 * CLOCK_MONOTONIC times to Unix epoch ns (util/clock.h).
 *
 * Semantics:
 *  - a range opened on a thread with no open range starts a trace; ranges
 *    opened inside it are its descendants (parent: the innermost open
 *    range of the thread, push/pop or start/end);
 *  - push/pop nest per thread; start/end pair by range id and may end on
 *    another thread (parent: the innermost open range of the starting
 *    thread when it started); an end may arrive before its start (other
 *    thread's batch flushed first): it waits NVTX_EARLY_END_NS (then, or
 *    at stop, it counts as ends_unknown); its start, when it comes, stays
 *    open until its thread's next call at or after the end time (so
 *    ranges and marks inside it still land in it), at most 1 s;
 *  - a mark is an event on the innermost open range of its thread, or a
 *    log record if none is open;
 *  - scope: the NVTX domain's name (default domain: "profd.nvtx");
 *    attributes: thread.id, thread.name, nvtx.category (its name when
 *    named, else the number), nvtx.color ("#rrggbb"), nvtx.payload;
 *    a range closed by profd (process exit, profd stop) has
 *    nvtx.unfinished = true and ends at that moment;
 *  - max_spans_per_sec (0: unlimited) is each process's budget: a trace
 *    is kept or dropped whole when its top-level range opens; drops
 *    counted;
 *  - a pop with nothing open, an end of an unknown id: counted, ignored.
 *
 * Names: a message-less or empty message is "(unnamed)", an undefined
 * string id "[nvtx: unknown string]". Marks with no range open are log
 * records (severity INFO, body the message); the budget does not apply
 * to them. Bounds on every table: see nvtx_internal.h.
 */
#ifndef PROFD_NVTX_NVTX_H
#define PROFD_NVTX_NVTX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/nvtx_events.h"
#include "export/otlp_types.h"
#include "util/clock.h"

#define NVTX_EARLY_END_NS (5ULL * 1000 * 1000 * 1000)

/*
 * Where finished spans and log records go (called on the tracer's
 * thread; every pointer borrowed for the call). @now_ns: CLOCK_MONOTONIC.
 * Spans come when they end: a child before its parent. A NULL callback
 * is skipped.
 */
struct nvtx_output {
	void *ctx;
	void (*span)(void *ctx, pid_t pid, const struct otlp_scope *scope,
		     const struct otlp_span *s, uint64_t now_ns);
	void (*log)(void *ctx, pid_t pid, const struct otlp_scope *scope,
		    const struct otlp_log *l, uint64_t now_ns);
	/* called about every 100 ms and after the queue drains (batch ticks) */
	void (*tick)(void *ctx, uint64_t now_ns);
};

struct nvtx_opts {
	unsigned int max_spans_per_sec;	/* per process, 0: unlimited */
	size_t queue_bytes;		/* 0 or over 64 MiB: 64 MiB (at least 64 KiB) */
	struct nvtx_output out;
	/*
	 * MONOTONIC -> Unix ns; NULL: the tracer's own. The tracer's thread
	 * re-syncs it every CLOCK_SYNC_PERIOD_NS (fixed clocks stay).
	 */
	struct clock_sync *clock;
};

struct nvtx_stats {
	uint64_t events;		/* NVTX events processed */
	uint64_t spans;			/* spans handed to the output */
	uint64_t span_events;		/* marks as span events */
	uint64_t logs;			/* marks as log records */
	uint64_t spans_dropped_budget;	/* spans of traces dropped by the budget */
	uint64_t queue_full;		/* events dropped: queue full or stopped (lost) */
	uint64_t pops_unmatched;	/* pop with nothing open */
	uint64_t ends_unknown;		/* end of an unknown range id */
	uint64_t strings_unknown;	/* messages whose string id was not defined */
	uint64_t unfinished;		/* ranges closed by profd */
	uint64_t library_dropped;	/* events the library reported it could not record */
	uint64_t unseen;		/* events the library reported no agent saw */
	uint64_t tables_full;		/* strings/ranges over the per-process bounds */
	uint64_t marks_dropped_budget;	/* marks in traces dropped by the budget */
	uint64_t malformed;		/* events that made no sense (bad string
					 * length, unknown kind, START of an open id) */
	uint64_t queue_bytes;		/* gauge: bytes of the queue whose pages
					 * may be resident (backlog, and consumed
					 * bytes not yet given back) */
	uint64_t queue_cap;		/* the queue's size in bytes */
};

struct nvtx_tracer;

/*
 * nvtx_new - start the tracer and its thread (@o copied; o->clock and
 * o->out.ctx borrowed until nvtx_free()). NULL on failure (errno set).
 */
struct nvtx_tracer *nvtx_new(const struct nvtx_opts *o);

/*
 * nvtx_record - queue one PROFD_EVENT_NVTX ringbuf record (copied).
 * Called by the reader thread; never blocks. Returns 0 (also when the
 * queue is full: counted in queue_full) or -EINVAL for a malformed record.
 */
int nvtx_record(struct nvtx_tracer *t, const void *data, size_t size);

/* What a process said of itself in a batch (PROFD_NVTX_PROCESS). */
struct nvtx_process_info {
	char exe_path[PROFD_NVTX_STRING_MAX + 1];	/* "" when not said */
	char command_line[PROFD_NVTX_STRING_MAX + 1];
	char service_name[PROFD_NVTX_STRING_MAX + 1];
};

/*
 * nvtx_batch_process_info - the PROFD_NVTX_PROCESS attributes of the
 * PROFD_EVENT_NVTX record @data (@size bytes, as nvtx_record() takes;
 * any bytes: every field is checked), each with the text of the STRING
 * that its message_id names in the same record, up to its first NUL. A
 * cut executable path is ignored. Fills @out ("" for what was not said)
 * and returns how many attributes were found; 0 for a malformed record.
 * Called by the reader thread, before nvtx_record(), so the process's
 * resource can be built with them (the tracer's thread ignores them).
 */
int nvtx_batch_process_info(const void *data, size_t size,
			    struct nvtx_process_info *out);

/*
 * nvtx_process_exit - @pid exited: after NVTX_EXIT_GRACE_NS (its last
 * batches may still be in flight) its open ranges are closed as
 * unfinished and its tables freed. Queued like records (never lost:
 * with the queue full it waits on a side list). Any thread.
 */
#define NVTX_EXIT_GRACE_NS (1000ULL * 1000 * 1000)
void nvtx_process_exit(struct nvtx_tracer *t, pid_t pid);

/*
 * nvtx_stop - process everything queued, close every open range as
 * unfinished, hand all to the output, stop the thread. Idempotent.
 */
void nvtx_stop(struct nvtx_tracer *t);

/*
 * nvtx_get_stats - a snapshot of the counters, as of the last chunk of
 * the queue the tracer finished (exact after nvtx_stop()).
 */
void nvtx_get_stats(struct nvtx_tracer *t, struct nvtx_stats *out);

/* nvtx_free - nvtx_stop() then free. NULL is fine. */
void nvtx_free(struct nvtx_tracer *t);

#endif /* PROFD_NVTX_NVTX_H */
