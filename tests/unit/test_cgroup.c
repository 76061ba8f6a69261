// SPDX-License-Identifier: GPL-2.0
/*
 * test_cgroup.c - src/proc/cgroup.c and the process metadata of
 * src/proc/process.c:
 *  - cgroup_container_id() on the cgroup paths docker (cgroupfs and
 *    systemd drivers), containerd/CRI, CRI-O, podman and nerdctl create,
 *    nested containers, and paths that only look like them (conmon
 *    monitors, ids of the wrong length or case, pod-level cgroups);
 *  - cgroup_pick() on /proc/PID/cgroup texts of v2, v1 and hybrid hosts;
 *  - proc_read_cgroup() on this process and on a pid that does not exist;
 *  - as root: a child moved into a fresh docker-style cgroup (v2, then
 *    v1 pids), read through process_get(): its snapshot's container id,
 *    cgroup path, executable name and build ID (this binary's, through
 *    libelf here).
 * Prints one line per check; exits 1 if any failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/cgroup.h"
#include "proc/process.h"
#include "symbol/elf_file.h"
#include "symbol/symbolizer.h"

#include "check.h"

#define ID  "8e126766ee34e1d3b203c0a7cfc2a619c49d482a2ecc99a190fff577111a4dca"
#define ID2 "57ac76ffc93d7e7735ca186bc67115656967fc8aecbe1f65526c4c48b033e6a5"
#define UID "7e5f5ac0-1af4-49ab-8938-664970a26cfd"
#define UID_ "7e5f5ac0_1af4_49ab_8938_664970a26cfd"

struct id_case {
	const char *path;
	const char *want;	/* NULL: no container */
	const char *what;
};

static const struct id_case id_cases[] = {
	/* docker */
	{ "/docker/" ID, ID, "docker, cgroupfs driver" },
	{ "/system.slice/docker-" ID ".scope", ID, "docker, systemd driver" },
	{ "/system.slice/docker-" ID ".scope/init.scope", ID,
	  "systemd inside a docker container" },
	{ "/actions_job/" ID, ID, "docker with a custom cgroup parent" },
	/* containerd, CRI */
	{ "/kubepods/besteffort/pod" UID "/" ID, ID, "kubernetes, cgroupfs driver" },
	{ "/kubepods/pod" UID "/" ID, ID, "kubernetes guaranteed pod, cgroupfs" },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" ID ".scope", ID, "kubernetes, systemd driver" },
	{ "/system.slice/containerd.service/kubepods-besteffort-pod" UID_
	  ".slice:cri-containerd:" ID, ID, "containerd cgroupfs layout on systemd" },
	{ "/user.slice/user-1000.slice/user@1000.service/nerdctl-" ID ".scope", ID,
	  "nerdctl" },
	/* CRI-O */
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID ".scope", ID,
	  "cri-o, systemd driver" },
	{ "/kubepods/burstable/pod" UID "/crio-" ID, ID, "cri-o, cgroupfs driver" },
	/* podman */
	{ "/machine.slice/libpod-" ID ".scope", ID, "podman" },
	{ "/machine.slice/libpod-" ID ".scope/container", ID,
	  "podman, process in the container's sub-cgroup" },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
	  ID, "rootless podman" },
	{ "/libpod_parent/libpod-" ID, ID, "podman, cgroupfs driver" },
	/* nesting: the innermost wins */
	{ "/docker/" ID2 "/docker/" ID, ID, "docker in docker" },
	{ "/docker/" ID2 "/kubepods/besteffort/pod" UID "/" ID, ID, "kind node" },
	{ "docker/" ID, ID, "relative path" },
	{ "/docker/" ID "/", ID, "trailing slash" },
	/* not containers */
	{ "/", NULL, "root" },
	{ "", NULL, "empty" },
	{ "/init.scope", NULL, "systemd" },
	{ "/user.slice/user-1000.slice/session-3.scope", NULL, "login session" },
	{ "/system.slice/docker.service", NULL, "the docker daemon" },
	{ "/system.slice/containerd.service", NULL, "containerd" },
	{ "/kubepods/besteffort/pod" UID, NULL, "pod-level cgroup" },
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope", NULL,
	  "cri-o's conmon" },
	{ "/machine.slice/libpod-conmon-" ID ".scope", NULL, "podman's conmon" },
	{ "/process_api/b4ae18e316539cc4a02619c8d9923656", NULL, "32 hex digits" },
	{ "/docker/" ID "0", NULL, "65 hex digits" },
	{ "/system.slice/docker-8e126766ee34e1d3b203c0a7cfc2a619c49d482a2ecc99a190fff577111a4dc.scope",
	  NULL, "63 hex digits" },
	{ "/docker/8E126766EE34E1D3B203C0A7CFC2A619C49D482A2ECC99A190FFF577111A4DCA", NULL,
	  "upper case" },
	{ "/docker/8e126766ee34e1d3b203c0a7cfc2a619c49d482a2ecc99a190fff577111a4dcg", NULL,
	  "not hex" },
	{ "/system.slice/rkt-" ID ".scope", NULL, "unknown runtime prefix" },
	{ "/x.slice:unknown:" ID, NULL, "unknown runtime after a colon" },
	{ "/docker", NULL, "docker without an id" },
	{ "/system.slice/docker-.scope", NULL, "empty id" },
};

