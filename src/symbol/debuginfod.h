/* SPDX-License-Identifier: GPL-2.0 */
/*
 * debuginfod.h - debug files fetched by build ID from debuginfod servers,
 * in the background.
 *
 * Owns: the fetcher (struct dbgd_fetcher): one entry per build ID asked
 * for (its state: queued, fetching, ready with the file's path in the
 * cache, or failed until a retry time), a bounded queue, DBGD_WORKERS
 * threads each with its own elfutils libdebuginfod client (the library's
 * handles are one thread's at a time), the check of what a server sent
 * (elf_debug_file_check(): an ELF file with a .symtab and the very build
 * ID asked for; anything else is rejected, counted and deleted from the
 * cache), and the on-disk cache's size cap (debuginfod_cache.c: least
 * recently used files evicted past it).
 *
 * Protocol: the debuginfod HTTP API (GET /buildid/HEX/debuginfo), spoken
 * by libdebuginfod, which reads the standard environment: DEBUGINFOD_URLS
 * (servers, space separated), DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT,
 * DEBUGINFOD_MAXTIME, DEBUGINFOD_MAXSIZE, DEBUGINFOD_RETRY_LIMIT.
 * dbgd_env_setup() sets them from profd's settings once, before any
 * thread runs (setenv is not thread-safe).
 *
 * Nothing here blocks its caller beyond a short mutex: no file and no
 * network I/O on the caller's thread except dbgd_entry_open()'s open().
 */
#ifndef PROFD_SYMBOL_DEBUGINFOD_H
#define PROFD_SYMBOL_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBGD_WORKERS		2	/* fetches at once */
#define DBGD_QUEUE_MAX		256	/* build IDs waiting for a worker */
#define DBGD_ENTRIES_MAX	8192	/* build IDs remembered (each ~200 bytes) */
#define DBGD_RETRY_S		600	/* a missing/rejected build ID is asked again after */
#define DBGD_ERROR_RETRY_S	60	/* after a server error or timeout (doubling) */
#define DBGD_TIMEOUT_S		10	/* DEBUGINFOD_TIMEOUT unless set */
#define DBGD_MAXTIME_S		120	/* DEBUGINFOD_MAXTIME unless set */
#define DBGD_CACHE_DIR		"/var/cache/profd/debuginfod"

struct dbgd_fetcher;
struct dbgd_entry;

enum dbgd_state {
	DBGD_QUEUED,	/* waiting for a worker */
	DBGD_FETCHING,	/* a worker is asking the servers */
	DBGD_READY,	/* checked file in the cache: dbgd_entry_open() */
	DBGD_FAILED,	/* none (not found, server error, rejected) for now */
};

struct dbgd_config {
	const char *urls;	/* DEBUGINFOD_URLS' form; NULL or "": off */
	const char *cache_dir;	/* libdebuginfod's cache; NULL: DBGD_CACHE_DIR */
	uint64_t cache_bytes;	/* the cache's size cap, bytes (> 0) */
	uint32_t error_retry_ms;	/* first retry after a server error or a
					 * timeout; 0: DBGD_ERROR_RETRY_S */
	int verbose;		/* > 0: every failed fetch printed */
};

/*
 * dbgd_urls_valid - whether every space-separated word of @urls is an
 * http://, https:// or file:// URL with something after the scheme, as
 * DEBUGINFOD_URLS holds them ("" is valid: none). Pure.
 */
bool dbgd_urls_valid(const char *urls);

/*
 * dbgd_env_setup - set libdebuginfod's environment for @cfg: the
 * DEBUGINFOD_URLS variable to @cfg->urls (the flag wins over the
 * variable), DEBUGINFOD_CACHE_PATH to the cache directory, and, when not
 * set already, DEBUGINFOD_TIMEOUT (DBGD_TIMEOUT_S), DEBUGINFOD_MAXTIME
 * (DBGD_MAXTIME_S) and DEBUGINFOD_MAXSIZE (the cap: a bigger file is
 * refused before it is downloaded). Call it while profd has one thread.
 * Returns 0, -ENOMEM.
 */
