/* SPDX-License-Identifier: GPL-2.0 */
/*
 * async.h - the unwind loader on a thread of its own.
 *
 * Owns: an unwind_loader (see loader.h) and the one thread that uses it,
 * and the queue of work handed to that thread: "update PID with these
 * mappings" (the mappings copied) and "PID is gone", done in the order
 * given. Opening files and compiling their tables (seconds for a big
 * binary) thus never holds up the reader thread, sampling or the
 * interval's write-out. Updates wait in a bounded queue: a newer update
 * of a PID whose latest queued job is an update replaces that job's
 * mappings; when UNWIND_ASYNC_QUEUE_MAX updates wait already, the new one
 * is dropped (counted; the process keeps frame-pointer unwinding until
 * its next maps read). Removals are never dropped.
 *
 * Threads: the functions below may be called from any thread. The loader
 * is touched by one thread at a time: the worker, or a caller whose
 * update needs no file (every table cached) or whose removal comes while
 * nothing is queued and the worker is idle; it then runs it itself,
 * without waking the worker (process churn costs no thread handoff).
 */
#ifndef PROFD_UNWIND_ASYNC_H
#define PROFD_UNWIND_ASYNC_H

#include <stdint.h>
#include <sys/types.h>

#include "proc/maps.h"
#include "unwind/loader.h"

#define UNWIND_ASYNC_QUEUE_MAX	1024
#define UNWIND_ASYNC_TOUCH_MAX	256	/* touches waiting; more are dropped */

struct unwind_async;

struct unwind_async_stats {
	struct unwind_loader_stats loader;	/* as of the last job done */
	uint64_t queued;		/* jobs waiting now */
	uint64_t dropped;		/* updates dropped: queue full */
	uint64_t busy_ns;		/* how long the current job has run; 0: idle */
	uint64_t inline_runs;		/* updates and removals done by the caller:
					 * nothing to compile, worker idle */
};

/*
 * unwind_async_new - start a worker owning @l (freed by
 * unwind_async_free). NULL on out of memory or when no thread could be
 * started (@l is then not taken).
 */
struct unwind_async *unwind_async_new(struct unwind_loader *l);

/*
 * unwind_async_free - stop the worker: waits up to @wait_ns for the job
 * in hand to finish; a worker still busy then (blocked in a file read)
 * is left running, and it and its loader are never freed. NULL is fine.
 */
void unwind_async_free(struct unwind_async *a, uint64_t wait_ns);

/*
 * unwind_async_update - queue unwind_loader_update(@pid, @maps); @maps
 * is copied (the caller keeps it). Returns 0, -ENOBUFS (queue full:
 * dropped, counted) or -ENOMEM.
 */
int unwind_async_update(struct unwind_async *a, pid_t pid,
			const struct proc_maps *maps);

/* unwind_async_remove - queue unwind_loader_remove(@pid). -ENOMEM only. */
int unwind_async_remove(struct unwind_async *a, pid_t pid);

/*
 * unwind_async_touch - @pid was sampled at @now_ns (CLOCK_MONOTONIC):
 * hand it to unwind_loader_touch() on the worker, before its next job
 * (so a table build in progress never holds the caller up). Callers
 * rate-limit per process (e.g. once a second); when
 * UNWIND_ASYNC_TOUCH_MAX touches wait already, this one is dropped (an
 * eviction may then pick a table used a moment ago). NULL is fine.
 */
void unwind_async_touch(struct unwind_async *a, pid_t pid, uint64_t now_ns);

/*
 * unwind_async_defer - while @on, queued work does not wake the worker;
 * turned off, one wakeup takes it all (as object_loader_defer()). Calls
 * nest, from any thread: the worker is woken when the last caller turns
 * it off.
 */
void unwind_async_defer(struct unwind_async *a, bool on);

/* unwind_async_stats - the figures of struct unwind_async_stats. */
void unwind_async_stats(struct unwind_async *a, struct unwind_async_stats *out);

#endif /* PROFD_UNWIND_ASYNC_H */
