/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loader_internal.h - the unwind loader's state, shared by its two files:
 * loader.c (processes: their ranges in `unwind_procs`, removal, eviction,
 * figures) and objects.c (the cache of per-file tables: opening a mapped
 * file, compiling and loading its rows, reloads). Not for use outside
 * src/unwind/loader*.c and objects.c.
 */
#ifndef PROFD_UNWIND_LOADER_INTERNAL_H
#define PROFD_UNWIND_LOADER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "bpf/unwind_table.h"
#include "proc/maps.h"
#include "unwind/loader.h"
#include "unwind/shards.h"

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

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* objects.c */

/* Whether unwind_loader_update() opens an object for @m. */
bool loader_has_object(const struct proc_mapping *m);

/* The cached table of @m's file, or NULL. */
struct uobj *loader_obj_find(const struct unwind_loader *l, const struct proc_mapping *m);

/*
 * The table of @m's file (process @pid), compiled and loaded on first
 * sight (o->status says how that went); an evicted one reloaded, one
 * whose file could not be opened tried again. NULL on out of memory.
 */
struct uobj *loader_obj_get(struct unwind_loader *l, pid_t pid,
			    const struct proc_mapping *m, uint64_t now);

/* Drop @o's rows (its chunks go back to the shards). */
void loader_obj_unload(struct unwind_loader *l, struct uobj *o);

/* Unlink and free @o (no process uses it). */
void loader_obj_forget(struct unwind_loader *l, struct uobj *o);

/* loader.c */

/* Evict the least recently used table other than @keep (counted). */
void loader_evict_one(struct unwind_loader *l, struct uobj *keep);

#endif /* PROFD_UNWIND_LOADER_INTERNAL_H */
