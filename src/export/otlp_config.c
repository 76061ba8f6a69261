// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_config.c - the OTLP exporter's configuration (see otlp.h).
 *
 * Owns: reading the OpenTelemetry SDK environment variables into a
 * struct otlp_config (OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES), their "k=v,k2=v2" percent-encoded lists, and
 * freeing it. Follows the OpenTelemetry specification
 * (protocol/exporter.md, configuration/sdk-environment-variables.md,
 * resource/sdk.md). Endpoint syntax is checked by otlp_exporter_new()
 * (otlp.c), which is where an endpoint is used.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "export/otlp.h"
#include "util/hex.h"

#define OTLP_DEFAULT_TIMEOUT_MS		10000
#define OTLP_DEFAULT_QUEUE_BYTES	(64u << 20)
#define OTLP_DEFAULT_MAX_RETRY_MS	60000

static const char *const signal_env[OTLP_SIGNAL_MAX] = {
	[OTLP_SIGNAL_TRACES] = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	[OTLP_SIGNAL_LOGS] = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
	[OTLP_SIGNAL_PROFILES] = "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
};

/* Record the first error only: it is the one the user must fix first. */
static void set_err(int *ret, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (*ret)
		return;
	*ret = -EINVAL;
	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int otlp_parse_protocol(const char *s, enum otlp_protocol *p)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "grpc") == 0)
		*p = OTLP_PROTO_GRPC;
	else if (strcmp(s, "http/protobuf") == 0)
		*p = OTLP_PROTO_HTTP_PROTOBUF;
	else
		return -EINVAL;
	return 0;
}

/* A non-empty environment variable, or NULL. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * percent_decode - a malloc'ed copy of @s[0..@len) with OWS trimmed and
 * %XX decoded. Returns NULL on a bad escape or a decoded NUL/CR/LF (set
 * *@bad) or out of memory (*@bad untouched).
 */
static char *percent_decode(const char *s, size_t len, bool *bad)
{
	char *out, *o;

	while (len && is_ows(*s))
		s++, len--;
	while (len && is_ows(s[len - 1]))
		len--;
	out = o = malloc(len + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			/* two hex digits must follow */
			if (i + 2 >= len || hex_digit(s[i + 1]) < 0 ||
			    hex_digit(s[i + 2]) < 0)
				goto bad;
			c = hex_digit(s[i + 1]) << 4 | hex_digit(s[i + 2]);
			i += 2;
		}
		if (c == 0 || c == '\r' || c == '\n')
			goto bad;
		*o++ = (char)c;
	}
	*o = 0;
	return out;
bad:
	*bad = true;
	free(out);
	return NULL;
}

/*
 * parse_kv_list - split @s ("k=v,k2=v2", W3C-baggage-like, the syntax of
 * OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES) calling @add
 * for each decoded pair; empty members are skipped. Returns 0, -EINVAL
 * (a member without '=' or with an empty key, a bad escape, or @add's
 * -EINVAL) or -ENOMEM.
 */
static int parse_kv_list(const char *s, void *ctx,
			 int (*add)(void *ctx, char *k, char *v))
{
	while (*s) {
		const char *end = strchr(s, ','), *eq;
		size_t len = end ? (size_t)(end - s) : strlen(s);
		bool bad = false, blank = true;
		char *k, *v;
		int err;

		for (size_t i = 0; i < len; i++)
			blank &= is_ows(s[i]);
		if (!blank) {
			eq = memchr(s, '=', len);
			if (!eq)
				return -EINVAL;
			k = percent_decode(s, eq - s, &bad);
			v = percent_decode(eq + 1, len - (eq + 1 - s), &bad);
			if (!k || !v || !*k) {
				free(k);
				free(v);
				return bad || (k && v) ? -EINVAL : -ENOMEM;
			}
			err = add(ctx, k, v);	/* takes k and v */
			if (err)
				return err;
		}
		s += len + (end ? 1 : 0);
	}
	return 0;
}

/* HTTP field-name characters (RFC 9110 token). */
static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("!#$%&'*+-.^_`|~", *s) &&
		    !(*s >= '0' && *s <= '9') && !(*s >= 'a' && *s <= 'z') &&
		    !(*s >= 'A' && *s <= 'Z'))
			return false;
	return true;
}

int otlp_config_add_header(struct otlp_config *c, const char *key, const char *value)
{
	char *line;

	if (!key || !value || !is_token(key) || strpbrk(value, "\r\n") ||
	    c->nheaders >= OTLP_MAX_HEADERS)
		return -EINVAL;
	if (asprintf(&line, "%s: %s", key, value) < 0)
		return -ENOMEM;
	c->headers[c->nheaders++] = line;
	return 0;
}

static int add_header(void *ctx, char *k, char *v)
{
	int err = otlp_config_add_header(ctx, k, v);

	free(k);
	free(v);
	return err;
}

