/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolizer_internal.h - the symbolizer's data, shared by its files
 * (internal to src/symbol; symbolizer.h is the interface the rest of
 * profd uses): symbolizer.c owns the cache (opening files, finding
 * objects), resolve.c the lookups in one object and their caches,
 * vdso_object.c the vDSO object, budget.c the cache's memory (trims,
 * shedding for the budget, reading a shed symbol table back),
 * debuginfod_attach.c attaching debug files debuginfod fetched (debuginfod.h).
 */
#ifndef PROFD_SYMBOL_SYMBOLIZER_INTERNAL_H
#define PROFD_SYMBOL_SYMBOLIZER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "symbol/elf_file.h"
#include "symbol/symbolizer.h"

#define OFFSET_CACHE_MAX	65536	/* entries per object */
#define FRAME_CACHE_MAX		16384	/* call chains cached per object */
#define BUCKETS_MIN		256

struct id_key {
	uint32_t dev_major;
	uint32_t dev_minor;
	uint64_t inode;
};

enum slot_state { SLOT_EMPTY, SLOT_HIT, SLOT_MISS };

struct off_slot {
	uint64_t offset;
	const char *name;
	const char *system_name;
	uint64_t sym_vaddr;
	const char *file;	/* a Go pc's (pclntab), or NULL */
	uint32_t line;
	uint8_t state;		/* enum slot_state */
};

/* What a file looked like when it was opened, to notice it changed. */
struct file_stamp {
	bool valid;
	int64_t size;
	struct timespec mtime;
	struct timespec ctime;
};

/* A cached call chain: its frames, then their strings, in one block. */
struct frames_entry {
	uint32_t n;
	uint32_t bytes;		/* of the block */
	struct sym_frame f[];
};

struct frame_slot {
	uint64_t offset;
	struct frames_entry *e;	/* NULL: DWARF has no line for it */
	uint8_t state;		/* enum slot_state */
};

struct name_slot {
	const char *system_name;	/* key: owned by the elf_file */
	char *name;			/* demangled, or NULL: same as key */
};

struct sym_object {
	struct symbolizer *owner;	/* NULL once the symbolizer is freed */
	struct sym_object *next;	/* hash chain */
	struct id_key key;
	int err;			/* failure node when < 0 */
	unsigned int refs;
	struct elf_file *ef;
	struct file_stamp stamp;	/* of the file opened (if any) */

	struct off_slot *offs;
	uint32_t offs_cap, offs_n;	/* cap: power of two */
	struct name_slot *names;
	uint32_t names_cap, names_n;

	/*
	 * DWARF for source lines and inlined frames (dwarf_lines.c), read
	 * at load; NULL without one, with lines off, or once shed for the
	 * budget (dwarf_shed). The chains resolved in it, cached per offset
	 * (frames.c); each entry a self-contained block (frames_bytes).
	 */
	struct dwarf_lines *dwarf;
	bool dwarf_shed;
	struct frame_slot *frames;
	uint32_t frames_cap, frames_n;
	uint64_t frames_bytes;

	bool vdso;			/* the vDSO: misses get FDE names */
	char **fde_names;		/* "[vdso]+0x..." names handed out */
	uint32_t fde_names_n;
	uint64_t last_use;		/* owner->clock at the last resolve */
	struct sym_object *same;	/* a copy's object (a reference), or NULL */
	uint32_t idle_trims;		/* trims in a row it was unreferenced */
	/*
	 * Symbols freed for the budget while the object was held (shed());
	 * lookups miss (-EAGAIN) until symbolizer_reload() reads them again.
	 * Atomic: the reader thread asks sym_object_shed() without the lock.
	 */
	bool shed;
	bool reloading;			/* a symbolizer_reload() is reading it */
	/*
	 * The budget (bytes) its symbol table was refused under, being
	 * larger (sym_table_fits()); 0: not refused. Lookups miss (-EFBIG)
	 * and it is not read again while the budget stays that. Atomic: the
	 * reader thread asks sym_object_wants_reload() without the lock.
	 */
	uint64_t too_big;
	/*
	 * CLOCK_MONOTONIC ns of the last sample in its code (atomic: the
	 * reader's sym_object_sampled()) and of the last lookup in it: the
	 * later of the two orders the held tables for shedding.
	 */
	uint64_t sampled_ns;
	uint64_t resolved_ns;
	bool changed;			/* its file changed since: never reloaded */
	/*
	 * debuginfod (debuginfod_attach.c): no symbols and no local debug file, so its
	 * debug file is asked of the servers (wanted); the fetcher's entry
	 * for its build ID (NULL until a request was queued), and whether
	 * the file is attached. Atomic: the reader thread reads them.
	 */
	bool dbgd_wanted;
	struct dbgd_entry *dbgd_entry;
	bool dbgd_attached;
};

/*
 * Trims (one a second) an object nobody holds stays cached: a binary
 * exec'd over and over (compilers, shells, scripts in a loop) is opened
 * and its symbols read once, not for every process. Past the budget
 * these go first, least recently used first.
 */
#define SYM_IDLE_TRIMS		30

