// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nvtx_batch.c - per-thread NVTX batches and profd:nvtx.
 *
 * Owns: each thread's batch of struct profd_nvtx_event (bpf/nvtx_events.h)
 * and its string cache, the list of every thread's batch, when batches
 * leave through profd:nvtx (full, every PROFD_NVTX_FLUSH_MS from the
 * flusher thread, at once after a definition, at thread exit, at process
 * exit), agent sessions (each begins with the process's identity), the definitions kept for an agent that attaches
 * later, events that could not be recorded (no memory for a batch, a
 * signal handler's NVTX call interrupting ours: counted, then reported in
 * the next batch as one PROFD_NVTX_DROPPED), and fork.
 *
 * Mirrors launch.c: a batch belongs to its thread but the flusher and the
 * exit handler fire it too, so each has a mutex (uncontended but for
 * flushes). Lock order: defs_lock -> list_lock -> a batch's lock.
 *
 * Sessions. A string id means something only to the agent that saw its
 * definition. The first event after an agent attaches (and in a forked
 * child, a new process to the agent) starts a session: the generation
 * goes up, which empties every thread's cache and unsent batch when that
 * thread next records, and the kept definitions (registered strings,
 * domains, category, thread and resource names: rare calls, bounded) are
 * sent again. The flusher notices a detach (semaphore back to 0) and ends
 * the session. Unsent events of an ended session are dropped by the probe
 * check in batch_fire(), since nobody listens.
 *
 * Environment: PROFD_NVTX_FLUSH_MS=N  fire partly filled batches every N
 * ms (default 200; 0 = no flusher thread: batches leave when full or at
 * thread/process exit, and a detach goes unnoticed, so a second agent
 * attaching later may miss texts threads defined for the first).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvtx.h"
#include "probes.h"

#define FLUSH_MS_DEFAULT 200
#define DEFS_MAX 16384			/* definitions kept for replay */
#define DEFS_TEXT_MAX (4u << 20)	/* their text bytes */

#define CHUNKS(len) (((len) + PROFD_NVTX_TEXT_CHUNK - 1) / PROFD_NVTX_TEXT_CHUNK)

/* A thread's batch; in `threads` for the flusher and the exit handler. */
struct nvtx_thread {
	pthread_mutex_t lock;	/* owner vs flusher/exit */
	uint32_t n;		/* events in v */
	pid_t tid;
	unsigned gen;		/* session the cache and v belong to */
	int free;		/* its thread exited: reusable */
	struct nvtx_strings strings;
	struct nvtx_thread *next;
	struct profd_nvtx_event v[PROFD_NVTX_BATCH_MAX];
};

/* A definition kept to send again to a later agent. */
struct nvtx_def {
	struct profd_nvtx_event ev;
	char *text;		/* NULL: none */
	uint32_t len;
	uint32_t text_id;	/* string id of text */
	int cut;
	uint64_t key;		/* resource handle, 0: none */
};

static __thread struct nvtx_thread *tbuf;
static __thread int in_event;	/* a signal handler's NVTX call inside ours */

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtx_thread *threads;
static pthread_key_t thread_key;
static int thread_key_ok;

static pthread_mutex_t defs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtx_def *defs;
static uint32_t ndefs, defs_cap;
static size_t defs_text;
static uint32_t next_domain;		/* under defs_lock */

static uint32_t next_string;		/* atomic */
static unsigned gen = 1;		/* atomic; bumped by every session */
static int active;			/* atomic; a session is on */
static uint64_t dropped;		/* atomic; events not recorded, unreported */
static uint64_t unseen;			/* atomic; events no agent saw, unreported */

static uint32_t flush_ms = FLUSH_MS_DEFAULT;
static pthread_mutex_t flusher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flusher_cond;
static int flusher_running;		/* under flusher_lock */
static int flusher_failed;
static int flusher_stop;

uint32_t nvtx_new_string_id(void)
{
	uint32_t id;

	do
		id = __atomic_add_fetch(&next_string, 1, __ATOMIC_RELAXED);
	while (!id);
	return id;
}

/* --- a thread's batch (caller holds t->lock) --- */

static void batch_fire(struct nvtx_thread *t)
{
	if (t->n && PROBE_ON(nvtx))
		FIRE_NVTX(t->v, t->n);
	t->n = 0;
}

/* Room for need more events, firing what is there if not. */
static void batch_room(struct nvtx_thread *t, uint32_t need)
{
	if (t->n + need > PROFD_NVTX_BATCH_MAX)
		batch_fire(t);
}

static void batch_put(struct nvtx_thread *t, const struct profd_nvtx_event *ev)
{
	t->v[t->n++] = *ev;
	if (t->n == PROFD_NVTX_BATCH_MAX)
		batch_fire(t);
}

/*
 * A PROFD_NVTX_STRING definition and its text, in one batch, with room
 * for `extra` events after it (the event that uses it).
 */
static void put_string(struct nvtx_thread *t, uint32_t id, uint32_t domain_id,
		       const struct nvtx_text *x, uint64_t time, uint32_t extra)
{
	uint32_t chunks = CHUNKS(x->len);
	struct profd_nvtx_event *ev;
	char *text;

	batch_room(t, 1 + chunks + extra);
	ev = &t->v[t->n++];
	memset(ev, 0, sizeof(*ev));
	ev->time_ns = time;
	ev->id = id;
	ev->payload = x->len;
	ev->tid = t->tid;
	ev->domain_id = domain_id;
	ev->kind = PROFD_NVTX_STRING;
	ev->flags = x->cut ? PROFD_NVTX_F_CUT : 0;
	text = (char *)&t->v[t->n];
	memcpy(text, x->s, x->len);
	memset(text + x->len, 0, chunks * PROFD_NVTX_TEXT_CHUNK - x->len);
	t->n += chunks;
	if (t->n == PROFD_NVTX_BATCH_MAX)
		batch_fire(t);
}

/* The count @counter holds, if any, as one event of @kind (and zeroed). */
static void put_count(struct nvtx_thread *t, uint64_t time, uint64_t *counter,
		      unsigned kind)
{
	struct profd_nvtx_event ev = {
		.time_ns = time,
		.tid = t->tid,
		.kind = kind,
		.payload_type = PROFD_NVTX_PAYLOAD_U64,
	};

	if (!__atomic_load_n(counter, __ATOMIC_RELAXED))
		return;
	ev.payload = __atomic_exchange_n(counter, 0, __ATOMIC_RELAXED);
	if (ev.payload)
		batch_put(t, &ev);
}

/* Events nobody could record (PROFD_NVTX_DROPPED) or saw (PROFD_NVTX_UNSEEN). */
static void put_dropped(struct nvtx_thread *t, uint64_t time)
{
	put_count(t, time, &dropped, PROFD_NVTX_DROPPED);
	put_count(t, time, &unseen, PROFD_NVTX_UNSEEN);
}

void nvtx_batch_unseen(uint64_t n)
{
	__atomic_add_fetch(&unseen, n, __ATOMIC_RELAXED);
}

/* A new session since t last recorded: forget its ids and old events. */
static void thread_sync(struct nvtx_thread *t)
{
	unsigned g = __atomic_load_n(&gen, __ATOMIC_ACQUIRE);

	if (t->gen == g)
		return;
	nvtx_strings_reset(&t->strings);
	t->n = 0;
	t->gen = g;
}

/* --- the list of batches --- */

/* Thread exit: send what is left; the batch goes to the next thread. */
static void thread_release(void *arg)
{
	struct nvtx_thread *t = arg;

	pthread_mutex_lock(&list_lock);
	pthread_mutex_lock(&t->lock);
	thread_sync(t);
	batch_fire(t);
	nvtx_strings_reset(&t->strings);
	t->free = 1;
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&list_lock);
	if (tbuf == t)
		tbuf = NULL;
}

