// SPDX-License-Identifier: GPL-2.0
/*
 * nvtx.c - the NVTX tracer (see nvtx.h): its queue, its thread, its ids.
 *
 * Owns: the queue between the ringbuf reader and the tracer's thread, a
 * ring of qcap bytes holding items (struct qhdr + a copied NVTX batch
 * record, or a process exit) back to back, 8-byte aligned, never split
 * at the ring's end (a Q_WRAP item fills the gap). Producers copy an item
 * in under the lock (O(1): one memcpy of at most ~3 KiB) and signal only
 * a waiting tracer; the tracer takes every item present, processes them
 * without the lock, in place (producers only write past qhead), then
 * releases their bytes. The ring is its own anonymous mapping, and the
 * tracer hands consumed bytes back to producers only in whole pages it
 * first returned to the kernel (MADV_DONTNEED, at least RELEASE_BYTES at
 * a time, or all whole pages when the queue drains): a 64 MiB queue holds
 * the pages of its backlog, not every page a burst ever wrote. Also: the
 * tracer's loop (expiry, clock re-sync, ticks every NVTX_TICK_NS and when
 * the queue drains), trace and span ids
 * (xoshiro256** seeded from getrandom(2); never all-zero), and the final
 * close of everything at nvtx_stop().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "bpf/profd.h"
#include "nvtx/nvtx_internal.h"

#define QUEUE_DEFAULT_BYTES	(64u << 20)
#define QUEUE_MIN_BYTES		(64u << 10)
#define CHUNK_BYTES		(1u << 20)	/* released to producers at least this often */
#define RELEASE_BYTES		(256u << 10)	/* pages given back at least this many at once */

/* NVTX's counters: NVTX_COUNT() in nvtx_proc.c, nvtx_emit.c, nvtx_strings.c; here; BPF */
COUNTER_DEFINE(nvtx_spans, COUNTER_STAT, "NVTX ranges turned into spans");
COUNTER_DEFINE(nvtx_logs, COUNTER_STAT, "NVTX marks outside ranges: log records");
COUNTER_DEFINE(nvtx_spans_dropped_budget, COUNTER_PARTIAL,
	       "spans of traces over --nvtx-max-spans-per-sec");
COUNTER_DEFINE(nvtx_queue_full, COUNTER_LOST,
	       "NVTX events lost: the tracer's queue was full");
COUNTER_DEFINE(nvtx_pops_unmatched, COUNTER_PARTIAL, "nvtxRangePop with no range open");
COUNTER_DEFINE(nvtx_ends_unknown, COUNTER_PARTIAL, "nvtxRangeEnd of an id never started");
COUNTER_DEFINE(nvtx_strings_unknown, COUNTER_PARTIAL,
	       "NVTX messages whose text never arrived");
COUNTER_DEFINE(nvtx_unfinished, COUNTER_STAT,
	       "NVTX ranges still open at exit or stop, closed by profd");
COUNTER_DEFINE(nvtx_library_dropped, COUNTER_LOST,
	       "NVTX events the injection library could not record");
COUNTER_DEFINE(nvtx_events_unseen, COUNTER_PARTIAL,
	       "NVTX events fired while no agent listened (before profd attached)");
COUNTER_DEFINE(nvtx_tables_full, COUNTER_PARTIAL,
	       "NVTX strings or ranges over the per-process bounds");
COUNTER_DEFINE_BPF(nvtx_events_lost, COUNTER_LOST, PROFD_CNT_NVTX_EVENTS_LOST,
		   "NVTX events dropped: cupti_events full");

struct qhdr {
	uint32_t size;		/* bytes of the item, header included, multiple of 8 */
	uint32_t kind;		/* Q_* */
};

enum { Q_RECORD = 1, Q_EXIT = 2, Q_WRAP = 3 };

struct qexit {
	uint64_t now_ns;	/* CLOCK_MONOTONIC when reported */
	int32_t pid;
	uint32_t pad;
};

/* --- ids ------------------------------------------------------------------------ */

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct nvtx_tracer *t)
{
	uint64_t *s = t->rng;
	uint64_t r = rotl(s[1] * 5, 7) * 9, x = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= x;
	s[3] = rotl(s[3], 45);
	return r;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Fill @buf from getrandom(2); without it, from the clocks and the pid. */
static void random_bytes(void *buf, size_t len)
{
	uint8_t *b = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(b + got, len - got, 0);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		got += n;
	}
	if (got < len) {
		uint64_t x = clock_real_ns() ^ (clock_mono_ns() << 20) ^ (uint64_t)getpid() << 40 ^
			     (uint64_t)(uintptr_t)buf;

		for (size_t i = got; i < len; i++)
			b[i] = (uint8_t)splitmix64(&x);
	}
}

