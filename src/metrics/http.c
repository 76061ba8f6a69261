// SPDX-License-Identifier: GPL-2.0
/*
 * http.c - the /metrics HTTP server over libmicrohttpd (see http.h).
 *
 * metrics_server_start() parses HOST:PORT, binds and listens itself (so
 * "port in use" comes back as a reason, and port 0 as the port the kernel
 * picked), then hands the socket to one MHD daemon with its own polling
 * thread and bounds on connections, per-client connections, idle time and
 * per-connection memory. on_request() answers each request: other methods
 * than GET/HEAD at once with 405 (their bodies are never read), GET/HEAD
 * through the caller's handler once the request is complete.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "metrics/http.h"

#define LISTEN_BACKLOG	16
#define TEXT_PLAIN	"text/plain; charset=utf-8"

struct metrics_server {
	struct MHD_Daemon *daemon;
	metrics_handler_fn fn;
	void *ctx;
	unsigned int port;
	char url[INET6_ADDRSTRLEN + 16];
};

/* address parsing */

int metrics_parse_address(const char *host_port, char *host, size_t hostlen,
			  unsigned int *port, char *err, size_t errlen)
{
	const char *colon, *hs, *he, *p;
	char *end;
	unsigned long v;

	if (!host_port || !*host_port) {
		snprintf(err, errlen, "empty address: expected HOST:PORT");
		return -EINVAL;
	}
	if (host_port[0] == '[') {
		he = strchr(host_port, ']');
		if (!he || he[1] != ':') {
			snprintf(err, errlen, "expected [IPv6 address]:PORT");
			return -EINVAL;
		}
		hs = host_port + 1;
		colon = he + 1;
		if (he == hs) {
			snprintf(err, errlen, "empty IPv6 address in brackets");
			return -EINVAL;
		}
	} else {
		colon = strrchr(host_port, ':');
		if (!colon) {
			snprintf(err, errlen, "expected HOST:PORT (:PORT for every interface)");
			return -EINVAL;
		}
		if (memchr(host_port, ':', colon - host_port)) {
			snprintf(err, errlen, "an IPv6 address needs brackets: [ADDRESS]:PORT");
			return -EINVAL;
		}
		hs = host_port;
		he = colon;
	}
	p = colon + 1;
	if (*p < '0' || *p > '9') {
		snprintf(err, errlen, "missing port: expected HOST:PORT");
		return -EINVAL;
	}
	errno = 0;
	v = strtoul(p, &end, 10);
	if (errno || *end || v > 65535) {
		snprintf(err, errlen, "bad port \"%s\": expected 0..65535", p);
		return -EINVAL;
	}
	if ((size_t)(he - hs) >= hostlen) {
		snprintf(err, errlen, "host name too long");
		return -EINVAL;
	}
	for (const char *c = hs; c < he; c++)
		if (*c <= ' ' || *c == '/' || *c == '[' || *c == ']') {
			snprintf(err, errlen, "bad character in host \"%.*s\"",
				 (int)(he - hs), hs);
			return -EINVAL;
		}
	memcpy(host, hs, he - hs);
	host[he - hs] = '\0';
	*port = v;
	return 0;
}

/* listening */

/* A listening TCP socket on @sa, or a negative errno. */
static int listen_on(const struct sockaddr *sa, socklen_t salen)
{
	int one = 1, zero = 0, fd, err;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a port left in TIME_WAIT by the last run is free; a listening one is not */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		/* "::" (every interface) takes IPv4 too */
		if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	}
	if (bind(fd, sa, salen) || listen(fd, LISTEN_BACKLOG)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Listen on every interface: IPv6 "::" with IPv4 mapped, else IPv4 only. */
static int listen_any(unsigned int port)
{
	struct sockaddr_in6 s6 = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(port),
		.sin6_addr = IN6ADDR_ANY_INIT,
	};
	struct sockaddr_in s4 = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int fd = listen_on((const void *)&s6, sizeof(s6));

	if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
		fd = listen_on((const void *)&s4, sizeof(s4));
	return fd;
}

/*
 * Listen on @host (resolved; the first address that binds). Returns the
 * socket, or a negative errno with the reason in @err.
 */