/*
 * Symbol tables read again after a shed, at most this many a second: a
 * working set larger than the budget costs bounded file reads, not a
 * reload per sample (the rest wait, their frames counted as shed).
 */
#define SYM_RELOADS_PER_S	4

/*
 * Tables whose samples wait for the interval's write-out are kept until
 * the cache is over its budget by 1/SYM_PENDING_SLACK more: a working set
 * a little over the budget keeps its names; a larger one sheds (counted).
 * The slack comes out of --memory-limit's headroom.
 */
#define SYM_PENDING_SLACK	4

/*
 * Past the budget, DWARF (lines) holding more than its part is shed
 * first, least recently needed object first: the rest of the budget
 * stays for symbol tables (names before lines). Its part is the
 * symbolizer's lines_budget, or without one 1/SYM_DWARF_SHARE of the
 * budget (sym_dwarf_budget()).
 */
#define SYM_DWARF_SHARE		2

/*
 * A file whose DWARF was freed for the budget (shed, or its idle object
 * dropped while DWARF held more than its part) is not read again by a
 * new object for it (its next process start) until SYM_DWARF_BACKOFF_S
 * seconds later, doubling each time it is freed again, at most
 * << SYM_DWARF_BACKOFF_MAX_SHIFT (16 min): a DWARF working set larger
 * than its part costs a bounded number of reads, not one per start,
 * and what is loaded stays. The last SYM_DWARF_SEEN such files are
 * remembered (frames.c).
 */
#define SYM_DWARF_BACKOFF_S		30
#define SYM_DWARF_BACKOFF_MAX_SHIFT	5
#define SYM_DWARF_SEEN			64

/* A file whose DWARF was freed for the budget (frames.c). */
struct sym_dwarf_seen {
	struct id_key key;
	int64_t size;			/* its stamp: a rewritten file is new */
	struct timespec mtime;
	uint32_t sheds;			/* times freed */
	uint64_t until_ns;		/* CLOCK_MONOTONIC: not read before */
	uint64_t last_ns;		/* last freed; 0: slot unused */
};

/*
 * Files whose symbol table was refused as too big, remembered (their
 * identity, size and the budget) so that each is counted once however
 * often it is opened again: the last SYM_TOO_BIG_KEPT.
 */
#define SYM_TOO_BIG_KEPT	64

struct sym_too_big {
	struct id_key key;
	int64_t size;
	uint64_t budget;
};

/* Names of vDSO functions no symbol covers: one per FDE, a handful. */
#define VDSO_FDE_NAMES_MAX	256

struct symbolizer {
	struct sym_object **buckets;
	size_t nbuckets;	/* power of two */
	size_t nnodes;
	uint64_t nobjects;
	uint64_t open_errors;
	uint64_t symbols_unreadable;	/* objects whose symbol tables libelf could not read */
	uint64_t clock;		/* resolves so far: the LRU clock */
	uint64_t bytes;		/* heap bytes of the objects, at the last trim */
	uint64_t budget;	/* bytes; 0: none */
	uint64_t lines_budget;	/* bytes of it DWARF's alone; 0: none (sym_dwarf_budget()) */
	bool lines;		/* read DWARF for lines (symbolizer_set_lines) */
	uint64_t sheds;		/* address caches emptied for the budget */
	uint64_t tables_shed;	/* symbol tables of held objects freed for it */
	uint64_t tables_reloaded;
	uint64_t reloads_refused;	/* past SYM_RELOADS_PER_S, or file changed */
	uint64_t too_big;	/* files whose symbol table was refused: larger than the budget */
	struct sym_too_big too_big_seen[SYM_TOO_BIG_KEPT];	/* those counted */
	uint32_t too_big_next;
	uint64_t reload_window_ns;	/* CLOCK_MONOTONIC start of the rate window */
	uint32_t reloads_in_window;
	/* files whose DWARF was freed for the budget, under seen_lock */
	pthread_mutex_t seen_lock;
	struct sym_dwarf_seen dwarf_seen[SYM_DWARF_SEEN];

	struct dbgd_fetcher *dbgd;	/* not owned; NULL: no debuginfod */

	struct sym_object *vdso;	/* referenced by us; NULL until tried */
	int vdso_err;			/* < 0 once loading it failed */
	uint64_t vdso_start;		/* our own [vdso] mapping */
	uint64_t vdso_size;
};

/* sym_mix64 - splitmix64's finalizer, for the hash and the per-object caches. */
static inline uint64_t sym_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* sym_object_destroy - free @o and what it owns (its references put). */
void sym_object_destroy(struct sym_object *o);

/* sym_drop_node - unlink @o from @s; freed now if unreferenced. Lock held. */
void sym_drop_node(struct symbolizer *s, struct sym_object *o);

/*
 * sym_stamp_differs - whether the file @st describes is not the one
 * stamped @fs (size, mtime or ctime changed: rewritten or truncated).
 */
bool sym_stamp_differs(const struct file_stamp *fs, const struct stat *st);

/* sym_frames_free - empty @o's cache of call chains (frames.c). */
void sym_frames_free(struct sym_object *o);

