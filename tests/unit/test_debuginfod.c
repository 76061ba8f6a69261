// SPDX-License-Identifier: GPL-2.0
/*
 * test_debuginfod.c - the debuginfod fetcher's parts without a network
 * (src/symbol/debuginfod*.c): the URL check, the cache's size cap (least
 * recently used files deleted first, the kept one last, control files and
 * remembered misses left alone), the check of a fetched file against the
 * build ID asked for, and whole fetches through libdebuginfod from a
 * file:// "server" (a directory laid out as the debuginfod API:
 * buildid/ID/debuginfo): a right file ready, a file of another build ID
 * and garbage rejected and deleted (each fetched twice: a rejected file
 * is fetched again at once, once), a missing one not found, one fetch
 * per build ID, and a bad file left in the cache replaced at once by the
 * server's. Then through a small HTTP server here on localhost that
 * answers as told: a 500 is a server error (not a miss), asked again
 * after the error retry (the client's miss marker gone, so the retry
 * reaches the server), twice as long after a second one; a 404 waits
 * the full DBGD_RETRY_S. Run by tests/test_debuginfod.py.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "counters/counters.h"
#include "symbol/debuginfod.h"
#include "symbol/elf_file.h"

COUNTER_EXTERN(debuginfod_fetched);
COUNTER_EXTERN(debuginfod_rejected);
COUNTER_EXTERN(debuginfod_not_found);
COUNTER_EXTERN(debuginfod_server_errors);

static char tmp[] = "/tmp/profd-dbgd-XXXXXX";

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		perror(path);
	close(fd);
}

static void copy_file(const char *from, const char *to)
{
	static char buf[1 << 16];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(in);
	close(out);
}

static void set_atime(const char *path, time_t t)
{
	struct timespec ts[2] = { { .tv_sec = t }, { .tv_nsec = UTIME_OMIT } };

	utimensat(AT_FDCWD, path, ts, 0);
}

static bool exists(const char *path)
{
	return !access(path, F_OK);
}

static void test_urls(void)
{
	CHECK(dbgd_urls_valid(""), "no URLs is valid (off)");
	CHECK(dbgd_urls_valid("http://a:8002 https://b/x file:///srv"), "three schemes");
	CHECK(!dbgd_urls_valid("ftp://a"), "ftp:// refused");
	CHECK(!dbgd_urls_valid("http://"), "a scheme alone refused");
	CHECK(!dbgd_urls_valid("http://a b"), "a word that is no URL refused");
}

static void test_cache_trim(void)
{
	char dir[256], path[320], sub[300];
	static char block[64 << 10];
	const char *ids[3] = { "aa01", "bb02", "cc03" };
	struct stat st;
	uint64_t one;
	int n;

	snprintf(dir, sizeof(dir), "%s/cache", tmp);
	CHECK(!dbgd_mkdirs(dir), "mkdirs %s", dir);
	memset(block, 0x5a, sizeof(block));
	for (int i = 0; i < 3; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", dir, ids[i]);
		mkdir(sub, 0700);
		snprintf(path, sizeof(path), "%s/debuginfo", sub);
		write_file(path, block, sizeof(block));
		set_atime(path, 1000000 + i * 1000);	/* aa01 oldest */
	}
	snprintf(path, sizeof(path), "%s/cache_clean_interval_s", dir);
	write_file(path, block, sizeof(block));		/* a control file: never */
	snprintf(sub, sizeof(sub), "%s/dd04", dir);
	mkdir(sub, 0700);
	snprintf(path, sizeof(path), "%s/debuginfo", sub);
	write_file(path, "", 0);			/* a remembered miss */
	stat(path, &st);
	snprintf(path, sizeof(path), "%s/aa01/debuginfo", dir);
	stat(path, &st);
	one = (uint64_t)st.st_blocks * 512;

	n = dbgd_cache_trim(dir, 3 * one, NULL);
	CHECK(n == 0, "under the cap: nothing deleted (%d)", n);
	n = dbgd_cache_trim(dir, 2 * one, NULL);
	snprintf(path, sizeof(path), "%s/aa01", dir);
	CHECK(n == 1 && !exists(path), "one over: the least recently used goes, "
	      "its directory too (%d)", n);
	snprintf(path, sizeof(path), "%s/bb02/debuginfo", dir);
	CHECK(exists(path), "the next one stays");
	snprintf(path, sizeof(path), "%s/bb02/debuginfo", dir);
	set_atime(path, 9000000);			/* used: now the newest */
	snprintf(path, sizeof(path), "%s/cc03/debuginfo", dir);
	n = dbgd_cache_trim(dir, one, path);
	CHECK(n == 1 && exists(path), "the kept file goes last, though older (%d)", n);
	n = dbgd_cache_trim(dir, 0, NULL);
	CHECK(n == 1, "a cap of 0 empties it (%d)", n);
	snprintf(path, sizeof(path), "%s/cache_clean_interval_s", dir);
	CHECK(exists(path), "control files are left");
	snprintf(path, sizeof(path), "%s/dd04/debuginfo", dir);
	CHECK(exists(path), "remembered misses are left to libdebuginfod");
	CHECK(dbgd_cache_trim("/nonexistent/profd", 0, NULL) == -ENOENT, "no dir: -ENOENT");
}