void nvtx_new_span_id(struct nvtx_tracer *t, uint8_t id[8])
{
	uint64_t v;

	do
		v = rng_next(t);
	while (!v);
	memcpy(id, &v, 8);
}

void nvtx_new_trace_id(struct nvtx_tracer *t, uint8_t id[16])
{
	uint64_t v[2];

	do {
		v[0] = rng_next(t);
		v[1] = rng_next(t);
	} while (!v[0] && !v[1]);
	memcpy(id, v, 16);
}

static pthread_once_t idmap_once = PTHREAD_ONCE_INIT;

static void idmap_seed_once(void)
{
	uint64_t seed;

	random_bytes(&seed, sizeof(seed));
	idmap_seed(seed);
}

/* --- the queue (under t->lock) ------------------------------------------------------ */

/* Append an item of @kind with @len bytes of @data; false if it does not fit. */
static bool q_put(struct nvtx_tracer *t, uint32_t kind, const void *data, size_t len)
{
	size_t need = (sizeof(struct qhdr) + len + 7) & ~(size_t)7;
	size_t pos = t->qhead % t->qcap, used = t->qhead - t->qtail, waste = 0;
	struct qhdr *h;

	if (pos + need > t->qcap)
		waste = t->qcap - pos;	/* a multiple of 8: room for a header */
	if (used + waste + need > t->qcap)
		return false;
	if (waste) {
		h = (struct qhdr *)(t->q + pos);
		h->size = waste;
		h->kind = Q_WRAP;
		t->qhead += waste;
		pos = 0;
	}
	h = (struct qhdr *)(t->q + pos);
	h->size = need;
	h->kind = kind;
	memcpy(h + 1, data, len);
	t->qhead += need;
	return true;
}

