/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fork_views.h - what a forked child's mappings were at its fork: its
 * parent's maps snapshot, kept from the fork record (PROFD_EVENT_PROC_FORK)
 * until the child's first maps read, which uses it if the child is gone
 * by then (a child living a millisecond is), or keeps it for the child's
 * samples from before its exec if that read found a later image
 * (process.h, struct process.pre_exec).
 *
 * A fixed table, one slot per PID modulo FORK_VIEWS (a newer fork in the
 * slot takes it); a view is dropped at the child's exec record, at its
 * first read, and FORK_VIEW_TTL_NS after the fork (a child still alive
 * then is read); not at its exit record, which samples of its exit may
 * follow (a fork storm's children: half their samples). The reader
 * thread only.
 */
#ifndef PROFD_PROC_FORK_VIEWS_H
#define PROFD_PROC_FORK_VIEWS_H

#include <stdint.h>
#include <sys/types.h>

#define FORK_VIEWS 4096
#define FORK_VIEW_TTL_NS (5ULL * 1000 * 1000 * 1000)

struct proc_snapshot;
struct fork_views;

/* fork_views_new - an empty table; NULL on out of memory. */
struct fork_views *fork_views_new(void);

/* fork_views_free - drop every view (their snapshot references); NULL is fine. */
void fork_views_free(struct fork_views *fv);

/*
 * fork_views_set - @pid's fork record, taken at @fork_ns, was read at
 * @now_ns (both CLOCK_MONOTONIC) with view @snap (a reference is taken),
 * or NULL: its parent's mappings are unknown, so any older view of @pid
 * goes.
 */
void fork_views_set(struct fork_views *fv, pid_t pid, struct proc_snapshot *snap,
		    uint64_t now_ns, uint64_t fork_ns);

/*
 * fork_views_take - @pid's view, its reference handed to the caller, and
 * the slot emptied; NULL if none. *@fork_ns (may be NULL): the fork's time.
 */
struct proc_snapshot *fork_views_take(struct fork_views *fv, pid_t pid,
				      uint64_t *fork_ns);

/* fork_views_drop - forget @pid's view, if any. */
void fork_views_drop(struct fork_views *fv, pid_t pid);

/* fork_views_expire - drop the views of forks before @before_ns. */
void fork_views_expire(struct fork_views *fv, uint64_t before_ns);

#endif /* PROFD_PROC_FORK_VIEWS_H */