static void test_check(const char *self, const char *self_id)
{
	char path[320];
	int fd;

	fd = open(self, O_RDONLY);
	CHECK(elf_debug_file_check(fd, self_id) == 0, "own file, own build ID");
	CHECK(elf_debug_file_check(fd, "0011223344556677889900112233445566778899") == -ESTALE,
	      "another build ID: -ESTALE");
	CHECK(elf_debug_file_check(fd, "") == -EINVAL, "no build ID: -EINVAL");
	close(fd);
	snprintf(path, sizeof(path), "%s/garbage", tmp);
	write_file(path, "\177ELF garbage garbage garbage", 28);
	fd = open(path, O_RDONLY);
	CHECK(elf_debug_file_check(fd, self_id) == -ENOEXEC, "garbage: -ENOEXEC");
	close(fd);
}

/* Wait (at most 20 s) for @e to leave QUEUED/FETCHING. */
static enum dbgd_state settle(const struct dbgd_entry *e)
{
	for (int i = 0; i < 2000; i++) {
		enum dbgd_state st = dbgd_entry_state(e);

		if (st == DBGD_READY || st == DBGD_FAILED)
			return st;
		usleep(10000);
	}
	return dbgd_entry_state(e);
}

/* A fetcher over @cfg (its environment set first), checked; NULL on failure. */
static struct dbgd_fetcher *start_fetcher(const struct dbgd_config *cfg)
{
	struct dbgd_fetcher *d;
	char why[200];

	CHECK(!dbgd_env_setup(cfg), "environment set");
	d = dbgd_fetcher_new(cfg, why, sizeof(why));
	CHECK(d != NULL, "fetcher started (%s)", d ? "" : why);
	return d;
}

/* The file:// server's debuginfo path of build ID @id. */
static void served(char *out, size_t len, const char *id)
{
	char dir[320];

	snprintf(dir, sizeof(dir), "%s/srv/buildid/%s", tmp, id);
	dbgd_mkdirs(dir);
	snprintf(out, len, "%s/debuginfo", dir);
}

