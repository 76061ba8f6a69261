// SPDX-License-Identifier: GPL-2.0
/*
 * test_object_loader.c - the object loader's queue (src/proc/object_loader.c)
 * and the process table's use of it, no BPF: jobs run in order on another
 * thread; a full queue drops a job (counted) but never a "must" one; the
 * writer's wait is bounded by its timeout while a job is stuck and returns
 * once the jobs before it ran; a stuck job shows as busy; stopping never
 * waits past its bound; with the loader, a snapshot's build ID and its
 * mappings' objects are filled in off the caller's thread and the
 * listener's maps_read() runs there, before removed(); an exec is a
 * removed() before the new image's maps_read().
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "proc/object_loader.h"
#include "proc/process.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int order[16], norder;
static int gate_fd[2];		/* a job blocks on reading gate_fd[0] */
static int cancelled;

static void record(void *arg, bool cancel)
{
	if (cancel)
		cancelled++;
	else if (norder < 16)
		order[norder++] = (int)(long)arg;
}

static void block(void *arg, bool cancel)
{
	char c;

	(void)arg;
	if (!cancel && read(gate_fd[0], &c, 1) < 0)
		perror("read");
}

static pthread_t main_thread;
static int maps_read_calls, maps_read_off_main, removed_after_read;
static char events[64];	/* the listener's calls in order: 'M' maps_read, 'R' removed */
static unsigned int nevents;

static void on_maps_read(void *ctx, pid_t pid, const struct proc_maps *m)
{
	(void)ctx; (void)pid; (void)m;
	if (nevents + 1 < sizeof(events))
		events[nevents++] = 'M';
	maps_read_calls++;
	maps_read_off_main += !pthread_equal(pthread_self(), main_thread);
}

static void on_removed(void *ctx, pid_t pid)
{
	(void)ctx; (void)pid;
	if (nevents + 1 < sizeof(events))
		events[nevents++] = 'R';
	removed_after_read = maps_read_calls > 0;
}

static void test_queue(void)
{
	struct object_loader *ol = object_loader_new();
	struct object_loader_stats st;
	uint64_t t0;
	int ret, nfull = 0;

	CHECK(ol, "loader started");
	if (!ol)
		return;
	for (long i = 0; i < 5; i++)
		object_loader_add(ol, record, (void *)i, false);
	CHECK(!object_loader_wait(ol, 2000000000ULL), "wait returns once the jobs ran");
	CHECK(norder == 5 && order[0] == 0 && order[4] == 4 && order[2] == 2,
	      "jobs run in order (%d run)", norder);

	/* a stuck job: bounded wait, busy shown, queue fills, must still goes */
	CHECK(!pipe(gate_fd), "pipe");
	object_loader_add(ol, block, NULL, false);
	usleep(50000);
	t0 = mono_ns();
	ret = object_loader_wait(ol, 200000000ULL);
	CHECK(ret == -ETIMEDOUT && mono_ns() - t0 < 1000000000ULL,
	      "wait on a stuck job gives up at its timeout (%d, %llu ms)", ret,
	      (unsigned long long)((mono_ns() - t0) / 1000000));
	object_loader_stats(ol, &st);
	CHECK(st.busy_ns >= 100000000ULL, "stuck job shows as busy (%llu ms)",
	      (unsigned long long)(st.busy_ns / 1000000));
	for (long i = 0; i < OBJECT_LOADER_QUEUE_MAX + 10; i++)
		nfull += object_loader_add(ol, record, (void *)100L, false) == -ENOBUFS;
	object_loader_stats(ol, &st);
	CHECK(nfull == 10 && st.dropped == 10 && st.queued == OBJECT_LOADER_QUEUE_MAX,
	      "full queue drops and counts (%d, %llu, %llu queued)", nfull,
	      (unsigned long long)st.dropped, (unsigned long long)st.queued);
	CHECK(!object_loader_add(ol, record, (void *)7L, true), "a must job is queued anyway");
	t0 = mono_ns();
	CHECK(!object_loader_free(ol, 300000000ULL) && mono_ns() - t0 < 1000000000ULL,
	      "stop leaves a stuck worker behind within its bound");
	if (write(gate_fd[1], "x", 1) != 1)
		perror("write");	/* the abandoned worker runs on; never freed */
}

static void test_table(void)
{
	struct symbolizer *sym = symbolizer_new();
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct object_loader *ol = object_loader_new();
	struct process_table *pt = sym ? process_table_new(sym, &lock) : NULL;
	struct process_listener l = { .maps_read = on_maps_read, .removed = on_removed };
	struct proc_snapshot *s;
	struct process *p;
	uint64_t t = mono_ns();
	int idx = -1, found = 0;

	if (!pt || !ol) {
		CHECK(false, "process table and loader");
		return;
	}
	main_thread = pthread_self();
	process_table_set_listener(pt, &l);
	process_table_set_loader(pt, ol);
	p = process_get(pt, getpid(), t, false, NULL, 0);
	CHECK(p && p->snap, "own process read");
	if (!p || !p->snap)
		return;
	s = p->snap;
	/* the mapping of this function's code */
	idx = process_find_mapping(pt, p, (uint64_t)(uintptr_t)&test_table, t);
	CHECK(idx >= 0, "own text mapping found");
	CHECK(!object_loader_wait(ol, 5000000000ULL), "loader done");
	CHECK(proc_snapshot_build_id(s)[0] != '\0', "build ID filled in by the loader: %s",
	      proc_snapshot_build_id(s));
	if (idx >= 0) {
		enum proc_obj_state st;
		struct sym_object *o = proc_snapshot_object(s, idx, &st);
		struct sym_result r;

		CHECK(o && st == PROC_OBJ_DONE, "object opened by the loader");
		pthread_mutex_lock(&lock);
		found = o && !sym_object_resolve(o, (uint64_t)(uintptr_t)&test_table -
						 s->maps.v[idx].start + s->maps.v[idx].offset, &r) &&
			!strcmp(r.name, "test_table");
		pthread_mutex_unlock(&lock);
		CHECK(found, "its symbols resolve");
	}
	CHECK(maps_read_calls >= 1 && maps_read_off_main == maps_read_calls,
	      "maps_read() on the loader's thread (%d calls)", maps_read_calls);
	/* an exec: the old image's state forgotten before the new maps are
	 * offered (the same runtime at the same address is another process) */
	{
		unsigned int before = nevents;

		process_exec(pt, getpid(), "exec");
		process_find_mapping(pt, p, (uint64_t)(uintptr_t)&test_table, t + 1);
		CHECK(!object_loader_wait(ol, 5000000000ULL) && nevents == before + 2 &&
		      !strcmp(events + before, "RM"), "exec: removed() then maps_read(): %s",
		      events + before);
	}
	process_exit(pt, getpid(), t + 1, t + 1);
	process_table_reap(pt, t + 2, ~0ULL, t + 2, t + 2);
	CHECK(!object_loader_wait(ol, 5000000000ULL) && removed_after_read,
	      "removed() after maps_read(), in order");
	CHECK(object_loader_free(ol, 1000000000ULL), "idle loader stops");
	process_table_free(pt);
	symbolizer_free(sym);
}

int main(void)
{
	struct object_loader_stats st;

	object_loader_stats(NULL, &st);
	CHECK(!object_loader_add(NULL, record, (void *)42L, false) && norder == 1 &&
	      order[0] == 42 && st.queued == 0, "no loader: the job runs at once");
	norder = 0;
	test_queue();
	test_table();
	return failures ? 1 : 0;
}
