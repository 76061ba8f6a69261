// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * launch.c - kernel and graph launch callbacks: profd:launch.
 *
 * Owns: the launch hot path. With no agent (launch and kernels semaphores
 * zero, nothing attached before) a callback costs two loads and a compare:
 * no lock, no thread-local access. With an agent it fires
 * profd:launch(correlation id, cbid, flags) at API entry of the outermost
 * launch call of the thread: a runtime launch calls the driver, and the
 * kernel record carries the runtime call's correlation id, so driver
 * callbacks nested in a runtime launch are skipped (thread-local depth).
 * A per-thread token bucket decides which launches get a stack: those
 * fire profd:launch (a uprobe trap, and BPF captures the CPU stack); the
 * others are appended to the thread's batch and leave 64 at a time
 * through profd:launches, so every kernel's time can still be attributed
 * to its thread while most launches cost no trap. Batches are flushed
 * when full, by the flusher thread (PROFD_ACTIVITY_FLUSH_MS), and at
 * thread and process exit.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inject.h"
#include "probes.h"

/* Marks, in CUPTI's entry/exit correlationData, an entry we counted. */
#define DEPTH_MARK 0x70726f6664ull	/* "profd" */

/* Per-thread state; stale (gen != attach_gen) after an agent detached. */
struct launch_tls {
	pid_t tid;		/* cached gettid() */
	unsigned gen;
	int rt_depth;		/* runtime launch calls this thread is in */
	int bucket_init;
	double tokens;
	uint64_t last_ns;
};

static __thread struct launch_tls tls;

/* A thread's stack-less launches; in `batches` for the flusher. */
struct launch_batch {
	pthread_mutex_t lock;	/* owner vs flusher: uncontended but for flushes */
	uint32_t n;
	int free;		/* its thread exited: reusable */
	struct profd_gpu_launch_rec v[PROFD_GPU_BATCH_MAX];
	struct launch_batch *next;
};

static __thread struct launch_batch *tbatch;
static pthread_mutex_t batches_lock = PTHREAD_MUTEX_INITIALIZER;
static struct launch_batch *batches;
static pthread_key_t batch_key;
static int batch_key_ok;

/* Fire @b's launches; caller holds b->lock. */
static void batch_fire(struct launch_batch *b)
{
	if (b->n && PROBE_ON(launches))
		FIRE_LAUNCHES(b->v, b->n);
	b->n = 0;
}

/* Thread exit: flush, and leave the batch for the next thread. */
static void batch_release(void *arg)
{
	struct launch_batch *b = arg;

	pthread_mutex_lock(&b->lock);
	batch_fire(b);
	b->free = 1;
	pthread_mutex_unlock(&b->lock);
}

static struct launch_batch *thread_batch(void)
{
	struct launch_batch *b;

	if (tbatch)
		return tbatch;
	pthread_mutex_lock(&batches_lock);
	for (b = batches; b; b = b->next)
		if (b->free)
			break;
	if (!b && (b = calloc(1, sizeof(*b)))) {
		pthread_mutex_init(&b->lock, NULL);
		b->next = batches;
		batches = b;
	}
	if (b)
		b->free = 0;
	pthread_mutex_unlock(&batches_lock);
	if (b && batch_key_ok)
		pthread_setspecific(batch_key, b);
	tbatch = b;
	return b;
}

void launch_flush_all(void)
{
	struct launch_batch *b;

	pthread_mutex_lock(&batches_lock);
	for (b = batches; b; b = b->next) {
		pthread_mutex_lock(&b->lock);
		batch_fire(b);
		pthread_mutex_unlock(&b->lock);
	}
	pthread_mutex_unlock(&batches_lock);
}

/* A launch without a stack: into the thread's batch (fired when full). */
static void batch_add(uint64_t corr, uint32_t flags)
{
	struct launch_batch *b = thread_batch();

	if (!b) {
		/* no memory for a batch: one trap for this launch, as before */
		FIRE_LAUNCH(corr, 0, flags);
		return;
	}
	pthread_mutex_lock(&b->lock);
	b->v[b->n].correlation_id = corr;
	if (!tls.tid)
		tls.tid = (pid_t)syscall(SYS_gettid);
	b->v[b->n].tid = tls.tid;
	b->v[b->n].flags = flags;
	if (++b->n == PROFD_GPU_BATCH_MAX)
		batch_fire(b);
	pthread_mutex_unlock(&b->lock);
}
static unsigned attach_gen;	/* bumped when the agent (re)attaches */
static unsigned last_mask_seen;

