/* SPDX-License-Identifier: GPL-2.0 */
/*
 * remote.h - reading another process's memory without risking a hang.
 *
 * Owns: the worker threads that call process_vm_readv(2) for the reader
 * thread. A read of a hostile or broken mapping (a userfaultfd region
 * nobody serves, a hung FUSE or NFS file) can sleep in the kernel for
 * ever; the caller waits at most REMOTE_READ_TIMEOUT_NS, then abandons the
 * worker (it rejoins when its read returns) and marks the process as
 * stuck until that read returns and REMOTE_STUCK_PID_NS after, so its
 * further reads fail at once and one process holds at most one worker.
 * Memory that is slow rather than hung is caught by a budget: a process
 * whose reads took over REMOTE_PID_BUDGET_NS in a REMOTE_PID_WINDOW_NS
 * window is shunned the same way (both counted as timeouts). Each read is
 * charged only its time past REMOTE_FAST_READ_NS: slow memory (a FUSE or
 * NFS file, a userfaultfd region served late) takes milliseconds a page,
 * while many reads of resident memory (a runtime walker naming every
 * frame of every sample) are fast and must not shun a busy process.
 * At most REMOTE_MAX_WORKERS threads exist; with all of them stuck (as
 * many hung processes), every read fails with -EAGAIN.
 *
 * Threads: one caller at a time (the reader thread).
 */
#ifndef PROFD_PROC_REMOTE_H
#define PROFD_PROC_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REMOTE_READ_TIMEOUT_NS	(500ULL * 1000 * 1000)
#define REMOTE_STUCK_PID_NS	(10ULL * 1000 * 1000 * 1000)
#define REMOTE_MAX_WORKERS	16
/* Slow memory: more read time than this per window shuns the process too. */
#define REMOTE_PID_BUDGET_NS	(100ULL * 1000 * 1000)
#define REMOTE_PID_WINDOW_NS	(1000ULL * 1000 * 1000)
/* A read's time up to this is a resident page's, not charged. */
#define REMOTE_FAST_READ_NS	(100ULL * 1000)
#define REMOTE_READ_MAX		(1u << 20)	/* bytes per read */

struct remote_reader;

/* remote_reader_new - no worker runs until the first read. NULL on OOM. */
struct remote_reader *remote_reader_new(void);

/*
 * remote_reader_free - stop the workers. If one is still stuck in a read,
 * the reader's memory is left to it (the process is exiting anyway).
 */
void remote_reader_free(struct remote_reader *r);

/*
 * remote_read - read @len (<= REMOTE_READ_MAX) bytes at @addr of process
 * @pid into @buf. Returns 0, -EFAULT (unmapped or short read), -ESRCH,
 * -EPERM, -ETIMEDOUT (the read did not return in time, or the process is
 * marked stuck: @buf is untouched), -EINVAL (@len too large), -ENOMEM,
 * -EAGAIN (no worker thread could be started).
 */
int remote_read(struct remote_reader *r, pid_t pid, uint64_t addr, void *buf,
		size_t len);

/*
 * remote_reader_count_timeouts - also count each read abandoned from now
 * on in registry counter @c (the owner's, static: it outlives @r). Call
 * before the first read.
 */
struct counter_def;
void remote_reader_count_timeouts(struct remote_reader *r, struct counter_def *c);

/* remote_reader_timeouts - reads abandoned so far. */
uint64_t remote_reader_timeouts(const struct remote_reader *r);

#endif /* PROFD_PROC_REMOTE_H */
