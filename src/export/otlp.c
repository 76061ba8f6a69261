// SPDX-License-Identifier: GPL-2.0
/*
 * otlp.c - the OTLP exporter: queue, sender thread, retries (see otlp.h).
 *
 * Owns: the bounded request queue, the sender thread that delivers each
 * queued request in order, retries with exponential backoff and jitter
 * (1 s doubling to 30 s, or the server's Retry-After / RetryInfo) under
 * a total budget per request, and the counters. Follows the OTLP
 * specification (otlp.md: "Failures", "Throttling").
 *
 * How it fits: producers (the trace/log batcher, the profile encoder)
 * hand over serialized Export*ServiceRequest bodies with otlp_export(),
 * which only takes a lock and appends. The sender compresses and sends
 * each through otlp_transport.c, which reports an outcome. Stopping sets
 * a flag the transport checks, wakes it out of curl_multi_poll() and
 * the sender out of its backoff sleep, so it never waits on the network.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "counters/counters.h"
#include "export/otlp.h"
#include "export/otlp_transport.h"

COUNTER_DEFINE(otlp_items_sent, COUNTER_STAT,
	       "spans, log records and profile samples the OTLP endpoint took");
COUNTER_DEFINE(otlp_items_dropped, COUNTER_LOST,
	       "OTLP items not delivered: queue full, rejected, retries exhausted, "
	       "not encoded, or still queued at exit");
COUNTER_DEFINE(otlp_retries, COUNTER_STAT,
	       "OTLP requests sent again after a retryable failure");

#define BACKOFF_FIRST_MS	1000
#define BACKOFF_MAX_MS		30000
#define RETRY_MIN_MS		100	/* floor for a server's "retry after 0" */

static const char *const signal_name[OTLP_SIGNAL_MAX] = {
	"traces", "logs", "profiles",
};

struct otlp_req {
	struct otlp_req *next;
	enum otlp_signal sig;
	void *body;
	size_t len;
	uint64_t items;
};

struct otlp_exporter {
	/* configuration, read-only after new */
	unsigned int max_retry_ms;
	size_t max_queue_bytes;

	/* sender thread only */
	struct otlp_transport *t;
	uint64_t rng;

	/* shared, under lock */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* sender: work queued, or stop */
	pthread_cond_t idle;		/* flushers: queue empty, nothing in flight */
	struct otlp_req *head, **tail;
	/* profiles go first: after the last queued profile, before spans and logs */
	struct otlp_req **prio_tail;
	size_t queued_bytes;		/* queued and in flight */
	bool busy;			/* a request is in flight */
	uint64_t busy_items;		/* its items */
	struct otlp_stats st;
	atomic_bool stop;		/* also read by the sender without the lock */
};

/* ---- time ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static struct timespec deadline_ts(unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* ---- the sender ---- */

static void set_last_error(struct otlp_exporter *e, const char *why)
{
	size_t n = strnlen(why, sizeof(e->st.last_error) - 1);

	memcpy(e->st.last_error, why, n);
	e->st.last_error[n] = 0;
}

/* Count @r as delivered (@rejected of its items refused) or dropped. Under lock. */
static void account(struct otlp_exporter *e, const struct otlp_req *r,
		    size_t wire_len, bool sent, int64_t rejected, const char *why)
{
	if (sent) {
		uint64_t rej = (uint64_t)rejected > r->items ? r->items : (uint64_t)rejected;

		e->st.requests_sent[r->sig]++;
		e->st.items_sent[r->sig] += r->items - rej;
		e->st.items_dropped += rej;
		counter_add(&counter_otlp_items_sent, r->items - rej);
		counter_add(&counter_otlp_items_dropped, rej);
		e->st.bytes_sent += wire_len;
		if (rej)
			set_last_error(e, why);
	} else {
		e->st.requests_dropped++;
		e->st.items_dropped += r->items;
		counter_add(&counter_otlp_items_dropped, r->items);
		set_last_error(e, why);
	}
}

/* xorshift64*: jitter only. */
static uint64_t next_rand(struct otlp_exporter *e)
{
	e->rng ^= e->rng >> 12;
	e->rng ^= e->rng << 25;
	e->rng ^= e->rng >> 27;
	return e->rng * 0x2545f4914f6cdd1dull;
}

