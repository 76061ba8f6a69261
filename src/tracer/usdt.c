// SPDX-License-Identifier: GPL-2.0
/*
 * usdt.c - attaching the GPU programs to the injection library's probes.
 *
 * Owns: the table of library files (by device and inode) the programs of
 * bpf/gpu.bpf.h are attached to, and the blocks of USDT spec ids their
 * probe sites use. Each attachment is a uprobe on the file with pid -1,
 * so every process mapping it, now or later, fires the programs, and the
 * kernel raises the probe's semaphore in each of them (which switches
 * the library's work on). Where the kernel has uprobe-multi links (>=
 * 6.6) a probe's sites are one such link (usdt_multi.c): detaching a
 * copy then takes one RCU wait, not one per site under a global mutex.
 * Elsewhere libbpf's USDT attach makes one perf-event uprobe per site.
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
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/gpu_events.h"
#include "profd.skel.h"
#include "tracer/tracer_internal.h"
#include "tracer/usdt_multi.h"

/*
 * The program of probe i and the probe's name. *optional: a library built
 * before the probe existed may lack it, and is attached without it.
 */
static struct bpf_program *probe_prog(struct profd_bpf *s, int i, const char **name,
				      bool *optional)
{
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

bool tracer_gpu_configure(struct profd_bpf *skel)
{
	/*
	 * The launch probe tail-calls the kprobe-type unwinder chain (every
	 * program of section "kprobe": PROFD_DEFINE_UNWINDERS(kprobe, ...)),
	 * and a kernel may tail-call only programs of the caller's attach type.
	 */
	struct bpf_program *prog;

	if (!usdt_multi_supported())
		return false;
	for (int i = 0; i < TRACER_GPU_PROBES; i++) {
		const char *name;
		bool optional;

		bpf_program__set_expected_attach_type(probe_prog(skel, i, &name, &optional),
						      USDT_MULTI_ATTACH_TYPE);
	}
	bpf_object__for_each_program(prog, skel->obj)
		if (!strcmp(bpf_program__section_name(prog), "kprobe"))
			bpf_program__set_expected_attach_type(prog, USDT_MULTI_ATTACH_TYPE);
	return true;
}

struct link_ref {
	struct bpf_link *link;	/* libbpf's, or */
	int fd;			/* a uprobe-multi link's */
};

static void *destroy_link(void *arg)
{
	struct link_ref *r = arg;

	if (r->link)
		bpf_link__destroy(r->link);
	else
		close(r->fd);
	return NULL;
}

static void slot_free(struct tracer *t, int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&t->spec_lock);
	t->spec_slots &= ~(1ULL << slot);
	pthread_mutex_unlock(&t->spec_lock);
}

/* A free block of spec ids, marked used; -ENOSPC if none. */
static int slot_take(struct tracer *t)
{
	int slot = -ENOSPC;

	pthread_mutex_lock(&t->spec_lock);
	for (int s = 0; s < TRACER_GPU_MAX_LIBRARIES; s++) {
		if (!(t->spec_slots & (1ULL << s))) {
			t->spec_slots |= 1ULL << s;
			slot = s;
			break;
		}
	}
	pthread_mutex_unlock(&t->spec_lock);
	return slot;
}

/*
 * Each link destroyed waits for an RCU grace period (~0.1 s here), so
 * they are destroyed in parallel: uprobe-multi links closed together
 * share the wait (perf-event ones still queue on the kernel's
 * event_mutex). The copy's spec ids are free once its links are gone.
 */
