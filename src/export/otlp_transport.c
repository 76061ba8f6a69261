// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_transport.c - one OTLP request on the wire (see otlp_transport.h).
 *
 * Owns: the endpoint syntax and request URLs, libcurl (a multi handle
 * whose connection cache keeps connections open between requests, one
 * easy handle per signal), the request bytes (gzip, zlib windowBits 31;
 * the 5-byte gRPC message prefix), the protocol headers, and reading the
 * answer: HTTP status, grpc-status/grpc-message from the trailers or a
 * trailers-only answer, Retry-After, google.rpc.RetryInfo in
 * grpc-status-details-bin, the google.rpc.Status of an OTLP/HTTP error,
 * and partial success. Which outcomes are retryable follows the OTLP
 * specification (otlp.md: "OTLP/gRPC", "OTLP/HTTP", "Failures",
 * "Throttling") and gRPC's PROTOCOL-HTTP2.md and status code mapping.
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
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <zlib.h>

#include "agent/agent.h"	/* PROFD_VERSION */
#include "export/otlp_transport.h"
#include "util/hex.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

#define RESPONSE_MAX		(64u << 10)	/* response bytes kept */
#define GRPC_PREFIX		5		/* compressed flag + big-endian length */

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

static const char *const http_path[OTLP_SIGNAL_MAX] = {
	"/v1/traces", "/v1/logs", "/v1development/profiles",
};

static const char *const grpc_path[OTLP_SIGNAL_MAX] = {
	"/opentelemetry.proto.collector.trace.v1.TraceService/Export",
	"/opentelemetry.proto.collector.logs.v1.LogsService/Export",
	"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
};

/* What one attempt got back; written by curl's callbacks. */
struct response {
	int grpc_status;		/* -1: none seen */
	char grpc_message[128];
	long retry_after_ms;		/* -1: no Retry-After / RetryInfo */
	bool protobuf;			/* Content-Type: application/x-protobuf */
	unsigned char *body;		/* the first RESPONSE_MAX bytes */
	size_t len;
};

struct otlp_transport {
	enum otlp_protocol protocol;
	bool gzip;
	char *url[OTLP_SIGNAL_MAX];	/* NULL: signal not exported */
	CURLM *multi;
	CURL *easy[OTLP_SIGNAL_MAX];
	struct curl_slist *headers;
	char curl_err[CURL_ERROR_SIZE];
	struct response resp;
	const atomic_bool *stop;
};

/* ---- endpoints ---- */

struct endpoint {
	const char *scheme;		/* "http" or "https" */
	const char *host;		/* host[:port], not NUL-terminated */
	size_t host_len;
	const char *path;		/* "" or "/..." (rest of the string) */
	bool has_scheme;
};

static bool is_host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

/*
 * parse_endpoint - split http://HOST[:PORT][/PATH], https://... or
 * HOST:PORT (no scheme: https, or http when @insecure). HOST is a name,
 * an IPv4 address or a bracketed IPv6 one. Returns 0 or -EINVAL.
 */
