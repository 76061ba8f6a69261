/* SPDX-License-Identifier: GPL-2.0 */
/*
 * object_loader.h - the thread that opens and parses mapped files.
 *
 * Owns: one worker thread and its ordered, bounded queue of jobs. The
 * process table (process.c) hands it everything that opens a mapping's
 * file — the file gate's check, the symbolizer's ELF parse and symbol
 * load, the executable's build ID, and the process listener (unwind
 * tables queued, runtime detection) — so the reader thread never opens
 * or parses an ELF file and never waits on the gate. Jobs run in the
 * order they were added: a process's "removed" always follows its
 * pending maps jobs. When OBJECT_LOADER_QUEUE_MAX jobs wait, a new one
 * is dropped (counted) unless it is marked as one that must run
 * (removals). A job that has run for OBJECT_LOADER_STUCK_NS shows as
 * stuck (busy_ns; /healthz says degraded). Stopping never waits longer
 * than asked: a worker blocked in the kernel is left behind with what it
 * uses.
 *
 * Threads: every function may be called from any thread (one mutex).
 */
#ifndef PROFD_PROC_OBJECT_LOADER_H
#define PROFD_PROC_OBJECT_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#define OBJECT_LOADER_QUEUE_MAX	4096
#define OBJECT_LOADER_STUCK_NS	(30ULL * 1000 * 1000 * 1000)

struct object_loader;

/*
 * A job: run(@arg, false) on the worker, or run(@arg, true) when it is
 * cancelled instead (dropped at stop): either way it frees @arg.
 */
typedef void (*object_job_fn)(void *arg, bool cancel);

struct object_loader_stats {
	uint64_t queued;	/* jobs waiting now */
	uint64_t done;		/* jobs run */
	uint64_t dropped;	/* jobs dropped: queue full */
	uint64_t busy_ns;	/* how long the job in hand has run; 0: idle */
};

/* object_loader_new - start the worker. NULL on out of memory or no thread. */
struct object_loader *object_loader_new(void);

/*
 * object_loader_free - stop the worker: waits up to @wait_ns for the job
 * in hand; jobs still queued are cancelled. Returns true when the worker
 * stopped; false when it is still blocked in a job: it, the loader and
 * everything its job uses must then be left alone (never freed). NULL:
 * true.
 */
bool object_loader_free(struct object_loader *ol, uint64_t wait_ns);

/*
 * object_loader_add - queue @fn(@arg). @must: never dropped. Returns 0,
 * or -ENOBUFS (queue full: not queued, @fn not called, counted) or
 * -ENOMEM; on error the caller still owns @arg. With @ol NULL, @fn runs
 * now on the caller's thread (returns 0).
 */
int object_loader_add(struct object_loader *ol, object_job_fn fn, void *arg,
		      bool must);

/*
 * object_loader_defer - while @on, jobs added do not wake the worker; when
 * turned off, one wakeup takes all that were added meanwhile (and
 * object_loader_wait() wakes it too). For a caller that adds jobs in
 * bursts: the reader, while it takes in one batch of records. Under
 * process churn a wakeup per job was a context switch per job.
 */
void object_loader_defer(struct object_loader *ol, bool on);

/*
 * object_loader_wait - wait until every job added before the call has
 * run, at most @timeout_ns. Returns 0, or -ETIMEDOUT with jobs left (the
 * caller goes on with what is ready). NULL: 0.
 */
int object_loader_wait(struct object_loader *ol, uint64_t timeout_ns);

/* object_loader_stats - the figures of struct object_loader_stats; NULL: zeros. */
void object_loader_stats(struct object_loader *ol, struct object_loader_stats *out);

#endif /* PROFD_PROC_OBJECT_LOADER_H */
