// SPDX-License-Identifier: GPL-2.0
/*
 * objects.c - the unwind loader's cache of per-file tables (see
 * loader_internal.h): one per ELF file (device, inode; the vDSO: profd's
 * own copy), opened through the process that maps it, compiled from its
 * CFI (and a separate debug file's, Go's pclntab) and loaded into the
 * shards; evicted tables reloaded at most RELOADS_PER_S a second; a file
 * that could not be opened tried again with the next process.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "counters/counters.h"
#include "symbol/debuginfo.h"
#include "symbol/elf_file.h"
#include "unwind/compile.h"
#include "unwind/loader_internal.h"
#include "util/vdso.h"

COUNTER_DEFINE(unwind_cfi_rejected, COUNTER_PARTIAL,
	       "malformed CIEs/FDEs left out of unwind tables");
COUNTER_DEFINE(unwind_reloads, COUNTER_STAT,
	       "evicted unwind tables reloaded (their process was sampled)");

static uint32_t obj_bucket(uint32_t maj, uint32_t min, uint64_t ino, bool vdso)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)maj << 32 | min) ^ vdso;

	return (h ^ (h >> 31)) % OBJ_BUCKETS;
}

void loader_obj_unload(struct unwind_loader *l, struct uobj *o)
{
	for (uint32_t i = 0; i < o->nchunks; i++) {
		shards_release(l->shards, &o->chunks[i].ext);
		l->st.rows -= o->chunks[i].ext.nrows;
	}
	free(o->chunks);
	o->chunks = NULL;
	o->nchunks = 0;
	if (!o->status)
		l->st.objects--;
}

void loader_obj_forget(struct unwind_loader *l, struct uobj *o)
{
	struct uobj **pp = &l->objs[obj_bucket(o->dev_major, o->dev_minor,
					       o->inode, o->vdso)];

	while (*pp && *pp != o)
		pp = &(*pp)->next;
	if (*pp)
		*pp = o->next;
	if (o->status && o->status != -ENOSPC)
		l->st.objects_failed--;
	loader_obj_unload(l, o);
	free(o);
}

static int read_segs(Elf *elf, struct uobj *o)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n && o->nsegs < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		o->segs[o->nsegs].off = ph.p_offset;
		o->segs[o->nsegs].vaddr = ph.p_vaddr;
		o->segs[o->nsegs].filesz = ph.p_filesz;
		o->nsegs++;
	}
	return o->nsegs ? 0 : -ENOEXEC;
}


/* Copy @t's rows into shards, in chunks of at most one shard each. */
static int load_rows(struct unwind_loader *l, struct uobj *o,
		     const struct unwind_table *t)
{
	uint32_t n = t->nr_rows, nchunks = (n + UNWIND_SHARD_ROWS - 1) / UNWIND_SHARD_ROWS;

	o->chunks = calloc(nchunks ? nchunks : 1, sizeof(*o->chunks));
	if (!o->chunks)
		return -ENOMEM;
	for (uint32_t c = 0; c < nchunks; c++) {
		uint32_t a = c * UNWIND_SHARD_ROWS;
		uint32_t b = a + UNWIND_SHARD_ROWS < n ? a + UNWIND_SHARD_ROWS : n;
		struct chunk *ch = &o->chunks[c];
		int err;

		for (int tries = 0;; tries++) {
			err = shards_alloc(l->shards, b - a, &ch->ext);
			if (err != -ENOSPC || tries > 64)
				break;
			loader_evict_one(l, o);
		}
		if (!err)
			err = shards_write(l->shards, &ch->ext, &t->rows[a]);
		if (err) {
			if (ch->ext.nrows)
				shards_release(l->shards, &ch->ext);
			return err;
		}
		ch->lo = t->rows[a].pc;
		/* the last row is END: it covers nothing past its pc */
		ch->hi = b < n ? t->rows[b].pc : t->rows[n - 1].pc;
		o->nchunks++;
		l->st.rows += b - a;
	}
	return 0;
}