/* Sleep @ms unless stop is asked first. Returns false when stopping. */
static bool sleep_unless_stopped(struct otlp_exporter *e, unsigned long ms)
{
	struct timespec ts = deadline_ts(ms);

	pthread_mutex_lock(&e->lock);
	while (!atomic_load(&e->stop) &&
	       pthread_cond_timedwait(&e->wake, &e->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&e->lock);
	return !atomic_load(&e->stop);
}

/* Deliver @r: attempts, backoff, accounting. Sender thread. */
static void deliver(struct otlp_exporter *e, const struct otlp_req *r)
{
	uint64_t start = now_ms();
	char why[512];
	enum otlp_outcome o = OTLP_FAIL;
	int64_t rejected = 0;
	size_t len = 0;
	uint8_t *body;

	if (!otlp_transport_url(e->t, r->sig)) {
		snprintf(why, sizeof(why), "no OTLP endpoint for %s", signal_name[r->sig]);
		goto done;
	}
	body = otlp_transport_body(e->t, r->body, r->len, &len);
	if (!body) {
		snprintf(why, sizeof(why), "%s: out of memory compressing %zu bytes",
			 signal_name[r->sig], r->len);
		goto done;
	}
	for (unsigned int n = 0;; n++) {
		unsigned long base, delay;
		long retry_ms;

		o = otlp_transport_send(e->t, r->sig, body, len, why, sizeof(why),
					&retry_ms, &rejected);
		if (o != OTLP_RETRY)
			break;
		base = n < 5 ? BACKOFF_FIRST_MS << n : BACKOFF_MAX_MS;
		/* jitter: uniform in [base/2, base*3/2), at most the cap */
		delay = base / 2 + next_rand(e) % base;
		if (delay > BACKOFF_MAX_MS)
			delay = BACKOFF_MAX_MS;
		if (retry_ms >= 0)	/* the server knows best, but no busy loop */
			delay = retry_ms > RETRY_MIN_MS ? retry_ms : RETRY_MIN_MS;
		if (now_ms() + delay > start + e->max_retry_ms) {
			size_t k = strlen(why);

			snprintf(why + k, sizeof(why) - k, " (gave up after %u attempts)", n + 1);
			o = OTLP_FAIL;
			break;
		}
		pthread_mutex_lock(&e->lock);
		e->st.retries++;
		counter_inc(&counter_otlp_retries);
		set_last_error(e, why);
		pthread_mutex_unlock(&e->lock);
		if (!sleep_unless_stopped(e, delay)) {
			o = OTLP_STOPPED;
			break;
		}
	}
	free(body);
	if (o == OTLP_STOPPED)
		snprintf(why, sizeof(why), "%s: exporter stopped with the request in flight",
			 signal_name[r->sig]);
done:
	pthread_mutex_lock(&e->lock);
	account(e, r, len, o == OTLP_SENT, rejected, why);
	pthread_mutex_unlock(&e->lock);
}

static void *sender_main(void *arg)
{
	struct otlp_exporter *e = arg;
	struct otlp_req *r;

	pthread_mutex_lock(&e->lock);
	while (!atomic_load(&e->stop)) {
		r = e->head;
		if (!r) {
			pthread_cond_broadcast(&e->idle);
			pthread_cond_wait(&e->wake, &e->lock);
			continue;
		}
		e->head = r->next;
		if (!e->head)
			e->tail = &e->head;
		if (e->prio_tail == &r->next)
			e->prio_tail = &e->head;
		e->busy = true;
		e->busy_items = r->items;
		pthread_mutex_unlock(&e->lock);

		deliver(e, r);

		pthread_mutex_lock(&e->lock);
		e->queued_bytes -= r->len;
		e->busy = false;
		free(r->body);
		free(r);
	}
	pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* ---- public ---- */

static void exporter_destroy(struct otlp_exporter *e)
{
	otlp_transport_free(e->t);
	free(e);
}

struct otlp_exporter *otlp_exporter_new(const struct otlp_config *c,
					char *err, size_t errlen)
{
	struct otlp_exporter *e;
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	if (err && errlen)
		err[0] = 0;
	e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, errlen, "otlp: out of memory starting the exporter");
		return NULL;
	}
	e->max_retry_ms = c->max_retry_ms;
	e->max_queue_bytes = c->max_queue_bytes ? c->max_queue_bytes : (64u << 20);
	e->tail = &e->head;
	e->prio_tail = &e->head;
	atomic_init(&e->stop, false);
	e->t = otlp_transport_new(c, &e->stop, err, errlen);
	if (!e->t) {
		free(e);
		return NULL;
	}
	if (getrandom(&e->rng, sizeof(e->rng), GRND_NONBLOCK) != sizeof(e->rng))
		e->rng = now_ms();
	e->rng |= 1;

	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &ca);
	pthread_cond_init(&e->idle, &ca);
	pthread_condattr_destroy(&ca);
	/* The sender takes no signals: they belong to the agent's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&e->thread, NULL, sender_main, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		snprintf(err, errlen, "otlp: cannot start the sender thread: %s", strerror(rc));
		pthread_cond_destroy(&e->wake);
		pthread_cond_destroy(&e->idle);
		pthread_mutex_destroy(&e->lock);
		exporter_destroy(e);
		return NULL;
	}
	return e;
}

int otlp_export(struct otlp_exporter *e, enum otlp_signal sig, void *body,
		size_t len, uint64_t items)
{
	struct otlp_req *r;

	if (!e || (unsigned int)sig >= OTLP_SIGNAL_MAX) {
		free(body);
		return -EINVAL;
	}
	r = malloc(sizeof(*r));
	pthread_mutex_lock(&e->lock);
	/* a flood of spans leaves a quarter of the queue to profiles; an
	 * empty queue takes one request of any size */
	if (!r || atomic_load(&e->stop) ||
	    (e->queued_bytes &&
	     e->queued_bytes + len > (sig == OTLP_SIGNAL_PROFILES ? e->max_queue_bytes :
				      e->max_queue_bytes / 4 * 3))) {
		e->st.requests_dropped++;
		e->st.items_dropped += items;
		counter_add(&counter_otlp_items_dropped, items);
		snprintf(e->st.last_error, sizeof(e->st.last_error),
			 "%s: %s (%zu bytes queued)", signal_name[sig],
			 r ? "export queue full" : "out of memory", e->queued_bytes);
		pthread_mutex_unlock(&e->lock);
		free(r);
		free(body);
		return r ? -ENOBUFS : -ENOMEM;
	}
	r->next = NULL;
	r->sig = sig;
	r->body = body;
	r->len = len;
	r->items = items;
	if (sig == OTLP_SIGNAL_PROFILES) {
		r->next = *e->prio_tail;
		*e->prio_tail = r;
		if (e->tail == e->prio_tail)
			e->tail = &r->next;
		e->prio_tail = &r->next;
	} else {
		*e->tail = r;
		e->tail = &r->next;
	}
	e->queued_bytes += len;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

