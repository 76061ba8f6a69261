// SPDX-License-Identifier: GPL-2.0
/*
 * test_pre_exec.c - which snapshot names a sample taken before an exec
 * and read after it (src/proc/process.c, process_sample_snapshot()), no
 * BPF: the table's image clock is a table of exec times set here (what
 * BPF's exec_times would say), the processes are real children. A
 * forked child first read after its exec names its earlier samples by
 * its fork view (the parent's image) until its exec record; one with no
 * view leaves them to no image (NULL); a re-read that finds a later
 * image keeps the old snapshot for the samples before it; a read before
 * the exec, or an exec time older than the fork (a reused PID's), keeps
 * nothing; a sample at or after the image's exec gets the current one.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/process.h"
#include "symbol/symbolizer.h"

#include "check.h"

#define NPIDS 4
static struct { pid_t pid; uint64_t ns; } exec_times[NPIDS];

static uint64_t fake_exec_ns(void *ctx, pid_t pid)
{
	(void)ctx;
	for (int i = 0; i < NPIDS; i++)
		if (exec_times[i].pid == pid)
			return exec_times[i].ns;
	return 0;
}

static void set_exec(int slot, pid_t pid, uint64_t ns)
{
	exec_times[slot].pid = pid;
	exec_times[slot].ns = ns;
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct symbolizer *sym = symbolizer_new();
	struct process_table *pt = sym ? process_table_new(sym, &lock) : NULL;
	struct proc_snapshot *parent_snap, *old;
	struct process *parent, *p;
	pid_t self = getpid(), child;
	uint64_t t = 1000000000ULL;	/* "now": reads; sample times are small */

	if (!pt) {
		CHECK(false, "process table");
		return 1;
	}
	process_table_set_image_clock(pt, fake_exec_ns, NULL);
	parent = process_get(pt, self, t, false, NULL, 0);
	parent_snap = parent ? parent->snap : NULL;
	CHECK(parent_snap && parent->image_ns == 0, "parent read, never exec'd");

	/* forked at 100, exec'd at 200, first sample (at 150) read after the exec */
	child = sleeper();
	process_fork(pt, child, self, t, 100);
	set_exec(0, child, 200);
	p = process_get(pt, child, t, false, NULL, 150);
	CHECK(p && p->snap && p->image_ns == 200, "child read: image exec'd at 200 (%llu)",
	      p ? (unsigned long long)p->image_ns : 0ULL);
	CHECK(p && p->pre_exec == parent_snap, "the fork view is kept for its earlier samples");
	CHECK(p && process_sample_snapshot(p, 150) == parent_snap,
	      "a sample before the exec: the parent's image at the fork");
	CHECK(p && process_sample_snapshot(p, 200) == p->snap &&
	      process_sample_snapshot(p, 250) == p->snap,
	      "a sample at or after the exec: the image read");
	CHECK(p && process_sample_snapshot(p, 0) == p->snap, "no sample time: the image read");
	CHECK(p && process_sample_snapshot(p, 50) == NULL,
	      "a sample before the view's time: no image");
	process_exec(pt, child, "target");
	CHECK(p && !p->pre_exec && process_sample_snapshot(p, 150) == NULL,
	      "the exec record drops the view: no image for an earlier sample");
	reap(child);

	/* no fork record (its parent unknown): no view, earlier samples unnamed */
	child = sleeper();
	set_exec(1, child, 300);
	p = process_get(pt, child, t, false, NULL, 250);
	CHECK(p && p->snap && p->image_ns == 300 && !p->pre_exec, "no view");
	CHECK(p && process_sample_snapshot(p, 250) == NULL,
	      "a sample before the exec, no view: no image (not the later one)");
	CHECK(p && process_sample_snapshot(p, 300) == p->snap, "after it: the image read");
	reap(child);

	/* read before its exec: the view is dropped, its own snapshot names it */
	child = sleeper();
	process_fork(pt, child, self, t, 400);
	p = process_get(pt, child, t, false, NULL, 410);
	CHECK(p && p->snap && p->snap != parent_snap && !p->pre_exec && p->image_ns == 0,
	      "read before any exec: its own snapshot, no view kept");
	CHECK(p && process_sample_snapshot(p, 410) == p->snap, "its samples: its snapshot");

	/* then a re-read (an address outside every mapping) finds an exec at 500 */
	old = p ? p->snap : NULL;
	set_exec(2, child, 500);
	if (p)
		process_find_mapping(pt, p, 8, t + PROCESS_REFRESH_MIN_NS * 2);
	CHECK(p && p->snap != old && p->image_ns == 500 && p->pre_exec == old &&
	      p->pre_exec_ns == 0,
	      "a re-read finding a later image keeps the old snapshot");
	CHECK(p && process_sample_snapshot(p, 450) == old &&
	      process_sample_snapshot(p, 500) == p->snap,
	      "samples before the exec: the old snapshot; after: the new");
	process_exec(pt, child, "target");
	CHECK(p && !p->pre_exec && process_sample_snapshot(p, 450) == NULL,
	      "dropped at the exec record");
	reap(child);

	/* an exec time older than the fork (the PID's last process's): no view kept */
	child = sleeper();
	set_exec(3, child, 550);
	process_fork(pt, child, self, t, 600);
	p = process_get(pt, child, t, false, NULL, 610);
	CHECK(p && p->snap && !p->pre_exec && process_sample_snapshot(p, 610) == p->snap,
	      "stale exec time before the fork: its own snapshot names its samples");
	reap(child);

	process_table_free(pt);
	symbolizer_free(sym);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures != 0;
}
