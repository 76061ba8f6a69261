// SPDX-License-Identifier: GPL-2.0
/*
 * procfs.c - small reads of a process's /proc files (see procfs.h): its
 * name, its parent, whether it is exiting, whether it is still there.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc/procfs.h"

void proc_read_comm(pid_t pid, pid_t tid, char *out, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	out[0] = '\0';
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, out, len - 1);
	close(fd);
	if (n <= 0) {
		out[0] = '\0';
		return;
	}
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

pid_t proc_parent_pid(pid_t pid)
{
	char path[64], buf[512], *close_paren;
	ssize_t n;
	int fd, ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

#define PF_EXITING_FLAG	0x00000004u	/* include/linux/sched.h */
#define PF_KTHREAD_FLAG	0x00200000u

bool proc_exiting(pid_t pid)
{
	char path[64], buf[512], *f;
	unsigned long flags = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	f = strrchr(buf, ')');	/* the comm may hold anything */
	if (!f || f[1] != ' ' || f[2] == 'Z' || f[2] == 'X')
		return true;
	/* fields 3.. after the comm: state ppid pgrp session tty_nr tpgid flags */
	if (sscanf(f + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return false;
	return (flags & PF_EXITING_FLAG) && !(flags & PF_KTHREAD_FLAG);
}

bool proc_alive(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return access(path, F_OK) == 0;
}
