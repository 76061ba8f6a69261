// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_transport.c - one OTLP request on the wire (see otlp_transport.h).
 *
 * Owns: libcurl (a multi handle whose connection cache keeps
 * connections open between requests, one easy handle per signal), the
 * request bytes (gzip, zlib windowBits 31; the 5-byte gRPC message
 * prefix), the protocol headers, and the outcome of an attempt from
 * its answer: HTTP status or gRPC status, retryable or not, the delay
 * asked for, partial success. Endpoints and URLs are otlp_endpoint.c;
 * reading the answer (headers, trailers, google.rpc.Status) is
 * otlp_response.c.
 *
 * How it fits: otlp.c's sender thread calls otlp_transport_send() for
 * each attempt and decides about retries; the transport only reports.
 * Waiting happens in curl_multi_poll(), which otlp_transport_wakeup()
 * interrupts from another thread, so a stop never waits on the network.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <zlib.h>

#include "export/otlp_transport_internal.h"
#include "util/version.h"

struct otlp_transport {
	enum otlp_protocol protocol;
	bool gzip;
	char *url[OTLP_SIGNAL_MAX];	/* NULL: signal not exported */
	CURLM *multi;
	CURL *easy[OTLP_SIGNAL_MAX];
	struct curl_slist *headers;
	char curl_err[CURL_ERROR_SIZE];
	struct otlp_response resp;
	const atomic_bool *stop;
};

/* ---- one attempt ---- */

/* Transport errors worth another try; the rest is configuration. */
static bool curl_retryable(CURLcode res)
{
	switch (res) {
	case CURLE_UNSUPPORTED_PROTOCOL: case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN: case CURLE_OUT_OF_MEMORY:
	case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER: case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR: case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND: case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_ABORTED_BY_CALLBACK: case CURLE_BAD_FUNCTION_ARGUMENT:
		return false;
	default:
		return true;
	}
}

/*
 * run_transfer - drive @c (added to the multi handle) to completion or
 * until stop is asked. Returns curl's result, or CURLE_ABORTED_BY_CALLBACK
 * when stopped.
 */
