/* SPDX-License-Identifier: GPL-2.0 */
/*
 * otlp_transport.h - one OTLP request on the wire, for otlp.c's sender
 * thread (internal to src/export/).
 *
 * Owns: request URLs from the configuration, the bytes sent (gzip, gRPC
 * message framing), libcurl, and the reading of the answer into an
 * outcome: sent (with the items a partial success rejected), retryable
 * (with the delay the server asked for) or failed, per the OTLP
 * specification. Not thread-safe except otlp_transport_wakeup().
 */
#ifndef PROFD_EXPORT_OTLP_TRANSPORT_H
#define PROFD_EXPORT_OTLP_TRANSPORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "export/otlp.h"

enum otlp_outcome {
	OTLP_SENT,	/* accepted (maybe partially) */
	OTLP_RETRY,	/* retryable: HTTP 429/502/503/504, those gRPC codes, network */
	OTLP_FAIL,	/* final: drop */
	OTLP_STOPPED,	/* *stop was set: abandoned */
};

struct otlp_transport;

/*
 * otlp_transport_new - curl handles for the endpoints of @c. Transfers
 * are abandoned as soon as *@stop is true (borrowed; set it, then call
 * otlp_transport_wakeup()). Returns NULL with a one-line reason in @err
 * (malformed endpoint, libcurl or memory failure).
 */
struct otlp_transport *otlp_transport_new(const struct otlp_config *c,
					  const atomic_bool *stop,
					  char *err, size_t errlen);

/* otlp_transport_url - the URL of @sig's requests; NULL: no endpoint. */
const char *otlp_transport_url(const struct otlp_transport *t, enum otlp_signal sig);

/*
 * otlp_transport_body - @msglen bytes of a serialized Export*ServiceRequest
 * as sent: gzip'ed when configured, behind the 5-byte gRPC prefix for
 * gRPC. Returns a malloc'ed buffer (*@len bytes), NULL on out of memory,
 * a zlib failure or a message of 4 GiB or more.
 */
uint8_t *otlp_transport_body(const struct otlp_transport *t, const void *msg,
			     size_t msglen, size_t *len);

/*
 * otlp_transport_send - one attempt to send @body (from
 * otlp_transport_body()) for @sig, blocking until it ends (the
 * configured timeout) or stop. Returns the outcome; with OTLP_RETRY and
 * OTLP_FAIL a one-line reason in @why and the server's requested delay
 * in *@retry_ms (-1: none, ms); with OTLP_SENT the items a partial
 * success rejected in *@rejected.
 */
enum otlp_outcome otlp_transport_send(struct otlp_transport *t, enum otlp_signal sig,
				      const uint8_t *body, size_t len, char *why,
				      size_t whylen, long *retry_ms, int64_t *rejected);

/* otlp_transport_wakeup - interrupt a waiting send (any thread). */
void otlp_transport_wakeup(struct otlp_transport *t);

void otlp_transport_free(struct otlp_transport *t);

#endif /* PROFD_EXPORT_OTLP_TRANSPORT_H */