static int parse_endpoint(const char *s, bool insecure, struct endpoint *ep)
{
	const char *p;

	if (!s)
		return -EINVAL;
	ep->has_scheme = true;
	if (strncasecmp(s, "http://", 7) == 0) {
		ep->scheme = "http";
		p = s + 7;
	} else if (strncasecmp(s, "https://", 8) == 0) {
		ep->scheme = "https";
		p = s + 8;
	} else if (strstr(s, "://")) {
		return -EINVAL;
	} else {
		ep->scheme = insecure ? "http" : "https";
		ep->has_scheme = false;
		p = s;
	}
	ep->host = p;
	if (*p == '[') {
		for (p++; *p && *p != ']'; p++)
			if (hex_digit(*p) < 0 && *p != ':' && *p != '.')
				return -EINVAL;
		if (*p++ != ']' || p - ep->host < 4)
			return -EINVAL;
	} else {
		while (is_host_char(*p))
			p++;
		if (p == ep->host)
			return -EINVAL;
	}
	if (*p == ':') {
		unsigned long port = 0;
		const char *d = ++p;

		while (*p >= '0' && *p <= '9' && p - d < 6)
			port = port * 10 + (*p++ - '0');
		if (p == d || port == 0 || port > 65535)
			return -EINVAL;
	} else if (!ep->has_scheme) {
		return -EINVAL;		/* "host" alone: say host:port */
	}
	ep->host_len = p - ep->host;
	if (*p && *p != '/')
		return -EINVAL;
	ep->path = p;
	for (; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return -EINVAL;
	return 0;
}

bool otlp_endpoint_valid(const char *s)
{
	struct endpoint ep;

	return parse_endpoint(s, false, &ep) == 0;
}

/*
 * signal_url - the URL requests of @sig go to (malloc'ed), from the
 * per-signal endpoint @sig_ep or the base @base; *@url = NULL when both
 * are NULL. Returns 0, -EINVAL (malformed; *@bad is the culprit) or
 * -ENOMEM.
 */
static int signal_url(const struct otlp_config *c, enum otlp_signal sig,
		      char **url, const char **bad)
{
	const char *src = c->signal_endpoint[sig] ? c->signal_endpoint[sig] : c->endpoint;
	bool as_is = c->signal_endpoint[sig] && c->protocol == OTLP_PROTO_HTTP_PROTOBUF;
	struct endpoint ep;
	size_t plen;
	int n;

	*url = NULL;
	if (!src)
		return 0;
	if (parse_endpoint(src, c->insecure, &ep)) {
		*bad = src;
		return -EINVAL;
	}
	if (c->protocol == OTLP_PROTO_GRPC) {
		/* gRPC has no base path: the method is the path. */
		n = asprintf(url, "%s://%.*s%s", ep.scheme, (int)ep.host_len,
			     ep.host, grpc_path[sig]);
	} else if (as_is) {
		n = asprintf(url, "%s://%.*s%s", ep.scheme, (int)ep.host_len,
			     ep.host, ep.path);
	} else {
		plen = strlen(ep.path);
		while (plen && ep.path[plen - 1] == '/')
			plen--;
		n = asprintf(url, "%s://%.*s%.*s%s", ep.scheme, (int)ep.host_len,
			     ep.host, (int)plen, ep.path, http_path[sig]);
	}
	if (n < 0) {
		*url = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- small decoders for response metadata ---- */

/* A varint at *@p (< @end); advances *@p. Returns false if truncated. */
static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/*
 * pb_field - the next field of a protobuf message in [*@p, @end): its
 * number, wire type, varint value or length-delimited bytes. Skips
 * fixed32/fixed64. Returns false at the end or on malformed input.
 */
static bool pb_field(const uint8_t **p, const uint8_t *end, uint32_t *num,
		     uint64_t *v, const uint8_t **data, size_t *len)
{
	uint64_t key;

	for (;;) {
		if (*p >= end || !pb_varint(p, end, &key))
			return false;
		*num = key >> 3;
		switch (key & 7) {
		case 0:
			if (!pb_varint(p, end, v))
				return false;
			*data = NULL;
			return true;
		case 2:
			if (!pb_varint(p, end, v) || *v > (uint64_t)(end - *p))
				return false;
			*data = *p;
			*len = *v;
			*p += *v;
			return true;
		case 1:
			if (end - *p < 8)
				return false;
			*p += 8;
			break;
		case 5:
			if (end - *p < 4)
				return false;
			*p += 4;
			break;
		default:
			return false;
		}
	}
}

/*
 * rpc_status_parse - from a google.rpc.Status (grpc-status-details-bin,
 * or an OTLP/HTTP error body): its message into @msg (printable ASCII
 * only), and the delay of a google.rpc.RetryInfo detail in *@retry_ms
 * (left alone when there is none). Returns false if @buf is no Status.
 */
static bool rpc_status_parse(const uint8_t *buf, size_t n, char *msg,
			     size_t msglen, long *retry_ms)
{
	const uint8_t *p = buf, *end = buf + n, *d;
	uint32_t num;
	uint64_t v;
	size_t len;

	while (p < end) {
		if (!pb_field(&p, end, &num, &v, &d, &len))
			return false;
		if (num == 2 && d && msg) {
			size_t k = 0;

			for (size_t i = 0; i < len && k + 1 < msglen; i++)
				msg[k++] = d[i] >= ' ' && d[i] < 0x7f ? d[i] : '?';
			msg[k] = 0;
		} else if (num == 3 && d) {	/* details: google.protobuf.Any */
			const uint8_t *q = d, *qe = d + len, *val = NULL, *td;
			bool retry_info = false;
			size_t vlen = 0, tlen;

			while (q < qe && pb_field(&q, qe, &num, &v, &td, &tlen)) {
				if (num == 1 && td && tlen >= 20 &&
				    memcmp(td + tlen - 20, "google.rpc.RetryInfo", 20) == 0)
					retry_info = true;
				else if (num == 2 && td)
					val = td, vlen = tlen;
			}
			if (retry_info && val) {
				/* RetryInfo.retry_delay: Duration{seconds, nanos} */
				const uint8_t *r = val, *re = val + vlen, *dd;
				uint64_t secs = 0, nanos = 0;
				size_t dlen;

				while (r < re && pb_field(&r, re, &num, &v, &dd, &dlen)) {
					const uint8_t *s = dd, *se = dd + dlen, *x;
					size_t xl;

					if (num != 1 || !dd)
						continue;
					while (s < se && pb_field(&s, se, &num, &v, &x, &xl)) {
						if (num == 1 && !x)
							secs = v;
						else if (num == 2 && !x)
							nanos = v;
					}
				}
				if (secs < 3600 && nanos < 1000000000)
					*retry_ms = secs * 1000 + nanos / 1000000;
			}
		}
	}
	return true;
}

/* Decode base64 (standard alphabet, padding optional) into @out. Returns the length or -1. */
static long base64_decode(const char *s, size_t n, uint8_t *out, size_t outlen)
{
	uint32_t acc = 0;
	long k = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const char *c;

		if (s[i] == '=')
			break;
		c = s[i] ? strchr(a, s[i]) : NULL;
		if (!c)
			return -1;
		acc = acc << 6 | (uint32_t)(c - a);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if ((size_t)k >= outlen)
				return -1;
			out[k++] = acc >> bits & 0xff;
		}
	}
	return k;
}

/* ---- curl callbacks ---- */

/* If @line is "@name: value", the value (OWS trimmed) in @val. */
static bool header_value(const char *line, size_t len, const char *name,
			 char *val, size_t vallen)
{
	size_t nl = strlen(name);

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return false;
	line += nl + 1;
	len -= nl + 1;
	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n' ||
		       line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (len >= vallen)
		len = vallen - 1;
	memcpy(val, line, len);
	val[len] = 0;
	return true;
}

/* Headers and, for HTTP/2, trailers: libcurl passes both here. */
static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
	struct response *r = ud;
	size_t len = size * n;
	char v[2048];

	if (header_value(buf, len, "grpc-status", v, sizeof(v))) {
		char *end;
		long s = strtol(v, &end, 10);

		r->grpc_status = end != v && !*end && s >= 0 && s < 1000 ? s : GRPC_UNKNOWN;
	} else if (header_value(buf, len, "grpc-message", v, sizeof(v))) {
		size_t k = 0;

		/* percent-encoded (gRPC's PROTOCOL-HTTP2.md); keep it printable */
		for (size_t i = 0; v[i] && k + 1 < sizeof(r->grpc_message); i++) {
			int c = (unsigned char)v[i];

			if (c == '%' && hex_digit(v[i + 1]) >= 0 &&
			    hex_digit(v[i + 2]) >= 0) {
				c = hex_digit(v[i + 1]) << 4 | hex_digit(v[i + 2]);
				i += 2;
			}
			r->grpc_message[k++] = c >= ' ' && c < 0x7f ? c : '?';
		}
		r->grpc_message[k] = 0;
	} else if (header_value(buf, len, "retry-after", v, sizeof(v))) {
		char *end;
		long secs = strtol(v, &end, 10);
		time_t t;

		if (end != v && !*end && secs >= 0 && secs < 86400) {
			r->retry_after_ms = secs * 1000;
		} else if ((t = curl_getdate(v, NULL)) != -1) {
			time_t now = time(NULL);

			r->retry_after_ms = t > now ? (t - now) * 1000 : 0;
		}
	} else if (header_value(buf, len, "content-type", v, sizeof(v))) {
		r->protobuf = strncasecmp(v, "application/x-protobuf", 22) == 0;
	} else if (header_value(buf, len, "grpc-status-details-bin", v, sizeof(v))) {
		uint8_t bin[sizeof(v)];
		long bl = base64_decode(v, strlen(v), bin, sizeof(bin));

		if (bl > 0)
			rpc_status_parse(bin, bl, NULL, 0, &r->retry_after_ms);
	}
	return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ud)
{
	struct response *r = ud;
	size_t len = size * n, take = len;

	if (r->len + take > RESPONSE_MAX)
		take = RESPONSE_MAX - r->len;
	if (take) {
		memcpy(r->body + r->len, buf, take);
		r->len += take;
	}
	return len;
}