static struct nvtx_thread *thread_get(void)
{
	struct nvtx_thread *t;

	if (tbuf)
		return tbuf;
	pthread_mutex_lock(&list_lock);
	for (t = threads; t; t = t->next)
		if (t->free)
			break;
	if (!t && (t = calloc(1, sizeof(*t)))) {
		pthread_mutex_init(&t->lock, NULL);
		t->next = threads;
		threads = t;
	}
	if (t) {
		pthread_mutex_lock(&t->lock);
		t->free = 0;
		t->n = 0;
		t->tid = gettid();
		t->gen = 0;	/* synced on first use */
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&list_lock);
	if (t && thread_key_ok)
		pthread_setspecific(thread_key, t);
	tbuf = t;
	return t;
}

void nvtx_batch_flush_all(void)
{
	struct nvtx_thread *t;
	int first = 1;

	pthread_mutex_lock(&list_lock);
	for (t = threads; t; t = t->next) {
		pthread_mutex_lock(&t->lock);
		if (!t->free) {
			/* events of an ended session mean nothing to this agent */
			thread_sync(t);
			if (first && PROBE_ON(nvtx))
				put_dropped(t, inject_now_ns());
			first = 0;
			batch_fire(t);
		}
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&list_lock);
}

/* --- the flusher thread --- */

