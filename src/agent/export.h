/* SPDX-License-Identifier: GPL-2.0 */
/*
 * export.h - the agent's OTLP side: the exporter (src/export/otlp.h), the
 * per-process resources, the batcher of spans and log records, and the
 * NVTX tracer (src/nvtx/) that feeds it.
 *
 * Data flow: reader thread -> agent_export_nvtx() -> NVTX tracer queue ->
 * tracer thread -> batcher -> exporter queue -> sender thread -> endpoint.
 * Interval profiles go through the OTLP profiles sink (src/export/otlp_sink.c,
 * with agent_export_otlp()'s exporter) -> exporter queue. Without
 * an endpoint NVTX ranges are still tracked and counted, nothing is sent.
 */
#ifndef PROFD_AGENT_EXPORT_H
#define PROFD_AGENT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "profile/profile.h"

struct agent_export_config {
	const char *endpoint;		/* --otlp-endpoint, NULL: OTEL_* env */
	const char *protocol;		/* --otlp-protocol, NULL: OTEL_* env */
	bool insecure;			/* --otlp-insecure */
	bool nvtx;			/* track NVTX ranges (the injection library is attached) */
	unsigned int nvtx_max_spans_per_sec;	/* per process, 0: unlimited */
	size_t export_queue_bytes;	/* most OTLP request bytes held (0: 64 MiB) */
	size_t nvtx_queue_bytes;	/* the NVTX tracer's queue (0: 64 MiB) */
	const struct agent_label *labels;	/* --label: extra attributes of every resource */
	size_t nlabels;
	int verbose;
};

/* Counters the agent reports by name (status line, profile comments). */
struct agent_export_stats {
	uint64_t nvtx_spans;		/* spans handed to the exporter (or counted, no endpoint) */
	uint64_t nvtx_logs;		/* marks outside ranges, as log records */
	uint64_t nvtx_spans_dropped_budget;
	uint64_t nvtx_queue_full;	/* NVTX events lost: tracer queue full */
	uint64_t nvtx_pops_unmatched;
	uint64_t nvtx_ends_unknown;
	uint64_t nvtx_strings_unknown;
	uint64_t nvtx_unfinished;
	uint64_t nvtx_library_dropped;	/* events the injection library could not record */
	uint64_t nvtx_unseen;		/* events fired before an agent attached */
	uint64_t nvtx_tables_full;
	uint64_t otlp_items_sent;	/* spans + log records + profile samples */
	uint64_t otlp_items_dropped;	/* queue full, rejected or retries exhausted */
	uint64_t otlp_retries;
	/* gauges and totals for /metrics */
	uint64_t otlp_items_queued;	/* waiting or in flight now */
	uint64_t otlp_requests_sent;	/* requests the endpoint accepted */
	uint64_t otlp_requests_dropped;	/* requests given up: export errors */
	uint64_t otlp_bytes_sent;	/* request bodies accepted, after gzip */
	uint64_t nvtx_queue_bytes;	/* NVTX queue bytes that may be resident */
	uint64_t nvtx_queue_budget;	/* its size */
	uint64_t otlp_queue_bytes;	/* OTLP request bytes queued or in flight */
	uint64_t otlp_queue_budget;	/* the most it holds */
};

struct agent_export;

/*
 * agent_export_new - set up export per @c and the OTEL_* environment.
 * *@out is NULL when there is nothing to do (no endpoint and no NVTX).
 * Returns 0, or -EINVAL with a one-line reason in @err (bad endpoint,
 * protocol, header list) or -ENOMEM.
 */
int agent_export_new(const struct agent_export_config *c, struct agent_export **out,
		     char *err, size_t errlen);

/* agent_export_endpoint - where data goes ("" without an endpoint). */
const char *agent_export_endpoint(const struct agent_export *x);

/*
 * agent_export_nvtx - one PROFD_EVENT_NVTX ringbuf record (reader thread;
 * never blocks). Returns 0 or -EINVAL for a malformed record.
 */
int agent_export_nvtx(struct agent_export *x, const void *data, size_t size);

/* agent_export_process_exit - @pid exited (its NVTX ranges close, resource forgotten later). */
void agent_export_process_exit(struct agent_export *x, pid_t pid);

struct otlp_exporter;
struct otlp_resources;

/*
 * agent_export_otlp - the exporter and the per-process resources the OTLP
 * profiles sink (src/export/otlp_sink.c) queues profiles with; both NULL
 * without an endpoint (or for @x NULL). Borrowed: they live until
 * agent_export_free().
 */
void agent_export_otlp(struct agent_export *x, struct otlp_exporter **exporter,
		       struct otlp_resources **resources);

/*
 * agent_export_warn - print the exporter's last failure (rejected request,
 * endpoint unreachable, queue full) as one line, once per new failure.
 */
void agent_export_warn(struct agent_export *x);

/* agent_export_stats - counters so far (cumulative). */
void agent_export_stats(struct agent_export *x, struct agent_export_stats *out);

/*
 * agent_export_quiesce - no more NVTX records will come: process every
 * queued one, close the open ranges and hand their spans to the batcher,
 * so agent_export_stats() is final. Profiles can still be queued after.
 */
void agent_export_quiesce(struct agent_export *x);

/*
 * agent_export_stop - close every open NVTX range, send what is pending
 * and wait up to @timeout_ms for the endpoint to take it.
 */
void agent_export_stop(struct agent_export *x, unsigned int timeout_ms);

/* agent_export_free - stop and free. NULL is fine. */
void agent_export_free(struct agent_export *x);

#endif /* PROFD_AGENT_EXPORT_H */