/* A forked child starts with no launches of its parent's and its own tid. */
static void launch_atfork_child(void)
{
	/* only this thread survives: a lock another thread held stays held */
	pthread_mutex_init(&batches_lock, NULL);
	for (struct launch_batch *b = batches; b; b = b->next) {
		pthread_mutex_init(&b->lock, NULL);
		b->n = 0;
		b->free = b != tbatch;
	}
	tls.tid = 0;
}

void launch_init(void)
{
	attach_gen = 1;
	pthread_atfork(NULL, NULL, launch_atfork_child);
	batch_key_ok = pthread_key_create(&batch_key, batch_release) == 0;
}

/* The thread's state, reset if it belongs to an earlier agent session. */
static struct launch_tls *thread_state(void)
{
	unsigned gen = __atomic_load_n(&attach_gen, __ATOMIC_RELAXED);
	struct launch_tls *t = &tls;

	if (t->gen != gen) {
		t->gen = gen;
		t->rt_depth = 0;
	}
	return t;
}

/* One token from the thread's bucket: 1 = capture this launch's stack. */
static int take_token(struct launch_tls *t)
{
	uint64_t now;

	if (inject_cfg.stack_rate <= 0)
		return 1;
	now = inject_now_ns();
	if (!t->bucket_init) {
		t->bucket_init = 1;
		t->tokens = inject_cfg.stack_burst;
	} else if (now > t->last_ns) {
		t->tokens += (double)(now - t->last_ns) * 1e-9 *
			     inject_cfg.stack_rate;
		if (t->tokens > inject_cfg.stack_burst)
			t->tokens = inject_cfg.stack_burst;
	}
	t->last_ns = now;
	if (t->tokens >= 1.0) {
		t->tokens -= 1.0;
		return 1;
	}
	return 0;
}

static int is_graph_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
		       cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
	return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

static void fire(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
		 const CUpti_CallbackData *cb, struct launch_tls *t)
{
	uint32_t flags = 0;

	if (!PROBE_ON(launch))
		return;
	if (is_graph_launch(domain, cbid))
		flags |= PROFD_GPU_LAUNCH_GRAPH;
	if (take_token(t))
		FIRE_LAUNCH(cb->correlationId, cbid, flags | PROFD_GPU_LAUNCH_STACK);
	else if (PROBE_ON(launches))
		batch_add(cb->correlationId, flags);
	else	/* an agent without the batch probe: one trap each */
		FIRE_LAUNCH(cb->correlationId, cbid, flags);
}

/* Agent attach/detach: a new session invalidates every thread's depth. */
static void note_mask(unsigned mask)
{
	unsigned had = __atomic_load_n(&last_mask_seen, __ATOMIC_RELAXED);

	if (had == mask)
		return;
	if (!(had & (INJECT_P_LAUNCH | INJECT_P_KERNELS)) &&
	    (mask & (INJECT_P_LAUNCH | INJECT_P_KERNELS)))
		__atomic_add_fetch(&attach_gen, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&last_mask_seen, mask, __ATOMIC_RELAXED);
}

/* An agent is (or was) attached: the work behind launch_on_api. */
static __attribute__((noinline)) void
launch_slow(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
	    const CUpti_CallbackData *cb)
{
	struct launch_tls *t;

	/* Turns activity on before this launch proceeds (or off). */
	inject_agent_check();
	note_mask(__atomic_load_n(&inject_seen_mask, __ATOMIC_RELAXED));
	if (!cb || !(PROBE_ON(launch) || PROBE_ON(kernels)))
		return;

	t = thread_state();
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		if (cb->callbackSite == CUPTI_API_ENTER) {
			t->rt_depth++;
			if (cb->correlationData)
				*cb->correlationData = DEPTH_MARK;
			if (t->rt_depth == 1)
				fire(domain, cbid, cb, t);
		} else if (cb->correlationData ?
				   *cb->correlationData == DEPTH_MARK :
				   t->rt_depth > 0) {
			if (t->rt_depth > 0)
				t->rt_depth--;
		}
		return;
	}
	/* Driver: only launches made directly, not from inside cudart. */
	if (cb->callbackSite == CUPTI_API_ENTER && t->rt_depth == 0)
		fire(domain, cbid, cb, t);
}

void launch_on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
		   const CUpti_CallbackData *cb)
{
	/* Fast exit: no agent now and none handled before. */
	if (__builtin_expect(!(__atomic_load_n(&PROFD_SEM(launch),
					       __ATOMIC_RELAXED) |
			       __atomic_load_n(&PROFD_SEM(kernels),
					       __ATOMIC_RELAXED)), 1) &&
	    __atomic_load_n(&inject_seen_mask, __ATOMIC_RELAXED) == 0)
		return;
	launch_slow(domain, cbid, cb);
}