/* The agent detached: the next event after an attach starts a session. */
static void session_check_detach(void)
{
	if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE) || PROBE_ON(nvtx))
		return;
	pthread_mutex_lock(&defs_lock);
	if (!PROBE_ON(nvtx))
		__atomic_store_n(&active, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&defs_lock);
}

static void *flusher_main(void *arg)
{
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&flusher_lock);
	while (!flusher_stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += flush_ms / 1000;
		ts.tv_nsec += (long)(flush_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&flusher_cond, &flusher_lock, &ts);
		if (flusher_stop)
			break;
		pthread_mutex_unlock(&flusher_lock);
		session_check_detach();
		nvtx_batch_flush_all();
		pthread_mutex_lock(&flusher_lock);
	}
	pthread_mutex_unlock(&flusher_lock);
	return NULL;
}

/* Start the flusher once per process (again in a forked child). */
static void flusher_start(void)
{
	pthread_t th;
	int err;

	if (!flush_ms)
		return;
	pthread_mutex_lock(&flusher_lock);
	if (flusher_running || flusher_failed || flusher_stop) {
		pthread_mutex_unlock(&flusher_lock);
		return;
	}
	err = inject_thread_start(&th, &flusher_cond, flusher_main);
	if (err) {
		flusher_failed = 1;
		inject_log("nvtx flusher thread: %s (batches leave when full)",
			   strerror(err));
	} else {
		pthread_detach(th);
		pthread_setname_np(th, "profd-nvtx");
		flusher_running = 1;
	}
	pthread_mutex_unlock(&flusher_lock);
}

/* --- definitions kept for later agents --- */

/* Send definition d through t's batch (caller holds t->lock). */
static void send_def(struct nvtx_thread *t, const struct nvtx_def *d, uint64_t time)
{
	struct profd_nvtx_event ev = d->ev;
	struct nvtx_text x = { .s = d->text, .len = d->len, .cut = d->cut };

	if (d->text || ev.kind == PROFD_NVTX_STRING)
		put_string(t, d->text_id, ev.domain_id, &x, time,
			   ev.kind == PROFD_NVTX_STRING ? 0 : 1);
	if (ev.kind == PROFD_NVTX_STRING)
		return;
	ev.time_ns = time;
	ev.tid = t->tid;
	batch_put(t, &ev);
}

/* Same thing named again (a thread renamed, a category renamed)? */
static int def_same(const struct profd_nvtx_event *a, const struct profd_nvtx_event *b)
{
	if (a->kind != b->kind || a->kind == PROFD_NVTX_STRING)
		return 0;
	return a->id == b->id && a->domain_id == b->domain_id &&
	       a->category == b->category;
}

/*
 * Keep a definition (under defs_lock). Returns it, or NULL when the bounds
 * are reached (it is then sent now but not to later agents).
 */
