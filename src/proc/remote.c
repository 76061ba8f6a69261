// SPDX-License-Identifier: GPL-2.0
/*
 * remote.c - process_vm_readv on worker threads, with a timeout (see
 * remote.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "counters/counters.h"
#include "proc/remote.h"

#define STUCK_PIDS 16

struct job {
	pid_t pid;
	uint64_t addr;
	size_t len;
	int ret;
	uint64_t ns;	/* how long the read took */
	bool taken;	/* a worker is reading it */
	bool done;
	uint8_t data[];
};

struct worker {
	pthread_t thread;
	pthread_cond_t wake;
	struct job *job;	/* NULL: idle */
	bool started;
	bool stuck;		/* abandoned: frees its job when the read returns */
	bool exit;
	struct remote_reader *r;
};

struct remote_reader {
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct worker w[REMOTE_MAX_WORKERS];
	struct { pid_t pid; uint64_t until_ns; } stuck[STUCK_PIDS];
	uint32_t next_stuck;
	/* read time per process in the current window (slow, not hung, memory) */
	struct { pid_t pid; uint64_t window_ns, spent_ns; } spent[STUCK_PIDS];
	uint64_t timeouts;
	struct counter_def *timeouts_counter;	/* the owner's, or NULL */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int read_now(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct remote_reader *r = w->r;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct job *j;
		uint64_t t0;
		int ret;

		/* a job nobody took yet (w->job stays set until the caller
		 * collects the result) */
		while ((!w->job || w->job->taken) && !w->exit)
			pthread_cond_wait(&w->wake, &r->lock);
		if (w->exit)
			break;
		j = w->job;
		j->taken = true;
		pthread_mutex_unlock(&r->lock);
		t0 = mono_ns();
		ret = read_now(j->pid, j->addr, j->data, j->len);
		t0 = mono_ns() - t0;
		pthread_mutex_lock(&r->lock);
		if (w->stuck) {
			/* the caller gave up on this read: rejoin the pool */
			free(j);
			w->job = NULL;
			w->stuck = false;
			continue;
		}
		j->ret = ret;
		j->ns = t0;
		j->done = true;
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct remote_reader *remote_reader_new(void)
{
	struct remote_reader *r = calloc(1, sizeof(*r));
	pthread_condattr_t ca;

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->done, &ca);
	pthread_condattr_destroy(&ca);
	for (int i = 0; i < REMOTE_MAX_WORKERS; i++) {
		pthread_cond_init(&r->w[i].wake, NULL);
		r->w[i].r = r;
	}
	return r;
}

void remote_reader_free(struct remote_reader *r)
{
	bool leak = false;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < REMOTE_MAX_WORKERS; i++) {
		r->w[i].exit = true;
		pthread_cond_signal(&r->w[i].wake);
	}
	pthread_mutex_unlock(&r->lock);
	for (int i = 0; i < REMOTE_MAX_WORKERS; i++) {
		struct worker *w = &r->w[i];
		bool stuck;

		if (!w->started)
			continue;
		pthread_mutex_lock(&r->lock);
		stuck = w->stuck;
		pthread_mutex_unlock(&r->lock);
		if (stuck) {
			pthread_detach(w->thread);
			leak = true;
		} else {
			pthread_join(w->thread, NULL);
		}
	}
	if (!leak)
		free(r);
}

/* @pid hung a read that has not returned yet, or did so recently. */
static bool pid_stuck(struct remote_reader *r, pid_t pid, uint64_t now)
{
	for (int i = 0; i < REMOTE_MAX_WORKERS; i++)
		if (r->w[i].stuck && r->w[i].job && r->w[i].job->pid == pid)
			return true;
	for (int i = 0; i < STUCK_PIDS; i++)
		if (r->stuck[i].pid == pid && now < r->stuck[i].until_ns)
			return true;
	return false;
}

