/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loader.h - unwind tables for the processes being sampled.
 *
 * Owns: the cache of compiled tables (one per ELF file, keyed by device
 * and inode, shared by every process that maps it), their rows in the BPF
 * shards (src/unwind/shards.c), and each process's `unwind_procs` entry:
 * its executable ranges, each pointing at the rows that cover it or
 * marked UNWIND_NO_TABLE (frame pointers). Tables whose last process is
 * gone are kept for reuse until memory is needed or they idle too long;
 * when the memory cap is reached the least recently used ones (by the
 * last sample of a process using them) are evicted, unused ones first,
 * then in use (counted). The ranges of a table evicted in use are marked
 * UNWIND_EVICTED: BPF walks them with frame pointers, counts
 * dwarf_table_evicted and asks for the process's maps again, and the
 * table is reloaded (rate-limited).
 *
 * Threads: one thread uses a loader: the unwind loader thread of
 * async.h (the reader thread hands it work through a queue).
 */
#ifndef PROFD_UNWIND_LOADER_H
#define PROFD_UNWIND_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/maps.h"

struct unwind_loader;

struct unwind_loader_stats {
	uint64_t objects;		/* tables cached (with rows loaded) */
	uint64_t objects_failed;	/* files without usable CFI (FP only) */
	uint64_t processes;		/* processes with an unwind_procs entry */
	uint64_t rows;			/* rows in the shards */
	uint32_t shards;		/* shards created (1 MiB each) */
	uint64_t build_errors;		/* malformed CIEs/FDEs rejected */
	uint64_t evictions;		/* tables evicted to make room */
	uint64_t evictions_in_use;	/* ... of them while a process used them */
	uint64_t reloads;		/* evicted tables loaded again (sampled) */
	uint64_t reloads_deferred;	/* reloads put off by the rate limit */
	uint64_t ranges_truncated;	/* processes with more ranges than fit */
	uint64_t update_errors;		/* unwind_procs updates that failed */
	uint64_t build_ns;		/* time spent compiling tables */
};

/*
 * unwind_loader_new - a loader writing into the BPF maps @shards_fd
 * (array of maps) and @procs_fd (hash tgid -> struct unwind_proc), using
 * at most @max_bytes of shard memory (rounded down to whole shards, at
 * least one). NULL on out of memory.
 */
struct unwind_loader *unwind_loader_new(int shards_fd, int procs_fd,
					uint64_t max_bytes);

/* unwind_loader_free - release everything (BPF maps keep their contents). */
void unwind_loader_free(struct unwind_loader *l);

/*
 * unwind_loader_update - (re)build the unwind_procs entry of @pid from its
 * mappings @maps, compiling the tables of files not seen before (opened
 * through /proc/PID/map_files). Returns 0, or a negative errno when the
 * BPF map could not be updated (counted).
 */
int unwind_loader_update(struct unwind_loader *l, pid_t pid,
			 const struct proc_maps *maps);

/*
 * unwind_loader_ready - whether unwind_loader_update(@maps) would open no
 * file: every object @maps names is cached (compiled, or known to have no
 * table) and none waits for a reload. Then the update is a few lookups
 * and one BPF map write.
 */
bool unwind_loader_ready(const struct unwind_loader *l, const struct proc_maps *maps);

/* unwind_loader_remove - @pid is gone: drop its entry and table references. */
void unwind_loader_remove(struct unwind_loader *l, pid_t pid);

/*
 * unwind_loader_touch - @pid was sampled at @now_ns (CLOCK_MONOTONIC): its
 * tables count as used then, so eviction takes the least recently sampled
 * first. Costs a hash lookup; the tables are marked at most once a second
 * per process. Evicted tables come back through unwind_loader_update() of
 * a process sampled in their code (BPF asks for it), at most RELOADS_PER_S
 * (4) a second.
 */
void unwind_loader_touch(struct unwind_loader *l, pid_t pid, uint64_t now_ns);

/* unwind_loader_stats - current figures. */
void unwind_loader_stats(const struct unwind_loader *l,
			 struct unwind_loader_stats *out);

#endif /* PROFD_UNWIND_LOADER_H */