static void test_container_ids(void)
{
	char id[CGROUP_CONTAINER_ID_LEN];

	for (size_t i = 0; i < sizeof(id_cases) / sizeof(*id_cases); i++) {
		const struct id_case *c = &id_cases[i];
		bool found = cgroup_container_id(c->path, id, sizeof(id));

		if (c->want)
			CHECK(found && !strcmp(id, c->want), "id of %s: %s", c->what,
			      found ? id : "(none)");
		else
			CHECK(!found && id[0] == '\0', "no id for %s (%s)", c->what,
			      found ? id : "none");
	}
	CHECK(!cgroup_container_id("/docker/" ID, id, CGROUP_CONTAINER_ID_LEN - 1) &&
	      !id[0], "a buffer too small for an id gets none");
	CHECK(!cgroup_container_id(NULL, id, sizeof(id)), "NULL path");
}

struct pick_case {
	const char *text;
	int ret;
	const char *want;
	const char *what;
};

static const struct pick_case pick_cases[] = {
	{ "0::/system.slice/docker-" ID ".scope\n", 0, "/system.slice/docker-" ID ".scope",
	  "pure cgroup v2" },
	{ "0::/user.slice/user-1000.slice/session-1.scope\n", 0,
	  "/user.slice/user-1000.slice/session-1.scope", "v2, no container" },
	{ "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/b4ae18e316539cc4a02619c8d9923656\n"
	  "1:cpu:/\n0::/system.slice/docker-" ID ".scope\n", 0,
	  "/system.slice/docker-" ID ".scope", "hybrid, container in v2" },
	{ "9:name=systemd:/\n8:pids:/docker/" ID "\n"
	  "4:memory:/process_api/b4ae18e316539cc4a02619c8d9923656\n0::/\n", 0,
	  "/docker/" ID, "hybrid, container in one v1 hierarchy" },
	{ "9:name=systemd:/\n4:memory:/process_api/b4ae18e316539cc4a02619c8d9923656\n"
	  "8:pids:/docker/" ID "\n0::/\n", 0,
	  "/docker/" ID, "the v1 line with the container, not the first non-root one" },
	{ "12:pids:/docker/" ID "\n11:memory:/docker/" ID "\n"
	  "1:name=systemd:/docker/" ID "\n0::/system.slice/containerd.service\n", 0,
	  "/docker/" ID, "the container beats a v2 path without one" },
	{ "2:cpu,cpuacct:/docker/" ID2 "\n1:name=systemd:/docker/" ID "\n", 0,
	  "/docker/" ID, "name=systemd first among v1 containers" },
	{ "0::/docker/" ID2 "\n1:name=systemd:/docker/" ID "\n", 0,
	  "/docker/" ID2, "v2 first among containers" },
	{ "5:devices:/user.slice\n1:name=systemd:/user.slice/user-0.slice/session-2.scope\n0::/\n",
	  0, "/user.slice/user-0.slice/session-2.scope", "v1: name=systemd before the others" },
	{ "5:devices:/\n3:cpu:/user.slice\n1:name=systemd:/\n0::/\n", 0, "/user.slice",
	  "v1: the first other non-root path" },
	{ "0::/user.slice\n1:name=systemd:/system.slice/cron.service\n", 0, "/user.slice",
	  "v2 before name=systemd" },
	{ "3:cpu:/\n1:name=systemd:/\n0::/\n", 0, "/", "everything at the root" },
	{ "0::/system.slice/containerd.service/kubepods-besteffort-pod" UID_
	  ".slice:cri-containerd:" ID "\n", 0,
	  "/system.slice/containerd.service/kubepods-besteffort-pod" UID_
	  ".slice:cri-containerd:" ID, "a path with colons" },
	{ "0::/system.slice/docker-" ID ".scope (deleted)\n", 0,
	  "/system.slice/docker-" ID ".scope", "a removed cgroup" },
	{ "0::/docker/" ID, 0, "/docker/" ID, "no trailing newline" },
	{ "garbage\n:\n1:x\n2:y:relative\n0::/ok\n", 0, "/ok", "malformed lines skipped" },
	{ "", -ENODATA, "", "empty file" },
	{ "garbage\n", -ENODATA, "", "no cgroup line" },
};

