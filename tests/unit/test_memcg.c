// SPDX-License-Identifier: GPL-2.0
/*
 * test_memcg.c - src/util/memcg.c, the room left in profd's own memory
 * cgroup:
 *  - memcg_room_from() on fake /proc/self/cgroup and mountinfo texts whose
 *    mount points are directories made here: cgroup v2 (a limit at a
 *    middle level, inactive file pages not counted as used), a container
 *    whose mount root is a prefix of the path (and a sibling that only
 *    shares a prefix of the name), v1 on a hybrid host (the memory
 *    line among others, the least room of the levels, v1's "no limit"),
 *    an escaped mount point, usage over the limit, no memory cgroup,
 *    unreadable files;
 *  - as root, where a v1 memory hierarchy or cgroup2 with the memory
 *    controller is mounted: this process moved into a fresh cgroup with a
 *    512 MiB limit, memcg_room() read from the real /proc/self files.
 * Prints one line per check; exits 1 if any failed.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "util/memcg.h"

static char tmp[] = "/tmp/test_memcg.XXXXXX";

/* Write the printf-formatted @fmt to tmp/@rel, making its directories. */
static void put(const char *rel, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	for (char *p = path + strlen(tmp) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(2);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static uint64_t room(const char *cgroup, const char *mountinfo)
{
	char c[PATH_MAX], m[PATH_MAX];

	snprintf(c, sizeof(c), "%s/%s", tmp, cgroup);
	snprintf(m, sizeof(m), "%s/%s", tmp, mountinfo);
	return memcg_room_from(c, m);
}

static void fakes(void)
{
	/* v2: /a has the limit, /a/b (profd's) none, the root none */
	put("v2/memory.stat", "anon 1\n");
	put("v2/a/memory.max", "1000000000\n");
	put("v2/a/memory.current", "600000000\n");
	put("v2/a/memory.stat", "anon 500000000\nfile 100000000\ninactive_file 100000000\n"
	    "active_file 0\n");
	put("v2/a/b/memory.max", "max\n");
	put("v2/a/b/memory.current", "10\n");
	put("cg_v2", "0::/a/b\n");
	put("mi_v2", "22 1 0:21 / /proc rw - proc proc rw\n"
	    "30 22 0:26 / %s/v2 rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n", tmp);

	/* a container: the mount's root /kube/pod is the path's prefix;
	 * /kube/po only shares a prefix of the name */
	put("ctr/c1/memory.max", "300000000\n");
	put("ctr/c1/memory.current", "100000000\n");
	put("cg_ctr", "0::/kube/pod/c1\n");
	put("mi_ctr", "31 1 0:26 /kube/po %s/wrong rw - cgroup2 cgroup2 rw\n"
	    "32 1 0:26 /kube/pod %s/ctr rw - cgroup2 cgroup2 rw\n", tmp, tmp);

	/* v1 on a hybrid host: memory is a v1 controller */
	put("v1/memory.limit_in_bytes", "9223372036854771712\n");
	put("v1/memory.usage_in_bytes", "5000000000\n");
	put("v1/x/memory.limit_in_bytes", "300000000\n");
	put("v1/x/memory.usage_in_bytes", "100000000\n");
	put("v1/x/memory.stat", "cache 0\ntotal_inactive_file 0\n");
	put("v1/x/y/memory.limit_in_bytes", "200000000\n");
	put("v1/x/y/memory.usage_in_bytes", "150000000\n");
	put("v1/x/y/memory.stat", "inactive_file 99\ntotal_inactive_file 10000000\n");
	put("cg_v1", "12:pids:/x\n5:cpu,cpuacct:/x\n4:memory:/x/y\n1:name=systemd:/x\n0::/z\n");
	put("mi_v1", "40 1 0:30 / %s/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
	    "41 1 0:31 / %s/v2 rw - cgroup2 cgroup2 rw\n"
	    "42 1 0:32 / %s/v1 rw,nosuid - cgroup cgroup rw,memory\n", tmp, tmp, tmp);

	/* a mount point with a space (mountinfo writes \040) */
	put("sp ace/q/memory.max", "4096\n");
	put("sp ace/q/memory.current", "1024\n");
	put("cg_sp", "0::/q\n");
	put("mi_sp", "50 1 0:40 / %s/sp\\040ace rw - cgroup2 cgroup2 rw\n", tmp);

	/* usage over the limit */
	put("over/o/memory.max", "1000\n");
	put("over/o/memory.current", "5000\n");
	put("cg_over", "0::/o\n");
	put("mi_over", "60 1 0:41 / %s/over rw - cgroup2 cgroup2 rw\n", tmp);

	/* no memory cgroup at all: v1 lines without memory, no v2 line */
	put("cg_none", "3:cpu:/x\n2:pids:/x\n");
	/* v2 line but no cgroup2 mount in mountinfo */
	put("mi_nomount", "22 1 0:21 / /proc rw - proc proc rw\n");
}

/* As root: this process in a fresh v1 memory cgroup limited to 512 MiB. */
static void real(void)
{
	const char *hier = "/sys/fs/cgroup/memory";
	char cg[PATH_MAX], file[PATH_MAX + 32];
	uint64_t r;
	FILE *f;

	if (geteuid() || access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK)) {
		printf("skip: no v1 memory hierarchy at %s or not root\n", hier);
		return;
	}
	snprintf(cg, sizeof(cg), "%s/profd-test-memcg-%d", hier, getpid());
	if (mkdir(cg, 0755)) {
		CHECK(0, "mkdir %s: %s", cg, strerror(errno));
		return;
	}
	snprintf(file, sizeof(file), "%s/memory.limit_in_bytes", cg);
	f = fopen(file, "w");
	CHECK(f && fprintf(f, "536870912\n") > 0 && !fclose(f), "limit 512 MiB set");
	snprintf(file, sizeof(file), "%s/cgroup.procs", cg);
	f = fopen(file, "w");
	CHECK(f && fprintf(f, "%d\n", getpid()) > 0 && !fclose(f), "moved into %s", cg);
	r = memcg_room();
	CHECK(r <= 536870912ull && r > 400ull << 20,
	      "real v1 cgroup: room %llu bytes, at most the 512 MiB limit and more "
	      "than 400 MiB (this process uses little)", (unsigned long long)r);
	snprintf(file, sizeof(file), "%s/cgroup.procs", hier);
	f = fopen(file, "w");
	if (f) {
		fprintf(f, "%d\n", getpid());
		fclose(f);
	}
	CHECK(!rmdir(cg), "cgroup removed");
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	fakes();
	CHECK(room("cg_v2", "mi_v2") == 500000000ull,
	      "v2: the middle level's limit - (usage - inactive file) = 500000000: %llu",
	      (unsigned long long)room("cg_v2", "mi_v2"));
	CHECK(room("cg_ctr", "mi_ctr") == 200000000ull,
	      "container: the mount root is stripped from the path, not its look-alike: %llu",
	      (unsigned long long)room("cg_ctr", "mi_ctr"));
	CHECK(room("cg_v1", "mi_v1") == 60000000ull,
	      "v1 hybrid: the least room of the levels (y: 200M - (150M - 10M)), "
	      "v1's no-limit root ignored: %llu", (unsigned long long)room("cg_v1", "mi_v1"));
	CHECK(room("cg_sp", "mi_sp") == 3072,
	      "escaped mount point: %llu", (unsigned long long)room("cg_sp", "mi_sp"));
	CHECK(room("cg_over", "mi_over") == 0, "usage over the limit: no room");
	CHECK(room("cg_none", "mi_v1") == UINT64_MAX, "no memory cgroup: no bound");
	CHECK(room("cg_v2", "mi_nomount") == UINT64_MAX, "hierarchy not mounted: no bound");
	CHECK(room("missing", "mi_v2") == UINT64_MAX, "unreadable cgroup file: no bound");
	CHECK(room("cg_v2", "missing") == UINT64_MAX, "unreadable mountinfo: no bound");
	real();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmp);
	return failures ? 1 : 0;
}