static CURLcode run_transfer(struct otlp_transport *t, CURL *c)
{
	CURLcode res = CURLE_RECV_ERROR;
	int running = 1, left;
	CURLMsg *m;

	while (running) {
		if (curl_multi_perform(t->multi, &running) != CURLM_OK)
			return CURLE_OUT_OF_MEMORY;
		if (atomic_load(t->stop))
			return CURLE_ABORTED_BY_CALLBACK;
		if (running && curl_multi_poll(t->multi, NULL, 0, 1000, NULL) != CURLM_OK)
			return CURLE_OUT_OF_MEMORY;
	}
	while ((m = curl_multi_info_read(t->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == c)
			res = m->data.result;
	return res;
}

enum otlp_outcome otlp_transport_send(struct otlp_transport *t, enum otlp_signal sig,
				      const uint8_t *body, size_t len, char *why,
				      size_t whylen, long *retry_ms, int64_t *rejected)
{
	CURL *c = t->easy[sig];
	const char *url = t->url[sig];
	struct otlp_response *rs = &t->resp;
	char msg[128] = "";
	long status = 0;
	CURLcode res;

	rs->grpc_status = -1;
	rs->grpc_message[0] = 0;
	rs->retry_after_ms = -1;
	rs->protobuf = false;
	rs->len = 0;
	t->curl_err[0] = 0;
	*retry_ms = -1;
	*rejected = 0;
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	if (curl_multi_add_handle(t->multi, c) != CURLM_OK) {
		snprintf(why, whylen, "%s: curl_multi_add_handle failed", url);
		return OTLP_FAIL;
	}
	res = run_transfer(t, c);
	curl_multi_remove_handle(t->multi, c);
	if (atomic_load(t->stop))
		return OTLP_STOPPED;
	if (res != CURLE_OK) {
		snprintf(why, whylen, "%s: %s", url,
			 t->curl_err[0] ? t->curl_err : curl_easy_strerror(res));
		return curl_retryable(res) ? OTLP_RETRY : OTLP_FAIL;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	*retry_ms = rs->retry_after_ms;

	if (t->protocol == OTLP_PROTO_GRPC) {
		int code = rs->grpc_status;

		if (code < 0)
			code = status == 200 ? GRPC_UNKNOWN : otlp_grpc_from_http(status);
		if (code == GRPC_OK) {
			/* one uncompressed length-prefixed message, or nothing */
			if (rs->len >= OTLP_GRPC_PREFIX && rs->body[0] == 0)
				*rejected = otlp_partial_success(sig, rs->body + OTLP_GRPC_PREFIX,
							    rs->len - OTLP_GRPC_PREFIX, msg, sizeof(msg));
			snprintf(why, whylen, "%s: partial success: %s", url, msg);
			return OTLP_SENT;
		}
		snprintf(why, whylen, "%s: grpc-status %d%s%s (HTTP %ld)", url,
			 code, rs->grpc_message[0] ? ": " : "", rs->grpc_message, status);
		return otlp_grpc_retryable(code) ? OTLP_RETRY : OTLP_FAIL;
	}

	if (status >= 200 && status < 300) {
		if (rs->protobuf)
			*rejected = otlp_partial_success(sig, rs->body, rs->len, msg, sizeof(msg));
		snprintf(why, whylen, "%s: partial success: %s", url, msg);
		return OTLP_SENT;
	}
	/* An OTLP/HTTP error body is a google.rpc.Status, if the server says so. */
	if (!rs->protobuf || !otlp_rpc_status_parse(rs->body, rs->len, msg, sizeof(msg), retry_ms))
		msg[0] = 0;
	snprintf(why, whylen, "%s: HTTP %ld%s%s", url, status, msg[0] ? ": " : "", msg);
	switch (status) {
	case 429: case 502: case 503: case 504:
		return OTLP_RETRY;
	}
	return OTLP_FAIL;
}

/* ---- request bytes ---- */

uint8_t *otlp_transport_body(const struct otlp_transport *t, const void *msg,
			     size_t msglen, size_t *len)
{
	size_t pre = t->protocol == OTLP_PROTO_GRPC ? OTLP_GRPC_PREFIX : 0, n;
	uint8_t *buf;

	if (msglen > 0xffffffffu - 1024)	/* gRPC length and zlib's avail_in are 32-bit */
		return NULL;
	if (t->gzip) {
		z_stream zs;
		uLong bound;

		memset(&zs, 0, sizeof(zs));
		if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return NULL;
		bound = deflateBound(&zs, msglen);
		buf = malloc(pre + bound);
		if (buf) {
			zs.next_in = (Bytef *)msg;
			zs.avail_in = msglen;
			zs.next_out = buf + pre;
			zs.avail_out = bound;
			if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
				free(buf);
				buf = NULL;
			}
		}
		n = zs.total_out;
		deflateEnd(&zs);
		if (!buf)
			return NULL;
	} else {
		buf = malloc(pre + msglen + 1);
		if (!buf)
			return NULL;
		if (msglen)
			memcpy(buf + pre, msg, msglen);
		n = msglen;
	}
	if (pre) {
		buf[0] = t->gzip;
		buf[1] = n >> 24;
		buf[2] = n >> 16;
		buf[3] = n >> 8;
		buf[4] = n;
	}
	*len = pre + n;
	return buf;
}

/* ---- curl handles ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Request headers for the protocol, then the user's. NULL on OOM. */
static struct curl_slist *make_headers(const struct otlp_config *c)
{
	struct curl_slist *l = NULL, *n;
	const char *grpc[] = {
		"Content-Type: application/grpc", "TE: trailers",
		c->gzip ? "grpc-encoding: gzip" : NULL, NULL,
	};
	const char *http[] = {
		"Content-Type: application/x-protobuf",
		c->gzip ? "Content-Encoding: gzip" : NULL, NULL,
	};
	const char **mine = c->protocol == OTLP_PROTO_GRPC ? grpc : http;
	char timeout[48];

	/* "Expect:" and "Accept:" empty: curl leaves them out. */
	if (!(n = curl_slist_append(l, "Expect:")))
		goto oom;
	l = n;
	if (!(n = curl_slist_append(l, "Accept:")))
		goto oom;
	l = n;
	for (int i = 0; mine[i]; i++) {
		if (!(n = curl_slist_append(l, mine[i])))
			goto oom;
		l = n;
	}
	if (c->protocol == OTLP_PROTO_GRPC) {
		snprintf(timeout, sizeof(timeout), "grpc-timeout: %um", c->timeout_ms);
		if (!(n = curl_slist_append(l, timeout)))
			goto oom;
		l = n;
	}
	for (unsigned int i = 0; i < c->nheaders; i++) {
		if (!(n = curl_slist_append(l, c->headers[i])))
			goto oom;
		l = n;
	}
	return l;
oom:
	curl_slist_free_all(l);
	return NULL;
}

static CURL *make_easy(struct otlp_transport *t, const struct otlp_config *c,
		       const char *url)
{
	CURL *h = curl_easy_init();
	long version;

	if (!h)
		return NULL;
	if (c->protocol == OTLP_PROTO_GRPC)
		version = strncmp(url, "http://", 7) == 0 ?
			  CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS;
	else
		version = strncmp(url, "http://", 7) == 0 ?
			  CURL_HTTP_VERSION_1_1 : CURL_HTTP_VERSION_2TLS;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, version);
	/*
	 * libcurl 7.88 fails every request after the first on a reused h2c
	 * prior-knowledge connection ("Error in the HTTP2 framing layer",
	 * curl issue 10634, fixed in 8.0.0): a connection per request there.
	 */
	if (version == CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE &&
	    curl_version_info(CURLVERSION_NOW)->version_num < 0x080000)
		curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->headers);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "profd/" PROFD_VERSION " (OTLP exporter)");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, otlp_on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &t->resp);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, otlp_on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &t->resp);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t->curl_err);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (getenv("PROFD_OTLP_DEBUG"))
		curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
	if (c->certificate)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->certificate);
	if (c->client_certificate)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->client_certificate);
	if (c->client_key)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->client_key);
	return h;
}