static struct nvtx_def *def_keep(const struct profd_nvtx_event *ev,
				 const struct nvtx_text *x, uint32_t text_id,
				 uint64_t key)
{
	struct nvtx_def *d = NULL, *grown;
	char *text = NULL;
	uint32_t i;

	for (i = 0; i < ndefs; i++)
		if (def_same(&defs[i].ev, ev)) {
			d = &defs[i];
			break;
		}
	if (x) {
		if (defs_text + x->len > DEFS_TEXT_MAX ||
		    !(text = malloc(x->len ? x->len : 1)))
			return NULL;
		memcpy(text, x->s, x->len);
	}
	if (!d) {
		if (ndefs == defs_cap) {
			if (defs_cap == DEFS_MAX)
				goto fail;
			grown = realloc(defs, (defs_cap ? 2 * defs_cap : 64) * sizeof(*defs));
			if (!grown)
				goto fail;
			defs = grown;
			defs_cap = defs_cap ? 2 * defs_cap : 64;
		}
		d = &defs[ndefs++];
	} else {
		free(d->text);
		defs_text -= d->len;
	}
	d->ev = *ev;
	d->text = text;
	d->len = x ? x->len : 0;
	d->cut = x ? x->cut : 0;
	d->text_id = text_id;
	d->key = key;
	defs_text += d->len;
	return d;
fail:
	free(text);
	return NULL;
}

static void def_drop(uint32_t i)
{
	defs_text -= defs[i].len;
	free(defs[i].text);
	defs[i] = defs[--ndefs];
}

/* One PROFD_NVTX_PROCESS attribute: its text, then the event naming it. */
static void put_process_attr(struct nvtx_thread *t, uint32_t attr, const char *s,
			     size_t len, uint64_t time)
{
	struct nvtx_text x = {
		.s = s,
		.len = len > PROFD_NVTX_STRING_MAX ? PROFD_NVTX_STRING_MAX : (uint32_t)len,
		.cut = len > PROFD_NVTX_STRING_MAX,
	};
	uint32_t id = nvtx_new_string_id();

	if (!len)
		return;
	put_string(t, id, 0, &x, time, 1);
	batch_put(t, &(struct profd_nvtx_event){ .time_ns = time, .tid = t->tid,
						 .id = attr, .message_id = id,
						 .kind = PROFD_NVTX_PROCESS });
}

/*
 * The process's identity, first in a session (see enum
 * profd_nvtx_process_attr): its executable (left out when too long to
 * send whole), its command line, its OTEL_SERVICE_NAME.
 */
static void send_identity(struct nvtx_thread *t, uint64_t time)
{
	static const char deleted[] = " (deleted)";
	char buf[PROFD_NVTX_STRING_MAX + 1];
	const char *svc = getenv("OTEL_SERVICE_NAME");
	ssize_t n;
	int fd;

	n = readlink("/proc/self/exe", buf, sizeof(buf));
	if (n > 0 && (size_t)n < sizeof(buf)) {
		buf[n] = 0;
		if ((size_t)n > sizeof(deleted) - 1 &&
		    !strcmp(buf + n - (sizeof(deleted) - 1), deleted))
			n -= sizeof(deleted) - 1;
		if ((size_t)n <= PROFD_NVTX_STRING_MAX)
			put_process_attr(t, PROFD_NVTX_PROC_EXE_PATH, buf, n, time);
	}
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		while (n && !buf[n - 1])
			n--;
		for (ssize_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		put_process_attr(t, PROFD_NVTX_PROC_COMMAND_LINE, buf, n, time);
	}
	if (svc)
		put_process_attr(t, PROFD_NVTX_PROC_SERVICE_NAME, svc, strlen(svc), time);
}

/*
 * Start a session (under defs_lock): every thread's ids become stale and
 * t sends the process's identity and every kept definition again.
 */