static int listen_host(const char *host, unsigned int port, char *err, size_t errlen)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	};
	struct addrinfo *res, *ai;
	char service[8];
	int fd = -EADDRNOTAVAIL, gai;

	if (!*host) {
		fd = listen_any(port);
		if (fd < 0)
			snprintf(err, errlen, "cannot listen: %s", strerror(-fd));
		return fd;
	}
	snprintf(service, sizeof(service), "%u", port);
	gai = getaddrinfo(host, service, &hints, &res);
	if (gai) {
		snprintf(err, errlen, "cannot resolve \"%s\": %s", host,
			 gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
		return -EINVAL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int r = listen_on(ai->ai_addr, ai->ai_addrlen);

		if (r >= 0) {
			fd = r;
			break;
		}
		if (ai == res)
			fd = r;	/* report the first address's reason */
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(err, errlen, "cannot listen: %s", strerror(-fd));
	return fd;
}

/* "http://ADDRESS:PORT" of the bound socket @fd into @s. */
static void describe_socket(struct metrics_server *s, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char addr[INET6_ADDRSTRLEN] = "?";

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (void *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
		s->port = ntohs(s6->sin6_port);
		snprintf(s->url, sizeof(s->url), "http://[%s]:%u", addr, s->port);
	} else {
		struct sockaddr_in *s4 = (void *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
		s->port = ntohs(s4->sin_port);
		snprintf(s->url, sizeof(s->url), "http://%s:%u", addr, s->port);
	}
}

/* requests */

/* Queue a response of @status with @body (malloc'ed, taken; NULL: @text). */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
			     const char *content_type, char *body, size_t len,
			     const char *text)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (body) {
		r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
		if (!r)
			free(body);
	} else {
		r = MHD_create_response_from_buffer(strlen(text), (void *)text,
						    MHD_RESPMEM_PERSISTENT);
	}
	if (!r)
		return MHD_NO;	/* out of memory: MHD closes the connection */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				content_type ? content_type : TEXT_PLAIN);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req_cls)
{
	static int headers_seen;	/* marker: the first call was made */
	struct metrics_server *s = cls;
	struct metrics_response resp = { 0 };
	int err;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, NULL, 0,
			     "method not allowed\n");
	if (!*req_cls) {
		/* headers only so far; answer once the request is complete */
		*req_cls = &headers_seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;	/* a GET with a body: ignored */
		return MHD_YES;
	}
	err = s->fn(s->ctx, url, &resp);
	if (err == -ENOENT) {
		free(resp.body);
		return reply(c, MHD_HTTP_NOT_FOUND, NULL, NULL, 0, "not found\n");
	}
	if (err) {
		free(resp.body);
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, 0,
			     err == -ENOMEM ? "out of memory\n" : "internal error\n");
	}
	return reply(c, resp.status ? resp.status : MHD_HTTP_OK, resp.content_type,
		     resp.body, resp.len, "");
}

/* server */

struct metrics_server *metrics_server_start(const char *host_port,
					    metrics_handler_fn fn, void *ctx,
					    char *err, size_t errlen)
{
	struct metrics_server *s;
	char host[256];
	unsigned int port;
	int fd;

	if (metrics_parse_address(host_port, host, sizeof(host), &port, err, errlen))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->fn = fn;
	s->ctx = ctx;
	fd = listen_host(host, port, err, errlen);
	if (fd < 0) {
		free(s);
		return NULL;
	}
	describe_socket(s, fd);
	errno = 0;
	s->daemon = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC,
				     0, NULL, NULL, on_request, s,
				     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				     MHD_OPTION_CONNECTION_LIMIT,
				     (unsigned int)METRICS_HTTP_MAX_CONNECTIONS,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				     (unsigned int)METRICS_HTTP_MAX_PER_CLIENT,
				     MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned int)METRICS_HTTP_TIMEOUT_S,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				     (size_t)METRICS_HTTP_MEMORY_BYTES,
				     MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, errlen, "cannot start the HTTP server%s%s",
			 errno ? ": " : "", errno ? strerror(errno) : "");
		if (fcntl(fd, F_GETFD) >= 0)	/* unless MHD closed it already */
			close(fd);
		free(s);
		return NULL;
	}
	return s;
}

const char *metrics_server_url(const struct metrics_server *s)
{
	return s->url;
}

unsigned int metrics_server_port(const struct metrics_server *s)
{
	return s->port;
}

void metrics_server_stop(struct metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->daemon);	/* joins its thread, closes the socket */
	free(s);
}