/*
 * sym_dwarf_load - read @o's DWARF (dwarf_lines_open()) when lines are
 * on, within the per-object cap; failures counted (frames.c). Without
 * the lock (it reads files); @o not yet shared.
 */
void sym_dwarf_load(struct symbolizer *s, struct sym_object *o);

/*
 * sym_dwarf_shed - free @o's DWARF and its chains for the budget;
 * returns the bytes freed (frames.c). Its file is not read again for a
 * while (sym_dwarf_backoff()). Lock held.
 */
uint64_t sym_dwarf_shed(struct sym_object *o);

/*
 * sym_dwarf_backoff - remember that @o's file's DWARF was freed for
 * @s's budget: a new object for it reads it again only after
 * SYM_DWARF_BACKOFF_S seconds, doubled for each earlier time (frames.c).
 * Any thread (seen_lock).
 */
void sym_dwarf_backoff(struct symbolizer *s, const struct sym_object *o);

/*
 * sym_dwarf_budget - the bytes of @s's budget DWARF may hold: its
 * lines_budget, else 1/SYM_DWARF_SHARE of the budget; 0: no budget
 * (budget.c).
 */
uint64_t sym_dwarf_budget(const struct symbolizer *s);

/* sym_object_bytes - heap bytes of @o: struct, ELF data, caches. */
uint64_t sym_object_bytes(const struct sym_object *o);

/*
 * sym_object_forget - empty @o's address and name caches (names handed
 * out stay valid only if copied already: lock held); returns the heap
 * bytes freed.
 */
uint64_t sym_object_forget(struct sym_object *o);

/*
 * sym_fetched_wanted - at @o's open, before its symbols are read (no
 * lock, @o not shared yet): when it has no .symtab, no debug file and a
 * build ID, and @s fetches from debuginfod, mark it wanted, ask for its
 * build ID, and attach the file now if it was fetched already (another
 * object, an earlier run's cache).
 */
void sym_fetched_wanted(struct symbolizer *s, struct sym_object *o);

/*
 * sym_fetched_ready - whether @o's debug file was fetched and not
 * attached yet (atomic reads: any thread).
 */
bool sym_fetched_ready(const struct sym_object *o);

/*
 * sym_fetched_pending - whether @o's names wait for a fetch (queued,
 * running, or done and not attached yet). Lock held.
 */
bool sym_fetched_pending(const struct sym_object *o);

/*
 * sym_fetched_failed - whether @o, without a symbol table of its own,
 * asked debuginfod for its debug file and got none (not found, a server
 * error, a failed or rejected fetch; asked again later). Lock held.
 */
bool sym_fetched_failed(const struct sym_object *o);

/*
 * sym_fetched_attach - attach @o's fetched debug file (sym_fetched_ready())
 * and read its symbols, without @lock while reading; a file that does not
 * fit @o is rejected (dbgd_entry_reject()). Returns 0 (attached, or
 * nothing to do), or the error that kept it out.
 */
int sym_fetched_attach(struct symbolizer *s, pthread_mutex_t *lock,
		       struct sym_object *o);

/*
 * sym_fetched_retry - ask again for @o's debug file when its request was
 * dropped or failed long enough ago (symbolizer_trim(), lock held).
 */
void sym_fetched_retry(struct symbolizer *s, struct sym_object *o);

/*
 * sym_table_fits - whether @o's symbol table, of @bytes (0: not read yet,
 * elf_file_symbols_estimate()), fits @s's whole budget; if not, @o is
 * marked too_big under it (budget.c). With the lock held, or before @o
 * is shared.
 */
bool sym_table_fits(struct symbolizer *s, struct sym_object *o, uint64_t bytes);

/*
 * sym_too_big_count - count @o's refusal (too_big) unless its file was
 * counted under the same budget already (budget.c). Lock held.
 */
void sym_too_big_count(struct symbolizer *s, const struct sym_object *o);

/*
 * sym_admit - count @bytes just read for @o (a new object, or its
 * reloaded table) and shed for them now (budget.c). Lock held.
 */
void sym_admit(struct symbolizer *s, struct sym_object *o, uint64_t bytes);

/*
 * sym_vdso_get - a new reference to the vDSO object for @m, a "[vdso]"
 * mapping (vdso_object.c), reading profd's own vDSO on first use. NULL
 * with *@err: the vDSO could not be read (its error, kept), or -ENOEXEC
 * for another ABI's vDSO (a size that differs, or below 4 GiB when ours
 * is not). Lock held.
 */
struct sym_object *sym_vdso_get(struct symbolizer *s,
				const struct proc_mapping *m, int *err);

/*
 * sym_vdso_fde_name - the name of the vDSO function at @vaddr that no
 * symbol covers: "[vdso]+0xSTART", START (in *@start) being where its FDE
 * begins. Owned by @o (at most VDSO_FDE_NAMES_MAX names). NULL when no
 * FDE covers it (the frame stays unnamed rather than named by a guess)
 * or without memory.
 */
const char *sym_vdso_fde_name(struct sym_object *o, uint64_t vaddr,
			      uint64_t *start);

#endif /* PROFD_SYMBOL_SYMBOLIZER_INTERNAL_H */