int otlp_exporter_flush(struct otlp_exporter *e, unsigned int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	if (!e)
		return 0;
	ts = deadline_ts(timeout_ms);
	pthread_mutex_lock(&e->lock);
	while ((e->head || e->busy) && !atomic_load(&e->stop)) {
		if (pthread_cond_timedwait(&e->idle, &e->lock, &ts) == ETIMEDOUT) {
			ret = e->head || e->busy ? -ETIMEDOUT : 0;
			break;
		}
	}
	pthread_mutex_unlock(&e->lock);
	return ret;
}

void otlp_exporter_drop(struct otlp_exporter *e, uint64_t items, const char *why)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->st.items_dropped += items;
	counter_add(&counter_otlp_items_dropped, items);
	if (why)
		set_last_error(e, why);
	pthread_mutex_unlock(&e->lock);
}

void otlp_exporter_stats(struct otlp_exporter *e, struct otlp_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	*out = e->st;
	out->items_queued = e->busy ? e->busy_items : 0;
	out->bytes_queued = e->queued_bytes;
	out->max_queue_bytes = e->max_queue_bytes;
	for (struct otlp_req *r = e->head; r; r = r->next)
		out->items_queued += r->items;
	pthread_mutex_unlock(&e->lock);
}

void otlp_exporter_free(struct otlp_exporter *e)
{
	struct otlp_req *r;

	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	atomic_store(&e->stop, true);
	pthread_cond_broadcast(&e->wake);
	pthread_mutex_unlock(&e->lock);
	otlp_transport_wakeup(e->t);	/* out of curl_multi_poll() at once */
	pthread_join(e->thread, NULL);

	while ((r = e->head)) {
		e->head = r->next;
		free(r->body);
		free(r);
	}
	pthread_cond_destroy(&e->wake);
	pthread_cond_destroy(&e->idle);
	pthread_mutex_destroy(&e->lock);
	exporter_destroy(e);
}
