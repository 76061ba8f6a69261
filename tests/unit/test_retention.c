// SPDX-License-Identifier: GPL-2.0
/*
 * test_retention.c - src/output/retention.c on real directories: files
 * are created in a temporary directory with explicit modification times
 * (utimensat) and sizes, retention_apply() runs with a fixed "now", and
 * the test checks which files are left. Covers the age limit (exactly
 * the old ones go, the boundary stays), the size limit (oldest first,
 * ties by name, until under the cap, never the newest), both together,
 * flamegraph.html (its size counts toward the cap, it is never deleted),
 * files that are not profd's (temporary files, flamegraph.html, symlinks,
 * directories, look-alike names: untouched), empty and missing
 * directories, a fixed-seed comparison against a simple model, and
 * retention_parse() on good and bad values.
 *
 * Prints one ok/FAIL line per check; exits 1 if any failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "output/retention.h"

#define NOW	1900000000ULL	/* 2030-03-17, seconds */
#define DAY	86400ULL

static char base[] = "/tmp/profd-retention-XXXXXX";
static int ndirs;

/* A new empty directory under the test's base directory. */
static char *new_dir(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/d%d", base, ndirs++);
	if (mkdir(path, 0755)) {
		perror(path);
		exit(2);
	}
	return path;
}

/* Create @dir/@name with @size bytes and modification time @mtime_s. */
static void make_file(const char *dir, const char *name, size_t size, uint64_t mtime_s)
{
	struct timespec ts[2] = { { mtime_s, 0 }, { mtime_s, 0 } };
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, size) || close(fd) ||
	    utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW)) {
		perror(path);
		exit(2);
	}
}

static bool exists(const char *dir, const char *name)
{
	struct stat st;
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !lstat(path, &st);
}

