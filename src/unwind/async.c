// SPDX-License-Identifier: GPL-2.0
/*
 * async.c - the unwind loader on a thread of its own (see async.h).
 *
 * Owns: a FIFO of jobs (singly linked, head and tail) under one mutex,
 * the worker thread, and the loader's figures as of the last job (copied
 * under the mutex, so readers never touch the loader). The worker takes
 * the head job, runs it on the loader without the mutex (under run_lock),
 * and publishes the figures. A caller runs an update or removal itself
 * when that needs no file and no job waits (run_inline()). Stopping sets
 * a flag and waits, bounded, for the thread: one blocked in the kernel is
 * abandoned with everything it uses.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "counters/counters.h"
#include "unwind/async.h"
#include "util/wake_defer.h"
#include "util/build_lane.h"

COUNTER_DEFINE(unwind_queue_full, COUNTER_PARTIAL,
	       "unwind table updates dropped: the loader's queue was full");

struct job {
	struct job *next;
	pid_t pid;
	bool remove;
	struct proc_maps maps;	/* update: a deep copy */
};

struct unwind_async {
	pthread_mutex_t lock;
	/*
	 * Held while the loader runs: by the worker for each job, or by a
	 * caller doing a ready update or a removal itself (run_inline()).
	 * Never waited for while holding lock (only try-locked under it), so
	 * taking lock while holding run_lock cannot deadlock.
	 */
	pthread_mutex_t run_lock;
	pthread_cond_t wake;
	pthread_t thread;
	struct unwind_loader *l;
	struct job *head, *tail;
	uint64_t nupdates;	/* updates queued */
	uint64_t njobs;
	uint64_t dropped;
	uint64_t cancelled;		/* updates turned into removals, not run */
	uint64_t inline_runs;		/* done by the caller (run_inline()) */
	uint64_t busy_since;	/* CLOCK_MONOTONIC ns; 0: idle */
	struct wake_defer defer;	/* unwind_async_defer() */
	bool stop;
	bool exited;
	struct unwind_loader_stats st;
	/* sampled pids for unwind_loader_touch(), applied before the next job */
	struct { pid_t pid; uint64_t ns; } touch[UNWIND_ASYNC_TOUCH_MAX];
	uint32_t ntouch;
	uint64_t touches_dropped;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void maps_free(struct proc_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

static int maps_copy(struct proc_maps *dst, const struct proc_maps *src)
{
	dst->n = 0;
	dst->read_ns = src->read_ns;
	dst->v = calloc(src->n ? src->n : 1, sizeof(*dst->v));
	if (!dst->v)
		return -ENOMEM;
	for (size_t i = 0; i < src->n; i++) {
		dst->v[i] = src->v[i];
		dst->v[i].path = strdup(src->v[i].path ? src->v[i].path : "");
		if (!dst->v[i].path) {
			maps_free(dst);
			return -ENOMEM;
		}
		dst->n++;
	}
	return 0;
}

static void job_free(struct job *j)
{
	if (!j->remove)
		maps_free(&j->maps);
	free(j);
}

/*
 * Apply the touches queued so far (lock held on entry and exit; the
 * loader is used with it dropped): least-recently-used order for eviction.
 */
static void apply_touches(struct unwind_async *a)
{
	static __thread struct { pid_t pid; uint64_t ns; } t[UNWIND_ASYNC_TOUCH_MAX];
	uint32_t n = a->ntouch;

	if (!n)
		return;
	memcpy(t, a->touch, n * sizeof(t[0]));
	a->ntouch = 0;
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_lock(&a->run_lock);
	for (uint32_t i = 0; i < n; i++)
		unwind_loader_touch(a->l, t[i].pid, t[i].ns);
	pthread_mutex_unlock(&a->run_lock);
	pthread_mutex_lock(&a->lock);
}

static void *worker_main(void *arg)
{
	struct unwind_async *a = arg;

	build_lane_may_wait();
	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		struct job *j;

		apply_touches(a);
		j = a->head;
		if (!j) {
			if (a->ntouch)
				continue;
			pthread_cond_wait(&a->wake, &a->lock);
			continue;
		}
		a->head = j->next;
		if (!a->head)
			a->tail = NULL;
		a->njobs--;
		if (!j->remove)
			a->nupdates--;
		a->busy_since = mono_ns();
		pthread_mutex_unlock(&a->lock);
		pthread_mutex_lock(&a->run_lock);
		if (j->remove)
			unwind_loader_remove(a->l, j->pid);
		else
			unwind_loader_update(a->l, j->pid, &j->maps);
		pthread_mutex_unlock(&a->run_lock);
		job_free(j);
		pthread_mutex_lock(&a->lock);
		a->busy_since = 0;
		unwind_loader_stats(a->l, &a->st);
		pthread_cond_broadcast(&a->wake);	/* for unwind_async_free */
	}
	a->exited = true;
	pthread_cond_broadcast(&a->wake);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* unwind_async_new - see async.h. */
struct unwind_async *unwind_async_new(struct unwind_loader *l)
{
	struct unwind_async *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;

	if (!a)
		return NULL;
	a->l = l;
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->run_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->wake, &ca);
	pthread_condattr_destroy(&ca);
	unwind_loader_stats(l, &a->st);
	if (pthread_create(&a->thread, NULL, worker_main, a)) {
		pthread_cond_destroy(&a->wake);
		pthread_mutex_destroy(&a->run_lock);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return NULL;
	}
	return a;
}

/* unwind_async_free - see async.h. */
void unwind_async_free(struct unwind_async *a, uint64_t wait_ns)
{
	uint64_t deadline;
	struct timespec ts;
	struct job *j, *next;
	bool exited;

	if (!a)
		return;
	deadline = mono_ns() + wait_ns;
	ts.tv_sec = deadline / 1000000000ULL;
	ts.tv_nsec = deadline % 1000000000ULL;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_broadcast(&a->wake);
	while (!a->exited &&
	       pthread_cond_timedwait(&a->wake, &a->lock, &ts) != ETIMEDOUT)
		;
	exited = a->exited;
	pthread_mutex_unlock(&a->lock);
	if (!exited) {
		/* blocked in the kernel: leave it, and what it uses, alone */
		pthread_detach(a->thread);
		return;
	}
	pthread_join(a->thread, NULL);
	for (j = a->head; j; j = next) {
		next = j->next;
		job_free(j);
	}
	unwind_loader_free(a->l);
	pthread_cond_destroy(&a->wake);
	pthread_mutex_destroy(&a->run_lock);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* Drop the lock, then wake the worker if @wake. */
static void unlock_and_wake(struct unwind_async *a, bool wake)
{
	pthread_mutex_unlock(&a->lock);
	if (wake)
		pthread_cond_broadcast(&a->wake);
}

/* Queue @j (lock held); true: the caller wakes the worker (wake_defer.h). */
static bool enqueue(struct unwind_async *a, struct job *j)
{
	if (a->tail)
		a->tail->next = j;
	else
		a->head = j;
	a->tail = j;
	a->njobs++;
	if (!j->remove)
		a->nupdates++;
	return wake_defer_queued(&a->defer);
}

/* The last queued job of @pid, or NULL (lock held). */
static struct job *last_job_of(struct unwind_async *a, pid_t pid)
{
	struct job *last = NULL;

	for (struct job *q = a->head; q; q = q->next)
		if (q->pid == pid)
			last = q;
	return last;
}

/*
 * Run an update of @pid to @maps (NULL: its removal) on the caller's
 * thread when that costs no file read and keeps the order: nothing is
 * queued and the worker is idle (its run_lock free), and for an update
 * every table is cached already (unwind_loader_ready()). Saves a worker
 * wakeup per process under process churn. True if it ran.
 */
static bool run_inline(struct unwind_async *a, pid_t pid,
		       const struct proc_maps *maps)
{
	bool ran = false;

	pthread_mutex_lock(&a->lock);
	if (a->head || a->stop || pthread_mutex_trylock(&a->run_lock)) {
		pthread_mutex_unlock(&a->lock);
		return false;
	}
	pthread_mutex_unlock(&a->lock);
	/* queued from now on, a job waits for run_lock: it runs after this */
	if (!maps) {
		unwind_loader_remove(a->l, pid);
		ran = true;
	} else if (unwind_loader_ready(a->l, maps)) {
		unwind_loader_update(a->l, pid, maps);
		ran = true;
	}
	if (ran) {
		pthread_mutex_lock(&a->lock);
		a->inline_runs++;
		unwind_loader_stats(a->l, &a->st);
		pthread_mutex_unlock(&a->lock);
	}
	pthread_mutex_unlock(&a->run_lock);
	return ran;
}

/* unwind_async_update - see async.h. */
int unwind_async_update(struct unwind_async *a, pid_t pid,
			const struct proc_maps *maps)
{
	struct job *j, *last = NULL;
	struct proc_maps old;

	if (run_inline(a, pid, maps))
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->pid = pid;
	if (maps_copy(&j->maps, maps)) {
		free(j);
		return -ENOMEM;
	}
	pthread_mutex_lock(&a->lock);
	last = last_job_of(a, pid);
	if (last && !last->remove) {
		/* newer mappings of a queued update: it takes them */
		old = last->maps;
		last->maps = j->maps;
		pthread_mutex_unlock(&a->lock);
		maps_free(&old);
		free(j);
		return 0;
	}
	if (a->nupdates >= UNWIND_ASYNC_QUEUE_MAX) {
		a->dropped++;
		counter_inc(&counter_unwind_queue_full);
		pthread_mutex_unlock(&a->lock);
		job_free(j);
		return -ENOBUFS;
	}
	unlock_and_wake(a, enqueue(a, j));
	return 0;
}

/* unwind_async_remove - see async.h. */
int unwind_async_remove(struct unwind_async *a, pid_t pid)
{
	struct job *j, *last = NULL;
	struct proc_maps old;

	if (run_inline(a, pid, NULL))
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->pid = pid;
	j->remove = true;
	pthread_mutex_lock(&a->lock);
	last = last_job_of(a, pid);
	if (last && !last->remove) {
		/*
		 * Gone before its tables were loaded (a short-lived process):
		 * the update becomes the removal, no loader work for it.
		 */
		old = last->maps;
		memset(&last->maps, 0, sizeof(last->maps));
		last->remove = true;
		a->nupdates--;
		a->cancelled++;
		pthread_mutex_unlock(&a->lock);
		maps_free(&old);
		free(j);
		return 0;
	}
	unlock_and_wake(a, enqueue(a, j));
	return 0;
}

/* unwind_async_stats - see async.h. */
void unwind_async_stats(struct unwind_async *a, struct unwind_async_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	out->loader = a->st;
	out->queued = a->njobs;
	out->dropped = a->dropped;
	out->busy_ns = a->busy_since ? mono_ns() - a->busy_since : 0;
	out->inline_runs = a->inline_runs;
	pthread_mutex_unlock(&a->lock);
}

/* unwind_async_defer - see async.h. */
void unwind_async_defer(struct unwind_async *a, bool on)
{
	if (a && wake_defer_set(&a->defer, on))
		pthread_cond_broadcast(&a->wake);
}

/* unwind_async_touch - see async.h. */
void unwind_async_touch(struct unwind_async *a, pid_t pid, uint64_t now_ns)
{
	bool wake = false;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	if (a->ntouch < UNWIND_ASYNC_TOUCH_MAX) {
		a->touch[a->ntouch].pid = pid;
		a->touch[a->ntouch].ns = now_ns;
		if (!a->ntouch++)
			wake = wake_defer_queued(&a->defer);
	} else {
		a->touches_dropped++;
	}
	unlock_and_wake(a, wake);
}
