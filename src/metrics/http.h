/* SPDX-License-Identifier: GPL-2.0 */
/*
 * http.h - a small HTTP server for /metrics and /healthz.
 *
 * Owns: the listening socket (HOST:PORT parsed and bound here, so a bad
 * address or a taken port is reported before anything slow starts) and a
 * libmicrohttpd daemon on one internal thread that polls every connection:
 * a client that connects and sends nothing, or sends slowly, never blocks
 * the others. Connections are bounded in number (in all and per client
 * address), in memory and in idle time, so a hostile client costs little
 * and one that stalls mid-request is dropped after METRICS_HTTP_TIMEOUT_S.
 * Only GET and HEAD are served (405 otherwise); the caller's handler
 * renders the body of a path, or says there is none (404).
 *
 * Threads: the handler runs on the server's thread, one request at a
 * time; it must not block for long (every other client waits meanwhile).
 */
#ifndef PROFD_METRICS_HTTP_H
#define PROFD_METRICS_HTTP_H

#include <stddef.h>

#define METRICS_HTTP_MAX_CONNECTIONS	32	/* at once, all clients */
#define METRICS_HTTP_MAX_PER_CLIENT	16	/* at once, per client address */
/*
 * Idle connections closed after (seconds): a client that sends half a
 * request and stalls holds its slot this long, so even clients at the
 * per-address limit (a local scraper shares 127.0.0.1 with them) delay a
 * scrape by at most this; shorter than any scrape interval.
 */
#define METRICS_HTTP_TIMEOUT_S		2
#define METRICS_HTTP_MEMORY_BYTES	(32 * 1024)	/* per connection: headers */

/* What the handler answers for a path. */
struct metrics_response {
	unsigned int status;		/* HTTP status; 0 means 200 */
	const char *content_type;	/* static string; NULL: text/plain; charset=utf-8 */
	char *body;			/* malloc'ed; the server frees it; NULL: empty */
	size_t len;			/* bytes of @body */
};

/*
 * Render the response for a GET or HEAD of @path (the URL path, without
 * the query string) into @resp (zeroed before the call). Return 0 when
 * @resp is filled, -ENOENT for "no such path" (404), or another negative
 * errno (500; @resp->body, if set, is freed and not sent).
 */
typedef int (*metrics_handler_fn)(void *ctx, const char *path,
				  struct metrics_response *resp);

struct metrics_server;

/*
 * metrics_server_start - bind @host_port and serve it with @fn(@ctx, ...)
 * until metrics_server_stop(). @host_port is "HOST:PORT": HOST an IPv4
 * address, "[IPv6 address]", a name such as "localhost" (its first
 * address that binds), or empty for every interface (":9400"); PORT
 * 0..65535, 0 for a port the kernel picks. Returns the server, or NULL
 * with a one-line reason in @err (no "profd: " prefix): malformed
 * address, unknown host, port in use, out of memory.
 */
struct metrics_server *metrics_server_start(const char *host_port,
					    metrics_handler_fn fn, void *ctx,
					    char *err, size_t errlen);

/*
 * metrics_server_url - "http://ADDRESS:PORT" actually bound (the port the
 * kernel picked for port 0; IPv6 in brackets). Owned by @s.
 */
const char *metrics_server_url(const struct metrics_server *s);

/* metrics_server_port - the port bound (host byte order). */
unsigned int metrics_server_port(const struct metrics_server *s);

/*
 * metrics_server_stop - close the listening socket and every connection,
 * wait for the server's thread to end, free @s. NULL is fine.
 */
void metrics_server_stop(struct metrics_server *s);

/*
 * metrics_parse_address - split "HOST:PORT" (forms as above) into @host
 * (brackets removed; "" for every interface) and *@port. Returns 0, or
 * -EINVAL with a reason in @err.
 */
int metrics_parse_address(const char *host_port, char *host, size_t hostlen,
			  unsigned int *port, char *err, size_t errlen);

#endif /* PROFD_METRICS_HTTP_H */