static void test_pick(void)
{
	char path[PATH_MAX];
	char small[8];
	int ret;

	for (size_t i = 0; i < sizeof(pick_cases) / sizeof(*pick_cases); i++) {
		const struct pick_case *c = &pick_cases[i];

		ret = cgroup_pick(c->text, path, sizeof(path));
		CHECK(ret == c->ret && !strcmp(path, c->want), "pick: %s: %d '%s'", c->what,
		      ret, path);
	}
	ret = cgroup_pick("0::/system.slice/cron.service\n", small, sizeof(small));
	CHECK(ret == -ENAMETOOLONG && !small[0], "pick: too long for the buffer: %d", ret);
}

static void test_proc_read(void)
{
	char path[PATH_MAX];
	int ret = proc_read_cgroup(getpid(), path, sizeof(path));

	CHECK(ret == 0 && path[0] == '/', "this process's cgroup: %d %s", ret, path);
	ret = proc_read_cgroup(0x7ffffff0, path, sizeof(path));
	CHECK(ret == -ENOENT && !path[0], "no such process: %d", ret);
}

/* ---- as root: a child in a fresh docker-style cgroup ---- */

/* Mount point of cgroup2 (@v2) or of the v1 hierarchy with @controller. */
static bool cgroup_mount(bool v2, const char *controller, char *out, size_t len)
{
	char dev[256], dir[PATH_MAX], type[64], opts[1024];
	FILE *f = fopen("/proc/mounts", "r");
	bool found = false;

	if (!f)
		return false;
	while (!found && fscanf(f, "%255s %4095s %63s %1023s %*d %*d", dev, dir, type,
				opts) == 4) {
		if (v2 && !strcmp(type, "cgroup2"))
			found = true;
		if (!v2 && !strcmp(type, "cgroup")) {
			for (char *o = strtok(opts, ","); o; o = strtok(NULL, ","))
				if (!strcmp(o, controller))
					found = true;
		}
		if (found)
			snprintf(out, len, "%s", dir);
	}
	fclose(f);
	return found;
}

