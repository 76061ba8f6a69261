// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_response.c - what an OTLP collector's answer says (see
 * otlp_transport_internal.h).
 *
 * Owns: the curl callbacks that collect one attempt's answer into
 * struct otlp_response (HTTP headers and, for HTTP/2, trailers:
 * grpc-status/grpc-message from the trailers or a trailers-only answer,
 * Retry-After, google.rpc.RetryInfo in grpc-status-details-bin; the
 * first OTLP_RESPONSE_MAX bytes of the body), the small protobuf and
 * base64 decoders they need, the google.rpc.Status of an OTLP/HTTP
 * error, partial success, and which gRPC codes are retryable (the OTLP
 * specification, otlp.md: "Failures", "Throttling"; gRPC's
 * PROTOCOL-HTTP2.md and status code mapping). Turning that into an
 * outcome is otlp_transport_send()'s (otlp_transport.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "export/otlp_transport_internal.h"
#include "util/hex.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

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

/* otlp_rpc_status_parse - see otlp_transport_internal.h. */
bool otlp_rpc_status_parse(const uint8_t *buf, size_t n, char *msg,
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

/* otlp_on_header - see otlp_transport_internal.h. */
size_t otlp_on_header(char *buf, size_t size, size_t n, void *ud)
{
	struct otlp_response *r = ud;
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
			otlp_rpc_status_parse(bin, bl, NULL, 0, &r->retry_after_ms);
	}
	return len;
}

/* otlp_on_body - see otlp_transport_internal.h. */
size_t otlp_on_body(char *buf, size_t size, size_t n, void *ud)
{
	struct otlp_response *r = ud;
	size_t len = size * n, take = len;

	if (r->len + take > OTLP_RESPONSE_MAX)
		take = OTLP_RESPONSE_MAX - r->len;
	if (take) {
		memcpy(r->body + r->len, buf, take);
		r->len += take;
	}
	return len;
}

/* otlp_grpc_retryable - see otlp_transport_internal.h. */
bool otlp_grpc_retryable(int code)
{
	switch (code) {
	case GRPC_CANCELLED: case GRPC_DEADLINE_EXCEEDED:
	case GRPC_RESOURCE_EXHAUSTED: case GRPC_ABORTED:
	case GRPC_OUT_OF_RANGE: case GRPC_UNAVAILABLE: case GRPC_DATA_LOSS:
		return true;
	}
	return false;
}

/* otlp_grpc_from_http - see otlp_transport_internal.h. */
int otlp_grpc_from_http(long status)
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

/* otlp_partial_success - see otlp_transport_internal.h. */
int64_t otlp_partial_success(enum otlp_signal sig, const uint8_t *buf,
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
