// SPDX-License-Identifier: GPL-2.0
/*
 * usdt.c - attaching the GPU programs to the injection library's probes.
 *
 * Owns: the table of library files (by device and inode) the programs of
 * bpf/gpu.bpf.h are attached to. Each attachment is libbpf's USDT attach
 * with pid -1: a uprobe on the file, so every process mapping it, now or
 * later, fires the programs, and the kernel raises the probe's semaphore
 * in each of them (which switches the library's work on).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>

#include "bpf/gpu_events.h"
#include "profd.skel.h"
#include "tracer/tracer_internal.h"

/*
 * The program of probe i and the probe's name. *optional: a library built
 * before the probe existed may lack it, and is attached without it.
 */
static struct bpf_program *probe_prog(struct tracer *t, int i, const char **name,
				      bool *optional)
{
	struct profd_bpf *s = t->skel;

	*optional = false;
	switch (i) {
	case 0: *name = "launch"; return s->progs.profd_gpu_launch;
	case 1: *name = "kernels"; return s->progs.profd_gpu_kernels;
	case 2: *name = "name"; return s->progs.profd_gpu_name;
	case 3: *name = "cubin"; return s->progs.profd_gpu_cubin;
	case 4: *name = "pc_samples"; return s->progs.profd_gpu_pc_samples;
	case 5: *name = "stall_reasons"; return s->progs.profd_gpu_stall_reasons;
	case 6: *name = "device"; return s->progs.profd_gpu_device;
	case 7: *name = "error"; return s->progs.profd_gpu_error;
	case 8: *name = "launches"; return s->progs.profd_gpu_launches;
	case 9: *name = "nvtx"; *optional = true; return s->progs.profd_gpu_nvtx;
	}
	return NULL;
}

static void *destroy_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

/*
 * Each uprobe waits for an RCU grace period as it goes (~0.1 s here), so
 * the probes' links are destroyed in parallel: exit takes one wait, not
 * one per probe site.
 */
static void detach(struct gpu_library *lib)
{
	pthread_t th[TRACER_GPU_PROBES];
	bool started[TRACER_GPU_PROBES] = { false };

	for (int i = 0; i < TRACER_GPU_PROBES; i++) {
		if (!lib->links[i])
			continue;
		started[i] = !pthread_create(&th[i], NULL, destroy_link, lib->links[i]);
		if (!started[i])
			bpf_link__destroy(lib->links[i]);
		lib->links[i] = NULL;
	}
	for (int i = 0; i < TRACER_GPU_PROBES; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}

/* Mark the copy with @st's device and inode seen; false if not attached. */
static bool mark_seen(struct tracer *t, const struct stat *st)
{
	for (unsigned int i = 0; i < t->ngpu_libs; i++) {
		if (t->gpu_libs[i].dev == st->st_dev && t->gpu_libs[i].ino == st->st_ino) {
			t->gpu_libs[i].seen = true;
			return true;
		}
	}
	return false;
}

/* Attach every probe to the file open as @fd (@st: its stat). */
static int attach_fd(struct tracer *t, int fd, const struct stat *st)
{
	struct gpu_library *lib = &t->gpu_libs[t->ngpu_libs];
	char fdpath[32];

	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	memset(lib, 0, sizeof(*lib));
	for (int i = 0; i < TRACER_GPU_PROBES; i++) {
		const char *name;
		bool optional;
		struct bpf_program *prog = probe_prog(t, i, &name, &optional);

		errno = 0;
		lib->links[i] = bpf_program__attach_usdt(prog, -1, fdpath,
							 PROFD_USDT_PROVIDER,
							 name, NULL);
		if (!lib->links[i]) {
			int err = errno ? -errno : -EINVAL;

			if (optional && err == -ENOENT)
				continue;	/* an older library: no NVTX */
			detach(lib);
			/* libbpf says ENOENT when the note lacks the probe */
			return err == -ENOENT ? -ESRCH : err;
		}
	}
	lib->dev = st->st_dev;
	lib->ino = st->st_ino;
	lib->seen = true;
	t->ngpu_libs++;
	return 1;
}

int tracer_gpu_attach(struct tracer *t, const char *path)
{
	struct stat st;
	int fd, ret;

	/* the common case, a copy attached already: one stat() */
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	if (mark_seen(t, &st))
		return 0;
	if (t->ngpu_libs == TRACER_GPU_MAX_LIBRARIES)
		return -ENOSPC;
	/*
	 * Held open, and attached through /proc/self/fd: @path is usually
	 * /proc/PID/root/..., gone when that process exits, maybe halfway
	 * through the probes (a short-lived NVTX program); the file is not.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		ret = -errno;
	else if (!S_ISREG(st.st_mode))
		ret = -ENOENT;
	else
		ret = mark_seen(t, &st) ? 0 : attach_fd(t, fd, &st);
	close(fd);
	return ret;
}

static void *detach_main(void *lib)
{
	detach(lib);
	free(lib);
	return NULL;
}

/* Wait for the copies being detached (detach_later()). */
static void join_detachers(struct tracer *t)
{
	for (unsigned int i = 0; i < t->ngpu_detachers; i++)
		pthread_join(t->gpu_detachers[i], NULL);
	t->ngpu_detachers = 0;
}

/*
 * Destroy @lib's links on a thread of its own: ~0.1 s per probe site
 * (one at a time in the kernel) would stall the reader for a second.
 */
static void detach_later(struct tracer *t, struct gpu_library *lib)
{
	struct gpu_library *copy;

	if (t->ngpu_detachers == TRACER_GPU_MAX_LIBRARIES)
		join_detachers(t);
	copy = malloc(sizeof(*copy));
	if (copy) {
		*copy = *lib;
		if (!pthread_create(&t->gpu_detachers[t->ngpu_detachers], NULL,
				    detach_main, copy)) {
			t->ngpu_detachers++;
			return;
		}
		free(copy);
	}
	detach(lib);
}

unsigned int tracer_gpu_detach_unused(struct tracer *t)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < t->ngpu_libs;) {
		if (t->gpu_libs[i].seen) {
			t->gpu_libs[i++].seen = false;
			continue;
		}
		detach_later(t, &t->gpu_libs[i]);
		t->gpu_libs[i] = t->gpu_libs[--t->ngpu_libs];
		n++;
	}
	return n;
}

unsigned int tracer_gpu_libraries(const struct tracer *t)
{
	return t->ngpu_libs;
}

void tracer_gpu_detach_all(struct tracer *t)
{
	for (unsigned int i = 0; i < t->ngpu_libs; i++)
		detach(&t->gpu_libs[i]);
	t->ngpu_libs = 0;
	join_detachers(t);
}