static int add_resource_attr(void *ctx, char *k, char *v)
{
	struct otlp_config *c = ctx;

	/* A later duplicate replaces the earlier value. */
	for (unsigned int i = 0; i < c->nresource; i++) {
		if (strcmp(c->resource_keys[i], k) == 0) {
			free(k);
			free(c->resource_values[i]);
			c->resource_values[i] = v;
			return 0;
		}
	}
	if (c->nresource >= OTLP_MAX_RESOURCE_ATTRS) {
		free(k);
		free(v);
		return -EINVAL;
	}
	c->resource_keys[c->nresource] = k;
	c->resource_values[c->nresource++] = v;
	return 0;
}

static void free_resource_attrs(struct otlp_config *c)
{
	for (unsigned int i = 0; i < c->nresource; i++) {
		free(c->resource_keys[i]);
		free(c->resource_values[i]);
	}
	c->nresource = 0;
}

static void free_headers(struct otlp_config *c)
{
	for (unsigned int i = 0; i < c->nheaders; i++)
		free(c->headers[i]);
	c->nheaders = 0;
}

/* *@dst = copy of env var @name (or NULL). Returns 0 or -ENOMEM. */
static int dup_env(char **dst, const char *name)
{
	const char *v = env(name);

	*dst = NULL;
	if (v && !(*dst = strdup(v)))
		return -ENOMEM;
	return 0;
}

/* Parse a non-negative decimal number of milliseconds. */
static int parse_ms(const char *s, unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > UINT_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

int otlp_config_from_env(struct otlp_config *c, char *err, size_t errlen)
{
	const char *v;
	int ret = 0, e;

	memset(c, 0, sizeof(*c));
	if (err && errlen)
		err[0] = 0;
	c->protocol = OTLP_PROTO_HTTP_PROTOBUF;	/* the specification's default */
	c->timeout_ms = OTLP_DEFAULT_TIMEOUT_MS;
	c->gzip = true;
	c->max_queue_bytes = OTLP_DEFAULT_QUEUE_BYTES;
	c->max_retry_ms = OTLP_DEFAULT_MAX_RETRY_MS;

	if (dup_env(&c->endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT") ||
	    dup_env(&c->certificate, "OTEL_EXPORTER_OTLP_CERTIFICATE") ||
	    dup_env(&c->client_certificate, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE") ||
	    dup_env(&c->client_key, "OTEL_EXPORTER_OTLP_CLIENT_KEY") ||
	    dup_env(&c->service_name, "OTEL_SERVICE_NAME"))
		return -ENOMEM;
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++)
		if (dup_env(&c->signal_endpoint[s], signal_env[s]))
			return -ENOMEM;

	v = env("OTEL_EXPORTER_OTLP_PROTOCOL");
	if (v && otlp_parse_protocol(v, &c->protocol))
		set_err(&ret, err, errlen,
			"OTEL_EXPORTER_OTLP_PROTOCOL=%.40s: unsupported (grpc or http/protobuf)", v);

	v = env("OTEL_EXPORTER_OTLP_INSECURE");
	c->insecure = v && strcasecmp(v, "true") == 0;

	v = env("OTEL_EXPORTER_OTLP_TIMEOUT");
	if (v && (parse_ms(v, &c->timeout_ms) || !c->timeout_ms)) {
		c->timeout_ms = OTLP_DEFAULT_TIMEOUT_MS;
		set_err(&ret, err, errlen,
			"OTEL_EXPORTER_OTLP_TIMEOUT=%.40s: expected milliseconds > 0", v);
	}

	v = env("OTEL_EXPORTER_OTLP_COMPRESSION");
	if (v && strcmp(v, "gzip") == 0)
		c->gzip = true;
	else if (v && strcmp(v, "none") == 0)
		c->gzip = false;
	else if (v)
		set_err(&ret, err, errlen,
			"OTEL_EXPORTER_OTLP_COMPRESSION=%.40s: expected gzip or none", v);

	v = env("OTEL_EXPORTER_OTLP_HEADERS");
	if (v) {
		e = parse_kv_list(v, c, add_header);
		if (e == -ENOMEM)
			return e;
		if (e) {
			free_headers(c);
			set_err(&ret, err, errlen,
				"OTEL_EXPORTER_OTLP_HEADERS: malformed (expected key=value,key2=value2, percent-encoded, at most %d)",
				OTLP_MAX_HEADERS);
		}
	}

	v = env("OTEL_RESOURCE_ATTRIBUTES");
	if (v) {
		e = parse_kv_list(v, c, add_resource_attr);
		if (e == -ENOMEM)
			return e;
		if (e) {
			/* The specification: discard the whole variable. */
			free_resource_attrs(c);
			set_err(&ret, err, errlen,
				"OTEL_RESOURCE_ATTRIBUTES: malformed (expected key=value,key2=value2, percent-encoded, at most %d)",
				OTLP_MAX_RESOURCE_ATTRS);
		}
	}
	return ret;
}

void otlp_config_free(struct otlp_config *c)
{
	if (!c)
		return;
	free(c->endpoint);
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++)
		free(c->signal_endpoint[s]);
	free_headers(c);
	free(c->certificate);
	free(c->client_certificate);
	free(c->client_key);
	free(c->service_name);
	free_resource_attrs(c);
	memset(c, 0, sizeof(*c));
}
