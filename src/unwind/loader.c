// SPDX-License-Identifier: GPL-2.0
/*
 * loader.c - unwind tables for the processes being sampled (see loader.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>

#include "bpf/profd.h"
#include "counters/counters.h"
#include "symbol/debuginfo.h"
#include "symbol/elf_file.h"
#include "unwind/compile.h"
#include "unwind/loader.h"
#include "unwind/shards.h"
#include "util/vdso.h"

/* The DWARF unwinder's counters: this file's and the BPF walker's (unwind_dwarf.bpf.h). */
COUNTER_DEFINE(unwind_cfi_rejected, COUNTER_PARTIAL,
	       "malformed CIEs/FDEs left out of unwind tables");
COUNTER_DEFINE(unwind_evictions, COUNTER_PARTIAL,
	       "unwind tables evicted at --unwind-memory-limit");
COUNTER_DEFINE(unwind_ranges_truncated, COUNTER_PARTIAL,
	       "processes with more executable ranges than have tables");
COUNTER_DEFINE(unwind_update_error, COUNTER_PARTIAL, "unwind_procs updates that failed");
COUNTER_DEFINE(unwind_reloads, COUNTER_STAT,
	       "evicted unwind tables reloaded (their process was sampled)");
COUNTER_DEFINE_BPF(dwarf_no_row, COUNTER_STAT, PROFD_CNT_DWARF_NO_ROW,
		   "pc in a table's range but no row: frame pointers used");
COUNTER_DEFINE_BPF(dwarf_unsupported_rule, COUNTER_STAT, PROFD_CNT_DWARF_UNSUPPORTED,
		   "CFA rule the BPF unwinder cannot follow: frame pointers used where "
		   "the code keeps them");
COUNTER_DEFINE_BPF(dwarf_unfollowable, COUNTER_PARTIAL, PROFD_CNT_DWARF_UNFOLLOWABLE,
		   "CFA rule that cannot be followed in code without a frame pointer: "
		   "walk cut, [truncated]");
COUNTER_DEFINE_BPF(dwarf_pc_unknown, COUNTER_STAT, PROFD_CNT_DWARF_PC_UNKNOWN,
		   "pc outside the process's known ranges");
COUNTER_DEFINE_BPF(dwarf_bad_frame, COUNTER_PARTIAL, PROFD_CNT_DWARF_BAD_FRAME,
		   "CFA not above sp: walk stopped");
COUNTER_DEFINE_BPF(dwarf_table_evicted, COUNTER_PARTIAL, PROFD_CNT_DWARF_TABLE_EVICTED,
		   "pc in a range whose table was evicted: frame pointers used");

#define OBJ_BUCKETS 1024
#define PROC_BUCKETS 1024
#define MAX_SEGS 16
/* An unused table is dropped after this long without a process using it. */
#define UNUSED_TTL_NS (120ULL * 1000 * 1000 * 1000)
/* A sampled process marks its tables used at most this often. */
#define TOUCH_EVERY_NS (1000ULL * 1000 * 1000)
/* Evicted tables reloaded per second at most (a token bucket of this depth). */
#define RELOADS_PER_S 4

struct chunk {
	struct shard_extent ext;
	uint32_t lo, hi;	/* table-relative pcs [lo, hi) the chunk covers */
};

struct seg {
	uint64_t off, vaddr, filesz;
};

/* One ELF file's table. */
struct uobj {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	bool vdso;
	int status;		/* 0: rows loaded; < 0: no table, FP */
	bool open_failed;	/* status: the file could not be opened through
				 * the process that mapped it (gone, or its
				 * root unreachable): tried again with the next
				 * process that maps it, never cached as "no CFI" */
	uint64_t table_base;
	struct seg segs[MAX_SEGS];
	uint32_t nsegs;
	struct chunk *chunks;
	uint32_t nchunks;
	uint32_t users;		/* processes whose entry uses it */
	uint64_t last_used;	/* CLOCK_MONOTONIC ns */
	struct uobj *next;
};

