// SPDX-License-Identifier: GPL-2.0
/*
 * test_debuginfod.c - the debuginfod fetcher's parts without a network
 * (src/symbol/debuginfod*.c): the URL check, the cache's size cap (least
 * recently used files deleted first, the kept one last, control files and
 * remembered misses left alone), the check of a fetched file against the
 * build ID asked for, and whole fetches through libdebuginfod from a
 * file:// "server" (a directory laid out as the debuginfod API:
 * buildid/ID/debuginfo): a right file ready, a file of another build ID
 * and garbage rejected and deleted, a missing one not found, and one
 * fetch per build ID. Run by tests/test_debuginfod.py.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	char urls[300], cache[300], path[400], why[200];
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
	CHECK(!dbgd_env_setup(&cfg), "environment set");
	d = dbgd_fetcher_new(&cfg, why, sizeof(why));
	CHECK(d != NULL, "fetcher started (%s)", d ? "" : why);
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
	CHECK(counter_debuginfod_rejected.value - rej0 == 2, "both lies rejected (%llu)",
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
	if (!failures) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmp);
	}
	return failures ? 1 : 0;
}
