// SPDX-License-Identifier: GPL-2.0
/*
 * test_metrics.c - unit tests of src/metrics/: the Prometheus text writer
 * (prom.c: families, escaping, numbers, the rules it refuses to break)
 * and the HTTP server (http.c: address parsing, port 0, GET/HEAD/404/405,
 * a silent client that must not block others, a taken port, IPv6).
 * Prints one ok/FAIL line per check; exit status 1 on any failure.
 * Run by tests/test_metrics.py.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "metrics/http.h"
#include "metrics/prom.h"

/* prom.c */

static char *finish(struct prom_buf *b, int *err)
{
	char *out;
	size_t len;

	*err = prom_finish(b, &out, &len);
	if (!*err && strlen(out) != len) {
		*err = -EIO;
		free(out);
		return NULL;
	}
	return out;
}

static void test_prom_format(void)
{
	struct prom_buf b;
	struct prom_label l[2] = {
		{ "reason", "a\\b\"c\nd" },
		{ "x", "" },
	};
	char *out;
	int err;

	prom_init(&b);
	prom_family(&b, "a_total", PROM_COUNTER, "help with \\ and\nnewline \"quoted\"");
	prom_sample_u64(&b, "a_total", l, 2, 18446744073709551615ULL);
	prom_sample_u64(&b, "a_total", l + 1, 1, 0);
	prom_metric(&b, "g", PROM_GAUGE, "", 0.1);
	prom_metric(&b, "h:sub", PROM_UNTYPED, "x", 1e21);
	prom_metric(&b, "n", PROM_GAUGE, "x", NAN);
	prom_metric(&b, "i", PROM_GAUGE, "x", INFINITY);
	prom_metric(&b, "j", PROM_GAUGE, "x", -INFINITY);
	prom_metric(&b, "k", PROM_GAUGE, "x", 2.5);
	out = finish(&b, &err);
	CHECK(!err && out, "prom: a valid exposition finishes (%d)", err);
	if (!out)
		return;
	CHECK(!strncmp(out,
		       "# HELP a_total help with \\\\ and\\nnewline \"quoted\"\n"
		       "# TYPE a_total counter\n"
		       "a_total{reason=\"a\\\\b\\\"c\\nd\",x=\"\"} 18446744073709551615\n"
		       "a_total{x=\"\"} 0\n", strlen("# HELP a_total help with \\\\ and"
		       "\\nnewline \"quoted\"\n# TYPE a_total counter\n"
		       "a_total{reason=\"a\\\\b\\\"c\\nd\",x=\"\"} 18446744073709551615\n"
		       "a_total{x=\"\"} 0\n")),
	      "prom: HELP escapes \\ and newline; label values \\, \" and newline");
	CHECK(strstr(out, "# HELP g \n# TYPE g gauge\ng 0.1\n") != NULL,
	      "prom: 0.1 is written shortest");
	CHECK(strstr(out, "# TYPE h:sub untyped\nh:sub 1e+21\n") != NULL,
	      "prom: colons in names, untyped, exponents");
	CHECK(strstr(out, "\nn NaN\n") && strstr(out, "\ni +Inf\n") &&
	      strstr(out, "\nj -Inf\n") && strstr(out, "\nk 2.5\n"),
	      "prom: NaN, +Inf, -Inf, 2.5");
	CHECK(out[strlen(out) - 1] == '\n', "prom: ends in a newline");
	free(out);
}

/* @fn breaks one rule: prom_finish() must fail with -EINVAL and hand nothing. */
static void expect_invalid(const char *what, void (*fn)(struct prom_buf *))
{
	struct prom_buf b;
	int err;
	char *out;

	prom_init(&b);
	prom_metric_u64(&b, "ok_total", PROM_COUNTER, "fine", 1);
	fn(&b);
	out = finish(&b, &err);
	CHECK(err == -EINVAL && !out, "prom: refuses %s (%d)", what, err);
	free(out);
}

static void bad_counter(struct prom_buf *b) { prom_metric_u64(b, "requests", PROM_COUNTER, "", 1); }
static void bad_name(struct prom_buf *b) { prom_metric_u64(b, "1abc", PROM_GAUGE, "", 1); }
static void bad_name2(struct prom_buf *b) { prom_metric_u64(b, "a-b", PROM_GAUGE, "", 1); }
static void dup_family(struct prom_buf *b) { prom_metric_u64(b, "ok_total", PROM_COUNTER, "", 2); }
static void wrong_family(struct prom_buf *b) { prom_sample_u64(b, "other", NULL, 0, 1); }

