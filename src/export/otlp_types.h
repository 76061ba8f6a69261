/* SPDX-License-Identifier: GPL-2.0 */
/*
 * otlp_types.h - plain C views of the OTLP data profd exports: attributes,
 * resources, spans, span events and log records. Producers (src/nvtx/,
 * the agent) fill them; src/export/otlp_traces.c deep-copies them into
 * protobuf-c messages (opentelemetry/proto/{trace,logs}/v1). Every pointer
 * is borrowed for the duration of the call it is passed to.
 *
 * Names and meanings follow the OTLP specification (trace.proto,
 * logs.proto, common.proto of opentelemetry-proto).
 */
#ifndef PROFD_EXPORT_OTLP_TYPES_H
#define PROFD_EXPORT_OTLP_TYPES_H

#include <stdbool.h>
#include <stdint.h>

enum otlp_value_type {
	OTLP_VALUE_STRING,
	OTLP_VALUE_INT,
	OTLP_VALUE_DOUBLE,
	OTLP_VALUE_BOOL,
};

/* One KeyValue (common.proto). */
struct otlp_attr {
	const char *key;
	enum otlp_value_type type;
	const char *str;	/* OTLP_VALUE_STRING */
	int64_t i;		/* OTLP_VALUE_INT */
	double d;		/* OTLP_VALUE_DOUBLE */
	bool b;			/* OTLP_VALUE_BOOL */
};

/*
 * A Resource: the attributes, and @key, a number that identifies it
 * (e.g. pid << 32 | process start time) so batches group spans/logs of
 * one resource without comparing attributes.
 */
struct otlp_resource {
	uint64_t key;
	const struct otlp_attr *attrs;
	uint32_t nattrs;
};

/* InstrumentationScope. */
struct otlp_scope {
	const char *name;	/* e.g. "profd.nvtx" or an NVTX domain's name */
	const char *version;	/* NULL: none */
};

/* Span.Event. */
struct otlp_span_event {
	uint64_t time_unix_ns;
	const char *name;
	const struct otlp_attr *attrs;
	uint32_t nattrs;
};

/* Span (kind INTERNAL). An all-zero parent_span_id: a root span. */
struct otlp_span {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t parent_span_id[8];
	const char *name;
	uint64_t start_unix_ns;
	uint64_t end_unix_ns;
	const struct otlp_attr *attrs;
	uint32_t nattrs;
	const struct otlp_span_event *events;
	uint32_t nevents;
};

/* LogRecord. All-zero trace/span ids: not in a span. */
struct otlp_log {
	uint64_t time_unix_ns;
	uint64_t observed_unix_ns;
	int severity_number;	/* SeverityNumber, 9 = INFO; 0: unspecified */
	const char *severity_text; /* NULL: none */
	const char *body;	/* a string AnyValue */
	const struct otlp_attr *attrs;
	uint32_t nattrs;
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

#endif /* PROFD_EXPORT_OTLP_TYPES_H */
