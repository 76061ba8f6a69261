/* SPDX-License-Identifier: GPL-2.0 */
/*
 * jit_syms.h - names of JIT code from the files JITs write for perf.
 *
 * Owns: one process's JIT symbols (struct jit_syms), read from the two
 * files of perf's JIT interface (linux tools/perf/Documentation/
 * jit-interface.txt, jitdump-specification.txt):
 *   - the perf map, /tmp/perf-<pid>.map: text lines "START SIZE name"
 *     (hex), append-only, a later line winning where ranges overlap;
 *   - the jitdump, jit-<pid>.dump: a header, then JIT_CODE_LOAD / MOVE /
 *     DEBUG_INFO / UNWINDING_INFO / CLOSE records with timestamps; the JIT
 *     mmaps it PROT_EXEC, so it shows in /proc/PID/maps.
 * <pid> is the process's pid in its own pid namespace (NStgid), and the
 * files are opened in its mount namespace (/proc/PID/root, map_files).
 * This is a symbol source of the native symbolizer, for any program that
 * writes these files; it names no language runtime.
 *
 * Time: every entry is valid, at each address it covers, from its `from`
 * time until the next entry (by from, then file order) covering that
 * address. A jitdump record's from is its timestamp (CLOCK_MONOTONIC,
 * the clock of bpf_ktime_get_ns(), unless JITDUMP_FLAGS_ARCH_TIMESTAMP);
 * a perf map line (and a record with arch timestamps) has no time of its
 * own: its from is when the last read before the one that found it and
 * that reached the file's end started (0 for the first read; a read
 * stopped by its cap leaves the rest for the next, and until a read
 * catches up no sample past that from is named), so a sample between
 * those reads is ambiguous where the line replaced another. A MOVE ends the code at its old
 * address (an unnamed entry there) and starts it at the new one.
 * jit_syms_lookup() names a sample by the one entry valid at the
 * sample's time; none (unknown) or more than one in its time window
 * (ambiguous) leaves it unnamed, counted: never misnamed.
 *
 * Bounds: a file is read only when it is a regular file (O_NOFOLLOW,
 * O_NONBLOCK, no symlink anywhere in its path under the process's root)
 * owned by the process's real or effective uid; each refresh reads at
 * most JIT_READ_MAX bytes of a file; lines past JIT_LINE_MAX and records
 * past JIT_RECORD_MAX are parse errors; entries larger than
 * JIT_ENTRY_SIZE_MAX are refused; a process holds at most
 * JIT_PROC_ENTRIES_MAX entries and its share of the total byte budget
 * (jit_syms_set_budget()); past them new entries are dropped (counted),
 * the files still parsed to learn the hull of the dropped entries' code:
 * from the first drop's time on nothing in that hull is named (code
 * elsewhere keeps its names). Every loss is a named counter.
 *
 * Threads: jit_syms_refresh() on one thread at a time (the object
 * loader: it reads files); jit_syms_lookup() on any thread; both take
 * the table's own mutex (never held over file I/O).
 */
#ifndef PROFD_SYMBOL_JIT_SYMS_H
#define PROFD_SYMBOL_JIT_SYMS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define JIT_READ_MAX		(16u << 20)	/* bytes of one file per refresh */
#define JIT_LINE_MAX		4096		/* a perf map line, newline included */
#define JIT_RECORD_MAX		(64u << 20)	/* one jitdump record (code included) */
#define JIT_NAME_MAX		1024		/* bytes of a name kept (longer: cut) */
#define JIT_ENTRY_SIZE_MAX	(64ULL << 20)	/* bytes of code one entry covers */
#define JIT_PROC_ENTRIES_MAX	(1u << 20)	/* entries one process holds */
#define JIT_DEBUG_LINES_MAX	65536		/* DEBUG_INFO entries of one code load */

/*
 * Samples of a process with JIT symbols are told apart by the time bin
 * they were taken in (JIT_TIME_BIN_NS, about half a second): a stack
 * seen in one bin is one aggregate entry. A JIT frame is named by the
 * entry valid throughout its bin; code replaced at its address within
 * the bin leaves it unnamed (jit_ambiguous).
 */
#define JIT_TIME_BIN_SHIFT	29
#define JIT_TIME_BIN_NS		(1ULL << JIT_TIME_BIN_SHIFT)

struct jit_syms;

/* What jit_syms_lookup() found; strings owned by the table (valid until jit_syms_put()). */
struct jit_frame {
	const char *name;	/* as the JIT wrote it */
	const char *file;	/* DEBUG_INFO's file, or NULL */
	uint32_t line;		/* DEBUG_INFO's line, 0 when none */
	uint64_t start;		/* the code's start address */
};

/*
 * jit_syms_new - an empty table for process @pid (nothing is read: call
 * jit_syms_refresh() where files may be read). One reference. NULL on
 * out of memory.
 */
struct jit_syms *jit_syms_new(pid_t pid);

/* jit_syms_get/put - take/drop a reference (put frees at zero; NULL is fine). */
struct jit_syms *jit_syms_get(struct jit_syms *js);
void jit_syms_put(struct jit_syms *js);

/*
 * jit_syms_refresh - look for @js's process's files and read what was
 * appended to them since the last call: the perf map in the process's
 * /tmp, and the jitdump files among @dump_paths (@n paths of mappings as
 * /proc/PID/maps shows them, with their [@starts[i], @ends[i]) ranges for
 * map_files; only names "jit-<nspid>.dump" are taken). @now_ns:
 * CLOCK_MONOTONIC when the call started. File I/O: the object loader.
 * Returns the number of entries added, or -errno when the process is
 * gone (-ENOENT, -ESRCH) or out of memory.
 */
int jit_syms_refresh(struct jit_syms *js, const char *const *dump_paths,
		     const uint64_t *starts, const uint64_t *ends, size_t n,
		     uint64_t now_ns);

/* jit_syms_found - whether a perf map or jitdump of the process was read (atomic). */
bool jit_syms_found(const struct jit_syms *js);

/*
 * jit_syms_read_ns - CLOCK_MONOTONIC start of the last completed refresh,
 * 0 before the first (atomic): everything the JIT wrote before it is in.
 */
uint64_t jit_syms_read_ns(const struct jit_syms *js);

/*
 * jit_syms_lookup - the code at address @addr in a sample taken in
 * [@lo_ns, @hi_ns) (CLOCK_MONOTONIC; 0, UINT64_MAX when unknown): the one
 * entry valid there then. Returns 0 and fills @out, -ENOENT (no entry was
 * valid: unknown code, or code the budget left out), -EAGAIN (more than
 * one: the code changed within the window), or -EINVAL (a MOVE's old
 * place: code no longer there). Counts nothing: the caller does.
 */
int jit_syms_lookup(struct jit_syms *js, uint64_t addr, uint64_t lo_ns,
		    uint64_t hi_ns, struct jit_frame *out);

/*
 * jit_syms_set_budget - at most @bytes (0: JIT_BUDGET_DEFAULT) of heap for
 * the JIT symbols of all processes together; each process may take up
 * to a quarter of it. Entries beyond are dropped (jit_entries_dropped).
 */
#define JIT_BUDGET_DEFAULT	(256ULL << 20)
void jit_syms_set_budget(uint64_t bytes);

/* jit_syms_total_bytes - heap held by every table now (atomic). */
uint64_t jit_syms_total_bytes(void);

/* jit_syms_bytes - heap held by @js's table (atomic). */
uint64_t jit_syms_bytes(const struct jit_syms *js);

#endif /* PROFD_SYMBOL_JIT_SYMS_H */
