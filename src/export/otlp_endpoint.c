// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_endpoint.c - OTLP endpoints and request URLs (see
 * otlp_transport_internal.h).
 *
 * Owns: the endpoint syntax (http://HOST[:PORT][/PATH], https://...,
 * HOST:PORT) checked for --otlp-endpoint and OTEL_EXPORTER_OTLP_*, and
 * the URL each signal's requests go to: the gRPC method path, the
 * OTLP/HTTP signal path appended to a base endpoint, or a per-signal
 * OTLP/HTTP endpoint as is (otlp.md, "Endpoint URLs for OTLP/HTTP").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "export/otlp_transport_internal.h"
#include "util/hex.h"

static const char *const http_path[OTLP_SIGNAL_MAX] = {
	"/v1/traces", "/v1/logs", "/v1development/profiles",
};

static const char *const grpc_path[OTLP_SIGNAL_MAX] = {
	"/opentelemetry.proto.collector.trace.v1.TraceService/Export",
	"/opentelemetry.proto.collector.logs.v1.LogsService/Export",
	"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
};

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

/* otlp_signal_url - see otlp_transport_internal.h. */
int otlp_signal_url(const struct otlp_config *c, enum otlp_signal sig,
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