/*
 * One process's entry (its ranges, as written to BPF) and the tables it
 * references. Only the ranges it has are held: the 10 KiB BPF value is
 * put together in l->value at each write.
 */
struct uproc {
	pid_t pid;
	uint32_t nmappings;
	uint64_t maps_read_ns;
	struct unwind_mapping *mappings;	/* [nmappings] */
	struct uobj **entry_obj;	/* [nmappings]: per entry, NULL for FP */
	struct uobj **objs;	/* distinct tables referenced (one user each) */
	uint32_t nobjs;
	uint64_t touched_ns;	/* last unwind_loader_touch() that counted */
	struct uproc *next;
};

struct unwind_loader {
	int procs_fd;
	struct shards *shards;
	struct uobj *objs[OBJ_BUCKETS];
	struct uproc *procs[PROC_BUCKETS];
	struct unwind_loader_stats st;
	double reload_tokens;	/* token bucket: RELOADS_PER_S */
	uint64_t reload_refill_ns;
	uint64_t expired_ns;	/* last expire() walk */
	/* an update's ranges as they are built (evict_one() may write other
	 * processes' entries meanwhile: not through these) */
	struct unwind_mapping build[UNWIND_MAX_PROC_MAPPINGS];
	struct uobj *build_obj[UNWIND_MAX_PROC_MAPPINGS];
	uint32_t nbuild;
	/* the BPF value of each write_proc() */
	struct unwind_proc value;
	uint32_t value_used;	/* entries of value not zero */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct unwind_loader *unwind_loader_new(int shards_fd, int procs_fd,
					uint64_t max_bytes)
{
	struct unwind_loader *l = calloc(1, sizeof(*l));
	uint64_t shard_bytes = (uint64_t)UNWIND_SHARD_ROWS * sizeof(struct unwind_row);
	uint64_t n = max_bytes / shard_bytes;

	if (!l)
		return NULL;
	if (n < 1)
		n = 1;
	l->procs_fd = procs_fd;
	l->shards = shards_new(shards_fd, n > UNWIND_MAX_SHARDS ? UNWIND_MAX_SHARDS : n);
	if (!l->shards) {
		free(l);
		return NULL;
	}
	elf_version(EV_CURRENT);
	return l;
}

/* tables */

static uint32_t obj_bucket(uint32_t maj, uint32_t min, uint64_t ino, bool vdso)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)maj << 32 | min) ^ vdso;

	return (h ^ (h >> 31)) % OBJ_BUCKETS;
}

static void obj_unload(struct unwind_loader *l, struct uobj *o)
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