int dbgd_env_setup(const struct dbgd_config *cfg);

/*
 * dbgd_fetcher_new - a fetcher for @cfg, its cache directory created
 * (mode 0700 for the parts it makes) and its workers started; the first
 * one trims the cache to the cap. NULL with a one-line reason in @why
 * (@why_len bytes) when @cfg->urls is empty, the directory cannot be
 * made, or a thread cannot start.
 */
struct dbgd_fetcher *dbgd_fetcher_new(const struct dbgd_config *cfg,
				      char *why, size_t why_len);

/*
 * dbgd_fetcher_free - stop the workers (a fetch in progress is cancelled
 * through libdebuginfod's progress callback, which it calls about once a
 * second), wait up to @wait_ns for them, and free everything. Entries
 * must no longer be used. Returns false when a worker did not stop in
 * time: it is left running with the fetcher (the process is exiting).
 * NULL is fine (true).
 */
bool dbgd_fetcher_free(struct dbgd_fetcher *d, uint64_t wait_ns);

/*
 * dbgd_request - the entry for @build_id (lowercase hex, as
 * elf_file_build_id()), queuing a fetch unless one is queued, running or
 * done, or it failed less than DBGD_RETRY_S ago (a miss: HTTP 404
 * everywhere; a rejected file), or less than its error retry ago (a
 * server error, HTTP 5xx, a timeout, an unreachable server:
 * DBGD_ERROR_RETRY_S doubled for each in a row, at most DBGD_RETRY_S).
 * Never waits for a
 * fetch. The entry is owned by @d and valid until dbgd_fetcher_free().
 * NULL for an empty or non-hex build ID, or when DBGD_ENTRIES_MAX
 * entries exist or the queue is full (counted: debuginfod_dropped; ask
 * again later).
 */
struct dbgd_entry *dbgd_request(struct dbgd_fetcher *d, const char *build_id);

/* dbgd_entry_state - @e's state now (an atomic read: any thread). */
enum dbgd_state dbgd_entry_state(const struct dbgd_entry *e);

/*
 * dbgd_entry_open - an O_RDONLY descriptor (the caller's) of @e's file
 * in the cache, its access time set to now (the cap evicts the least
 * recently used). -EAGAIN unless DBGD_READY; when the file is gone
 * (evicted), the entry fails and is fetched again after DBGD_RETRY_S:
 * -errno of the open.
 */
int dbgd_entry_open(struct dbgd_fetcher *d, struct dbgd_entry *e);

/*
 * dbgd_entry_reject - the file of @e (DBGD_READY) did not fit the object
 * after all (elf_file_read_debug_symbols(): another class or machine, an
 * unreadable symbol table): the file is deleted from the cache and
 * counts as debuginfod_rejected; the entry is queued again at once the
 * first time (the file may have been a bad one in the cache), and fails
 * for DBGD_RETRY_S when the file rejected before it was rejected too.
 * @why: a negative errno, for the message.
 */
void dbgd_entry_reject(struct dbgd_fetcher *d, struct dbgd_entry *e, int why);

/*
 * dbgd_cache_trim - delete the least recently used files (by access
 * time) under @dir, libdebuginfod's cache (BUILDID/debuginfo and the
 * like, one level down; control files at the top are left), until they
 * take at most @cap bytes. @keep (a path, or NULL) is deleted last.
 * Returns the files deleted, or -errno when @dir cannot be read.
 * File I/O: the workers call it, after each fetch.
 */
int dbgd_cache_trim(const char *dir, uint64_t cap, const char *keep);

/*
 * dbgd_mkdirs - make directory @path and its missing parents (mode
 * 0700), as `mkdir -p`. Returns 0 or -errno.
 */
int dbgd_mkdirs(const char *path);

#endif /* PROFD_SYMBOL_DEBUGINFOD_H */