/* ---- one attempt ---- */

/* The OTLP specification's retryable gRPC codes (otlp.md, "Failures"). */
static bool grpc_retryable(int code)
{
	switch (code) {
	case GRPC_CANCELLED: case GRPC_DEADLINE_EXCEEDED:
	case GRPC_RESOURCE_EXHAUSTED: case GRPC_ABORTED:
	case GRPC_OUT_OF_RANGE: case GRPC_UNAVAILABLE: case GRPC_DATA_LOSS:
		return true;
	}
	return false;
}

/* gRPC's HTTP-to-gRPC status mapping (doc/http-grpc-status-mapping.md). */
static int grpc_from_http(long status)
{
	switch (status) {
	case 400: return GRPC_INTERNAL;
	case 401: return GRPC_UNAUTHENTICATED;
	case 403: return GRPC_PERMISSION_DENIED;
	case 404: return GRPC_UNIMPLEMENTED;
	case 429: case 502: case 503: case 504: return GRPC_UNAVAILABLE;
	}
	return GRPC_UNKNOWN;
}

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
 * partial_success - the rejected item count and message of an
 * Export*ServiceResponse in @buf (0 when it has none or is undecodable:
 * the request was accepted either way).
 */
static int64_t partial_success(enum otlp_signal sig, const uint8_t *buf,
			       size_t len, char *msg, size_t msglen)
{
	int64_t rejected = 0;

	msg[0] = 0;
	switch (sig) {
	case OTLP_SIGNAL_TRACES: {
		Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceResponse *r =
			opentelemetry__proto__collector__trace__v1__export_trace_service_response__unpack(NULL, len, buf);

		if (r && r->partial_success) {
			rejected = r->partial_success->rejected_spans;
			snprintf(msg, msglen, "%s", r->partial_success->error_message);
		}
		if (r)
			opentelemetry__proto__collector__trace__v1__export_trace_service_response__free_unpacked(r, NULL);
		break;
	}
	case OTLP_SIGNAL_LOGS: {
		Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceResponse *r =
			opentelemetry__proto__collector__logs__v1__export_logs_service_response__unpack(NULL, len, buf);

		if (r && r->partial_success) {
			rejected = r->partial_success->rejected_log_records;
			snprintf(msg, msglen, "%s", r->partial_success->error_message);
		}
		if (r)
			opentelemetry__proto__collector__logs__v1__export_logs_service_response__free_unpacked(r, NULL);
		break;
	}
	case OTLP_SIGNAL_PROFILES: {
		Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse *r =
			opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(NULL, len, buf);

		if (r && r->partial_success) {
			rejected = r->partial_success->rejected_profiles;
			snprintf(msg, msglen, "%s", r->partial_success->error_message);
		}
		if (r)
			opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(r, NULL);
		break;
	}
	default:
		break;
	}
	return rejected > 0 ? rejected : 0;
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
	struct response *rs = &t->resp;
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
			code = status == 200 ? GRPC_UNKNOWN : grpc_from_http(status);
		if (code == GRPC_OK) {
			/* one uncompressed length-prefixed message, or nothing */
			if (rs->len >= GRPC_PREFIX && rs->body[0] == 0)
				*rejected = partial_success(sig, rs->body + GRPC_PREFIX,
							    rs->len - GRPC_PREFIX, msg, sizeof(msg));
			snprintf(why, whylen, "%s: partial success: %s", url, msg);
			return OTLP_SENT;
		}
		snprintf(why, whylen, "%s: grpc-status %d%s%s (HTTP %ld)", url,
			 code, rs->grpc_message[0] ? ": " : "", rs->grpc_message, status);
		return grpc_retryable(code) ? OTLP_RETRY : OTLP_FAIL;
	}

	if (status >= 200 && status < 300) {
		if (rs->protobuf)
			*rejected = partial_success(sig, rs->body, rs->len, msg, sizeof(msg));
		snprintf(why, whylen, "%s: partial success: %s", url, msg);
		return OTLP_SENT;
	}
	/* An OTLP/HTTP error body is a google.rpc.Status, if the server says so. */
	if (!rs->protobuf || !rpc_status_parse(rs->body, rs->len, msg, sizeof(msg), retry_ms))
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
	size_t pre = t->protocol == OTLP_PROTO_GRPC ? GRPC_PREFIX : 0, n;
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
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &t->resp);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
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
		rc = signal_url(c, s, &t->url[s], &bad);
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
	t->resp.body = malloc(RESPONSE_MAX);
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