static void detach(struct tracer *t, struct gpu_library *lib)
{
	pthread_t th[TRACER_GPU_PROBES];
	struct link_ref refs[TRACER_GPU_PROBES];
	bool started[TRACER_GPU_PROBES] = { false };

	for (int i = 0; i < TRACER_GPU_PROBES; i++) {
		refs[i] = (struct link_ref){ lib->links[i], lib->link_fds[i] };
		lib->links[i] = NULL;
		lib->link_fds[i] = -1;
		if (!refs[i].link && refs[i].fd < 0)
			continue;
		started[i] = !pthread_create(&th[i], NULL, destroy_link, &refs[i]);
		if (!started[i])
			destroy_link(&refs[i]);
	}
	for (int i = 0; i < TRACER_GPU_PROBES; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	slot_free(t, lib->slot);
	lib->slot = -1;
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

/*
 * Probe @i's sites among @sites (@n) as one uprobe-multi link on @fdpath,
 * each site's spec written under the copy's block of ids (*@next: the
 * next unused). Returns the link's fd, -ENOENT if the copy lacks the
 * probe, or -errno.
 */
static int link_multi(struct tracer *t, struct gpu_library *lib, int i,
		      const struct usdt_site *sites, int n, int *next,
		      const char *fdpath)
{
	uint64_t offsets[TRACER_GPU_SITES_PER_COPY], refs[TRACER_GPU_SITES_PER_COPY];
	uint64_t cookies[TRACER_GPU_SITES_PER_COPY];
	int specs = bpf_map__fd(t->skel->maps.__bpf_usdt_specs);
	unsigned int cnt = 0;
	const char *name;
	bool optional;
	struct bpf_program *prog = probe_prog(t->skel, i, &name, &optional);

	for (int k = 0; k < n; k++) {
		struct profd_usdt_spec spec;
		int id = lib->slot * TRACER_GPU_SITES_PER_COPY + *next;

		if (strcmp(sites[k].name, name))
			continue;
		if (usdt_args_parse(sites[k].args, &spec))
			return -EINVAL;
		if (bpf_map_update_elem(specs, &id, &spec, BPF_ANY))
			return -errno;
		offsets[cnt] = sites[k].offset;
		refs[cnt] = sites[k].ref_ctr_offset;
		cookies[cnt++] = id;
		++*next;
	}
	if (!cnt)
		return -ENOENT;
	return usdt_multi_link(bpf_program__fd(prog), fdpath, offsets, refs, cookies, cnt);
}

/* Attach every probe of @lib to @fdpath as uprobe-multi links. */
static int attach_multi(struct tracer *t, struct gpu_library *lib, int fd,
			const char *fdpath)
{
	struct usdt_site sites[TRACER_GPU_SITES_PER_COPY];
	int n = usdt_sites_read(fd, PROFD_USDT_PROVIDER, sites, TRACER_GPU_SITES_PER_COPY);
	int next = 0;

	if (n < 0)
		return n == -ENODATA ? -ESRCH : n;
	lib->slot = slot_take(t);
	if (lib->slot < 0)
		return lib->slot;
	for (int i = 0; i < TRACER_GPU_PROBES; i++) {
		const char *name;
		bool optional;
		int ret;

		probe_prog(t->skel, i, &name, &optional);
		ret = link_multi(t, lib, i, sites, n, &next, fdpath);
		if (ret == -ENOENT && optional)
			continue;	/* an older library: no NVTX */
		if (ret < 0)
			return ret == -ENOENT ? -ESRCH : ret;
		lib->link_fds[i] = ret;
	}
	return 0;
}

/* Attach every probe to @fdpath with libbpf's USDT attach. */
static int attach_libbpf(struct tracer *t, struct gpu_library *lib, const char *fdpath)
{
	for (int i = 0; i < TRACER_GPU_PROBES; i++) {
		const char *name;
		bool optional;
		struct bpf_program *prog = probe_prog(t->skel, i, &name, &optional);

		errno = 0;
		lib->links[i] = bpf_program__attach_usdt(prog, -1, fdpath,
							 PROFD_USDT_PROVIDER,
							 name, NULL);
		if (!lib->links[i]) {
			int err = errno ? -errno : -EINVAL;

			if (optional && err == -ENOENT)
				continue;	/* an older library: no NVTX */
			/* libbpf says ENOENT when the note lacks the probe */
			return err == -ENOENT ? -ESRCH : err;
		}
	}
	return 0;
}

/* Attach every probe to the file open as @fd (@st: its stat). */
static int attach_fd(struct tracer *t, int fd, const struct stat *st)
{
	struct gpu_library *lib = &t->gpu_libs[t->ngpu_libs];
	char fdpath[32];
	int err;

	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	memset(lib, 0, sizeof(*lib));
	lib->slot = -1;
	for (int i = 0; i < TRACER_GPU_PROBES; i++)
		lib->link_fds[i] = -1;
	err = t->gpu_multi ? attach_multi(t, lib, fd, fdpath)
			   : attach_libbpf(t, lib, fdpath);
	if (err) {
		detach(t, lib);
		return err;
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

struct detach_job {
	struct tracer *t;
	struct gpu_library lib;
};

static void *detach_main(void *arg)
{
	struct detach_job *job = arg;

	detach(job->t, &job->lib);
	free(job);
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
 * Destroy @lib's links on a thread of its own: an RCU wait (perf-event
 * uprobes: one per probe site, one at a time in the kernel, ~1 s a
 * copy) must not stall the reader.
 */
static void detach_later(struct tracer *t, struct gpu_library *lib)
{
	struct detach_job *job;

	if (t->ngpu_detachers == TRACER_GPU_MAX_LIBRARIES)
		join_detachers(t);
	job = malloc(sizeof(*job));
	if (job) {
		job->t = t;
		job->lib = *lib;
		if (!pthread_create(&t->gpu_detachers[t->ngpu_detachers], NULL,
				    detach_main, job)) {
			t->ngpu_detachers++;
			return;
		}
		free(job);
	}
	detach(t, lib);
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
	/* every copy at once: their links' RCU waits overlap */
	for (unsigned int i = 0; i < t->ngpu_libs; i++)
		detach_later(t, &t->gpu_libs[i]);
	t->ngpu_libs = 0;
	join_detachers(t);
}