/* The number of entries in @dir (without . and ..). */
static int count_entries(const char *dir)
{
	char cmd[4200];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

static void test_age(void)
{
	const char *dir = new_dir();
	struct retention_result r;
	int err;

	make_file(dir, "cpu-20300307T000000Z.pb.gz", 100, NOW - 10 * DAY);
	make_file(dir, "gpu-20300309T000000Z.pb.gz", 200, NOW - 8 * DAY);
	make_file(dir, "gpu-pc-20300309T000000Z-1.pb.gz", 300, NOW - 7 * DAY - 1);
	make_file(dir, "cpu-20300310T000000Z.pb.gz", 400, NOW - 7 * DAY);	/* boundary */
	make_file(dir, "cpu-20300311T000000Z.pb.gz", 500, NOW - 6 * DAY);
	make_file(dir, "cpu-20300316T000000Z.pb.gz", 600, NOW - 1 * DAY);
	err = retention_apply(dir, 7 * DAY, 0, NOW, &r);
	CHECK(err == 0, "age: returns 0 (got %d)", err);
	CHECK(!exists(dir, "cpu-20300307T000000Z.pb.gz") &&
	      !exists(dir, "gpu-20300309T000000Z.pb.gz") &&
	      !exists(dir, "gpu-pc-20300309T000000Z-1.pb.gz"),
	      "age: the three files older than 7d are gone");
	CHECK(exists(dir, "cpu-20300310T000000Z.pb.gz") &&
	      exists(dir, "cpu-20300311T000000Z.pb.gz") &&
	      exists(dir, "cpu-20300316T000000Z.pb.gz"),
	      "age: exactly 7d old and newer are kept");
	CHECK(r.files_removed == 3 && r.bytes_removed == 600 &&
	      r.files_kept == 3 && r.bytes_kept == 1500,
	      "age: counts removed 3/600 kept 3/1500 (got %llu/%llu %llu/%llu)",
	      (unsigned long long)r.files_removed, (unsigned long long)r.bytes_removed,
	      (unsigned long long)r.files_kept, (unsigned long long)r.bytes_kept);

	/* everything old (profd was stopped for a month): all of it goes */
	err = retention_apply(dir, DAY, 0, NOW + 30 * DAY, &r);
	CHECK(err == 0 && r.files_removed == 3 && r.files_kept == 0 &&
	      count_entries(dir) == 0, "age: all files past the age are removed");

	/* an age longer than the epoch removes nothing */
	make_file(dir, "cpu-19700101T000000Z.pb.gz", 1, 0);
	err = retention_apply(dir, NOW + 1, 0, NOW, &r);
	CHECK(err == 0 && r.files_removed == 0 && exists(dir, "cpu-19700101T000000Z.pb.gz"),
	      "age: age > now removes nothing");
}

static void test_size(void)
{
	const char *dir = new_dir();
	struct retention_result r;
	int err;

	/* written in this order; names deliberately not in mtime order */
	make_file(dir, "cpu-20300317T000005Z.pb.gz", 100, NOW - 50);
	make_file(dir, "cpu-20300317T000001Z.pb.gz", 100, NOW - 40);
	make_file(dir, "gpu-20300317T000003Z.pb.gz", 100, NOW - 30);
	make_file(dir, "cpu-20300317T000003Z.pb.gz", 100, NOW - 30);	/* tie: name */
	make_file(dir, "cpu-20300317T000002Z.pb.gz", 100, NOW - 10);
	err = retention_apply(dir, 0, 250, NOW, &r);
	CHECK(err == 0, "size: returns 0 (got %d)", err);
	CHECK(!exists(dir, "cpu-20300317T000005Z.pb.gz") &&
	      !exists(dir, "cpu-20300317T000001Z.pb.gz") &&
	      !exists(dir, "cpu-20300317T000003Z.pb.gz"),
	      "size: the three oldest by mtime (tie broken by name) are gone");
	CHECK(exists(dir, "gpu-20300317T000003Z.pb.gz") &&
	      exists(dir, "cpu-20300317T000002Z.pb.gz"),
	      "size: the two newest are kept");
	CHECK(r.files_removed == 3 && r.bytes_removed == 300 &&
	      r.files_kept == 2 && r.bytes_kept == 200,
	      "size: counts removed 3/300 kept 2/200");

	/* at the cap exactly: nothing to do */
	err = retention_apply(dir, 0, 200, NOW, &r);
	CHECK(err == 0 && r.files_removed == 0 && r.files_kept == 2,
	      "size: total == cap removes nothing");

	/* a cap below the newest file alone: everything but the newest */
	make_file(dir, "gpu-20300317T000010Z.pb.gz", 5000, NOW);
	err = retention_apply(dir, 0, 10, NOW, &r);
	CHECK(err == 0 && r.files_removed == 2 && r.files_kept == 1 &&
	      exists(dir, "gpu-20300317T000010Z.pb.gz"),
	      "size: the newest file is never removed, even above the cap");
}

static void test_both(void)
{
	const char *dir = new_dir();
	struct retention_result r;
	int err;

	make_file(dir, "cpu-20300301T000000Z.pb.gz", 1000, NOW - 16 * DAY);
	make_file(dir, "cpu-20300315T000000Z.pb.gz", 1000, NOW - 2 * DAY);
	make_file(dir, "cpu-20300316T000000Z.pb.gz", 1000, NOW - 1 * DAY);
	make_file(dir, "cpu-20300317T000000Z.pb.gz", 1000, NOW);
	err = retention_apply(dir, 7 * DAY, 2500, NOW, &r);
	CHECK(err == 0 && r.files_removed == 2 && r.files_kept == 2 &&
	      !exists(dir, "cpu-20300301T000000Z.pb.gz") &&
	      !exists(dir, "cpu-20300315T000000Z.pb.gz") &&
	      exists(dir, "cpu-20300316T000000Z.pb.gz"),
	      "age,size: the old one for age, then the oldest one for size");
}

/* flamegraph.html counts toward the size cap and is never deleted. */
static void test_flamegraph(void)
{
	const char *dir = new_dir();
	char target[4096], link[4096];
	struct retention_result r;
	int err;

	make_file(dir, "flamegraph.html", 300, NOW);
	make_file(dir, "cpu-20300317T000001Z.pb.gz", 100, NOW - 40);
	make_file(dir, "cpu-20300317T000002Z.pb.gz", 100, NOW - 30);
	make_file(dir, "cpu-20300317T000003Z.pb.gz", 100, NOW - 20);
	make_file(dir, "cpu-20300317T000004Z.pb.gz", 100, NOW - 10);
	err = retention_apply(dir, 0, 500, NOW, &r);
	CHECK(err == 0 && r.files_removed == 2 && r.bytes_removed == 200 &&
	      r.files_kept == 2 && r.bytes_kept == 200 && r.flamegraph_bytes == 300,
	      "flamegraph: 400 B of profiles + 300 B flame graph over 500 B: the two "
	      "oldest go (removed %llu, kept %llu/%llu, flame graph %llu)",
	      (unsigned long long)r.files_removed, (unsigned long long)r.files_kept,
	      (unsigned long long)r.bytes_kept, (unsigned long long)r.flamegraph_bytes);
	CHECK(!exists(dir, "cpu-20300317T000001Z.pb.gz") &&
	      !exists(dir, "cpu-20300317T000002Z.pb.gz") &&
	      exists(dir, "cpu-20300317T000003Z.pb.gz") &&
	      exists(dir, "cpu-20300317T000004Z.pb.gz") && exists(dir, "flamegraph.html"),
	      "flamegraph: the newest profiles and the flame graph are left");

	/* a flame graph larger than the cap alone: all but the newest profile */
	err = retention_apply(dir, 0, 250, NOW, &r);
	CHECK(err == 0 && r.files_removed == 1 && r.files_kept == 1 &&
	      exists(dir, "cpu-20300317T000004Z.pb.gz") && exists(dir, "flamegraph.html"),
	      "flamegraph: above the cap alone, never deleted; the newest profile kept");

	/* a symlink named flamegraph.html is not followed nor counted */
	dir = new_dir();
	snprintf(target, sizeof(target), "%s/big", base);
	make_file(base, "big", 1000000, NOW);
	snprintf(link, sizeof(link), "%s/flamegraph.html", dir);
	if (symlink(target, link)) {
		perror("symlink");
		exit(2);
	}
	make_file(dir, "cpu-20300317T000001Z.pb.gz", 100, NOW - 40);
	make_file(dir, "cpu-20300317T000002Z.pb.gz", 100, NOW - 30);
	err = retention_apply(dir, 0, 200, NOW, &r);
	CHECK(err == 0 && r.files_removed == 0 && r.flamegraph_bytes == 0 &&
	      exists(dir, "flamegraph.html") && exists(base, "big"),
	      "flamegraph: a symlink is neither followed nor counted");
}

static void test_foreign(void)
{
	const char *dir = new_dir();
	char target[4096], link[4096], sub[4096];
	struct retention_result r;
	static const char *const foreign[] = {
		"flamegraph.html",
		"cpu-20200101T000000Z.pb.gz.tmpAbC123",	/* being written */
		"notes.txt",
		"cpu-2020.pb.gz",
		"cpu-20200101T000000Z.pb",
		"cpu-20200101T000000Z.pb.gz.bak",
		"cpu-20200101T000000Z-.pb.gz",
		"cpu-20200101T000000Z-x.pb.gz",
		"mem-20200101T000000Z.pb.gz",
		"xcpu-20200101T000000Z.pb.gz",
		"gpu-pc-2020010lT000000Z.pb.gz",
		"CPU-20200101T000000Z.pb.gz",
	};
	size_t nf = sizeof(foreign) / sizeof(foreign[0]);
	int err, ok = 1;

	for (size_t i = 0; i < nf; i++)
		make_file(dir, foreign[i], 1000000, 1000);
	/* a symlink and a directory with profile names, and a real one */
	snprintf(target, sizeof(target), "%s/target", base);
	make_file(base, "target", 1000000, 1000);
	snprintf(link, sizeof(link), "%s/cpu-20200101T000001Z.pb.gz", dir);
	snprintf(sub, sizeof(sub), "%s/gpu-20200101T000002Z.pb.gz", dir);
	if (symlink(target, link) || mkdir(sub, 0755)) {
		perror("symlink/mkdir");
		exit(2);
	}
	make_file(dir, "cpu-20200101T000000Z-12.pb.gz", 10, 1000);
	make_file(dir, "cpu-20300101T000000Z.pb.gz", 10, NOW);

	err = retention_apply(dir, DAY, 1, NOW, &r);
	CHECK(err == 0 && r.files_removed == 1 && r.bytes_removed == 10 &&
	      r.files_kept == 1 && r.bytes_kept == 10,
	      "foreign: only the old profile counted and removed (removed %llu kept %llu)",
	      (unsigned long long)r.files_removed, (unsigned long long)r.files_kept);
	CHECK(!exists(dir, "cpu-20200101T000000Z-12.pb.gz"),
	      "foreign: a -N suffixed profile is profd's");
	for (size_t i = 0; i < nf; i++)
		ok &= exists(dir, foreign[i]);
	CHECK(ok, "foreign: temporary files, flamegraph.html, look-alikes untouched");
	CHECK(exists(dir, "cpu-20200101T000001Z.pb.gz") && exists(base, "target"),
	      "foreign: a symlink with a profile name and its target untouched");
	CHECK(exists(dir, "gpu-20200101T000002Z.pb.gz"),
	      "foreign: a directory with a profile name untouched");
}

static void test_dirs(void)
{
	struct retention_result r = { 7, 7, 7, 7, 7 };
	char path[4096];
	int err;

	err = retention_apply(new_dir(), DAY, 1000, NOW, &r);
	CHECK(err == 0 && !r.files_removed && !r.files_kept && !r.bytes_kept,
	      "empty directory: 0, nothing removed or kept");
	snprintf(path, sizeof(path), "%s/does-not-exist", base);
	err = retention_apply(path, DAY, 0, NOW, &r);
	CHECK(err == -ENOENT, "missing directory: -ENOENT (got %d)", err);
	snprintf(path, sizeof(path), "%s/target", base);
	err = retention_apply(path, DAY, 0, NOW, &r);
	CHECK(err == -ENOTDIR, "a file, not a directory: -ENOTDIR (got %d)", err);
	CHECK(retention_apply("", DAY, 0, NOW, &r) == -EINVAL &&
	      retention_apply(NULL, DAY, 0, NOW, &r) == -EINVAL,
	      "empty or NULL directory: -EINVAL");
	CHECK(retention_apply(new_dir(), 0, 0, NOW, NULL) == 0, "NULL result accepted");
}

/*
 * Random files and limits, fixed seed, against the model: sort by
 * (mtime, name); drop mtime < now - age; then drop from the oldest while
 * the total exceeds the cap and more than one file is left, never the
 * last one.
 */
static void test_model(void)
{
	enum { ROUNDS = 40, MAXF = 30 };
	unsigned seed = 12345;
	int bad = 0;

	for (int round = 0; round < ROUNDS; round++) {
		const char *dir = new_dir();
		struct { char name[64]; uint64_t mtime, size; bool keep; } f[MAXF], t;
		int n = 1 + rand_r(&seed) % MAXF;
		uint64_t age = rand_r(&seed) % 3 ? (1 + rand_r(&seed) % 20) * 100 : 0;
		uint64_t cap = rand_r(&seed) % 3 ? rand_r(&seed) % 20000 + 1 : 0;
		uint64_t total = 0, kept = 0;
		struct retention_result r;
		int left = 0;

		for (int i = 0; i < n; i++) {
			static const char *const kinds[] = { "cpu", "gpu", "gpu-pc" };

			snprintf(f[i].name, sizeof(f[i].name), "%s-20300317T%06dZ%s.pb.gz",
				 kinds[rand_r(&seed) % 3], rand_r(&seed) % 240000,
				 i % 4 ? "" : "-1");
			for (int j = 0; j < i; j++)
				if (!strcmp(f[j].name, f[i].name))
					snprintf(f[i].name, sizeof(f[i].name),
						 "cpu-20300317T%06dZ-%d.pb.gz", i, i + 2);
			f[i].mtime = NOW - rand_r(&seed) % 3000;
			f[i].size = rand_r(&seed) % 3000;
			f[i].keep = true;
			make_file(dir, f[i].name, f[i].size, f[i].mtime);
		}
		for (int i = 0; i < n; i++)	/* insertion sort by (mtime, name) */
			for (int j = i; j > 0 && (f[j - 1].mtime > f[j].mtime ||
			     (f[j - 1].mtime == f[j].mtime &&
			      strcmp(f[j - 1].name, f[j].name) > 0)); j--) {
				t = f[j];
				f[j] = f[j - 1];
				f[j - 1] = t;
			}
		for (int i = 0; i < n; i++) {
			if (age && f[i].mtime < NOW - age)
				f[i].keep = false;
			if (f[i].keep) {
				total += f[i].size;
				left++;
			}
		}
		for (int i = 0; cap && i < n - 1 && total > cap && left > 1; i++) {
			if (!f[i].keep)
				continue;
			f[i].keep = false;
			total -= f[i].size;
			left--;
		}
		if (retention_apply(dir, age, cap, NOW, &r)) {
			bad++;
			continue;
		}
		for (int i = 0; i < n; i++) {
			if (exists(dir, f[i].name) != f[i].keep) {
				printf("  round %d: %s (mtime now-%llu, %llu bytes) %s\n",
				       round, f[i].name,
				       (unsigned long long)(NOW - f[i].mtime),
				       (unsigned long long)f[i].size,
				       f[i].keep ? "removed" : "kept");
				bad++;
			}
			kept += f[i].keep;
		}
		if (r.files_kept != kept || r.files_kept + r.files_removed != (uint64_t)n)
			bad++;
	}
	CHECK(!bad, "model: %d random directories as the model says (%d mismatches)",
	      ROUNDS, bad);
}

static void good(const char *s, uint64_t age, uint64_t bytes)
{
	uint64_t a = 99, b = 99;
	char err[200] = "";
	int rc = retention_parse(s, &a, &b, err, sizeof(err));

	CHECK(rc == 0 && a == age && b == bytes,
	      "parse '%s' = age %llu s, %llu bytes (got rc %d, %llu, %llu %s)",
	      s, (unsigned long long)age, (unsigned long long)bytes, rc,
	      (unsigned long long)a, (unsigned long long)b, err);
}

static void bad(const char *s, const char *why)
{
	uint64_t a = 99, b = 99;
	char err[200] = "";
	int rc = retention_parse(s, &a, &b, err, sizeof(err));

	CHECK(rc == -EINVAL && strstr(err, why) && a == 99 && b == 99,
	      "parse '%s' rejected: %s", s ? s : "(null)", err);
}

static void test_parse(void)
{
	const uint64_t KiB = 1024, MiB = KiB << 10, GiB = MiB << 10, TiB = GiB << 10;

	good("7d", 7 * DAY, 0);
	good("12h", 12 * 3600, 0);
	good("90s", 90, 0);
	good("5m", 300, 0);
	good("2w", 14 * DAY, 0);
	good("10GiB", 0, 10 * GiB);
	good("500M", 0, 500 * MiB);
	good("500MB", 0, 500 * MiB);
	good("500mib", 0, 500 * MiB);
	good("64K", 0, 64 * KiB);
	good("64k", 0, 64 * KiB);
	good("4096B", 0, 4096);
	good("1T", 0, TiB);
	good("2TiB", 0, 2 * TiB);
	good("3g", 0, 3 * GiB);
	good("7d,10GiB", 7 * DAY, 10 * GiB);
	good("10GiB,7d", 7 * DAY, 10 * GiB);
	good("7d, 10GiB", 7 * DAY, 10 * GiB);
	good("16777215TiB", 0, 16777215ULL * TiB);	/* just fits */
	bad(NULL, "empty");
	bad("", "empty");
	bad("0d", "greater than 0");
	bad("0GiB", "greater than 0");
	bad("-1d", "negative");
	bad("-5GiB,7d", "negative");
	bad("+1d", "whole number");
	bad(" ", "empty");
	bad("d", "whole number");
	bad("7", "needs a unit");
	bad("7x", "unknown unit 'x'");
	bad("7D", "unknown unit 'D'");
	bad("7days", "unknown unit 'days'");
	bad("7 d", "unknown unit ' d'");
	bad("1.5GiB", "whole numbers");
	bad("16777216TiB", "too large");
	bad("99999999999999999999s", "too large");
	bad("30600000000000w", "too large");
	bad("7d,", "empty part");
	bad(",7d", "empty part");
	bad("7d,1d", "two ages");
	bad("1G,2G", "two sizes");
	bad("7d,1G,3h", "at most one");
	bad("junk", "whole number");
}

int main(void)
{
	char cmd[200];

	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 2;
	}
	test_age();
	test_size();
	test_both();
	test_flamegraph();
	test_foreign();
	test_dirs();
	test_model();
	test_parse();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd))
		printf("note: could not remove %s\n", base);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