static void session_begin_locked(struct nvtx_thread *t)
{
	uint64_t time = inject_now_ns();
	uint32_t i;

	if (__atomic_load_n(&active, __ATOMIC_ACQUIRE))
		return;
	__atomic_add_fetch(&gen, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&t->lock);
	thread_sync(t);
	send_identity(t, time);
	for (i = 0; i < ndefs; i++)
		send_def(t, &defs[i], time);
	batch_room(t, 1);
	batch_put(t, &(struct profd_nvtx_event){ .time_ns = time, .tid = t->tid,
						 .kind = PROFD_NVTX_HELLO });
	batch_fire(t);
	pthread_mutex_unlock(&t->lock);
	__atomic_store_n(&active, 1, __ATOMIC_RELEASE);
	inject_log("nvtx: agent attached, %u definitions sent", ndefs);
	flusher_start();
}

static void session_check(struct nvtx_thread *t)
{
	if (__atomic_load_n(&active, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&defs_lock);
	session_begin_locked(t);
	pthread_mutex_unlock(&defs_lock);
}

/* Keep a definition and send it (under defs_lock). */
static void define_locked(const struct profd_nvtx_event *ev,
			  const struct nvtx_text *x, uint32_t text_id, uint64_t key)
{
	struct nvtx_def *d = def_keep(ev, x, text_id, key), tmp;
	struct nvtx_thread *t;

	if (!PROBE_ON(nvtx))
		return;
	t = thread_get();
	if (!t) {
		__atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE)) {
		session_begin_locked(t);	/* sends d with the others */
		if (d)
			return;
	}
	if (!d) {
		tmp = (struct nvtx_def){ .ev = *ev, .text_id = text_id };
		if (x) {
			tmp.text = (char *)x->s;
			tmp.len = x->len;
			tmp.cut = x->cut;
		}
		d = &tmp;
	}
	pthread_mutex_lock(&t->lock);
	thread_sync(t);
	send_def(t, d, ev->time_ns);
	batch_fire(t);
	pthread_mutex_unlock(&t->lock);
}

uint32_t nvtx_batch_define(struct profd_nvtx_event *ev, const struct nvtx_msg *m,
			   uint32_t text_id, uint64_t key)
{
	char buf[NVTX_TEXT_BUF];
	struct nvtx_text x = { .s = "" }, *xp = NULL;

	if (nvtx_text_get(m, buf, &x) == 0 || ev->kind == PROFD_NVTX_STRING)
		xp = &x;
	if (xp && !text_id)
		text_id = nvtx_new_string_id();
	if (ev->kind != PROFD_NVTX_STRING)
		ev->message_id = xp ? text_id :
			m && m->type == NVTX_MSG_REGISTERED ? m->id : 0;
	pthread_mutex_lock(&defs_lock);
	define_locked(ev, xp, text_id, key);
	pthread_mutex_unlock(&defs_lock);
	return xp ? text_id : 0;
}

uint32_t nvtx_batch_domain(const struct nvtx_msg *m)
{
	struct profd_nvtx_event ev = { .time_ns = inject_now_ns(), .kind = PROFD_NVTX_DOMAIN };
	char buf[NVTX_TEXT_BUF];
	struct nvtx_text x;
	int named = nvtx_text_get(m, buf, &x) == 0;
	uint32_t i, id = 0;

	pthread_mutex_lock(&defs_lock);
	for (i = 0; named && i < ndefs; i++)
		if (defs[i].ev.kind == PROFD_NVTX_DOMAIN && defs[i].text &&
		    defs[i].len == x.len && !memcmp(defs[i].text, x.s, x.len)) {
			id = defs[i].ev.domain_id;
			break;
		}
	if (!id) {
		if (!++next_domain)
			next_domain = 1;
		id = next_domain;
		ev.domain_id = id;
		ev.message_id = named ? nvtx_new_string_id() : 0;
		define_locked(&ev, named ? &x : NULL, ev.message_id, 0);
	}
	pthread_mutex_unlock(&defs_lock);
	return id;
}