static void bad_label(struct prom_buf *b)
{
	struct prom_label l = { "a:b", "x" };

	prom_family(b, "g2", PROM_GAUGE, "");
	prom_sample_u64(b, "g2", &l, 1, 1);
}

static void reserved_label(struct prom_buf *b)
{
	struct prom_label l = { "__name__", "x" };

	prom_family(b, "g3", PROM_GAUGE, "");
	prom_sample_u64(b, "g3", &l, 1, 1);
}

static void dup_label(struct prom_buf *b)
{
	struct prom_label l[2] = { { "a", "x" }, { "a", "y" } };

	prom_family(b, "g4", PROM_GAUGE, "");
	prom_sample_u64(b, "g4", l, 2, 1);
}

static void test_prom_rules(void)
{
	struct prom_buf b;
	char *out;
	int err;

	expect_invalid("a counter without _total", bad_counter);
	expect_invalid("a name starting with a digit", bad_name);
	expect_invalid("a name with '-'", bad_name2);
	expect_invalid("a family started twice", dup_family);
	expect_invalid("a sample of another family", wrong_family);
	expect_invalid("a label name with ':'", bad_label);
	expect_invalid("a reserved label name", reserved_label);
	expect_invalid("a label given twice", dup_label);
	prom_init(&b);
	out = finish(&b, &err);
	CHECK(!err && out && !*out, "prom: an empty exposition is \"\"");
	free(out);
	/* a large body grows the buffer: 20000 samples */
	prom_init(&b);
	prom_family(&b, "big", PROM_GAUGE, "many");
	for (int i = 0; i < 20000; i++) {
		char v[16];
		struct prom_label l = { "i", v };

		snprintf(v, sizeof(v), "%d", i);
		prom_sample_u64(&b, "big", &l, 1, i);
	}
	out = finish(&b, &err);
	CHECK(!err && out && strstr(out, "big{i=\"19999\"} 19999\n"),
	      "prom: 20000 samples in one growing buffer");
	free(out);
	CHECK(prom_valid_name("a_b:c1") && !prom_valid_name("") &&
	      !prom_valid_name("a b") && prom_valid_label_name("_x") &&
	      !prom_valid_label_name("9x"), "prom: name rules");
}

/* http.c: address parsing */

static void test_parse(void)
{
	static const struct {
		const char *in, *host;
		unsigned int port;
	} good[] = {
		{ "127.0.0.1:7071", "127.0.0.1", 7071 },
		{ ":9400", "", 9400 },
		{ "localhost:0", "localhost", 0 },
		{ "[::1]:80", "::1", 80 },
		{ "[::]:65535", "::", 65535 },
	};
	static const char *const bad[] = {
		"", "7071", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
		"127.0.0.1:-1", "127.0.0.1:12x", "::1:80", "[::1]80", "[]:80",
		"[::1", "a b:80", "host/x:80",
	};
	char host[64], err[128];
	unsigned int port;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int r = metrics_parse_address(good[i].in, host, sizeof(host), &port,
					      err, sizeof(err));

		CHECK(!r && !strcmp(host, good[i].host) && port == good[i].port,
		      "parse \"%s\" -> \"%s\" %u", good[i].in, host, port);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(metrics_parse_address(bad[i], host, sizeof(host), &port, err,
					    sizeof(err)) == -EINVAL && err[0],
		      "parse \"%s\" refused: %s", bad[i], err);
	}
}

/* http.c: the server */

static int requests;

static int handler(void *ctx, const char *path, struct metrics_response *r)
{
	requests++;
	if (!strcmp(path, "/hello")) {
		r->body = strdup("hello\n");
		r->len = 6;
		r->content_type = "text/x-test";
		return 0;
	}
	if (!strcmp(path, "/sick")) {
		r->status = 503;
		r->body = strdup("sick\n");
		r->len = 5;
		return 0;
	}
	if (!strcmp(path, "/fail"))
		return -EIO;
	return -ENOENT;
}