static int write_pid(const char *dir, pid_t pid)
{
	char file[PATH_MAX + 32], buf[32];
	int fd, n, ret = 0;

	snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static void random_id(char *out)
{
	unsigned char b[32];

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		memset(b, 0x5a, sizeof(b));
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Move a child into MOUNT/TOP/MIDDLE/LEAF (TOP unique to this run; LEAF
 * a docker-style name with a fresh id) and read it through the table.
 */
static void check_child_in_cgroup(const char *what, const char *mount,
				  const char *middle, const char *leaf_fmt,
				  const char *self_build_id)
{
	char id[65], *leaf = NULL, *top = NULL, *mid = NULL, *dir = NULL, *rel = NULL;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct symbolizer *sym = symbolizer_new();
	struct process_table *pt = sym ? process_table_new(sym, &lock) : NULL;
	struct process *p;
	pid_t child;
	int ret;

	random_id(id);
	if (asprintf(&leaf, leaf_fmt, id) < 0 ||
	    asprintf(&top, "%s/profd-test-%d", mount, (int)getpid()) < 0 ||
	    asprintf(&mid, "%s/%s", top, middle) < 0 ||
	    asprintf(&dir, "%s/%s", mid, leaf) < 0 ||
	    asprintf(&rel, "/profd-test-%d/%s/%s", (int)getpid(), middle, leaf) < 0) {
		CHECK(false, "%s: out of memory", what);
		return;
	}
	if (!pt || mkdir(top, 0755) || mkdir(mid, 0755) || mkdir(dir, 0755)) {
		CHECK(false, "%s: create %s: %s", what, dir, strerror(errno));
		goto out;
	}
	child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	ret = child > 0 ? write_pid(dir, child) : -errno;
	CHECK(ret == 0, "%s: child %d moved into %s: %d", what, (int)child, rel, ret);
	if (!ret) {
		p = process_get(pt, child, mono_ns(), false, NULL, 0);
		CHECK(p && p->snap, "%s: process read", what);
		if (p && p->snap) {
			const struct proc_meta *m = &p->snap->meta;

			CHECK(!strcmp(m->container_id, id), "%s: container id %s", what,
			      m->container_id);
			CHECK(m->cgroup && !strcmp(m->cgroup, rel), "%s: cgroup %s", what,
			      m->cgroup ? m->cgroup : "(null)");
			CHECK(m->executable && !strcmp(m->executable, "test_cgroup"),
			      "%s: executable %s", what, m->executable ? m->executable : "(null)");
			CHECK(self_build_id[0] && !strcmp(m->build_id, self_build_id),
			      "%s: build id %s (want %s)", what, m->build_id, self_build_id);
		}
	}
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
out:
	rmdir(dir);
	rmdir(mid);
	rmdir(top);
	free(leaf);
	free(top);
	free(mid);
	free(dir);
	free(rel);
	process_table_free(pt);
	symbolizer_free(sym);
}

static void test_fresh_cgroups(void)
{
	char mount[PATH_MAX], build_id[PROC_BUILD_ID_LEN] = "";
	int err;
	struct elf_file *self = elf_file_open("/proc/self/exe", &err);

	if (self) {
		snprintf(build_id, sizeof(build_id), "%s", elf_file_build_id(self));
		elf_file_free(self);
	}
	if (geteuid() != 0) {
		printf("skip: fresh cgroups need root\n");
		return;
	}
	if (cgroup_mount(true, NULL, mount, sizeof(mount)))
		check_child_in_cgroup("cgroup v2", mount, "system.slice", "docker-%s.scope",
				      build_id);
	else
		printf("skip: no cgroup2 mount\n");
	if (cgroup_mount(false, "pids", mount, sizeof(mount)))
		check_child_in_cgroup("cgroup v1 pids", mount, "docker", "%s", build_id);
	else
		printf("skip: no cgroup v1 pids hierarchy\n");
}

int main(void)
{
	test_container_ids();
	test_pick();
	test_proc_read();
	test_fresh_cgroups();
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