static void shun(struct remote_reader *r, pid_t pid, uint64_t now)
{
	r->stuck[r->next_stuck].pid = pid;
	r->stuck[r->next_stuck].until_ns = now + REMOTE_STUCK_PID_NS;
	r->next_stuck = (r->next_stuck + 1) % STUCK_PIDS;
	__atomic_add_fetch(&r->timeouts, 1, __ATOMIC_RELAXED);
	if (r->timeouts_counter)
		counter_inc(r->timeouts_counter);
}

/*
 * Charge a read of @ns to @pid (its time past REMOTE_FAST_READ_NS); a
 * process charged more than REMOTE_PID_BUDGET_NS in one
 * REMOTE_PID_WINDOW_NS window is shunned.
 */
static void charge(struct remote_reader *r, pid_t pid, uint64_t now, uint64_t ns)
{
	uint32_t slot = (uint32_t)pid % STUCK_PIDS;

	if (ns <= REMOTE_FAST_READ_NS)
		return;
	ns -= REMOTE_FAST_READ_NS;

	if (r->spent[slot].pid != pid ||
	    now - r->spent[slot].window_ns > REMOTE_PID_WINDOW_NS) {
		r->spent[slot].pid = pid;
		r->spent[slot].window_ns = now;
		r->spent[slot].spent_ns = 0;
	}
	r->spent[slot].spent_ns += ns;
	if (r->spent[slot].spent_ns > REMOTE_PID_BUDGET_NS) {
		r->spent[slot].spent_ns = 0;
		shun(r, pid, now);
	}
}

/* An idle worker, started on demand; NULL when all are stuck. */
static struct worker *idle_worker(struct remote_reader *r)
{
	for (int i = 0; i < REMOTE_MAX_WORKERS; i++) {
		struct worker *w = &r->w[i];

		if (w->started && !w->job)
			return w;
	}
	for (int i = 0; i < REMOTE_MAX_WORKERS; i++) {
		struct worker *w = &r->w[i];

		if (!w->started) {
			if (pthread_create(&w->thread, NULL, worker_main, w))
				return NULL;
			w->started = true;
			return w;
		}
	}
	return NULL;
}

int remote_read(struct remote_reader *r, pid_t pid, uint64_t addr, void *buf,
		size_t len)
{
	uint64_t now = mono_ns(), deadline = now + REMOTE_READ_TIMEOUT_NS;
	struct timespec ts = {
		.tv_sec = deadline / 1000000000ULL,
		.tv_nsec = deadline % 1000000000ULL,
	};
	struct worker *w;
	struct job *j;
	int ret;

	if (len > REMOTE_READ_MAX)
		return -EINVAL;
	if (!addr)
		return -EFAULT;
	j = malloc(sizeof(*j) + len);
	if (!j)
		return -ENOMEM;
	j->pid = pid;
	j->addr = addr;
	j->len = len;
	j->taken = false;
	j->done = false;
	pthread_mutex_lock(&r->lock);
	if (pid_stuck(r, pid, now)) {
		ret = -ETIMEDOUT;
		goto out;
	}
	w = idle_worker(r);
	if (!w) {
		ret = -EAGAIN;
		goto out;
	}
	w->job = j;
	pthread_cond_signal(&w->wake);
	while (!j->done) {
		if (pthread_cond_timedwait(&r->done, &r->lock, &ts) == ETIMEDOUT &&
		    !j->done) {
			/* abandon the worker with its job; shun the process */
			w->stuck = true;
			shun(r, pid, now);
			pthread_mutex_unlock(&r->lock);
			return -ETIMEDOUT;
		}
	}
	ret = j->ret;
	if (!ret)
		memcpy(buf, j->data, len);
	w->job = NULL;
	charge(r, pid, now, j->ns);
out:
	pthread_mutex_unlock(&r->lock);
	free(j);
	return ret;
}

void remote_reader_count_timeouts(struct remote_reader *r, struct counter_def *c)
{
	r->timeouts_counter = c;
}

uint64_t remote_reader_timeouts(const struct remote_reader *r)
{
	return __atomic_load_n(&r->timeouts, __ATOMIC_RELAXED);
}