static int connect_to(int family, unsigned int port)
{
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (family == AF_INET ? connect(fd, (void *)&s4, sizeof(s4)) :
				connect(fd, (void *)&s6, sizeof(s6))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Send @req to 127.0.0.1:@port (or [::1]) and read the reply until the
 * server closes, at most 3 s. Returns the bytes read into @out.
 */
static size_t http(int family, unsigned int port, const char *req, char *out,
		   size_t len)
{
	int fd = connect_to(family, port);
	size_t got = 0;

	out[0] = '\0';
	if (fd < 0)
		return 0;
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return 0;
	}
	while (got < len - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 3000) <= 0)
			break;
		n = read(fd, out + got, len - 1 - got);
		if (n <= 0)
			break;
		got += n;
	}
	out[got] = '\0';
	close(fd);
	return got;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_server(void)
{
	char err[256], out[4096];
	struct metrics_server *s, *s2;
	unsigned int port;
	int silent[4];
	double t0;

	s = metrics_server_start("127.0.0.1:0", handler, NULL, err, sizeof(err));
	CHECK(s != NULL, "server: starts on 127.0.0.1:0 (%s)", s ? "" : err);
	if (!s)
		return;
	port = metrics_server_port(s);
	CHECK(port > 0, "server: the kernel picked port %u", port);
	snprintf(err, sizeof(err), "http://127.0.0.1:%u", port);
	CHECK(!strcmp(metrics_server_url(s), err), "server: url %s", metrics_server_url(s));

	/* clients that connect and say nothing, or half a request line */
	for (int i = 0; i < 4; i++) {
		silent[i] = connect_to(AF_INET, port);
		if (i == 3 && silent[i] >= 0)
			(void)!write(silent[i], "GET /hel", 8);
	}
	t0 = now_s();
	http(AF_INET, port, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	     out, sizeof(out));
	CHECK(strstr(out, "HTTP/1.1 200 OK") && strstr(out, "\r\n\r\nhello\n") &&
	      strstr(out, "Content-Type: text/x-test"),
	      "server: GET /hello -> 200 with the handler's body and type");
	CHECK(now_s() - t0 < 1.0, "server: silent clients do not delay others (%.3f s)",
	      now_s() - t0);
	http(AF_INET, port, "GET /hello?x=1 HTTP/1.0\r\n\r\n", out, sizeof(out));
	CHECK(strstr(out, " 200 ") && strstr(out, "hello\n"),
	      "server: the query string is not part of the path");
	http(AF_INET, port, "HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	     out, sizeof(out));
	CHECK(strstr(out, " 200 ") && !strstr(out, "hello\n"), "server: HEAD has no body");
	http(AF_INET, port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	     out, sizeof(out));
	CHECK(strstr(out, "HTTP/1.1 404 ") != NULL, "server: unknown path -> 404");
	http(AF_INET, port, "GET /sick HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	     out, sizeof(out));
	CHECK(strstr(out, "HTTP/1.1 503 ") && strstr(out, "sick\n"),
	      "server: the handler's status");
	http(AF_INET, port, "GET /fail HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	     out, sizeof(out));
	CHECK(strstr(out, "HTTP/1.1 500 ") != NULL, "server: handler error -> 500");
	requests = 0;
	http(AF_INET, port, "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
	     "Connection: close\r\n\r\nabc", out, sizeof(out));
	CHECK(strstr(out, "HTTP/1.1 405 ") && strstr(out, "Allow: GET, HEAD") && !requests,
	      "server: POST -> 405 with Allow, its body never read, handler not called");
	http(AF_INET, port, "GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
	     "Connection: close\r\n\r\nabcde", out, sizeof(out));
	CHECK(strstr(out, " 200 ") && strstr(out, "hello\n"), "server: a GET body is ignored");
	http(AF_INET, port, "garbage\r\n\r\n", out, sizeof(out));
	CHECK(!strstr(out, " 200 "), "server: garbage is not answered 200");

	/* the same port again: in use */
	snprintf(out, sizeof(out), "127.0.0.1:%u", port);
	s2 = metrics_server_start(out, handler, NULL, err, sizeof(err));
	CHECK(!s2 && strstr(err, "in use"), "server: a taken port fails: %s", err);
	metrics_server_stop(s2);

	t0 = now_s();
	metrics_server_stop(s);
	CHECK(now_s() - t0 < 2.0, "server: stops at once with silent clients connected");
	for (int i = 0; i < 4; i++)
		if (silent[i] >= 0)
			close(silent[i]);
	CHECK(connect_to(AF_INET, port) < 0, "server: the port is closed after stop");

	s = metrics_server_start("nosuchhost.invalid:0", handler, NULL, err, sizeof(err));
	CHECK(!s && strstr(err, "nosuchhost.invalid"), "server: unknown host: %s", err);
	metrics_server_stop(s);
	s = metrics_server_start("192.0.2.1:0", handler, NULL, err, sizeof(err));
	CHECK(!s && strstr(err, "cannot listen"), "server: foreign address: %s", err);
	metrics_server_stop(s);

	/* IPv6 loopback, when the machine has it */
	s = metrics_server_start("[::1]:0", handler, NULL, err, sizeof(err));
	if (s) {
		port = metrics_server_port(s);
		http(AF_INET6, port, "GET /hello HTTP/1.0\r\n\r\n", out, sizeof(out));
		CHECK(strstr(out, " 200 ") && strstr(metrics_server_url(s), "http://[::1]:"),
		      "server: [::1] serves (%s)", metrics_server_url(s));
		metrics_server_stop(s);
	} else {
		printf("skip: no IPv6 loopback (%s)\n", err);
	}
	/* every interface: reachable on 127.0.0.1 */
	s = metrics_server_start(":0", handler, NULL, err, sizeof(err));
	CHECK(s != NULL, "server: \":0\" listens on every interface (%s)", s ? "" : err);
	if (s) {
		http(AF_INET, metrics_server_port(s), "GET /hello HTTP/1.0\r\n\r\n", out,
		     sizeof(out));
		CHECK(strstr(out, " 200 ") != NULL, "server: \":0\" answers on 127.0.0.1 (%s)",
		      metrics_server_url(s));
		metrics_server_stop(s);
	}
}

/* More connections than the server takes: the rest are refused, it survives. */
static void test_limits(void)
{
	char err[256], out[4096];
	struct metrics_server *s;
	int fds[METRICS_HTTP_MAX_PER_CLIENT + 4];
	int n = sizeof(fds) / sizeof(fds[0]);

	s = metrics_server_start("127.0.0.1:0", handler, NULL, err, sizeof(err));
	if (!s) {
		CHECK(0, "limits: server starts: %s", err);
		return;
	}
	for (int i = 0; i < n; i++)
		fds[i] = connect_to(AF_INET, metrics_server_port(s));
	usleep(200 * 1000);
	http(AF_INET, metrics_server_port(s), "GET /hello HTTP/1.0\r\n\r\n", out, sizeof(out));
	CHECK(!strstr(out, " 200 "), "limits: over %d connections from one address are "
	      "closed", METRICS_HTTP_MAX_PER_CLIENT);
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	usleep(200 * 1000);
	http(AF_INET, metrics_server_port(s), "GET /hello HTTP/1.0\r\n\r\n", out, sizeof(out));
	CHECK(strstr(out, " 200 ") != NULL, "limits: served again once they closed");
	metrics_server_stop(s);
}

/*
 * Clients on 127.0.0.1 that send half a request header and stall: a scrape
 * from the same address is answered at once next to 8 of them, and within
 * the idle timeout when they take every connection one address may have.
 */
static void test_stalled_headers(void)
{
	static const char half[] = "GET /hello HTTP/1.1\r\nHost: x\r\n";
	int fds[METRICS_HTTP_MAX_PER_CLIENT];
	char err[256], out[4096];
	struct metrics_server *s;
	unsigned int port;
	int n = 0, ok;
	double t0;

	s = metrics_server_start("127.0.0.1:0", handler, NULL, err, sizeof(err));
	if (!s) {
		CHECK(0, "stalled: server starts: %s", err);
		return;
	}
	port = metrics_server_port(s);
	for (; n < 8; n++) {
		fds[n] = connect_to(AF_INET, port);
		if (fds[n] >= 0)
			(void)!write(fds[n], half, strlen(half));
	}
	usleep(200 * 1000);
	t0 = now_s();
	http(AF_INET, port, "GET /hello HTTP/1.0\r\n\r\n", out, sizeof(out));
	CHECK(strstr(out, " 200 ") && now_s() - t0 < 1.0,
	      "stalled: 8 half-header clients leave room for a scrape (%.3f s)",
	      now_s() - t0);
	for (; n < METRICS_HTTP_MAX_PER_CLIENT; n++) {
		fds[n] = connect_to(AF_INET, port);
		if (fds[n] >= 0)
			(void)!write(fds[n], half, strlen(half));
	}
	usleep(200 * 1000);
	t0 = now_s();
	do {
		http(AF_INET, port, "GET /hello HTTP/1.0\r\n\r\n", out, sizeof(out));
		ok = strstr(out, " 200 ") != NULL;
		if (!ok)
			usleep(100 * 1000);
	} while (!ok && now_s() - t0 < METRICS_HTTP_TIMEOUT_S + 3);
	CHECK(ok && now_s() - t0 < METRICS_HTTP_TIMEOUT_S + 1.0,
	      "stalled: %d half-header clients are dropped: a scrape answered in "
	      "%.3f s (at most %d s)", METRICS_HTTP_MAX_PER_CLIENT, now_s() - t0,
	      METRICS_HTTP_TIMEOUT_S + 1);
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	metrics_server_stop(s);
}

int main(void)
{
	test_prom_format();
	test_prom_rules();
	test_parse();
	test_server();
	test_limits();
	test_stalled_headers();
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
