/* SPDX-License-Identifier: GPL-2.0 */
/*
 * otlp_traces.h - batching spans and log records into OTLP requests.
 *
 * Owns: one pending ExportTraceServiceRequest and one
 * ExportLogsServiceRequest (opentelemetry/proto/collector/{trace,logs}/v1),
 * grouped by resource (struct otlp_resource.key: items with equal keys
 * share the first one's attributes) and scope (name and version); each
 * item is deep-copied by packing it with protobuf-c when added, so
 * nothing the caller passed is referenced after the call. A batch is
 * framed and handed to otlp_export() when it holds OTLP_BATCH_MAX_ITEMS
 * items or OTLP_BATCH_MAX_BYTES encoded bytes, or when
 * OTLP_BATCH_DELAY_MS passed since its first item (otlp_batcher_tick()).
 * Strings that are not valid UTF-8 are sent with U+FFFD for the bad
 * bytes. Thread-safe (one lock).
 */
#ifndef PROFD_EXPORT_OTLP_TRACES_H
#define PROFD_EXPORT_OTLP_TRACES_H

#include "export/otlp.h"
#include "export/otlp_types.h"

#define OTLP_BATCH_MAX_ITEMS 8192
#define OTLP_BATCH_MAX_BYTES (4u << 20)
#define OTLP_BATCH_DELAY_MS 1000

struct otlp_batcher;

/* otlp_batcher_new - a batcher sending to @e (borrowed). NULL on OOM. */
struct otlp_batcher *otlp_batcher_new(struct otlp_exporter *e);

/*
 * otlp_batcher_add_span / otlp_batcher_add_log - deep-copy one span or
 * log record of resource @r (NULL: an empty resource, key 0) and scope
 * @scope (NULL: unnamed) into the pending batch, which is sent when this
 * item fills it. @now_ns: CLOCK_MONOTONIC, for the delay. Returns 0,
 * -EINVAL (NULL batcher or item), -ENOMEM (counted as dropped), or
 * -ENOBUFS when a full batch could not be queued (its items counted as
 * dropped by the exporter).
 */
int otlp_batcher_add_span(struct otlp_batcher *b, const struct otlp_resource *r,
			  const struct otlp_scope *scope, const struct otlp_span *s,
			  uint64_t now_ns);
int otlp_batcher_add_log(struct otlp_batcher *b, const struct otlp_resource *r,
			 const struct otlp_scope *scope, const struct otlp_log *l,
			 uint64_t now_ns);

/* otlp_batcher_tick - send batches older than OTLP_BATCH_DELAY_MS. */
void otlp_batcher_tick(struct otlp_batcher *b, uint64_t now_ns);

/* otlp_batcher_flush - send whatever is pending now. */
void otlp_batcher_flush(struct otlp_batcher *b);

/* otlp_batcher_free - free, dropping what is pending (flush first). NULL is fine. */
void otlp_batcher_free(struct otlp_batcher *b);

#endif /* PROFD_EXPORT_OTLP_TRACES_H */
