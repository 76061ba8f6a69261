/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolizer.h - cached user-space symbolization.
 *
 * Owns: the cache of ELF objects keyed by file identity (device, inode)
 * — never by path — checked against the file's size, mtime and ctime on
 * every hit (an inode number is reused once its file is gone), and, per
 * object, a cache of resolved addresses. Files are opened through
 * /proc/PID/map_files/START-END (works for deleted files and
 * containers), falling back to /proc/PID/root/PATH. Objects without a
 * .symtab get their separate debug file (see debuginfo.h). The kernel's
 * vDSO is one object shared by every "[vdso]" mapping, read from profd's
 * own. Objects are reference counted: a process holds a reference for
 * each of its mappings, so a file stays open until no process that
 * mapped it is left to write out. An object's symbol tables are read
 * when it is opened, so resolving an address never reads the file.
 */
#ifndef PROFD_SYMBOL_SYMBOLIZER_H
#define PROFD_SYMBOL_SYMBOLIZER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/mapping.h"

struct symbolizer;
struct sym_object;

struct sym_result {
	const char *name;	/* demangled (or as-is when not C++); owned by the object */
	const char *system_name;/* as in the symbol table; owned by the object */
	uint64_t sym_vaddr;	/* ELF virtual address of the symbol's start */
	const char *file;	/* source file, NULL when unknown; owned by the object */
	uint32_t line;		/* source line, 0 when unknown */
};

/*
 * One level of the call chain at an address (pprof's Line): the function
 * and the source file:line executing in it. Strings owned by the object
 * (valid while the caller holds the symbolizer's lock; copy them).
 */
struct sym_frame {
	const char *name;	/* demangled (or as-is when not C++) */
	const char *system_name;/* as in the symbol table or DW_AT_linkage_name / DW_AT_name */
	const char *file;	/* source file (DWARF's line table, Go's pclntab); "" or NULL if unknown */
	uint32_t line;		/* 1-based source line; 0 if unknown */
};

/* Inlined levels (plus the function) sym_object_resolve_frames() gives at most. */
#define SYM_FRAMES_MAX		32

/* symbolizer_new - an empty cache. NULL on out of memory. */
struct symbolizer *symbolizer_new(void);

/* symbolizer_free - drop the cache; objects still referenced stay valid until put. */
void symbolizer_free(struct symbolizer *s);

/*
 * symbolizer_get - a new reference to the object mapped by @m in process
 * @pid, opening it on first use (keyed by m->dev_major/minor + m->inode;
 * a cached object whose file changed since it was opened — another size,
 * mtime or ctime; one stat(2) per call — is dropped from the cache and
 * the file opened again). A "[vdso]" mapping gets the vDSO object (file
 * offset = address - m->start); one of a different size or, for a 64-bit
 * profd, below 4 GiB is another ABI's vDSO: -ENOEXEC. Returns NULL with
 * *@err < 0 for anonymous/other special mappings (-EINVAL), unreadable
 * files (-errno) or non-ELF files (-ENOEXEC); failures are remembered per
 * identity so they are not retried on every sample.
 */
struct sym_object *symbolizer_get(struct symbolizer *s, pid_t pid,
				  const struct proc_mapping *m, int *err);

/*
 * symbolizer_get_unlocked - symbolizer_get() for a caller that does not
 * hold @lock (the lock serializing every use of @s): it is taken for the
 * cache lookup and the insertion and dropped while the file is opened and
 * parsed (seconds for a big binary), so other users of @s are not held up.
 */
struct sym_object *symbolizer_get_unlocked(struct symbolizer *s,
					   pthread_mutex_t *lock, pid_t pid,
					   const struct proc_mapping *m, int *err);

/*
 * symbolizer_trim - free every cached object that no one has held a
 * reference to for SYM_IDLE_TRIMS trims (their names become invalid),
 * and forget remembered open failures so those files are tried again.
 * Call it about once a second; referenced objects are untouched.
 */
void symbolizer_trim(struct symbolizer *s);

