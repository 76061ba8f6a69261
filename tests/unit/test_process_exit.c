// SPDX-License-Identifier: GPL-2.0
/*
 * test_process_exit.c - the lifecycle of an exited process in the process
 * table (src/proc/process.c), no BPF: a sample of an exiting task read
 * after the exit event keeps the exited entry and its snapshot; any other
 * sample of that PID is a new process; the listener is told once, after
 * the release time, and the entry leaves after the removal time; a
 * zombie read gets no snapshot (no cgroup "/" labels), and a process first
 * seen exiting is marked exited.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/process.h"
#include "symbol/symbolizer.h"

#include "check.h"

static int removed_calls;
static pid_t removed_pid;

static void on_removed(void *ctx, pid_t pid)
{
	removed_calls++;
	removed_pid = pid;
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

/* A child that exited and was not waited for: a zombie. */
static pid_t zombie(void)
{
	pid_t pid = fork();
	char path[64], buf[256];
	FILE *f;

	if (pid == 0)
		_exit(0);
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 1000; i++) {
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) && strstr(buf, ") Z")) {
			fclose(f);
			break;
		}
		if (f)
			fclose(f);
		usleep(1000);
	}
	return pid;
}

int main(void)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct symbolizer *sym = symbolizer_new();
	struct process_table *pt = sym ? process_table_new(sym, &lock) : NULL;
	struct process_listener l = { .removed = on_removed };
	struct process_table_stats st;
	struct proc_snapshot *snap;
	struct process *p, *q;
	pid_t child, z;
	uint64_t t = 1000000000ULL;

	if (!pt) {
		CHECK(false, "process table");
		return 1;
	}
	process_table_set_listener(pt, &l);

	/* exit event, then a sample of the exiting task: the same entry */
	child = sleeper();
	p = process_get(pt, child, t, false, NULL, 0);
	CHECK(p && p->snap && p->snap->meta.executable, "live process read");
	snap = p ? p->snap : NULL;
	process_exit(pt, child, t + 10, t + 10);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	q = process_get(pt, child, t + 20, true, NULL, 0);
	CHECK(q == p && q->snap == snap && q->exited,
	      "exiting sample after the exit event: the exited entry, its snapshot");
	process_table_stats(pt, &st);
	CHECK(st.samples_after_exit == 1, "counted: %llu",
	      (unsigned long long)st.samples_after_exit);

	/* released after the grace (listener once), removed after the swap */
	process_table_reap(pt, t + 30, ~0ULL, t, t);
	CHECK(removed_calls == 0, "not released before the grace");
	process_table_reap(pt, t + 40, ~0ULL, t + 11, t);
	CHECK(removed_calls == 1 && removed_pid == child, "released: listener told");
	q = process_get(pt, child, t + 45, true, NULL, 0);
	CHECK(q == p, "still there for late samples");
	process_table_reap(pt, t + 50, ~0ULL, t + 11, t);
	CHECK(removed_calls == 1, "listener told once");
	process_table_stats(pt, &st);
	CHECK(st.processes == 1, "entry kept until the swap: %llu",
	      (unsigned long long)st.processes);
	process_table_reap(pt, t + 60, ~0ULL, t + 11, t + 11);
	process_table_stats(pt, &st);
	CHECK(st.processes == 0 && st.exited_removed == 1 && removed_calls == 1,
	      "removed after the swap: %llu left, %llu removed, %d calls",
	      (unsigned long long)st.processes, (unsigned long long)st.exited_removed,
	      removed_calls);

	/* PID reuse: a sample without the exiting mark is a new process */
	child = sleeper();
	p = process_get(pt, child, t + 100, false, NULL, 0);
	process_exit(pt, child, t + 110, t + 105);
	snap = p ? p->snap : NULL;
	q = process_get(pt, child, t + 115, false, NULL, t + 104);
	CHECK(q == p && q->exited && q->snap == snap,
	      "a sample taken before the exit, read after it (held for its "
	      "unwind tables): the exited entry and its snapshot");
	q = process_get(pt, child, t + 120, false, NULL, 0);
	CHECK(q == p && !q->exited && q->snap && q->snap->meta.executable,
	      "non-exiting sample of an exited PID: a new process, read again");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	/* a zombie read: no snapshot, so no cgroup "/" and no executable */
	z = zombie();
	p = process_get(pt, z, t + 200, false, NULL, 0);
	CHECK(p && !p->snap && p->gone, "zombie: no snapshot, gone");
	waitpid(z, NULL, 0);

	/* first seen exiting: marked exited (reaped after the swap) */
	z = zombie();
	p = process_get(pt, z, t + 300, true, NULL, 0);
	CHECK(p && p->exited && p->exited_ns == t + 300, "first seen exiting: exited");
	waitpid(z, NULL, 0);

	process_table_free(pt);
	symbolizer_free(sym);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