static void test_fetch(const char *self, const char *self_id)
{
	const char *lie_id = "0123456789abcdef0123456789abcdef01234567";
	const char *junk_id = "fedcba9876543210fedcba9876543210fedcba98";
	const char *none_id = "00000000000000000000000000000000000000ff";
	char urls[300], cache[300], path[400];
	struct dbgd_entry *e, *lie, *junk, *none;
	struct dbgd_config cfg;
	struct dbgd_fetcher *d;
	uint64_t ok0 = counter_debuginfod_fetched.value;
	uint64_t rej0 = counter_debuginfod_rejected.value;
	uint64_t nf0 = counter_debuginfod_not_found.value;
	int fd;

	served(path, sizeof(path), self_id);
	copy_file(self, path);
	served(path, sizeof(path), lie_id);
	copy_file(self, path);			/* a real ELF, another build ID */
	served(path, sizeof(path), junk_id);
	write_file(path, "not an ELF file at all", 22);
	snprintf(urls, sizeof(urls), "file://%s/srv", tmp);
	snprintf(cache, sizeof(cache), "%s/fetched", tmp);
	cfg = (struct dbgd_config){ .urls = urls, .cache_dir = cache,
				    .cache_bytes = 64 << 20 };
	d = start_fetcher(&cfg);
	if (!d)
		return;
	CHECK(!dbgd_request(d, "xyz") && !dbgd_request(d, ""), "not a build ID: NULL");
	e = dbgd_request(d, self_id);
	lie = dbgd_request(d, lie_id);
	junk = dbgd_request(d, junk_id);
	none = dbgd_request(d, none_id);
	CHECK(e && dbgd_request(d, self_id) == e, "one entry per build ID");
	CHECK(e && settle(e) == DBGD_READY, "the right file: ready");
	CHECK(lie && settle(lie) == DBGD_FAILED, "another build ID's file: failed");
	CHECK(junk && settle(junk) == DBGD_FAILED, "garbage: failed");
	CHECK(none && settle(none) == DBGD_FAILED, "missing: failed");
	CHECK(counter_debuginfod_fetched.value - ok0 == 1, "fetched counted once");
	/* each lie fetched twice (a rejected file is fetched again, once) */
	CHECK(counter_debuginfod_rejected.value - rej0 == 4, "both lies rejected twice (%llu)",
	      (unsigned long long)(counter_debuginfod_rejected.value - rej0));
	CHECK(counter_debuginfod_not_found.value - nf0 == 1, "missing: not found");
	snprintf(path, sizeof(path), "%s/%s/debuginfo", cache, lie_id);
	CHECK(!exists(path), "a rejected file leaves the cache");
	CHECK(dbgd_request(d, lie_id) == lie && dbgd_entry_state(lie) == DBGD_FAILED,
	      "a failure is remembered, not fetched again at once");
	fd = e ? dbgd_entry_open(d, e) : -1;
	CHECK(fd >= 0 && elf_debug_file_check(fd, self_id) == 0,
	      "the cached file opens and is the object's");
	if (fd >= 0)
		close(fd);
	CHECK(dbgd_entry_open(d, lie) == -EAGAIN, "a failed entry does not open");
	CHECK(counter_debuginfod_fetched.value - ok0 == 1, "no second fetch");
	CHECK(dbgd_fetcher_free(d, 3000000000ULL), "workers stopped");
}

/*
 * A bad file in the cache under the build ID (an earlier run's, a disk
 * error): rejected, deleted and fetched again from the server at once.
 */
