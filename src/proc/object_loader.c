// SPDX-License-Identifier: GPL-2.0
/*
 * object_loader.c - the thread that opens and parses mapped files (see
 * object_loader.h).
 *
 * Owns: a FIFO of jobs (singly linked, head and tail) under one mutex,
 * numbered as they are added (added) and as they finish (done), so a
 * caller can wait for the jobs added before it without knowing them.
 * The worker takes the head job and runs it without the mutex. Stopping
 * sets a flag and waits, bounded, for the thread: one blocked in the
 * kernel is abandoned with everything it uses (the loader included).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "proc/object_loader.h"
#include "util/wake_defer.h"
#include "util/build_lane.h"

struct job {
	struct job *next;
	object_job_fn fn;
	void *arg;
};

struct object_loader {
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* worker: a job or stop; waiters: a job done */
	pthread_t thread;
	struct job *head, *tail;
	uint64_t njobs;
	uint64_t added;		/* jobs queued so far */
	uint64_t done;		/* jobs finished (run, or cancelled) so far */
	uint64_t dropped;
	uint64_t busy_since;	/* CLOCK_MONOTONIC ns; 0: idle */
	struct wake_defer defer;	/* object_loader_defer() */
	bool stop;
	bool exited;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	struct object_loader *ol = arg;

	build_lane_may_wait();
	pthread_mutex_lock(&ol->lock);
	while (!ol->stop) {
		struct job *j = ol->head;

		if (!j) {
			pthread_cond_wait(&ol->wake, &ol->lock);
			continue;
		}
		ol->head = j->next;
		if (!ol->head)
			ol->tail = NULL;
		ol->njobs--;
		ol->busy_since = mono_ns();
		pthread_mutex_unlock(&ol->lock);
		j->fn(j->arg, false);
		free(j);
		pthread_mutex_lock(&ol->lock);
		ol->busy_since = 0;
		ol->done++;
		pthread_cond_broadcast(&ol->wake);
	}
	ol->exited = true;
	pthread_cond_broadcast(&ol->wake);
	pthread_mutex_unlock(&ol->lock);
	return NULL;
}

/* object_loader_new - see object_loader.h. */
struct object_loader *object_loader_new(void)
{
	struct object_loader *ol = calloc(1, sizeof(*ol));
	pthread_condattr_t ca;

	if (!ol)
		return NULL;
	pthread_mutex_init(&ol->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ol->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&ol->thread, NULL, worker_main, ol)) {
		pthread_cond_destroy(&ol->wake);
		pthread_mutex_destroy(&ol->lock);
		free(ol);
		return NULL;
	}
	return ol;
}

static struct timespec abs_ts(uint64_t deadline)
{
	struct timespec ts = {
		.tv_sec = deadline / 1000000000ULL,
		.tv_nsec = deadline % 1000000000ULL,
	};

	return ts;
}

/* object_loader_free - see object_loader.h. */
bool object_loader_free(struct object_loader *ol, uint64_t wait_ns)
{
	struct timespec ts;
	struct job *j, *next;
	bool exited;

	if (!ol)
		return true;
	ts = abs_ts(mono_ns() + wait_ns);
	pthread_mutex_lock(&ol->lock);
	ol->stop = true;
	pthread_cond_broadcast(&ol->wake);
	while (!ol->exited &&
	       pthread_cond_timedwait(&ol->wake, &ol->lock, &ts) != ETIMEDOUT)
		;
	exited = ol->exited;
	pthread_mutex_unlock(&ol->lock);
	if (!exited) {
		/* blocked in the kernel: leave it, and what it uses, alone */
		pthread_detach(ol->thread);
		return false;
	}
	pthread_join(ol->thread, NULL);
	for (j = ol->head; j; j = next) {
		next = j->next;
		j->fn(j->arg, true);
		free(j);
	}
	pthread_cond_destroy(&ol->wake);
	pthread_mutex_destroy(&ol->lock);
	free(ol);
	return true;
}

/* object_loader_add - see object_loader.h. */
int object_loader_add(struct object_loader *ol, object_job_fn fn, void *arg,
		      bool must)
{
	struct job *j;
	bool wake;

	if (!ol) {
		fn(arg, false);
		return 0;
	}
	j = malloc(sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->next = NULL;
	j->fn = fn;
	j->arg = arg;
	pthread_mutex_lock(&ol->lock);
	if ((!must && ol->njobs >= OBJECT_LOADER_QUEUE_MAX) || ol->stop) {
		ol->dropped++;
		pthread_mutex_unlock(&ol->lock);
		free(j);
		return -ENOBUFS;
	}
	if (ol->tail)
		ol->tail->next = j;
	else
		ol->head = j;
	ol->tail = j;
	ol->njobs++;
	ol->added++;
	wake = wake_defer_queued(&ol->defer);
	pthread_mutex_unlock(&ol->lock);
	if (wake)	/* after the unlock: the worker does not block on it */
		pthread_cond_broadcast(&ol->wake);
	return 0;
}

/* object_loader_defer - see object_loader.h. */
void object_loader_defer(struct object_loader *ol, bool on)
{
	if (ol && wake_defer_set(&ol->defer, on))
		pthread_cond_broadcast(&ol->wake);
}

/* object_loader_wait - see object_loader.h. */
int object_loader_wait(struct object_loader *ol, uint64_t timeout_ns)
{
	struct timespec ts;
	uint64_t target;
	int ret = 0;

	if (!ol)
		return 0;
	ts = abs_ts(mono_ns() + timeout_ns);
	pthread_mutex_lock(&ol->lock);
	target = ol->added;
	/* added while deferred: the worker is wanted now */
	if (wake_defer_take(&ol->defer))
		pthread_cond_broadcast(&ol->wake);
	while (ol->done < target && !ol->exited) {
		if (pthread_cond_timedwait(&ol->wake, &ol->lock, &ts) == ETIMEDOUT) {
			ret = ol->done < target ? -ETIMEDOUT : 0;
			break;
		}
	}
	pthread_mutex_unlock(&ol->lock);
	return ret;
}

/* object_loader_stats - see object_loader.h. */
void object_loader_stats(struct object_loader *ol, struct object_loader_stats *out)
{
	uint64_t now = mono_ns();

	*out = (struct object_loader_stats){ 0 };
	if (!ol)
		return;
	pthread_mutex_lock(&ol->lock);
	out->queued = ol->njobs;
	out->done = ol->done;
	out->dropped = ol->dropped;
	out->busy_ns = ol->busy_since && now > ol->busy_since ? now - ol->busy_since : 0;
	pthread_mutex_unlock(&ol->lock);
}
