/* SPDX-License-Identifier: GPL-2.0 */
/*
 * otlp_transport_internal.h - what the transport's files share (internal
 * to the OTLP transport; otlp_transport.h is its interface):
 * otlp_transport.c owns libcurl, the request bytes and the outcome of an
 * attempt, otlp_endpoint.c endpoints and request URLs, otlp_response.c
 * reading the answer.
 */
#ifndef PROFD_EXPORT_OTLP_TRANSPORT_INTERNAL_H
#define PROFD_EXPORT_OTLP_TRANSPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/otlp_transport.h"

#define OTLP_RESPONSE_MAX	(64u << 10)	/* response bytes kept */
#define OTLP_GRPC_PREFIX	5		/* compressed flag + big-endian length */

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum {
	GRPC_OK = 0, GRPC_CANCELLED = 1, GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3, GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5, GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7, GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9, GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11, GRPC_UNIMPLEMENTED = 12, GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14, GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
};

/* What one attempt got back; written by the curl callbacks below. */
struct otlp_response {
	int grpc_status;		/* -1: none seen */
	char grpc_message[128];
	long retry_after_ms;		/* -1: no Retry-After / RetryInfo, ms */
	bool protobuf;			/* Content-Type: application/x-protobuf */
	unsigned char *body;		/* the first OTLP_RESPONSE_MAX bytes (owned by the transport) */
	size_t len;
};

/* otlp_endpoint.c */

/*
 * otlp_signal_url - the URL requests of @sig go to (malloc'ed, the
 * caller frees it), from the per-signal endpoint of @c or its base
 * endpoint; *@url = NULL when both are unset. Returns 0, -EINVAL
 * (malformed; *@bad is the culprit, borrowed from @c) or -ENOMEM.
 */
int otlp_signal_url(const struct otlp_config *c, enum otlp_signal sig,
		    char **url, const char **bad);

/* otlp_response.c */

/*
 * otlp_on_header - libcurl's CURLOPT_HEADERFUNCTION (@ud: the struct
 * otlp_response of the attempt): headers and, for HTTP/2, trailers.
 * Fills grpc_status, grpc_message (percent-decoded, printable),
 * retry_after_ms (Retry-After or a RetryInfo detail) and protobuf.
 * Returns @size * @n (never fails the transfer).
 */
size_t otlp_on_header(char *buf, size_t size, size_t n, void *ud);

/*
 * otlp_on_body - libcurl's CURLOPT_WRITEFUNCTION: appends to @ud's body
 * up to OTLP_RESPONSE_MAX bytes, drops the rest. Returns @size * @n.
 */
size_t otlp_on_body(char *buf, size_t size, size_t n, void *ud);

/*
 * otlp_rpc_status_parse - from a google.rpc.Status (grpc-status-details-bin,
 * or an OTLP/HTTP error body): its message into @msg (printable ASCII
 * only; @msg may be NULL), and the delay of a google.rpc.RetryInfo
 * detail in *@retry_ms (ms; left alone when there is none, or over an
 * hour). Returns false if @buf is no Status.
 */
bool otlp_rpc_status_parse(const uint8_t *buf, size_t n, char *msg,
			   size_t msglen, long *retry_ms);

/*
 * otlp_partial_success - the rejected item count and message (into @msg)
 * of @sig's Export*ServiceResponse in @buf (0 when it has none or is
 * undecodable: the request was accepted either way).
 */
int64_t otlp_partial_success(enum otlp_signal sig, const uint8_t *buf,
			     size_t len, char *msg, size_t msglen);

/* otlp_grpc_retryable - the OTLP specification's retryable gRPC codes (otlp.md, "Failures"). */
bool otlp_grpc_retryable(int code);

/*
 * otlp_grpc_from_http - the gRPC code of an answer without grpc-status:
 * gRPC's HTTP-to-gRPC status mapping (doc/http-grpc-status-mapping.md).
 */
int otlp_grpc_from_http(long status);

#endif /* PROFD_EXPORT_OTLP_TRANSPORT_INTERNAL_H */
