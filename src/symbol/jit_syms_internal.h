/* SPDX-License-Identifier: GPL-2.0 */
/*
 * jit_syms_internal.h - the JIT symbol table's data, shared by its files
 * (internal to src/symbol; jit_syms.h is the interface): jit_syms.c owns
 * the table (entries, the string arena, the address index, lookups, the
 * byte budget), jit_read.c the files (finding and opening them safely,
 * the perf map and jitdump parsers, incremental reads).
 */
#ifndef PROFD_SYMBOL_JIT_SYMS_INTERNAL_H
#define PROFD_SYMBOL_JIT_SYMS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbol/jit_syms.h"

/* One DEBUG_INFO line: code from @addr on is source @file:@line. */
struct jit_line {
	uint64_t addr;
	uint32_t line;
	const char *file;	/* arena */
};

/* One piece of JIT code (a perf map line, a LOAD, one side of a MOVE). */
struct jit_entry {
	uint64_t start;
	uint64_t size;
	uint64_t from;		/* CLOCK_MONOTONIC ns it is valid from */
	uint64_t sure;		/* ns by which it surely holds (>= from): an
				 * untimed entry (a perf map line) was written
				 * between two reads, [from, sure]; the entry
				 * before it at its address may hold until sure */
	uint32_t seq;		/* order read (all files of the process) */
	uint32_t nlines;
	const char *name;	/* arena; NULL: a MOVE's old place (nothing there) */
	const struct jit_line *lines;	/* arena, by addr; NULL when none */
	uint64_t code_index;	/* jitdump's, for MOVE; 0 for the perf map */
};

/*
 * Entries are indexed by size class (class c holds sizes up to
 * JIT_CLASS_MAX(c)), each sorted by start: a lookup scans each class
 * back from the address only as far as that class's largest size.
 */
#define JIT_CLASSES		5
#define JIT_CLASS_SHIFT(c)	(10 + 4 * (c))	/* 1 KiB ... 64 MiB */
#define JIT_CLASS_MAX(c)	(1ULL << JIT_CLASS_SHIFT(c))
/* Entries a lookup looks at, and holding the address, at most. */
#define JIT_LOOKUP_VISITS	4096
#define JIT_LOOKUP_CANDS	64

struct jit_arena_chunk {
	struct jit_arena_chunk *next;
	size_t used, cap;
	char data[];
};

/* Files read per process: its perf map and up to 3 jitdumps. */
#define JIT_FILES		4

enum jit_file_kind { JIT_FILE_NONE, JIT_FILE_MAP, JIT_FILE_DUMP };

/* A DEBUG_INFO waiting for its code's LOAD (the spec: it comes before). */
#define JIT_PENDING_DEBUG	8
struct jit_pending_debug {
	uint64_t code_addr;
	uint32_t n;
	struct jit_line *lines;	/* heap until attached (copied to the arena) */
	char *files;		/* heap: the file names the lines point into */
};

struct jit_file {
	enum jit_file_kind kind;
	char *path;		/* a dump: the path as the maps show it */
	dev_t dev;
	ino_t ino;
	uint64_t off;		/* bytes consumed */
	bool dead;		/* rejected, corrupt or closed: not read again */
	bool skipping;		/* a map: inside a line past JIT_LINE_MAX */
	bool header_done;	/* a dump: header read */
	bool arch_ts;		/* a dump: JITDUMP_FLAGS_ARCH_TIMESTAMP */
	bool seen;		/* present at the last refresh */
	bool behind;		/* the last read left more than a line or record
				 * being written unparsed (a read's cap) */
	uint64_t prev_read_ns;	/* start of the last read that reached the end
				 * before this one (untimed entries' from) */
	uint64_t now_ns;	/* start of this read (untimed entries' sure) */
	struct jit_pending_debug pending[JIT_PENDING_DEBUG];
	uint32_t npending;
};

struct jit_syms {
	int refcnt;			/* atomic */
	pid_t pid;
	pid_t nspid;			/* 0 until read from /proc/PID/status */
	uid_t uid, euid;
	bool found;			/* atomic: a file was read */
	uint64_t read_ns;		/* atomic: jit_syms_read_ns() */

	/* the refresher's own state (one refresh at a time) */
	struct jit_file files[JIT_FILES];
	bool refreshing;		/* atomic: a refresh runs (another returns) */

	pthread_mutex_t lock;		/* what follows: entries, index, arena */
	struct jit_entry *e;
	uint32_t n, cap;
	uint32_t seq;
	uint32_t *ord[JIT_CLASSES];	/* entry indices by start */
	uint32_t nord[JIT_CLASSES], capord[JIT_CLASSES];
	bool sorted[JIT_CLASSES];
	struct jit_arena_chunk *arena;
	uint64_t bytes;			/* atomic: heap held (entries, index, arena) */
	bool full;			/* a cap was hit (dropped entries counted) */
	uint64_t full_from;		/* the first dropped entry's from: past it
					 * an address in the hull may hold code not kept */
	uint64_t hull_lo, hull_hi;	/* [lo, hi): every dropped entry's code */
	uint64_t behind_from;		/* a file is parsed only up to a point:
					 * past this time (the earliest its rest may
					 * have been written) nothing is named;
					 * UINT64_MAX: every file caught up */
};

/*
 * jit_syms_add - append an entry ([@start, @start + @size), valid from
 * @from, surely from @sure: the entry before it at its address may hold
 * until then) named @name (copied, cut at JIT_NAME_MAX; NULL: a MOVE's old
 * place) with @nlines @lines (copied, file names too), within the caps
 * (over them: dropped, counted). Lock held. Returns 0, -ENOSPC (over a
 * cap) or -ENOMEM.
 */
int jit_syms_add(struct jit_syms *js, uint64_t start, uint64_t size,
		 uint64_t from, uint64_t sure, const char *name, uint64_t code_index,
		 const struct jit_line *lines, uint32_t nlines);

/*
 * jit_syms_find_load - the latest entry loaded at @start with
 * @code_index (a MOVE's source), NULL if none. Lock held; the pointer is
 * valid until the next jit_syms_add().
 */
const struct jit_entry *jit_syms_find_load(struct jit_syms *js, uint64_t start,
					   uint64_t code_index);

/* jit_syms_index - sort the address index after additions. Lock held. */
void jit_syms_index(struct jit_syms *js);

#endif /* PROFD_SYMBOL_JIT_SYMS_INTERNAL_H */