int nvtx_record(struct nvtx_tracer *t, const void *data, size_t size)
{
	struct profd_gpu_batch h;
	size_t len;

	if (!t || !data || size < sizeof(h))
		return -EINVAL;
	memcpy(&h, data, sizeof(h));
	if (h.type != PROFD_EVENT_NVTX || h.n > PROFD_NVTX_BATCH_MAX)
		return -EINVAL;
	len = sizeof(h) + (size_t)h.n * sizeof(struct profd_nvtx_event);
	if (size < len)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	if (t->stopping || !q_put(t, Q_RECORD, data, len)) {
		t->queue_full += h.n;
		counter_add(&counter_nvtx_queue_full, h.n);
	} else if (t->waiting)
		pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/*
 * Events of a STRING at @ev[i] and its text chunks (1 + chunks), or 0
 * when its length is out of bounds or its text runs past @n.
 */
static uint32_t string_span(const struct profd_nvtx_event *ev, uint32_t i, uint32_t n)
{
	uint64_t len = ev[i].payload, chunks;

	chunks = (len + PROFD_NVTX_TEXT_CHUNK - 1) / PROFD_NVTX_TEXT_CHUNK;
	if (len > PROFD_NVTX_STRING_MAX || chunks > n - i - 1)
		return 0;
	return 1 + (uint32_t)chunks;
}

int nvtx_batch_process_info(const void *data, size_t size,
			    struct nvtx_process_info *out)
{
	const struct profd_nvtx_event *ev, *text[PROFD_NVTX_PROC_SERVICE_NAME + 1] = { 0 };
	const struct profd_nvtx_event *strs[PROFD_NVTX_BATCH_MAX];
	struct profd_gpu_batch h;
	uint32_t i, step, nstr = 0;
	int found = 0;

	memset(out, 0, sizeof(*out));
	if (!data || size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	if (h.type != PROFD_EVENT_NVTX || h.n > PROFD_NVTX_BATCH_MAX ||
	    size < sizeof(h) + (size_t)h.n * sizeof(*ev))
		return 0;
	ev = (const struct profd_nvtx_event *)((const char *)data + sizeof(h));
	/* each attribute names a STRING defined before it (text chunks skipped) */
	for (i = 0; i < h.n; i += step) {
		step = 1;
		if (ev[i].kind == PROFD_NVTX_STRING) {
			if (!(step = string_span(ev, i, h.n)))
				return 0;
			strs[nstr++] = &ev[i];
		} else if (ev[i].kind == PROFD_NVTX_PROCESS && ev[i].id &&
			   ev[i].id <= PROFD_NVTX_PROC_SERVICE_NAME) {
			for (uint32_t k = nstr; k--;)
				if (strs[k]->id == ev[i].message_id) {
					text[ev[i].id] = strs[k];
					break;
				}
		}
	}
	for (uint32_t a = 1; a <= PROFD_NVTX_PROC_SERVICE_NAME; a++) {
		char *dst = a == PROFD_NVTX_PROC_EXE_PATH ? out->exe_path :
			    a == PROFD_NVTX_PROC_COMMAND_LINE ? out->command_line :
			    out->service_name;

		if (!text[a] || (a == PROFD_NVTX_PROC_EXE_PATH &&
				 (text[a]->flags & PROFD_NVTX_F_CUT)))
			continue;
		memcpy(dst, text[a] + 1, text[a]->payload);
		dst[text[a]->payload] = 0;
		found++;
	}
	return found;
}

void nvtx_process_exit(struct nvtx_tracer *t, pid_t pid)
{
	struct qexit x = { .now_ns = clock_mono_ns(), .pid = pid };

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	if (!t->stopping && !q_put(t, Q_EXIT, &x, sizeof(x))) {
		/* never lost: the tracer takes these with its next chunk */
		struct nvtx_exit *o = calloc(1, sizeof(*o));

		if (o) {
			o->pid = pid;
			o->deadline_ns = x.now_ns + NVTX_EXIT_GRACE_NS;
			o->next = t->exits_overflow;
			t->exits_overflow = o;
		}
	}
	/*
	 * No wakeup: an exit only starts a grace period, and the thread
	 * takes it at its next record or tick. Every process exit woke it
	 * (most never used NVTX): a context switch per exec'd process.
	 */
	pthread_mutex_unlock(&t->lock);
}

/* --- the tracer's thread ---------------------------------------------------------- */

static void process_item(struct nvtx_tracer *t, const struct qhdr *h)
{
	if (h->kind == Q_RECORD) {
		const struct profd_gpu_batch *b = (const void *)(h + 1);

		nvtx_proc_batch(t, b, (const void *)(b + 1), b->n);
	} else if (h->kind == Q_EXIT) {
		const struct qexit *x = (const void *)(h + 1);

		nvtx_proc_exit(t, x->pid, x->now_ns + NVTX_EXIT_GRACE_NS);
	}
}

/* Exits that found the queue full (newest first): apply oldest first. */
static void take_overflow(struct nvtx_tracer *t, struct nvtx_exit *o)
{
	struct nvtx_exit *rev = NULL;

	while (o) {
		struct nvtx_exit *next = o->next;

		o->next = rev;
		rev = o;
		o = next;
	}
	while (rev) {
		struct nvtx_exit *next = rev->next;

		nvtx_proc_exit(t, rev->pid, rev->deadline_ns);
		free(rev);
		rev = next;
	}
}

static void housekeep(struct nvtx_tracer *t, bool drained)
{
	t->now_ns = clock_mono_ns();
	nvtx_proc_expire(t, t->now_ns);
	clock_sync_maybe(t->clock, t->now_ns);
	if (drained || t->now_ns - t->last_tick_ns >= NVTX_TICK_NS) {
		t->last_tick_ns = t->now_ns;
		if (t->out.tick)
			t->out.tick(t->out.ctx, t->now_ns);
	}
}

/* Sleep (lock held) until a producer signals or the next deadline or tick. */
static void wait_for_work(struct nvtx_tracer *t)
{
	uint64_t until = t->last_tick_ns + NVTX_TICK_NS, d = nvtx_proc_next_deadline(t);
	struct timespec ts;

	if (d < until)
		until = d;
	ts.tv_sec = until / 1000000000ULL;
	ts.tv_nsec = until % 1000000000ULL;
	t->waiting = true;
	pthread_cond_timedwait(&t->wake, &t->lock, &ts);
	t->waiting = false;
}

/*
 * The tracer consumed up to @read: the bytes producers may reuse, the new
 * qtail (returned). Only whole pages are handed back, and only after
 * madvise(MADV_DONTNEED) gave them to the kernel: until qtail moves past
 * them no producer writes there. At least RELEASE_BYTES at a time, or
 * every whole page on @drained; the rest (under RELEASE_BYTES and a page)
 * stays the tracer's until the next release. (An eighth of a small queue
 * is due instead.)
 */
static uint64_t q_release(struct nvtx_tracer *t, uint64_t read, bool drained)
{
	uint64_t from = t->qtail, to = read & ~(uint64_t)(t->qpage - 1);
	uint64_t due = t->qcap / 8 < RELEASE_BYTES ? t->qcap / 8 : RELEASE_BYTES;

	if (to <= from || (!drained && to - from < due))
		return from;
	while (from < to) {
		size_t pos = from % t->qcap;
		size_t len = t->qcap - pos;

		if (len > to - from)
			len = (size_t)(to - from);
		madvise(t->q + pos, len, MADV_DONTNEED);
		from += len;
	}
	return to;
}

static void *tracer_main(void *arg)
{
	struct nvtx_tracer *t = arg;

	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct nvtx_exit *overflow;
		uint64_t head, tail, start, released;
		bool drained;

		if (t->qread == t->qhead && !t->exits_overflow) {
			if (t->stopping)
				break;
			wait_for_work(t);
			pthread_mutex_unlock(&t->lock);
			housekeep(t, false);
			pthread_mutex_lock(&t->lock);
			t->pub = t->st;
			continue;
		}
		head = t->qhead;
		start = tail = t->qread;
		overflow = t->exits_overflow;
		t->exits_overflow = NULL;
		pthread_mutex_unlock(&t->lock);

		t->now_ns = clock_mono_ns();
		while (tail != head && tail - start < CHUNK_BYTES) {
			const struct qhdr *h = (const void *)(t->q + tail % t->qcap);

			process_item(t, h);
			tail += h->size;
		}
		take_overflow(t, overflow);
		released = q_release(t, tail, tail == head);

		pthread_mutex_lock(&t->lock);
		t->qread = tail;
		t->qtail = released;
		drained = t->qhead == tail;
		pthread_mutex_unlock(&t->lock);
		housekeep(t, drained);
		pthread_mutex_lock(&t->lock);
		t->pub = t->st;
	}
	pthread_mutex_unlock(&t->lock);

	t->now_ns = clock_mono_ns();
	nvtx_proc_close_all(t);
	if (t->out.tick)
		t->out.tick(t->out.ctx, t->now_ns);
	pthread_mutex_lock(&t->lock);
	t->pub = t->st;
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* --- the API ---------------------------------------------------------------------- */

static void tracer_destroy(struct nvtx_tracer *t)
{
	while (t->exits_overflow) {
		struct nvtx_exit *o = t->exits_overflow;

		t->exits_overflow = o->next;
		free(o);
	}
	nvtx_emit_free(t);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->stop_lock);
	munmap(t->q, t->qcap);
	free(t);
}

struct nvtx_tracer *nvtx_new(const struct nvtx_opts *o)
{
	struct nvtx_tracer *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;
	size_t qcap;
	int err;

	if (!t)
		return NULL;
	qcap = o->queue_bytes && o->queue_bytes < QUEUE_DEFAULT_BYTES ?
	       o->queue_bytes : QUEUE_DEFAULT_BYTES;
	if (qcap < QUEUE_MIN_BYTES)
		qcap = QUEUE_MIN_BYTES;
	t->qpage = (size_t)sysconf(_SC_PAGESIZE);
	qcap = (qcap + t->qpage - 1) & ~(t->qpage - 1);
	t->q = mmap(NULL, qcap, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->q == MAP_FAILED) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->qcap = qcap;
	t->out = o->out;
	t->max_spans_per_sec = o->max_spans_per_sec;
	if (o->clock) {
		t->clock = o->clock;
	} else {
		clock_sync_init(&t->own_clock);
		t->clock = &t->own_clock;
	}
	pthread_once(&idmap_once, idmap_seed_once);
	do
		random_bytes(t->rng, sizeof(t->rng));
	while (!(t->rng[0] | t->rng[1] | t->rng[2] | t->rng[3]));
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->stop_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->wake, &ca);
	pthread_condattr_destroy(&ca);
	t->now_ns = t->last_tick_ns = clock_mono_ns();
	err = pthread_create(&t->thread, NULL, tracer_main, t);
	if (err) {
		tracer_destroy(t);
		errno = err;
		return NULL;
	}
	t->started = true;
	return t;
}

void nvtx_stop(struct nvtx_tracer *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->stop_lock);
	if (!t->joined) {
		pthread_mutex_lock(&t->lock);
		t->stopping = true;
		pthread_cond_signal(&t->wake);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->thread, NULL);
		t->joined = true;
	}
	pthread_mutex_unlock(&t->stop_lock);
}

void nvtx_get_stats(struct nvtx_tracer *t, struct nvtx_stats *out)
{
	pthread_mutex_lock(&t->lock);
	*out = t->pub;
	out->queue_full = t->queue_full;
	out->queue_bytes = t->qhead - t->qtail;
	out->queue_cap = t->qcap;
	pthread_mutex_unlock(&t->lock);
}

void nvtx_free(struct nvtx_tracer *t)
{
	if (!t)
		return;
	nvtx_stop(t);
	tracer_destroy(t);
}