void nvtx_batch_forget(uint32_t domain_id, uint64_t key, struct profd_nvtx_event *ev)
{
	uint32_t i;

	pthread_mutex_lock(&defs_lock);
	for (i = 0; i < ndefs;) {
		if ((domain_id && defs[i].ev.domain_id == domain_id) ||
		    (key && defs[i].key == key))
			def_drop(i);
		else
			i++;
	}
	pthread_mutex_unlock(&defs_lock);
	if (ev && PROBE_ON(nvtx)) {
		struct nvtx_thread *t;

		nvtx_batch_event(ev, NULL);
		if ((t = thread_get())) {
			pthread_mutex_lock(&t->lock);
			batch_fire(t);
			pthread_mutex_unlock(&t->lock);
		}
	}
}

/* --- events --- */

void nvtx_batch_event(struct profd_nvtx_event *ev, const struct nvtx_msg *m)
{
	struct nvtx_thread *t = thread_get();
	char buf[NVTX_TEXT_BUF];
	struct nvtx_text x;
	int has_text;
	uint64_t h = 0;
	uint32_t id;

	/* the thread's own lock is held: waiting for it would never end */
	if (!t || in_event) {
		__atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	in_event = 1;
	session_check(t);
	has_text = m && m->type != NVTX_MSG_REGISTERED &&
		   nvtx_text_get(m, buf, &x) == 0;
	if (has_text)
		h = nvtx_text_hash(&x);

	pthread_mutex_lock(&t->lock);
	thread_sync(t);
	put_dropped(t, ev->time_ns);
	ev->tid = t->tid;
	if (m && m->type == NVTX_MSG_REGISTERED) {
		ev->message_id = m->id;
	} else if (has_text) {
		id = nvtx_strings_find(&t->strings, &x, h);
		if (!id) {
			id = nvtx_new_string_id();
			put_string(t, id, 0, &x, ev->time_ns, 1);
			/* no memory: defined again on its next use */
			nvtx_strings_add(&t->strings, &x, h, id);
		}
		ev->message_id = id;
	}
	batch_put(t, ev);
	pthread_mutex_unlock(&t->lock);
	in_event = 0;
}

/* --- process life: exit, fork, init --- */

static void nvtx_atexit(void)
{
	pthread_mutex_lock(&flusher_lock);
	flusher_stop = 1;
	if (flusher_running)
		pthread_cond_signal(&flusher_cond);
	pthread_mutex_unlock(&flusher_lock);
	nvtx_unseen_flush();	/* the exiting thread's: no key destructor runs for it */
	nvtx_batch_flush_all();
}

static void atfork_prepare(void)
{
	pthread_mutex_lock(&defs_lock);
	pthread_mutex_lock(&list_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&list_lock);
	pthread_mutex_unlock(&defs_lock);
}

/*
 * The child is a new process to the agent: only this thread survives, its
 * parent's unsent events stay the parent's, and a new session sends the
 * kept definitions again under the child's pid.
 */
static void atfork_child(void)
{
	struct nvtx_thread *t;

	pthread_mutex_init(&defs_lock, NULL);
	pthread_mutex_init(&list_lock, NULL);
	pthread_mutex_init(&flusher_lock, NULL);
	for (t = threads; t; t = t->next) {
		pthread_mutex_init(&t->lock, NULL);
		t->n = 0;
		if (t != tbuf) {
			nvtx_strings_reset(&t->strings);
			t->free = 1;
		}
	}
	if (tbuf)
		tbuf->tid = gettid();
	flusher_running = 0;
	flusher_failed = 0;
	dropped = 0;
	unseen = 0;
	nvtx_unseen_forget();	/* the parent's events are the parent's to report */
	__atomic_store_n(&active, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&gen, 1, __ATOMIC_RELAXED);
}

void nvtx_batch_init(void)
{
	static int once;

	if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
		return;
	flush_ms = (uint32_t)inject_env_long("PROFD_NVTX_FLUSH_MS", FLUSH_MS_DEFAULT, 0, 3600000);
	thread_key_ok = pthread_key_create(&thread_key, thread_release) == 0;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (atexit(nvtx_atexit) != 0)
		inject_log("nvtx: atexit failed: the last events of a thread are lost");
}