static void test_bad_cached_file(const char *self, const char *self_id)
{
	char urls[300], cache[300], path[400];
	uint64_t ok0 = counter_debuginfod_fetched.value;
	uint64_t rej0 = counter_debuginfod_rejected.value;
	struct dbgd_config cfg;
	struct dbgd_fetcher *d;
	struct dbgd_entry *e;
	int fd;

	served(path, sizeof(path), self_id);
	copy_file(self, path);
	snprintf(urls, sizeof(urls), "file://%s/srv", tmp);
	snprintf(cache, sizeof(cache), "%s/badcache/%s", tmp, self_id);
	dbgd_mkdirs(cache);
	snprintf(path, sizeof(path), "%s/debuginfo", cache);
	write_file(path, "\177ELF not the debug file, left in the cache", 44);
	snprintf(cache, sizeof(cache), "%s/badcache", tmp);
	cfg = (struct dbgd_config){ .urls = urls, .cache_dir = cache,
				    .cache_bytes = 64 << 20 };
	d = start_fetcher(&cfg);
	if (!d)
		return;
	e = dbgd_request(d, self_id);
	CHECK(e && settle(e) == DBGD_READY, "a bad cached file: fetched again, ready");
	CHECK(counter_debuginfod_rejected.value - rej0 == 1, "the cached file rejected");
	CHECK(counter_debuginfod_fetched.value - ok0 == 1, "the server's file fetched");
	fd = e ? dbgd_entry_open(d, e) : -1;
	CHECK(fd >= 0 && elf_debug_file_check(fd, self_id) == 0, "and it is the object's");
	if (fd >= 0)
		close(fd);
	CHECK(dbgd_fetcher_free(d, 3000000000ULL), "workers stopped");
}

/* An HTTP server on localhost answering requests with codes[i] in turn. */
struct fake_http {
	int lfd, port;
	const int *codes;
	int ncodes;
	int requests;		/* atomic */
	const char *body;	/* a file sent with a 200 */
	pthread_t thread;
};

static void *fake_http_main(void *arg)
{
	struct fake_http *h = arg;
	char req[4096], head[256], buf[65536];

	for (;;) {
		int c = accept(h->lfd, NULL, NULL), n, code, fd;
		size_t got = 0;
		ssize_t r;
		off_t size = 0;
		struct stat st;

		if (c < 0)
			return NULL;
		while (got < sizeof(req) - 1 &&
		       (r = read(c, req + got, sizeof(req) - 1 - got)) > 0) {
			got += (size_t)r;
			req[got] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		n = __atomic_fetch_add(&h->requests, 1, __ATOMIC_RELAXED);
		code = h->codes[n < h->ncodes ? n : h->ncodes - 1];
		fd = code == 200 ? open(h->body, O_RDONLY) : -1;
		if (fd >= 0 && !fstat(fd, &st))
			size = st.st_size;
		n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Length: %lld\r\n"
			     "Connection: close\r\n\r\n", code, code == 200 ? "OK" : "Error",
			     (long long)size);
		if (write(c, head, (size_t)n) == n)
			while (fd >= 0 && (r = read(fd, buf, sizeof(buf))) > 0 &&
			       write(c, buf, (size_t)r) == r)
				;
		if (fd >= 0)
			close(fd);
		close(c);
	}
}

static int fake_http_start(struct fake_http *h)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->lfd < 0 || bind(h->lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(h->lfd, 16) || getsockname(h->lfd, (struct sockaddr *)&a, &len))
		return -1;
	h->port = ntohs(a.sin_port);
	return pthread_create(&h->thread, NULL, fake_http_main, h) ? -1 : 0;
}

static void fake_http_stop(struct fake_http *h)
{
	shutdown(h->lfd, SHUT_RDWR);
	close(h->lfd);
	pthread_join(h->thread, NULL);
}

static int requests(struct fake_http *h)
{
	return __atomic_load_n(&h->requests, __ATOMIC_RELAXED);
}

#define ERROR_RETRY_MS	1500

/*
 * A server answering 500 twice, then the file; another answering 404:
 * the 500s are server errors asked again after ERROR_RETRY_MS, then
 * twice that; the 404 is a miss, not asked again within DBGD_RETRY_S.
 */