static int open_mapping(pid_t pid, const struct proc_mapping *m)
{
	char path[4096 + 64];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", pid,
		 (unsigned long)m->start, (unsigned long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, m->path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != m->inode ||
	    major(st.st_dev) != m->dev_major || minor(st.st_dev) != m->dev_minor) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * The separate debug file of the stripped object open on @fd (build ID,
 * then .gnu_debuglink; under the process's root first), opened, or -1.
 * Its .debug_frame joins the object's own CFI: code built without
 * unwind tables (-fno-asynchronous-unwind-tables) keeps its CFI only
 * there once stripped.
 */
static int open_debug_file(int fd, pid_t pid, const char *path)
{
	char root[64], found[4096];
	struct elf_file *f;
	int err, dfd = -1;

	f = elf_file_open_fd(dup(fd), &err);
	if (!f)
		return -1;
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	if (!debuginfo_attach(f, root, path, found, sizeof(found)) && found[0])
		dfd = open(found, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	elf_file_free(f);
	return dfd;
}

/* Compile and load the table of @o from @fd (or the vDSO image). */
static int obj_build(struct unwind_loader *l, struct uobj *o, int fd,
		     pid_t pid, const char *path)
{
	struct unwind_build_stats bst = { 0 };
	struct unwind_table t = { 0 };
	uint64_t t0 = mono_ns();
	uintptr_t vbase = 0;
	size_t vsize = 0;
	Elf *elf;
	int err, dfd;

	if (o->vdso) {
		err = own_vdso(&vbase, &vsize);
		if (err)
			return err;
		elf = elf_memory((char *)vbase, vsize);
	} else {
		elf = elf_begin(fd, ELF_C_READ, NULL);	/* pread: no SIGBUS if truncated */
	}
	if (!elf)
		return -ENOEXEC;
	err = read_segs(elf, o);
	dfd = o->vdso ? -1 : open_debug_file(fd, pid, path);
	if (!err && dfd >= 0)
		err = unwind_table_build_fds(fd, dfd, &t, &bst);
	else if (!err)
		err = unwind_table_build_elf(elf, NULL, &t, &bst);
	if (dfd >= 0)
		close(dfd);
	elf_end(elf);
	l->st.build_errors += bst.errors;
	counter_add(&counter_unwind_cfi_rejected, bst.errors);
	l->st.build_ns += mono_ns() - t0;
	if (err)
		return err;
	o->table_base = t.base;
	err = t.nr_rows ? load_rows(l, o, &t) : -ENODATA;
	unwind_table_free(&t);
	if (err)
		loader_obj_unload(l, o);
	return err;
}

/* A reload allowed now (RELOADS_PER_S, bursts of as many)? */
static bool reload_allowed(struct unwind_loader *l, uint64_t now)
{
	l->reload_tokens += (double)(now - l->reload_refill_ns) * RELOADS_PER_S / 1e9;
	l->reload_refill_ns = now;
	if (l->reload_tokens > RELOADS_PER_S)
		l->reload_tokens = RELOADS_PER_S;
	if (l->reload_tokens < 1) {
		l->st.reloads_deferred++;
		return false;
	}
	l->reload_tokens -= 1;
	return true;
}

/* Open @m's file (the vDSO: profd's own copy) and build @o's table: o->status. */
static void obj_load(struct unwind_loader *l, struct uobj *o, pid_t pid,
		     const struct proc_mapping *m)
{
	int fd = -1;

	o->status = 0;
	o->open_failed = false;
	if (!o->vdso) {
		fd = open_mapping(pid, m);
		o->status = fd < 0 ? fd : 0;
		o->open_failed = fd < 0;
	}
	if (!o->status)
		o->status = obj_build(l, o, fd, pid, m->path);
	if (fd >= 0)
		close(fd);
}

/*
 * Load again the table of @o, evicted for room while processes used it:
 * one of them (@pid, mapping @m) was sampled in its code. Rate-limited;
 * a deferred reload is asked again by the process's next samples.
 */
static void obj_reload(struct unwind_loader *l, struct uobj *o, pid_t pid,
		       const struct proc_mapping *m, uint64_t now)
{
	if (!reload_allowed(l, now))
		return;
	o->nsegs = 0;
	obj_load(l, o, pid, m);
	if (!o->status) {
		l->st.objects++;
		l->st.reloads++;
		counter_inc(&counter_unwind_reloads);
	} else if (o->status != -ENOSPC) {
		l->st.objects_failed++;
	}
}

static bool is_vdso(const struct proc_mapping *m)
{
	return m->special && !strcmp(m->path, "[vdso]");
}

/* Whether unwind_loader_update() opens an object for @m. */
bool loader_has_object(const struct proc_mapping *m)
{
	return m->executable &&
	       (is_vdso(m) || (m->path[0] && !m->special && m->inode));
}

/* The cached object of @m's file, or NULL. */
struct uobj *loader_obj_find(const struct unwind_loader *l,
			     const struct proc_mapping *m)
{
	bool vdso = is_vdso(m);
	uint32_t b = obj_bucket(m->dev_major, m->dev_minor, m->inode, vdso);

	for (struct uobj *o = l->objs[b]; o; o = o->next)
		if (o->inode == m->inode && o->dev_major == m->dev_major &&
		    o->dev_minor == m->dev_minor && o->vdso == vdso)
			return o;
	return NULL;
}

struct uobj *loader_obj_get(struct unwind_loader *l, pid_t pid,
			    const struct proc_mapping *m, uint64_t now)
{
	bool vdso = is_vdso(m);
	uint32_t b = obj_bucket(m->dev_major, m->dev_minor, m->inode, vdso);
	struct uobj *o = loader_obj_find(l, m);

	if (o) {
		o->last_used = now;
		if (o->status == -ENOSPC)
			obj_reload(l, o, pid, m, now);
		else if (o->open_failed) {
			/*
			 * The process it was first seen in was gone before its
			 * file was opened (a short-lived one): this one may not
			 * be. Cached as failed, the table of libc would be
			 * lost to every process after it.
			 */
			l->st.objects_failed--;
			obj_load(l, o, pid, m);
			if (o->status)
				l->st.objects_failed++;
			else
				l->st.objects++;
		}
		return o;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->dev_major = m->dev_major;
	o->dev_minor = m->dev_minor;
	o->inode = m->inode;
	o->vdso = vdso;
	o->last_used = now;
	obj_load(l, o, pid, m);
	if (o->status)
		l->st.objects_failed++;
	else
		l->st.objects++;
	o->next = l->objs[b];
	l->objs[b] = o;
	return o;
}
