/* SPDX-License-Identifier: GPL-2.0 */
/*
 * procfs.h - small reads of a process's /proc files, proc(5): its name,
 * its parent, whether it is exiting, whether it is still there. Any
 * thread; nothing is kept.
 */
#ifndef PROFD_PROC_PROCFS_H
#define PROFD_PROC_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * proc_read_comm - the name of process @pid (/proc/PID/comm), or of its
 * thread @tid when non-zero, into @out of @len bytes; "" if it is gone.
 */
void proc_read_comm(pid_t pid, pid_t tid, char *out, size_t len);

/*
 * proc_parent_pid - the parent of process @pid (the ppid field of
 * /proc/PID/stat, proc(5)), 0 if it is gone or unreadable.
 */
pid_t proc_parent_pid(pid_t pid);

/*
 * proc_exiting - whether process @pid is exiting (PF_EXITING, not a
 * kernel thread), a zombie or gone: what /proc says of it now may be its
 * remains (no mappings, no executable, cgroup "/"), not what it was.
 */
bool proc_exiting(pid_t pid);

/* proc_alive - whether /proc/PID exists (a zombie's too). */
bool proc_alive(pid_t pid);

#endif /* PROFD_PROC_PROCFS_H */