/* ---- lifecycle ---- */

void otlp_transport_free(struct otlp_transport *t)
{
	if (!t)
		return;
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++) {
		if (t->easy[s])
			curl_easy_cleanup(t->easy[s]);
		free(t->url[s]);
	}
	if (t->multi)
		curl_multi_cleanup(t->multi);
	curl_slist_free_all(t->headers);
	free(t->resp.body);
	free(t);
}

struct otlp_transport *otlp_transport_new(const struct otlp_config *c,
					  const atomic_bool *stop,
					  char *err, size_t errlen)
{
	struct otlp_transport *t;
	const char *bad = NULL;
	int rc;

	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK) {
		snprintf(err, errlen, "otlp: libcurl initialization failed: %s",
			 curl_easy_strerror(curl_init_result));
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto oom;
	t->protocol = c->protocol;
	t->gzip = c->gzip;
	t->stop = stop;
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++) {
		rc = otlp_signal_url(c, s, &t->url[s], &bad);
		if (rc == -EINVAL) {
			snprintf(err, errlen,
				 "otlp: malformed endpoint \"%.60s\": expected http://HOST:PORT, https://HOST:PORT or HOST:PORT",
				 bad);
			otlp_transport_free(t);
			return NULL;
		}
		if (rc)
			goto oom;
	}
	t->resp.body = malloc(OTLP_RESPONSE_MAX);
	t->headers = make_headers(c);
	t->multi = curl_multi_init();
	if (!t->resp.body || !t->headers || !t->multi)
		goto oom;
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++)
		if (t->url[s] && !(t->easy[s] = make_easy(t, c, t->url[s])))
			goto oom;
	return t;
oom:
	snprintf(err, errlen, "otlp: out of memory starting the exporter");
	otlp_transport_free(t);
	return NULL;
}

const char *otlp_transport_url(const struct otlp_transport *t, enum otlp_signal sig)
{
	return t->url[sig];
}

void otlp_transport_wakeup(struct otlp_transport *t)
{
	curl_multi_wakeup(t->multi);
}