/*
 * symbolizer_set_budget - at most @bytes (0: no limit) of heap for the
 * cached objects: past it, each symbolizer_trim() frees the idle
 * (unreferenced) objects, then empties the address caches of the least
 * recently resolved objects (they refill on use), then frees the DWARF
 * (lines, inlined frames; not read again) and the symbol tables of
 * objects still held, least recently sampled (sym_object_sampled()) or
 * resolved first (an object's DWARF before its table), until under
 * (each counted);
 * tables with samples not looked up yet only past a quarter more (of
 * the tables' part).
 * @lines_bytes of @bytes (less than @bytes; 0: none) are DWARF's alone:
 * past the budget DWARF holding more than that is freed first (without
 * a part of its own: more than half of @bytes), and an object's DWARF
 * larger than it is not read (partial.lines_too_big); the rest of
 * @bytes is the symbol tables' part.
 * A new object is counted, and the cache shed for it, when it is read.
 * A held object whose table was freed resolves nothing (-EAGAIN) until
 * symbolizer_reload(). A table larger than the tables' part (estimated
 * from its section headers, else as read) is not read, or not kept:
 * its object resolves nothing (-EFBIG) and is not read again while the
 * budget stays the same (reading it could only shed everything else,
 * then itself, and read it again).
 */
void symbolizer_set_budget(struct symbolizer *s, uint64_t bytes,
			   uint64_t lines_bytes);

/*
 * symbolizer_memory - heap bytes of the cached objects as of the last
 * symbolizer_trim() (symbol tables, address and name caches), and the
 * address caches emptied for the budget so far.
 */
void symbolizer_memory(const struct symbolizer *s, uint64_t *bytes,
		       uint64_t *sheds);

struct symbolizer_table_stats {
	uint64_t shed;		/* symbol tables of held objects freed for the budget */
	uint64_t reloaded;	/* of those, read again (symbolizer_reload()) */
	uint64_t reloads_refused;	/* over the rate limit, or the file changed */
	uint64_t too_big;	/* files whose table was refused, larger than the
				 * whole budget (each once per budget) */
};

/* symbolizer_table_stats - the figures above, since creation (lock held). */
void symbolizer_table_stats(const struct symbolizer *s,
			    struct symbolizer_table_stats *out);

/*
 * sym_object_sampled - a sample in @o's code was taken in at @now_ns
 * (CLOCK_MONOTONIC): its table counts as used then, for the order in
 * which held tables are shed. Safe without the lock (an atomic store);
 * NULL is fine.
 */
void sym_object_sampled(struct sym_object *o, uint64_t now_ns);

/*
 * sym_object_wants_reload - whether @o (or, for a copy, its first) wants
 * symbolizer_reload() on a thread that may read files: its symbol table
 * was freed for the budget and may be read again, or its debug file was
 * fetched from debuginfod and is not attached yet. Safe without the lock
 * (atomic reads). False for NULL.
 */
bool sym_object_wants_reload(const struct sym_object *o);

/*
 * symbolizer_reload - read the symbol table of held object @o (shed for
 * the budget, or refused as too big under another budget than today's)
 * again from the descriptor it holds, without holding @lock
 * while reading, then put it back (under @lock). Not when its file
 * changed since it was first read (size, mtime, ctime: its names would
 * be wrong; it stays unnamed for good), nor more than SYM_RELOADS_PER_S
 * times a second. When @o's debug file was fetched from debuginfod
 * (symbolizer_set_debuginfod()), it is attached instead: checked against
 * @o (build ID, class, machine; rejected and deleted if it does not fit)
 * and its .symtab read with @o's own tables, so @o's frames are named
 * from then on. Returns 0 (reloaded, or nothing to do), -EAGAIN (rate
 * limit: ask again later), -ESTALE (file changed), -EFBIG (larger than
 * the budget: refused, not asked again under it) or the read's error.
 * File I/O: call it where a blocked read is allowed (the object loader).
 */
int symbolizer_reload(struct symbolizer *s, pthread_mutex_t *lock,
		      struct sym_object *o);

struct dbgd_fetcher;

/*
 * symbolizer_set_debuginfod - fetch the debug files of objects opened
 * from now on that have no .symtab and no local debug file from @d
 * (debuginfod.h; not owned: it outlives @s's objects; NULL: off). Their
 * lookups miss with -EINPROGRESS until the file is attached.
 */
void symbolizer_set_debuginfod(struct symbolizer *s, struct dbgd_fetcher *d);

/* sym_object_get/put - take/drop a reference. put(NULL) is fine. */
struct sym_object *sym_object_get(struct sym_object *o);
void sym_object_put(struct sym_object *o);