static void test_server_errors(const char *self, const char *self_id)
{
	static const int err_codes[] = { 500, 500, 200 }, miss_codes[] = { 404 };
	struct fake_http err = { .codes = err_codes, .ncodes = 3, .body = self };
	struct fake_http miss = { .codes = miss_codes, .ncodes = 1 };
	const char *none_id = "00000000000000000000000000000000000000fe";
	uint64_t se0 = counter_debuginfod_server_errors.value;
	uint64_t nf0 = counter_debuginfod_not_found.value;
	uint64_t ok0 = counter_debuginfod_fetched.value;
	char urls[300], cache[300];
	struct dbgd_config cfg;
	struct dbgd_fetcher *d;
	struct dbgd_entry *e, *none;

	if (fake_http_start(&err) || fake_http_start(&miss)) {
		CHECK(0, "fake HTTP servers started");
		return;
	}
	/* the build ID asks the erring server, the missing one the other */
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%d", err.port);
	snprintf(cache, sizeof(cache), "%s/httpcache", tmp);
	cfg = (struct dbgd_config){ .urls = urls, .cache_dir = cache,
				    .cache_bytes = 64 << 20,
				    .error_retry_ms = ERROR_RETRY_MS };
	d = start_fetcher(&cfg);
	if (!d)
		goto out;
	e = dbgd_request(d, self_id);
	CHECK(e && settle(e) == DBGD_FAILED, "HTTP 500: failed");
	CHECK(counter_debuginfod_server_errors.value - se0 == 1, "counted as a server error");
	CHECK(counter_debuginfod_not_found.value == nf0, "not as not found");
	CHECK(dbgd_request(d, self_id) == e && dbgd_entry_state(e) == DBGD_FAILED &&
	      requests(&err) == 1, "not asked again at once");
	usleep((ERROR_RETRY_MS + 300) * 1000);
	CHECK(dbgd_request(d, self_id) == e, "asked again after the error retry");
	CHECK(settle(e) == DBGD_FAILED && requests(&err) == 2,
	      "the retry reached the server (no miss remembered): %d requests",
	      requests(&err));
	CHECK(counter_debuginfod_server_errors.value - se0 == 2, "the second 500 counted");
	usleep((ERROR_RETRY_MS + 300) * 1000);
	dbgd_request(d, self_id);
	CHECK(dbgd_entry_state(e) == DBGD_FAILED && requests(&err) == 2,
	      "a second error in a row: the wait doubled");
	usleep((ERROR_RETRY_MS + 300) * 1000);
	dbgd_request(d, self_id);
	CHECK(settle(e) == DBGD_READY && requests(&err) == 3, "then fetched (%d requests)",
	      requests(&err));
	CHECK(counter_debuginfod_fetched.value - ok0 == 1, "fetched counted");
	CHECK(dbgd_fetcher_free(d, 3000000000ULL), "workers stopped");

	snprintf(urls, sizeof(urls), "http://127.0.0.1:%d", miss.port);
	d = start_fetcher(&cfg);
	if (!d)
		goto out;
	none = dbgd_request(d, none_id);
	CHECK(none && settle(none) == DBGD_FAILED, "HTTP 404: failed");
	CHECK(counter_debuginfod_not_found.value - nf0 == 1, "counted as not found");
	CHECK(counter_debuginfod_server_errors.value - se0 == 2, "not as a server error");
	usleep((ERROR_RETRY_MS + 300) * 1000);
	dbgd_request(d, none_id);
	CHECK(dbgd_entry_state(none) == DBGD_FAILED && requests(&miss) == 1,
	      "a miss is not asked again after the error retry");
	CHECK(dbgd_fetcher_free(d, 3000000000ULL), "workers stopped");
out:
	fake_http_stop(&err);
	fake_http_stop(&miss);
}

int main(void)
{
	struct elf_file *f;
	char self[4096], id[260];
	ssize_t n;
	int err;

	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	f = elf_file_open(self, &err);
	snprintf(id, sizeof(id), "%s", f ? elf_file_build_id(f) : "");
	elf_file_free(f);
	CHECK(id[0], "this program has a build ID");
	test_urls();
	test_cache_trim();
	test_check(self, id);
	test_fetch(self, id);
	test_bad_cached_file(self, id);
	test_server_errors(self, id);
	if (!failures) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmp);
	}
	return failures ? 1 : 0;
}
