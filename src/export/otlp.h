/* SPDX-License-Identifier: GPL-2.0 */
/*
 * otlp.h - the OTLP exporter: configuration (otlp_config.c), the queue and
 * sender thread (otlp.c), the wire (otlp_transport.c).
 *
 * Owns: reading the OTLP configuration (OpenTelemetry SDK environment
 * variables, then profd's flags), one sender thread per exporter that
 * delivers serialized Export{Trace,Logs,Profiles}ServiceRequest bodies
 * over OTLP/gRPC (HTTP/2, h2c or TLS, unary Export calls) or OTLP/HTTP
 * protobuf (POST /v1/traces, /v1/logs, /v1development/profiles), gzip
 * compressed, from a bounded queue (drops counted), retrying retryable
 * failures with exponential backoff, each attempt under a timeout.
 * Follows the OTLP specification (protocol/exporter.md, otlp.md:
 * retryable gRPC codes and HTTP statuses, Retry-After / RetryInfo).
 *
 * Nothing here blocks its caller on the network: a dead or slow endpoint
 * only fills the queue.
 */
#ifndef PROFD_EXPORT_OTLP_H
#define PROFD_EXPORT_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters/counters.h"

enum otlp_protocol {
	OTLP_PROTO_GRPC,		/* "grpc" */
	OTLP_PROTO_HTTP_PROTOBUF,	/* "http/protobuf" */
};

enum otlp_signal {
	OTLP_SIGNAL_TRACES,
	OTLP_SIGNAL_LOGS,
	OTLP_SIGNAL_PROFILES,
	OTLP_SIGNAL_MAX,
};

#define OTLP_MAX_HEADERS 32
#define OTLP_MAX_RESOURCE_ATTRS 32

struct otlp_config {
	/* base endpoint, e.g. "http://collector:4317"; NULL: no export */
	char *endpoint;
	/* per-signal full URLs (OTEL_EXPORTER_OTLP_{TRACES,LOGS,PROFILES}_ENDPOINT), NULL: from endpoint */
	char *signal_endpoint[OTLP_SIGNAL_MAX];
	enum otlp_protocol protocol;
	bool insecure;			/* gRPC without a scheme: plaintext (h2c) */
	char *headers[OTLP_MAX_HEADERS];/* "key: value" lines, ready for the request */
	unsigned int nheaders;
	unsigned int timeout_ms;	/* per attempt; OTEL_EXPORTER_OTLP_TIMEOUT, default 10000 */
	bool gzip;			/* OTEL_EXPORTER_OTLP_COMPRESSION=gzip (default on) */
	size_t max_queue_bytes;		/* default 64 MiB */
	unsigned int max_retry_ms;	/* give up on a request after this long, default 60000 */
	char *certificate;		/* OTEL_EXPORTER_OTLP_CERTIFICATE: CA file, NULL: system CAs */
	char *client_certificate;	/* OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE (PEM), NULL: none */
	char *client_key;		/* OTEL_EXPORTER_OTLP_CLIENT_KEY (PEM), NULL: none */
	char *service_name;		/* OTEL_SERVICE_NAME, NULL: none */
	/* OTEL_RESOURCE_ATTRIBUTES, parsed (percent-decoded) */
	char *resource_keys[OTLP_MAX_RESOURCE_ATTRS];
	char *resource_values[OTLP_MAX_RESOURCE_ATTRS];
	unsigned int nresource;
};

/*
 * otlp_config_from_env - fill @c from the OTEL_* environment variables
 * (OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL, _HEADERS, _TIMEOUT,
 * _COMPRESSION, _INSECURE, _CERTIFICATE, _CLIENT_CERTIFICATE,
 * _CLIENT_KEY, the per-signal _ENDPOINTs, OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES) over the defaults above; @c is overwritten
 * and owns copies of every string. Flags are applied after by the caller.
 * Returns 0; -EINVAL with a one-line reason in @err (e.g. an unknown
 * protocol or a malformed header list; the rest of @c is still filled,
 * the malformed variable ignored); -ENOMEM. Free @c with
 * otlp_config_free() in every case.
 */
int otlp_config_from_env(struct otlp_config *c, char *err, size_t errlen);