/*
 * sym_object_read - read up to @len bytes at @file_offset (runtime
 * address - mapping start + mapping offset) of @o's file, or of the vDSO
 * image, into @buf, from the descriptor @o holds (no path is opened; a
 * deleted file reads as mapped), never waiting for storage (see
 * elf_file_read(): -EAGAIN when the bytes are not in the page cache).
 * Safe without the lock while a reference is held. Returns the bytes
 * read, or -errno (-EBADF: no file).
 */
ssize_t sym_object_read(const struct sym_object *o, uint64_t file_offset,
			void *buf, size_t len);

/* sym_object_build_id - lowercase hex GNU build ID, "" if none. */
const char *sym_object_build_id(const struct sym_object *o);

/*
 * sym_object_resolve - the function containing file offset @file_offset
 * (runtime address - mapping start + mapping offset). Results, misses
 * included, are cached per offset. A Go executable's pcs are named from
 * its pclntab wherever it covers them (stripped or not: the runtime's
 * own names, with the file and line; an inlined pc gets the real
 * function it was inlined into and the line of the call there), other
 * pcs (cgo's C code) from the ELF symbols. In the vDSO, a function no symbol
 * names is "[vdso]+0xSTART" (START: where its FDE begins, an ELF virtual
 * address of the vDSO image). Returns 0 and fills @out, -ENOENT, -EAGAIN
 * (its table was shed for the budget: symbolizer_reload()), -EFBIG (its
 * table is larger than the whole budget: not read), or
 * -EINPROGRESS (no symbol yet, but its debug file is being fetched from
 * debuginfod or waits to be attached), or -ENOLINK (no symbol: the object
 * has none of its own and debuginfod gave no debug file for it, not found
 * or failed; asked again later).
 */
int sym_object_resolve(struct sym_object *o, uint64_t file_offset,
		       struct sym_result *out);

/*
 * sym_object_resolve_frames - the call chain at file offset @file_offset
 * (as sym_object_resolve()), innermost first, into @out (up to @max
 * entries): the functions inlined there, each with the file:line
 * executing in it, then, last, the real function, with its file:line.
 * A Go executable's pcs come from its pclntab (go_symtab.h), as Go's
 * runtime.CallersFrames gives them (past @max the outermost inlined
 * levels are left out, never the real function; not cached). Other
 * objects' from DWARF (DWARF 5 section 3.3.8: DW_TAG_inlined_subroutine,
 * DW_AT_call_file/line; section 6.2: the line number program), the last
 * frame being the function the symbol table names (sym_object_resolve()'s);
 * a chain longer than @max keeps its innermost @max - 1 levels and the
 * function (partial.lines_inline_too_deep: the levels between are left
 * out, so the leaf and its self time stay true); cached per offset. Without either, or with lines off (symbolizer_set_lines(): DWARF
 * only), one frame: the symbol, file "" and line 0. Returns the number of
 * frames (>= 1), -ENOENT (no symbol covers the offset), -EAGAIN (the
 * symbol table was shed, as sym_object_resolve()), -EFBIG and
 * -EINPROGRESS (as sym_object_resolve()), -EINVAL (@max < 1).
 */
int sym_object_resolve_frames(struct sym_object *o, uint64_t file_offset,
			      struct sym_frame *out, int max);

/*
 * symbolizer_set_lines - whether objects opened from now on read their
 * DWARF for source lines and inlined frames (--symbolize-lines; default
 * on). Off: sym_object_resolve_frames() gives the symbol alone, and no
 * DWARF is read (no memory, no file reads). Set it before the first
 * symbolizer_get().
 */
void symbolizer_set_lines(struct symbolizer *s, bool on);

/* symbolizer_stats - objects cached and open-failure count, for status. */
void symbolizer_stats(const struct symbolizer *s, uint64_t *objects,
		      uint64_t *open_errors);

/*
 * symbolizer_symbols_unreadable - objects opened (ELF headers read) whose
 * symbol tables could not be read (truncated or corrupt file): their
 * frames keep only the mapping's name. Cumulative.
 */
uint64_t symbolizer_symbols_unreadable(const struct symbolizer *s);

#endif /* PROFD_SYMBOL_SYMBOLIZER_H */