static void obj_forget(struct unwind_loader *l, struct uobj *o)
{
	struct uobj **pp = &l->objs[obj_bucket(o->dev_major, o->dev_minor,
					       o->inode, o->vdso)];

	while (*pp && *pp != o)
		pp = &(*pp)->next;
	if (*pp)
		*pp = o->next;
	if (o->status && o->status != -ENOSPC)
		l->st.objects_failed--;
	obj_unload(l, o);
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

static void evict_one(struct unwind_loader *l, struct uobj *keep);

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
			evict_one(l, o);
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
		obj_unload(l, o);
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
static bool has_object(const struct proc_mapping *m)
{
	return m->executable &&
	       (is_vdso(m) || (m->path[0] && !m->special && m->inode));
}

/* The cached object of @m's file, or NULL. */
static struct uobj *obj_find(const struct unwind_loader *l,
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

static struct uobj *obj_get(struct unwind_loader *l, pid_t pid,
			    const struct proc_mapping *m, uint64_t now)
{
	bool vdso = is_vdso(m);
	uint32_t b = obj_bucket(m->dev_major, m->dev_minor, m->inode, vdso);
	struct uobj *o = obj_find(l, m);

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

/* processes */

static struct uproc **proc_slot(struct unwind_loader *l, pid_t pid)
{
	struct uproc **pp = &l->procs[(uint32_t)pid % PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void put_objs(struct unwind_loader *l, struct uobj **objs, uint32_t n,
		     uint64_t now)
{
	for (uint32_t i = 0; i < n; i++) {
		objs[i]->last_used = now;
		if (--objs[i]->users == 0 && objs[i]->status == -ENOSPC)
			obj_forget(l, objs[i]);	/* evicted while in use */
	}
}

/* Append a range to the update being built in l->build. */
static int add_entry(struct unwind_loader *l, uint64_t start, uint64_t end,
		     struct uobj *o, const struct chunk *ch, uint64_t pc_base)
{
	struct unwind_mapping *e;
	uint32_t n = l->nbuild;

	if (start >= end)
		return 0;
	/* merge with a preceding frame-pointer range */
	if (!ch && n && l->build[n - 1].shard == UNWIND_NO_TABLE &&
	    l->build[n - 1].end == start) {
		l->build[n - 1].end = end;
		return 0;
	}
	if (n >= UNWIND_MAX_PROC_MAPPINGS)
		return -ENOSPC;
	e = &l->build[n];
	memset(e, 0, sizeof(*e));
	e->start = start;
	e->end = end;
	e->pc_base = pc_base;
	e->shard = ch ? ch->ext.shard : UNWIND_NO_TABLE;
	e->first_row = ch ? ch->ext.first_row : 0;
	e->nrows = ch ? ch->ext.nrows : 0;
	l->build_obj[n] = ch ? o : NULL;
	l->nbuild++;
	return 0;
}

/* The entries for mapping @m backed by @o (NULL: frame pointers). */
static int add_mapping(struct unwind_loader *l, const struct proc_mapping *m,
		       struct uobj *o)
{
	uint64_t bias = 0, pos = m->start, pc_base;
	bool found = false;
	int err;

	if (o && !o->status) {
		for (uint32_t i = 0; i < o->nsegs; i++) {
			const struct seg *s = &o->segs[i];

			if (m->offset >= s->off && m->offset < s->off + s->filesz) {
				bias = m->start - (m->offset - s->off + s->vaddr);
				found = true;
				break;
			}
		}
	}
	if (!found && o && (o->status == -ENOSPC || o->open_failed)) {
		/*
		 * evicted, or not opened yet: BPF counts it and asks for the
		 * maps again (the next update loads the table)
		 */
		struct unwind_mapping *e;

		if (m->start >= m->end)
			return 0;
		if (l->nbuild >= UNWIND_MAX_PROC_MAPPINGS)
			return -ENOSPC;
		e = &l->build[l->nbuild];
		memset(e, 0, sizeof(*e));
		e->start = m->start;
		e->end = m->end;
		e->shard = UNWIND_EVICTED;
		l->build_obj[l->nbuild++] = NULL;
		return 0;
	}
	if (!found)
		return add_entry(l, m->start, m->end, NULL, NULL, 0);
	pc_base = bias + o->table_base;
	for (uint32_t c = 0; c < o->nchunks; c++) {
		const struct chunk *ch = &o->chunks[c];
		uint64_t lo = pc_base + ch->lo, hi = pc_base + ch->hi;

		if (lo < m->start)
			lo = m->start;
		if (hi > m->end)
			hi = m->end;
		if (lo >= hi)
			continue;
		err = add_entry(l, pos, lo, NULL, NULL, 0);
		if (!err)
			err = add_entry(l, lo, hi, o, ch, pc_base);
		if (err)
			return err;
		pos = hi;
	}
	return add_entry(l, pos, m->end, NULL, NULL, 0);
}

/*
 * Write @u's entry to BPF: its ranges copied into l->value (the ranges
 * past them zeroed, as far as an earlier write used them).
 */
static int write_proc(struct unwind_loader *l, struct uproc *u)
{
	struct unwind_proc *v = &l->value;

	if (u->nmappings)
		memcpy(v->mappings, u->mappings, u->nmappings * sizeof(*u->mappings));
	if (l->value_used > u->nmappings)
		memset(&v->mappings[u->nmappings], 0,
		       (l->value_used - u->nmappings) * sizeof(*v->mappings));
	l->value_used = u->nmappings;
	v->nmappings = u->nmappings;
	v->maps_read_ns = u->maps_read_ns;
	if (bpf_map_update_elem(l->procs_fd, &u->pid, v, BPF_ANY)) {
		l->st.update_errors++;
		counter_inc(&counter_unwind_update_error);
		return -errno;
	}
	return 0;
}

/* Copy the ranges built in l->build (and their tables) into @u. */
static int keep_entries(struct unwind_loader *l, struct uproc *u)
{
	uint32_t n = l->nbuild ? l->nbuild : 1;
	struct unwind_mapping *m = realloc(u->mappings, n * sizeof(*m));
	struct uobj **eo;

	if (m)
		u->mappings = m;
	eo = m ? realloc(u->entry_obj, n * sizeof(*eo)) : NULL;
	if (!eo)
		return -ENOMEM;
	u->entry_obj = eo;
	memcpy(u->mappings, l->build, l->nbuild * sizeof(*m));
	memcpy(u->entry_obj, l->build_obj, l->nbuild * sizeof(*eo));
	u->nmappings = l->nbuild;
	return 0;
}

int unwind_loader_update(struct unwind_loader *l, pid_t pid,
			 const struct proc_maps *maps)
{
	struct uproc **pp = proc_slot(l, pid), *u = *pp;
	struct uobj **old_objs = NULL;
	uint32_t old_n = 0;
	uint64_t now = mono_ns();
	bool truncated = false;
	int err, werr;

	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		u->pid = pid;
		*pp = u;
		l->st.processes++;
	}
	old_objs = u->objs;
	old_n = u->nobjs;
	u->objs = calloc(maps->n ? maps->n : 1, sizeof(*u->objs));
	u->nobjs = 0;
	l->nbuild = 0;
	u->maps_read_ns = maps->read_ns;	/* older than an exec: not used */
	if (!u->objs) {
		u->objs = old_objs;
		u->nobjs = old_n;
		return -ENOMEM;
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];
		struct uobj *o = NULL;

		if (!m->executable)
			continue;
		if (has_object(m))
			o = obj_get(l, pid, m, now);
		if (o) {
			bool seen = false;

			for (uint32_t j = 0; j < u->nobjs; j++)
				seen |= u->objs[j] == o;
			if (!seen) {
				o->users++;
				u->objs[u->nobjs++] = o;
			}
		}
		if (add_mapping(l, m, o))
			truncated = true;
	}
	if (truncated) {
		l->st.ranges_truncated++;
		counter_inc(&counter_unwind_ranges_truncated);
	}
	put_objs(l, old_objs, old_n, now);
	free(old_objs);
	err = keep_entries(l, u);
	l->nbuild = 0;
	if (err)	/* no memory: no ranges (frame pointers) rather than stale ones */
		u->nmappings = 0;
	werr = write_proc(l, u);
	return err ? err : werr;
}

/* unwind_loader_ready - see loader.h. */
bool unwind_loader_ready(const struct unwind_loader *l, const struct proc_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct uobj *o;

		if (!has_object(&maps->v[i]))
			continue;
		o = obj_find(l, &maps->v[i]);
		if (!o || o->status == -ENOSPC)
			return false;
	}
	return true;
}

static void proc_free(struct unwind_loader *l, struct uproc *u, uint64_t now)
{
	put_objs(l, u->objs, u->nobjs, now);
	free(u->objs);
	free(u->mappings);
	free(u->entry_obj);
	free(u);
}

/* Drop tables no process used for UNUSED_TTL_NS. */
static void expire(struct unwind_loader *l, uint64_t now)
{
	for (int b = 0; b < OBJ_BUCKETS; b++) {
		struct uobj *o = l->objs[b], *next;

		for (; o; o = next) {
			next = o->next;
			if (!o->users && now - o->last_used > UNUSED_TTL_NS)
				obj_forget(l, o);
		}
	}
}

void unwind_loader_remove(struct unwind_loader *l, pid_t pid)
{
	struct uproc **pp = proc_slot(l, pid), *u = *pp;
	uint64_t now = mono_ns();

	if (!u)
		return;
	*pp = u->next;
	bpf_map_delete_elem(l->procs_fd, &pid);
	proc_free(l, u, now);
	l->st.processes--;
	/* a walk of every table: once a second, not per exit (exec storms) */
	if (now - l->expired_ns >= TOUCH_EVERY_NS) {
		l->expired_ns = now;
		expire(l, now);
	}
}

/*
 * Make room: drop the least recently used table, unused ones first. A
 * table in use is unloaded and its processes' ranges fall back to frame
 * pointers until they exit. Never @keep (the one being loaded).
 */
static void evict_one(struct unwind_loader *l, struct uobj *keep)
{
	struct uobj *victim = NULL;

	for (int pass = 0; pass < 2 && !victim; pass++) {
		for (int b = 0; b < OBJ_BUCKETS; b++) {
			for (struct uobj *o = l->objs[b]; o; o = o->next) {
				if (o == keep || o->status || !o->nchunks)
					continue;
				if (pass == 0 && o->users)
					continue;
				if (!victim || o->last_used < victim->last_used)
					victim = o;
			}
		}
	}
	if (!victim)
		return;
	l->st.evictions++;
	counter_inc(&counter_unwind_evictions);
	if (!victim->users) {
		obj_forget(l, victim);
		return;
	}
	/* In use: point its processes' ranges at frame pointers, rewrite. */
	for (uint32_t i = 0; i < l->nbuild; i++) {	/* the update in progress */
		if (l->build_obj[i] != victim)
			continue;
		l->build[i].shard = UNWIND_EVICTED;
		l->build[i].nrows = 0;
		l->build_obj[i] = NULL;
	}
	for (int b = 0; b < PROC_BUCKETS; b++) {
		for (struct uproc *u = l->procs[b]; u; u = u->next) {
			bool changed = false;

			for (uint32_t i = 0; i < u->nmappings; i++) {
				if (u->entry_obj[i] != victim)
					continue;
				u->mappings[i].shard = UNWIND_EVICTED;
				u->mappings[i].nrows = 0;
				u->entry_obj[i] = NULL;
				changed = true;
			}
			if (changed)
				write_proc(l, u);
		}
	}
	obj_unload(l, victim);
	victim->status = -ENOSPC;
	l->st.evictions_in_use++;
}

void unwind_loader_touch(struct unwind_loader *l, pid_t pid, uint64_t now_ns)
{
	struct uproc *u = *proc_slot(l, pid);

	if (!u || now_ns - u->touched_ns < TOUCH_EVERY_NS)
		return;
	u->touched_ns = now_ns;
	for (uint32_t i = 0; i < u->nobjs; i++)
		u->objs[i]->last_used = now_ns;
}

void unwind_loader_free(struct unwind_loader *l)
{
	if (!l)
		return;
	for (int b = 0; b < PROC_BUCKETS; b++) {
		struct uproc *u = l->procs[b], *next;

		for (; u; u = next) {
			next = u->next;
			free(u->objs);
			free(u->mappings);
			free(u->entry_obj);
			free(u);
		}
	}
	for (int b = 0; b < OBJ_BUCKETS; b++) {
		struct uobj *o = l->objs[b], *next;

		for (; o; o = next) {
			next = o->next;
			free(o->chunks);
			free(o);
		}
	}
	shards_free(l->shards);
	free(l);
}

void unwind_loader_stats(const struct unwind_loader *l,
			 struct unwind_loader_stats *out)
{
	*out = l->st;
	shards_stats(l->shards, &out->shards, &out->rows);
}