/*
 * otlp_endpoint_valid - whether @s is an endpoint the exporter can use:
 * http://HOST[:PORT][/PATH], https://..., or HOST:PORT (OTLP exporter
 * spec: OTEL_EXPORTER_OTLP_ENDPOINT). Checks the form only.
 */
bool otlp_endpoint_valid(const char *s);

/* otlp_parse_protocol - "grpc" or "http/protobuf" into @p. Returns 0 or -EINVAL. */
int otlp_parse_protocol(const char *s, enum otlp_protocol *p);

/*
 * otlp_config_add_header - append "key: value" to @c's request headers
 * (for flags; the environment's come from otlp_config_from_env()).
 * Returns 0, -EINVAL (empty key, CR/LF in either, too many headers) or
 * -ENOMEM.
 */
int otlp_config_add_header(struct otlp_config *c, const char *key, const char *value);

/* otlp_config_free - free what @c owns (not @c itself). */
void otlp_config_free(struct otlp_config *c);

struct otlp_exporter;

/*
 * otlp_exporter_new - start an exporter (and its sender thread) for the
 * endpoint in @c (copied). A signal without an endpoint (no base and no
 * per-signal one) has its requests dropped and counted. Returns NULL
 * with a one-line reason in @err when an endpoint is malformed (e.g. not
 * http://, https:// or host:port) or when libcurl or the thread cannot
 * start.
 *
 * URLs: OTLP/HTTP posts to <base>/v1/traces, /v1/logs,
 * /v1development/profiles, or to a per-signal endpoint as-is; OTLP/gRPC
 * calls /opentelemetry.proto.collector.<signal>.<version>.<Service>/Export
 * on the per-signal endpoint or the base (https unless http:// is given,
 * or the endpoint has no scheme and @c->insecure is set).
 */
struct otlp_exporter *otlp_exporter_new(const struct otlp_config *c,
					char *err, size_t errlen);

/*
 * otlp_export - queue one serialized Export<Signal>ServiceRequest of
 * @len bytes (@items spans, log records or samples, for the counters).
 * Takes ownership of @body (malloc'ed) in every case. Never blocks on
 * the network. Returns 0, or -ENOBUFS when the queue is full (the
 * request is dropped and counted).
 */
int otlp_export(struct otlp_exporter *e, enum otlp_signal sig, void *body,
		size_t len, uint64_t items);

/*
 * otlp_exporter_flush - wait up to @timeout_ms for the queue to drain
 * (used at stop). Returns 0 when empty, -ETIMEDOUT otherwise.
 */
int otlp_exporter_flush(struct otlp_exporter *e, unsigned int timeout_ms);

/*
 * otlp_exporter_drop - count @items that a producer (a batcher, an
 * encoder) had to drop before reaching the queue, with @why (one line,
 * copied) as last_error; @why NULL: counted only, last_error unchanged.
 */
void otlp_exporter_drop(struct otlp_exporter *e, uint64_t items, const char *why);

/*
 * otlp_exporter_free - stop the sender (abandoning what is queued, and
 * aborting a transfer in progress at once) and free. NULL is fine.
 */
void otlp_exporter_free(struct otlp_exporter *e);

/*
 * Items not delivered, declared in otlp.c: its own drops, and those of
 * whoever builds requests (a profile that could not be encoded, what is
 * still queued when the exporter is stopped).
 */
COUNTER_EXTERN(otlp_items_dropped);

struct otlp_stats {
	uint64_t requests_sent[OTLP_SIGNAL_MAX];	/* accepted by the endpoint */
	uint64_t items_sent[OTLP_SIGNAL_MAX];
	uint64_t items_dropped;		/* queue full, rejected (non-retryable) or retries exhausted */
	uint64_t requests_dropped;
	uint64_t retries;		/* attempts after the first */
	uint64_t bytes_sent;		/* request bodies accepted, after gzip */
	uint64_t items_queued;		/* waiting or in flight at the snapshot */
	uint64_t bytes_queued;		/* their request bytes (before gzip) */
	uint64_t max_queue_bytes;	/* the most queued (an empty queue takes
					 * one request of any size) */
	char last_error[256];		/* "" or the last failure, one line */
};

/* otlp_exporter_stats - a snapshot of the counters. */
void otlp_exporter_stats(struct otlp_exporter *e, struct otlp_stats *out);

#endif /* PROFD_EXPORT_OTLP_H */
