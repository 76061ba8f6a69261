// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cupti_core.c - the mock CUPTI, inside the mock libcuda.so.1 (tests only).
 *
 * Owns: API-call reporting (__mock_api_enter/exit: correlation ids,
 * callbacks to the one subscriber), the mock GPU clock and kernel
 * execution, activity buffers (bufferRequested/bufferCompleted, the
 * CUPTI worker thread, flushes, dropped records), PC sampling, and the
 * MOCK_CUPTI_LOG oracle. libcupti.so forwards every cupti* call to the
 * __mock_cupti* functions here; keeping the state in libcuda lets the
 * driver report to CUPTI without a lookup and lets the stats line be
 * written even when no libcupti was ever loaded.
 *
 * Environment (read when the library loads):
 *   MOCK_CUPTI_RECORDS_PER_BUFFER=N  a buffer counts as full after N records
 *   MOCK_CUPTI_EARLY=1    each kernel's record is handed back (bufferCompleted,
 *                         launching thread) before the launch's API-enter callback
 *   MOCK_CUPTI_DROP_EVERY=N  every Nth kernel record is dropped (counted)
 *   MOCK_CUPTI_LOG=PATH   the test oracle, one O_APPEND write() per line:
 *     kernel corr=<id> name=<mangled> start=<ns> end=<ns> device=<d> stream=<s>
 *            graph=<g> node=<n> pid=<pid>        (record handed back)
 *     drop corr=<id> name=<mangled> pid=<pid>    (record dropped)
 *     pc crc=<hex> func=<name> offset=<n> reason=<idx> samples=<n> pid=<pid>
 *                                                (per PC and stall reason handed back)
 *     stats buffers_requested=<n> activity_enabled_calls=<n> callbacks=<n>
 *           pid=<pid> buffers_completed=<n> kernel_records=<n> dropped=<n>
 *           pc_records=<n>                       (at exit)
 *   MOCK_CUPTI_CLOCK=realtime|monotonic  timestamp base (default realtime)
 *   MOCK_CUDA_SYNC_SLEEP=1  synchronize calls block in the kernel until the mock
 *                         GPU clock of the work they wait for has passed: ppoll()
 *                         with no fds and a timeout, as libcuda's blocking sync
 *                         (CU_CTX_SCHED_BLOCKING_SYNC, or AUTO with more active
 *                         contexts than cores) waits in poll() on its /dev/nvidia*
 *                         fd for the completion event an ioctl armed; a spinning
 *                         or yielding sync (AUTO's usual choice) stays on CPU
 *
 * Mock GPU clock: a kernel starts at max(now, end of the previous kernel on
 * its stream) and ends duration ns later; nothing sleeps. A record is
 * complete once its end has passed, or once a synchronize call covered it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>

#include <zlib.h>

#include "mock_internal.h"

#define MAX_CBID	1024
#define KREC_SIZE	sizeof(CUpti_ActivityKernel10)
#define ALIGN8(x)	(((x) + 7u) & ~(uintptr_t)7u)

/* ---------------------------------------------------------------- knobs */

static long knob_records_per_buffer;
static int knob_early;
static long knob_drop_every;
static int knob_sync_sleep;
static clockid_t knob_clock = CLOCK_REALTIME;
static const char *knob_log;

static long env_long(const char *name)
{
	const char *e = getenv(name);

	return e && *e ? strtol(e, NULL, 0) : 0;
}

__attribute__((constructor)) static void core_env(void)
{
	const char *clk = getenv("MOCK_CUPTI_CLOCK");

	knob_records_per_buffer = env_long("MOCK_CUPTI_RECORDS_PER_BUFFER");
	knob_early = env_long("MOCK_CUPTI_EARLY") != 0;
	knob_drop_every = env_long("MOCK_CUPTI_DROP_EVERY");
	knob_sync_sleep = env_long("MOCK_CUDA_SYNC_SLEEP") != 0;
	if (clk && !strcmp(clk, "monotonic"))
		knob_clock = CLOCK_MONOTONIC;
	knob_log = getenv("MOCK_CUPTI_LOG");
	if (knob_log && !*knob_log)
		knob_log = NULL;
}

uint64_t mock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(knob_clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ log */

static int log_fd = -1;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void mock_log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mock_log_line(const char *fmt, ...)
{
	char buf[1536];
	va_list ap;
	int n;

	if (!knob_log)
		return;
	if (__atomic_load_n(&log_fd, __ATOMIC_ACQUIRE) < 0) {
		pthread_mutex_lock(&log_mu);
		if (log_fd < 0)
			__atomic_store_n(&log_fd, open(knob_log, O_WRONLY | O_APPEND | O_CREAT |
						       O_CLOEXEC, 0644), __ATOMIC_RELEASE);
		pthread_mutex_unlock(&log_mu);
		if (log_fd < 0)
			return;
	}
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(log_fd, buf, (size_t)n) < 0) {
		/* nothing to do: the oracle is best effort */
	}
}

/* ---------------------------------------------------------------- stats */

static uint64_t st_buffers_requested, st_activity_enabled_calls, st_callbacks;
static uint64_t st_buffers_completed, st_kernel_records, st_dropped, st_pc_records;

#define INC(x) __atomic_add_fetch(&(x), 1, __ATOMIC_RELAXED)
#define GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

__attribute__((destructor)) static void core_stats(void)
{
	mock_log_line("stats buffers_requested=%" PRIu64 " activity_enabled_calls=%" PRIu64
		      " callbacks=%" PRIu64 " pid=%d buffers_completed=%" PRIu64
		      " kernel_records=%" PRIu64 " dropped=%" PRIu64 " pc_records=%" PRIu64,
		      GET(st_buffers_requested), GET(st_activity_enabled_calls),
		      GET(st_callbacks), (int)getpid(), GET(st_buffers_completed),
		      GET(st_kernel_records), GET(st_dropped), GET(st_pc_records));
}

/* ----------------------------------------------------------- callbacks */

struct CUpti_Subscriber_st {
	CUpti_CallbackFunc cb;
	void *userdata;
	uint8_t en[CUPTI_CB_DOMAIN_SIZE][MAX_CBID];
};

static struct CUpti_Subscriber_st the_sub;
static struct CUpti_Subscriber_st *g_sub;	/* &the_sub while subscribed */
static pthread_mutex_t sub_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_corr;
static __thread struct mock_call *tls_call;

static uint32_t domain_size(CUpti_CallbackDomain d)
{
	switch (d) {
	case CUPTI_CB_DOMAIN_DRIVER_API: return CUPTI_DRIVER_TRACE_CBID_SIZE;
	case CUPTI_CB_DOMAIN_RUNTIME_API: return CUPTI_RUNTIME_TRACE_CBID_SIZE;
	case CUPTI_CB_DOMAIN_RESOURCE: return CUPTI_CBID_RESOURCE_SIZE;
	case CUPTI_CB_DOMAIN_SYNCHRONIZE: return CUPTI_CBID_SYNCHRONIZE_SIZE;
	case CUPTI_CB_DOMAIN_NVTX: return CUPTI_CBID_NVTX_SIZE;
	case CUPTI_CB_DOMAIN_STATE: return CUPTI_CBID_STATE_SIZE;
	default: return 0;
	}
}

static struct CUpti_Subscriber_st *sub_for(CUpti_CallbackDomain d, CUpti_CallbackId cbid)
{
	struct CUpti_Subscriber_st *s = __atomic_load_n(&g_sub, __ATOMIC_ACQUIRE);

	if (!s || cbid >= domain_size(d) || cbid >= MAX_CBID)
		return NULL;
	if (!__atomic_load_n(&s->en[d][cbid], __ATOMIC_RELAXED))
		return NULL;
	return s->cb ? s : NULL;
}

static void fire_api(struct CUpti_Subscriber_st *s, struct mock_call *c,
		     CUpti_ApiCallbackSite site)
{
	struct mock_ctx *ctx = (struct mock_ctx *)c->ctx;
	CUpti_CallbackData d = {
		.callbackSite = site,
		.functionName = c->name,
		.functionParams = c->params,
		.functionReturnValue = c->ret,
		.symbolName = c->symbol,
		.context = c->ctx,
		.contextUid = ctx && (ctx->magic == MOCK_CTX_MAGIC || ctx->magic == MOCK_CTX_DEAD) ?
			      ctx->id : 0,
		.correlationData = &c->corr_data,
		.correlationId = c->corr,
	};

	INC(st_callbacks);
	s->cb(s->userdata, c->domain, c->cbid, &d);
}

/* The call whose correlation id a launch's kernels carry: the outermost
 * runtime launch call this driver launch is nested in, else itself. */
static struct mock_call *launch_root(struct mock_call *c)
{
	while (c->outer && c->outer->launch && c->outer->domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		c = c->outer;
	return c;
}

void __mock_api_enter(struct mock_call *c)
{
	struct CUpti_Subscriber_st *s;

	c->corr = __atomic_add_fetch(&g_corr, 1, __ATOMIC_RELAXED);
	c->entered = 0;
	c->corr_data = 0;
	c->outer = tls_call;
	tls_call = c;
	if (knob_early && c->launch && !c->launch->executed && launch_root(c) == c)
		mock_execute(c->launch, c->corr, 1);
	s = sub_for(c->domain, c->cbid);
	if (s) {
		c->entered = 1;
		fire_api(s, c, CUPTI_API_ENTER);
	}
}

void __mock_api_exit(struct mock_call *c)
{
	struct CUpti_Subscriber_st *s = __atomic_load_n(&g_sub, __ATOMIC_ACQUIRE);

	if (c->entered && s && s->cb)
		fire_api(s, c, CUPTI_API_EXIT);
	tls_call = c->outer;
}

void __mock_launch_execute(struct mock_call *c)
{
	struct mock_call *root = launch_root(c);

	if (!c->launch || c->launch->executed)
		return;
	if (root != c && root->launch->executed) {
		c->launch->executed = 1;
		return;
	}
	mock_execute(c->launch, root->corr, 0);
	root->launch->executed = 1;
}

void mock_resource(CUpti_CallbackId cbid, CUcontext ctx, CUstream stream, void *descriptor)
{
	struct CUpti_Subscriber_st *s = sub_for(CUPTI_CB_DOMAIN_RESOURCE, cbid);
	CUpti_ResourceData d;

	if (!s)
		return;
	memset(&d, 0, sizeof(d));
	d.context = ctx;
	d.resourceHandle.stream = stream;
	d.resourceDescriptor = descriptor;
	INC(st_callbacks);
	s->cb(s->userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &d);
}

void mock_sync_cb(CUpti_CallbackId cbid, CUcontext ctx, CUstream stream)
{
	struct CUpti_Subscriber_st *s = sub_for(CUPTI_CB_DOMAIN_SYNCHRONIZE, cbid);
	CUpti_SynchronizeData d = { ctx, stream };

	if (!s)
		return;
	INC(st_callbacks);
	s->cb(s->userdata, CUPTI_CB_DOMAIN_SYNCHRONIZE, cbid, &d);
}

CUptiResult __mock_cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc cb,
				  void *userdata)
{
	if (!subscriber)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&sub_mu);
	if (g_sub) {
		pthread_mutex_unlock(&sub_mu);
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
	memset(&the_sub, 0, sizeof(the_sub));
	the_sub.cb = cb;
	the_sub.userdata = userdata;
	__atomic_store_n(&g_sub, &the_sub, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sub_mu);
	*subscriber = &the_sub;
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	pthread_mutex_lock(&sub_mu);
	if (!subscriber || subscriber != g_sub) {
		pthread_mutex_unlock(&sub_mu);
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
	__atomic_store_n(&g_sub, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sub_mu);
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (!subscriber || subscriber != __atomic_load_n(&g_sub, __ATOMIC_ACQUIRE))
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!domain_size(domain) || cbid >= domain_size(domain) || cbid >= MAX_CBID)
		return CUPTI_ERROR_INVALID_PARAMETER;
	__atomic_store_n(&subscriber->en[domain][cbid], enable ? 1 : 0, __ATOMIC_RELAXED);
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
				     CUpti_CallbackDomain domain)
{
	uint32_t i, n = domain_size(domain);

	if (!subscriber || subscriber != __atomic_load_n(&g_sub, __ATOMIC_ACQUIRE) || !n)
		return CUPTI_ERROR_INVALID_PARAMETER;
	/* cbid 0 is INVALID in every domain */
	for (i = 1; i < n && i < MAX_CBID; i++)
		__atomic_store_n(&subscriber->en[domain][i], enable ? 1 : 0, __ATOMIC_RELAXED);
	return CUPTI_SUCCESS;
}

static const char *const cupti_results[] = {
	"CUPTI_SUCCESS", "CUPTI_ERROR_INVALID_PARAMETER", "CUPTI_ERROR_INVALID_DEVICE",
	"CUPTI_ERROR_INVALID_CONTEXT", "CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID",
	"CUPTI_ERROR_INVALID_EVENT_ID", "CUPTI_ERROR_INVALID_EVENT_NAME",
	"CUPTI_ERROR_INVALID_OPERATION", "CUPTI_ERROR_OUT_OF_MEMORY", "CUPTI_ERROR_HARDWARE",
	"CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT", "CUPTI_ERROR_API_NOT_IMPLEMENTED",
	"CUPTI_ERROR_MAX_LIMIT_REACHED", "CUPTI_ERROR_NOT_READY", "CUPTI_ERROR_NOT_COMPATIBLE",
	"CUPTI_ERROR_NOT_INITIALIZED", "CUPTI_ERROR_INVALID_METRIC_ID",
	"CUPTI_ERROR_INVALID_METRIC_NAME", "CUPTI_ERROR_QUEUE_EMPTY", "CUPTI_ERROR_INVALID_HANDLE",
	"CUPTI_ERROR_INVALID_STREAM", "CUPTI_ERROR_INVALID_KIND", "CUPTI_ERROR_INVALID_EVENT_VALUE",
	"CUPTI_ERROR_DISABLED", "CUPTI_ERROR_INVALID_MODULE", "CUPTI_ERROR_INVALID_METRIC_VALUE",
	"CUPTI_ERROR_HARDWARE_BUSY", "CUPTI_ERROR_NOT_SUPPORTED",
	"CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED",
	"CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE",
	"CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES",
	"CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS", "CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED",
	"CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED",
	"CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE", "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
	"CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED", "CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE",
	"CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED",
	"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
	"CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES",
	"CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED", "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED",
	"CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED", "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED",
	"CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED", "CUPTI_ERROR_INVALID_CHIP_NAME",
};

CUptiResult __mock_cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if ((unsigned)result < sizeof(cupti_results) / sizeof(cupti_results[0])) {
		*str = cupti_results[result];
		return CUPTI_SUCCESS;
	}
	if (result == CUPTI_ERROR_UNKNOWN) {
		*str = "CUPTI_ERROR_UNKNOWN";
		return CUPTI_SUCCESS;
	}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult __mock_cuptiGetTimestamp(uint64_t *ts)
{
	if (!ts)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*ts = mock_now_ns();
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
	struct mock_ctx *ctx = context ? mock_ctx_check(context) : mock_ctx_current();

	if (!deviceId)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!ctx || ctx->magic != MOCK_CTX_MAGIC)
		return CUPTI_ERROR_INVALID_DEVICE;
	*deviceId = (uint32_t)ctx->device;
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiGetCubinCrc(CUpti_GetCubinCrcParams *p)
{
	if (!p || p->size < CUpti_GetCubinCrcParamsSize || !p->cubin || !p->cubinSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->cubinCrc = crc32(0L, p->cubin, (uInt)p->cubinSize);
	return CUPTI_SUCCESS;
}

/* ------------------------------------------------------ mock GPU clock */

static pthread_mutex_t gpu_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_sync_horizon;		/* every kernel ending before it is complete */

static uint64_t completed_upto(void)
{
	uint64_t now = mock_now_ns(), h = __atomic_load_n(&g_sync_horizon, __ATOMIC_ACQUIRE);

	return h > now ? h : now;
}

void mock_gpu_sync(uint64_t until)
{
	uint64_t h = __atomic_load_n(&g_sync_horizon, __ATOMIC_RELAXED);

	while (h < until &&
	       !__atomic_compare_exchange_n(&g_sync_horizon, &h, until, 0, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	if (knob_sync_sleep) {
		uint64_t now;

		while ((now = mock_now_ns()) < until) {
			uint64_t left = until - now;
			struct timespec ts = { (time_t)(left / 1000000000ull),
					       (long)(left % 1000000000ull) };
			ppoll(NULL, 0, &ts, NULL);
		}
	}
}

/* ------------------------------------------------------------- activity */

struct abuf {
	uint8_t *base;
	size_t size;
	size_t off;		/* bytes used, from base (alignment pad included) */
	size_t nrec, maxrec;
	uint64_t max_end;
	struct abuf *next;
};

static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t deliver_mu;	/* recursive; taken before act_mu */
static pthread_cond_t act_cv;		/* CLOCK_MONOTONIC */
static CUpti_BuffersCallbackRequestFunc g_req_cb;
static CUpti_BuffersCallbackCompleteFunc g_comp_cb;
static uint8_t g_kind_on[CUPTI_ACTIVITY_KIND_COUNT];
static struct abuf *g_cur, *g_spare, *g_q_head, **g_q_tail = &g_q_head;
static uint64_t g_dropped_unreported;	/* under act_mu */
static uint64_t g_kernel_seq;
static uint64_t g_grid_id;
static uint32_t g_flush_period_ms;	/* under act_mu */
static int g_worker_started, g_worker_stop, g_worker_atexit;
static pthread_t g_worker;

__attribute__((constructor)) static void core_sync_init(void)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&deliver_mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&act_cv, &ca);
	pthread_condattr_destroy(&ca);
}

static void enqueue(struct abuf *b)	/* under act_mu */
{
	b->next = NULL;
	*g_q_tail = b;
	g_q_tail = &b->next;
}

static int buf_full(const struct abuf *b)
{
	return (b->maxrec && b->nrec >= b->maxrec) ||
	       (knob_records_per_buffer > 0 && b->nrec >= (size_t)knob_records_per_buffer) ||
	       b->size - b->off < KREC_SIZE;
}

static int buf_complete(const struct abuf *b, int force)
{
	return force || b->max_end <= completed_upto();
}

static int queue_has_incomplete(void)	/* under act_mu */
{
	for (struct abuf *b = g_q_head; b; b = b->next)
		if (!buf_complete(b, 0))
			return 1;
	return 0;
}

static void log_buffer(const struct abuf *b)
{
	const uint8_t *p = (const uint8_t *)ALIGN8((uintptr_t)b->base);
	size_t i;

	if (!knob_log)
		return;
	for (i = 0; i < b->nrec; i++, p += KREC_SIZE) {
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)p;

		mock_log_line("kernel corr=%u name=%s start=%" PRIu64 " end=%" PRIu64
			      " device=%u stream=%u graph=%u node=%" PRIu64 " pid=%d",
			      k->correlationId, k->name ? k->name : "?", k->start, k->end,
			      k->deviceId, k->streamId, k->graphId, k->graphNodeId, (int)getpid());
	}
}

/*
 * Hands back the queued buffers that are complete (all of them when force),
 * first moving the current partially filled one to the queue when partial.
 * Called with deliver_mu held, which keeps buffers in order.
 */
static void deliver_ready(int force, int partial)
{
	for (;;) {
		struct abuf *b, **pp;
		CUpti_BuffersCallbackCompleteFunc comp;

		pthread_mutex_lock(&act_mu);
		if (partial && g_cur && g_cur->nrec && buf_complete(g_cur, force)) {
			enqueue(g_cur);
			g_cur = NULL;
		}
		partial = 0;
		for (pp = &g_q_head; (b = *pp); pp = &b->next)
			if (buf_complete(b, force))
				break;
		if (b) {
			*pp = b->next;
			if (!*pp)
				g_q_tail = pp;
		}
		comp = g_comp_cb;
		pthread_mutex_unlock(&act_mu);
		if (!b)
			return;
		log_buffer(b);
		INC(st_buffers_completed);
		if (comp)
			comp(NULL, 0, b->base, b->size, b->off);
		free(b);
	}
}

static void block_signals(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
}

static void *worker_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "cupti-worker", 0, 0, 0);
	pthread_mutex_lock(&act_mu);
	while (!g_worker_stop) {
		struct timespec ts;
		uint32_t period = g_flush_period_ms;
		uint64_t wait_ms = period ? period : queue_has_incomplete() ? 10 : 0;

		if (wait_ms) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (time_t)(wait_ms / 1000);
			ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&act_cv, &act_mu, &ts);
		} else {
			pthread_cond_wait(&act_cv, &act_mu);
		}
		if (g_worker_stop)
			break;
		pthread_mutex_unlock(&act_mu);
		/* Full and complete buffers only; partial ones wait for a flush. */
		pthread_mutex_lock(&deliver_mu);
		deliver_ready(0, 0);
		pthread_mutex_unlock(&deliver_mu);
		pthread_mutex_lock(&act_mu);
	}
	pthread_mutex_unlock(&act_mu);
	return NULL;
}

static void worker_stop(void)
{
	struct timespec ts;
	int started;

	pthread_mutex_lock(&act_mu);
	started = g_worker_started;
	g_worker_stop = 1;
	pthread_cond_broadcast(&act_cv);
	pthread_mutex_unlock(&act_mu);
	if (!started)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	if (pthread_timedjoin_np(g_worker, NULL, &ts) == 0) {
		pthread_mutex_lock(&act_mu);
		g_worker_started = 0;
		pthread_mutex_unlock(&act_mu);
	}
}

static void ensure_worker(void)	/* under act_mu */
{
	sigset_t old;

	if (g_worker_started || g_worker_stop)
		return;
	block_signals(&old);
	if (pthread_create(&g_worker, NULL, worker_main, NULL) == 0)
		g_worker_started = 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!g_worker_atexit) {
		g_worker_atexit = 1;
		atexit(worker_stop);
	}
}

static void drop_record(const CUpti_ActivityKernel10 *k)	/* under act_mu */
{
	g_dropped_unreported++;
	INC(st_dropped);
	mock_log_line("drop corr=%u name=%s pid=%d", k->correlationId,
		      k->name ? k->name : "?", (int)getpid());
}

/* Puts one kernel record in the current buffer, asking the client for
 * buffers as needed. Returns with act_mu held. */
static void append_locked(const CUpti_ActivityKernel10 *k, uint64_t end)
{
	pthread_mutex_lock(&act_mu);
	for (;;) {
		CUpti_BuffersCallbackRequestFunc req;
		uint8_t *base = NULL;
		size_t size = 0, maxrec = 0, pad;
		struct abuf *b;

		if (g_cur && g_cur->size - g_cur->off >= KREC_SIZE) {
			memcpy(g_cur->base + g_cur->off, k, KREC_SIZE);
			g_cur->off += KREC_SIZE;
			g_cur->nrec++;
			if (end > g_cur->max_end)
				g_cur->max_end = end;
			INC(st_kernel_records);
			if (buf_full(g_cur)) {
				enqueue(g_cur);
				g_cur = NULL;
				ensure_worker();
				if (!g_flush_period_ms)
					pthread_cond_broadcast(&act_cv);
			}
			return;
		}
		if (g_cur) {	/* no room left: hand it back as it is */
			enqueue(g_cur);
			g_cur = NULL;
			ensure_worker();
			continue;
		}
		if (g_spare) {
			g_cur = g_spare;
			g_spare = g_spare->next;
			continue;
		}
		req = g_req_cb;
		if (!req) {
			drop_record(k);
			return;
		}
		pthread_mutex_unlock(&act_mu);
		INC(st_buffers_requested);
		req(&base, &size, &maxrec);
		pthread_mutex_lock(&act_mu);
		pad = base ? ALIGN8((uintptr_t)base) - (uintptr_t)base : 0;
		if (!base || size < pad + KREC_SIZE) {
			drop_record(k);
			if (base) {	/* too small: give it back empty */
				b = calloc(1, sizeof(*b));
				if (b) {
					b->base = base;
					b->size = size;
					b->off = 0;
					enqueue(b);
				}
			}
			return;
		}
		b = calloc(1, sizeof(*b));
		if (!b) {
			drop_record(k);
			return;
		}
		b->base = base;
		b->size = size;
		b->off = pad;
		b->maxrec = maxrec;
		b->next = g_spare;
		g_spare = b;
	}
}

static void record_kernel(const struct mock_kexec *k, uint64_t start, uint64_t end,
			  uint32_t corr, int early)
{
	CUpti_ActivityKernel10 r;
	uint64_t seq;
	int kind = __atomic_load_n(&g_kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
				   __ATOMIC_RELAXED) ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL :
		   __atomic_load_n(&g_kind_on[CUPTI_ACTIVITY_KIND_KERNEL], __ATOMIC_RELAXED) ?
		   CUPTI_ACTIVITY_KIND_KERNEL : 0;

	if (!kind)
		return;
	memset(&r, 0, sizeof(r));
	r.kind = (CUpti_ActivityKind)kind;
	r.registersPerThread = 32;
	r.partitionedGlobalCacheRequested = CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_NOT_SUPPORTED;
	r.partitionedGlobalCacheExecuted = CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_NOT_SUPPORTED;
	r.start = start;
	r.end = end;
	r.completed = end;
	r.deviceId = (uint32_t)k->s->ctx->device;
	r.contextId = k->s->ctx->id;
	r.streamId = k->s->id;
	r.gridX = (int32_t)k->grid[0];
	r.gridY = (int32_t)k->grid[1];
	r.gridZ = (int32_t)k->grid[2];
	r.blockX = (int32_t)k->block[0];
	r.blockY = (int32_t)k->block[1];
	r.blockZ = (int32_t)k->block[2];
	r.dynamicSharedMemory = (int32_t)k->shmem;
	r.correlationId = corr;
	r.gridId = (int64_t)__atomic_add_fetch(&g_grid_id, 1, __ATOMIC_RELAXED);
	r.name = k->f->name;
	r.launchType = k->launch_type;
	r.graphNodeId = k->node_id;
	r.graphId = k->graph_id;
	r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;

	seq = __atomic_add_fetch(&g_kernel_seq, 1, __ATOMIC_RELAXED);
	if (early)
		pthread_mutex_lock(&deliver_mu);
	if (knob_drop_every > 0 && seq % (uint64_t)knob_drop_every == 0) {
		pthread_mutex_lock(&act_mu);
		drop_record(&r);
	} else {
		append_locked(&r, end);
	}
	if (!early) {
		pthread_mutex_unlock(&act_mu);
		return;
	}
	if (g_cur && g_cur->nrec) {
		enqueue(g_cur);
		g_cur = NULL;
	}
	pthread_mutex_unlock(&act_mu);
	deliver_ready(1, 0);
	pthread_mutex_unlock(&deliver_mu);
}

CUptiResult __mock_cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
						  CUpti_BuffersCallbackCompleteFunc comp)
{
	if (!req || !comp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&act_mu);
	g_req_cb = req;
	g_comp_cb = comp;
	pthread_mutex_unlock(&act_mu);
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiActivityEnable(CUpti_ActivityKind kind)
{
	INC(st_activity_enabled_calls);
	if ((int)kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT)
		return CUPTI_ERROR_INVALID_KIND;
	__atomic_store_n(&g_kind_on[kind], 1, __ATOMIC_RELAXED);
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if ((int)kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT)
		return CUPTI_ERROR_INVALID_KIND;
	__atomic_store_n(&g_kind_on[kind], 0, __ATOMIC_RELAXED);
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiActivityFlushAll(uint32_t flag)
{
	int registered;

	pthread_mutex_lock(&act_mu);
	registered = g_req_cb && g_comp_cb;
	pthread_mutex_unlock(&act_mu);
	if (!registered)
		return CUPTI_ERROR_INVALID_OPERATION;
	pthread_mutex_lock(&deliver_mu);
	deliver_ready(!!(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), 1);
	pthread_mutex_unlock(&deliver_mu);
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiActivityFlushPeriod(uint32_t ms)
{
	pthread_mutex_lock(&act_mu);
	g_flush_period_ms = ms;
	if (ms)
		ensure_worker();
	pthread_cond_broadcast(&act_cv);
	pthread_mutex_unlock(&act_mu);
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
					      CUpti_Activity **record)
{
	uint8_t *end, *p;

	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	end = buffer + valid;
	p = *record ? (uint8_t *)*record + KREC_SIZE : (uint8_t *)ALIGN8((uintptr_t)buffer);
	if (*record) {
		CUpti_ActivityKind k = (*record)->kind;
		if (k != CUPTI_ACTIVITY_KIND_KERNEL && k != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			return CUPTI_ERROR_INVALID_KIND;
	}
	if (p >= end || (size_t)(end - p) < sizeof(CUpti_Activity))
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	if ((((CUpti_Activity *)p)->kind != CUPTI_ACTIVITY_KIND_KERNEL &&
	     ((CUpti_Activity *)p)->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ||
	    (size_t)(end - p) < KREC_SIZE)
		return CUPTI_ERROR_INVALID_KIND;
	*record = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t sid, size_t *dropped)
{
	(void)ctx;
	(void)sid;
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&act_mu);
	*dropped = (size_t)g_dropped_unreported;
	g_dropped_unreported = 0;
	pthread_mutex_unlock(&act_mu);
	return CUPTI_SUCCESS;
}

/* --------------------------------------------------------- PC sampling */

static const struct {
	uint32_t index;
	const char *name;
} stall_reasons[] = {
	{ 1, "smsp__pcsamp_warps_issue_stalled_barrier" },
	{ 4, "smsp__pcsamp_warps_issue_stalled_long_scoreboard" },
	{ 7, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle" },
	{ 10, "smsp__pcsamp_warps_issue_stalled_selected" },
	{ 12, "smsp__pcsamp_warps_issue_stalled_short_scoreboard" },
	{ 15, "smsp__pcsamp_warps_issue_stalled_wait" },
};
#define N_STALL (sizeof(stall_reasons) / sizeof(stall_reasons[0]))

struct pc_rec {
	struct pc_rec *next;
	struct mock_func *f;
	uint64_t crc, off;
	uint32_t corr;
	uint32_t nr;
	CUpti_PCSamplingStallReason r[2];
};

struct mock_pcs {
	int started;
	uint32_t start_stop;
	CUpti_PCSamplingCollectionMode mode;
	uint32_t period;		/* 0: default */
	size_t scratch, hwbuf;
	uint32_t sleep_span;
	uint8_t sel[N_STALL];		/* selected reasons (all by default) */
	CUpti_PCSamplingData *cfg;	/* SAMPLING_DATA_BUFFER */
	struct pc_rec *head, **tail;
	size_t npending;
	uint64_t total_unreported;
	uint64_t range_id;
};

static pthread_mutex_t pcs_mu = PTHREAD_MUTEX_INITIALIZER;

static int reason_slot(uint32_t index)
{
	for (size_t i = 0; i < N_STALL; i++)
		if (stall_reasons[i].index == index)
			return (int)i;
	return -1;
}

/* Sampling interval: 10 us at the default period (2^14 cycles). */
static uint64_t pcs_interval_ns(const struct mock_pcs *p)
{
	uint32_t e = p->period ? p->period : 14;
	uint64_t ns = e >= 14 ? 10000ull << (e - 14 > 20 ? 20 : e - 14) : 10000ull >> (14 - e);

	return ns ? ns : 1;
}

static void pcs_add(struct mock_ctx *ctx, const struct mock_func *f, uint64_t dur, uint32_t corr)
{
	struct mock_pcs *p;
	uint64_t total;
	uint32_t npc, j, w;

	pthread_mutex_lock(&pcs_mu);
	p = ctx->pcs;
	if (!p || (p->start_stop && !p->started)) {
		pthread_mutex_unlock(&pcs_mu);
		return;
	}
	total = dur / pcs_interval_ns(p);
	npc = f->size / 16 >= 4 ? 4 : f->size / 16 ? (uint32_t)(f->size / 16) : 1;
	w = npc * (npc + 1) / 2;
	for (j = 0; j < npc; j++) {
		/* PC j gets (npc - j) / w of the samples, the first PC the rest. */
		uint64_t sj = total * (npc - j) / w;
		uint32_t s1, s2, slot1, slot2;
		struct pc_rec tmp, *r;

		if (j == 0) {
			uint64_t given = 0;
			for (uint32_t k = 1; k < npc; k++)
				given += total * (npc - k) / w;
			sj = total - given;
		}
		if (!sj)
			continue;
		p->total_unreported += sj;
		s2 = (uint32_t)(sj / 4);
		s1 = (uint32_t)(sj - s2);
		slot1 = (f->index + j) % N_STALL;
		slot2 = (f->index + j + 1) % N_STALL;
		memset(&tmp, 0, sizeof(tmp));
		if (s1 && p->sel[slot1])
			tmp.r[tmp.nr++] = (CUpti_PCSamplingStallReason){ stall_reasons[slot1].index, s1 };
		if (s2 && p->sel[slot2])
			tmp.r[tmp.nr++] = (CUpti_PCSamplingStallReason){ stall_reasons[slot2].index, s2 };
		if (!tmp.nr)
			continue;
		tmp.f = (struct mock_func *)f;
		tmp.crc = f->mod->crc;
		tmp.off = (uint64_t)j * 16;
		tmp.corr = p->mode == CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED ? corr : 0;
		if (!tmp.corr) {
			for (r = p->head; r; r = r->next)
				if (r->f == f && r->off == tmp.off && !r->corr && r->nr == tmp.nr)
					break;
			if (r) {
				for (uint32_t k = 0; k < r->nr; k++)
					r->r[k].samples += tmp.r[k].samples;
				continue;
			}
		}
		r = malloc(sizeof(*r));
		if (!r)
			continue;
		*r = tmp;
		r->next = NULL;
		*p->tail = r;
		p->tail = &r->next;
		p->npending++;
	}
	pthread_mutex_unlock(&pcs_mu);
}

/* Moves up to collectNumPcs pending PCs into *d. Under pcs_mu. */
static CUptiResult pcs_fill(struct mock_pcs *p, CUpti_PCSamplingData *d, size_t *discarded)
{
	struct { const struct mock_func *f; char *name; } names[64];
	size_t nnames = 0, n = 0, want, i;
	struct pc_rec *r;

	if (!d || d->size < offsetof(CUpti_PCSamplingData, nonUsrKernelsTotalSamples) +
			    sizeof(d->nonUsrKernelsTotalSamples))
		return CUPTI_ERROR_INVALID_PARAMETER;
	want = d->collectNumPcs < p->npending ? d->collectNumPcs : p->npending;
	if (want && !d->pPcData)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (i = 0; i < want; i++)
		if (!d->pPcData[i].stallReason)
			return CUPTI_ERROR_INVALID_PARAMETER;
	while (n < want && (r = p->head)) {
		CUpti_PCSamplingPCData *pc = &d->pPcData[n++];
		char *name = NULL;

		p->head = r->next;
		if (!p->head)
			p->tail = &p->head;
		p->npending--;
		/* One malloc'ed copy per function per call; the caller frees it. */
		for (i = 0; i < nnames; i++)
			if (names[i].f == r->f)
				name = names[i].name;
		if (!name) {
			name = strdup(r->f->name);
			if (nnames < sizeof(names) / sizeof(names[0])) {
				names[nnames].f = r->f;
				names[nnames++].name = name;
			}
		}
		pc->cubinCrc = r->crc;
		pc->pcOffset = r->off;
		pc->functionIndex = r->f->index;
		pc->pad = 0;
		pc->functionName = name;
		pc->stallReasonCount = r->nr;
		for (i = 0; i < r->nr; i++) {
			pc->stallReason[i] = r->r[i];
			mock_log_line("pc crc=%" PRIx64 " func=%s offset=%" PRIu64 " reason=%u samples=%u pid=%d",
				      r->crc, r->f->name, r->off, r->r[i].pcSamplingStallReasonIndex,
				      r->r[i].samples, (int)getpid());
		}
		pc->correlationId = r->corr;
		INC(st_pc_records);
		free(r);
	}
	d->totalNumPcs = n;
	d->remainingNumPcs = p->npending;
	d->totalSamples = p->total_unreported;
	p->total_unreported = 0;
	d->droppedSamples = 0;
	d->rangeId = p->range_id;
	d->nonUsrKernelsTotalSamples = 0;
	if (d->size >= offsetof(CUpti_PCSamplingData, hardwareBufferFull) + 1)
		d->hardwareBufferFull = 0;
	if (discarded) {
		*discarded = p->npending;
		while ((r = p->head)) {
			p->head = r->next;
			free(r);
		}
		p->tail = &p->head;
		d->remainingNumPcs = *discarded;
		p->npending = 0;
	}
	return CUPTI_SUCCESS;
}

/* Context of a PC sampling call: ctx, or the current one when NULL. */
static struct mock_ctx *pcs_ctx(CUcontext c)
{
	struct mock_ctx *ctx = c ? mock_ctx_check(c) : mock_ctx_current();

	return ctx && ctx->magic == MOCK_CTX_MAGIC ? ctx : NULL;
}

#define PCS_CHECK(p, sz)						\
	do {								\
		if (!(p) || (p)->size < (sz))				\
			return CUPTI_ERROR_INVALID_PARAMETER;		\
	} while (0)

CUptiResult __mock_cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams *p)
{
	PCS_CHECK(p, CUpti_PCSamplingGetNumStallReasonsParamsSize);
	if (!p->numStallReasons)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!pcs_ctx(p->ctx))
		return CUPTI_ERROR_INVALID_CONTEXT;
	*p->numStallReasons = N_STALL;
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams *p)
{
	size_t i, n;

	PCS_CHECK(p, CUpti_PCSamplingGetStallReasonsParamsSize);
	if (!pcs_ctx(p->ctx))
		return CUPTI_ERROR_INVALID_CONTEXT;
	if (!p->stallReasonIndex || !p->stallReasons || !p->numStallReasons)
		return CUPTI_ERROR_INVALID_PARAMETER;
	n = p->numStallReasons < N_STALL ? p->numStallReasons : N_STALL;
	for (i = 0; i < n; i++)
		if (!p->stallReasons[i])
			return CUPTI_ERROR_INVALID_PARAMETER;
	for (i = 0; i < n; i++) {
		p->stallReasonIndex[i] = stall_reasons[i].index;
		snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s",
			 stall_reasons[i].name);
	}
	return CUPTI_SUCCESS;
}

CUptiResult __mock_cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *p)
{
	struct mock_ctx *ctx;
	struct mock_pcs *s;
	CUptiResult r = CUPTI_SUCCESS;

	PCS_CHECK(p, CUpti_PCSamplingEnableParamsSize);
	ctx = pcs_ctx(p->ctx);
	if (!ctx)
		return CUPTI_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&pcs_mu);
	if (ctx->pcs) {
		r = CUPTI_ERROR_INVALID_OPERATION;
	} else if (!(s = calloc(1, sizeof(*s)))) {
		r = CUPTI_ERROR_OUT_OF_MEMORY;
	} else {
		s->mode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
		s->scratch = 1 << 20;
		s->hwbuf = 512u << 20;
		s->sleep_span = 100;
		memset(s->sel, 1, sizeof(s->sel));
		s->tail = &s->head;
		s->range_id = 0;
		ctx->pcs = s;
	}
	pthread_mutex_unlock(&pcs_mu);
	return r;
}

static CUptiResult pcs_set_attr(struct mock_pcs *s, CUpti_PCSamplingConfigurationInfo *a)
{
	switch (a->attributeType) {
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
		if (a->attributeData.samplingPeriodData.samplingPeriod < 5 ||
		    a->attributeData.samplingPeriodData.samplingPeriod > 31)
			return CUPTI_ERROR_INVALID_PARAMETER;
		s->period = a->attributeData.samplingPeriodData.samplingPeriod;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON: {
		size_t n = a->attributeData.stallReasonData.stallReasonCount;
		const uint32_t *idx = a->attributeData.stallReasonData.pStallReasonIndex;
		uint8_t sel[N_STALL] = { 0 };

		if (!n || !idx)
			return CUPTI_ERROR_INVALID_PARAMETER;
		for (size_t i = 0; i < n; i++) {
			int slot = reason_slot(idx[i]);
			if (slot < 0)
				return CUPTI_ERROR_INVALID_PARAMETER;
			sel[slot] = 1;
		}
		memcpy(s->sel, sel, sizeof(sel));
		return CUPTI_SUCCESS;
	}
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE:
		if (!a->attributeData.scratchBufferSizeData.scratchBufferSize)
			return CUPTI_ERROR_INVALID_PARAMETER;
		s->scratch = a->attributeData.scratchBufferSizeData.scratchBufferSize;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE:
		if (!a->attributeData.hardwareBufferSizeData.hardwareBufferSize)
			return CUPTI_ERROR_INVALID_PARAMETER;
		s->hwbuf = a->attributeData.hardwareBufferSizeData.hardwareBufferSize;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
		if (a->attributeData.collectionModeData.collectionMode !=
			    CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS &&
		    a->attributeData.collectionModeData.collectionMode !=
			    CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED)
			return CUPTI_ERROR_INVALID_PARAMETER;
		s->mode = a->attributeData.collectionModeData.collectionMode;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
		s->start_stop = !!a->attributeData.enableStartStopControlData.enableStartStopControl;
		if (!s->start_stop)
			s->started = 0;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT:
		return a->attributeData.outputDataFormatData.outputDataFormat ==
		       CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED ? CUPTI_SUCCESS :
		       CUPTI_ERROR_INVALID_PARAMETER;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
		if (!a->attributeData.samplingDataBufferData.samplingDataBuffer)
			return CUPTI_ERROR_INVALID_PARAMETER;
		s->cfg = a->attributeData.samplingDataBufferData.samplingDataBuffer;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN:
		if (!a->attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan)
			return CUPTI_ERROR_INVALID_PARAMETER;
		s->sleep_span =
			a->attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan;
		return CUPTI_SUCCESS;
	default:
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
}

static CUptiResult pcs_get_attr(const struct mock_pcs *s, CUpti_PCSamplingConfigurationInfo *a)
{
	switch (a->attributeType) {
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
		a->attributeData.samplingPeriodData.samplingPeriod = s->period ? s->period : 14;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE:
		a->attributeData.scratchBufferSizeData.scratchBufferSize = s->scratch;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE:
		a->attributeData.hardwareBufferSizeData.hardwareBufferSize = s->hwbuf;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
		a->attributeData.collectionModeData.collectionMode = s->mode;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
		a->attributeData.enableStartStopControlData.enableStartStopControl = s->start_stop;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN:
		a->attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan =
			s->sleep_span;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT:
		a->attributeData.outputDataFormatData.outputDataFormat =
			CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
		return CUPTI_SUCCESS;
	default:	/* STALL_REASON, SAMPLING_DATA_BUFFER are write-only */
		return CUPTI_ERROR_INVALID_OPERATION;
	}
}

static CUptiResult pcs_config(CUpti_PCSamplingConfigurationInfoParams *p, int set)
{
	struct mock_ctx *ctx;
	CUptiResult r = CUPTI_SUCCESS;

	PCS_CHECK(p, CUpti_PCSamplingConfigurationInfoParamsSize);
	if (p->numAttributes && !p->pPCSamplingConfigurationInfo)
		return CUPTI_ERROR_INVALID_PARAMETER;
	ctx = pcs_ctx(p->ctx);
	if (!ctx)
		return CUPTI_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&pcs_mu);
	if (!ctx->pcs) {
		pthread_mutex_unlock(&pcs_mu);
		return CUPTI_ERROR_INVALID_OPERATION;	/* cuptiPCSamplingEnable first */
	}
	for (size_t i = 0; i < p->numAttributes; i++) {
		CUpti_PCSamplingConfigurationInfo *a = &p->pPCSamplingConfigurationInfo[i];

		a->attributeStatus = set ? pcs_set_attr(ctx->pcs, a) : pcs_get_attr(ctx->pcs, a);
		if (a->attributeStatus != CUPTI_SUCCESS && r == CUPTI_SUCCESS)
			r = a->attributeStatus;
	}
	pthread_mutex_unlock(&pcs_mu);
	return r;
}

CUptiResult __mock_cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p)
{
	return pcs_config(p, 1);
}

CUptiResult __mock_cuptiPCSamplingGetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p)
{
	return pcs_config(p, 0);
}

static CUptiResult pcs_start_stop(CUcontext c, int start)
{
	struct mock_ctx *ctx = pcs_ctx(c);
	CUptiResult r = CUPTI_SUCCESS;

	if (!ctx)
		return CUPTI_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&pcs_mu);
	if (!ctx->pcs || !ctx->pcs->start_stop || ctx->pcs->started == start) {
		r = CUPTI_ERROR_INVALID_OPERATION;
	} else {
		ctx->pcs->started = start;
		if (start)
			ctx->pcs->range_id++;
	}
	pthread_mutex_unlock(&pcs_mu);
	return r;
}

CUptiResult __mock_cuptiPCSamplingStart(CUpti_PCSamplingStartParams *p)
{
	PCS_CHECK(p, CUpti_PCSamplingStartParamsSize);
	return pcs_start_stop(p->ctx, 1);
}

CUptiResult __mock_cuptiPCSamplingStop(CUpti_PCSamplingStopParams *p)
{
	PCS_CHECK(p, CUpti_PCSamplingStopParamsSize);
	return pcs_start_stop(p->ctx, 0);
}

CUptiResult __mock_cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *p)
{
	struct mock_ctx *ctx;
	CUptiResult r;

	PCS_CHECK(p, CUpti_PCSamplingGetDataParamsSize);
	if (!p->pcSamplingData)
		return CUPTI_ERROR_INVALID_PARAMETER;
	ctx = pcs_ctx(p->ctx);
	if (!ctx)
		return CUPTI_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&pcs_mu);
	r = ctx->pcs ? pcs_fill(ctx->pcs, p->pcSamplingData, NULL) : CUPTI_ERROR_INVALID_OPERATION;
	pthread_mutex_unlock(&pcs_mu);
	return r;
}

/* Tear-down: what is pending goes to the configured buffer, the rest is lost. */
static void pcs_teardown(struct mock_ctx *ctx)	/* under pcs_mu */
{
	struct mock_pcs *s = ctx->pcs;
	struct pc_rec *r;
	size_t discarded = 0;

	if (!s)
		return;
	if (s->cfg)
		pcs_fill(s, s->cfg, &discarded);
	while ((r = s->head)) {
		s->head = r->next;
		free(r);
	}
	free(s);
	ctx->pcs = NULL;
}

CUptiResult __mock_cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *p)
{
	struct mock_ctx *ctx;
	CUptiResult r = CUPTI_SUCCESS;

	PCS_CHECK(p, CUpti_PCSamplingDisableParamsSize);
	ctx = pcs_ctx(p->ctx);
	if (!ctx)
		return CUPTI_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&pcs_mu);
	if (!ctx->pcs)
		r = CUPTI_ERROR_INVALID_OPERATION;
	else
		pcs_teardown(ctx);
	pthread_mutex_unlock(&pcs_mu);
	return r;
}

/* ----------------------------------------------------------- execution */

void mock_execute(struct mock_launch *l, uint32_t corr, int early)
{
	size_t i;

	l->executed = 1;
	for (i = 0; i < l->n; i++) {
		struct mock_kexec k = l->k[i];
		uint64_t start, end, now = mock_now_ns();

		k.s = l->s;
		pthread_mutex_lock(&gpu_mu);
		start = k.s->ready_ns > now ? k.s->ready_ns : now;
		end = start + k.dur_ns;
		__atomic_store_n(&k.s->ready_ns, end, __ATOMIC_RELEASE);
		if (end > l->ctx->max_end_ns)
			__atomic_store_n(&l->ctx->max_end_ns, end, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&gpu_mu);
		record_kernel(&k, start, end, corr, early);
		if (__atomic_load_n(&l->ctx->pcs, __ATOMIC_RELAXED))
			pcs_add(l->ctx, k.f, k.dur_ns, corr);
	}
}

void mock_ctx_destroying(struct mock_ctx *ctx)
{
	int registered;

	pthread_mutex_lock(&pcs_mu);
	pcs_teardown(ctx);
	pthread_mutex_unlock(&pcs_mu);
	/* Its work is finished: records of it are complete, and handed back. */
	mock_gpu_sync(__atomic_load_n(&ctx->max_end_ns, __ATOMIC_ACQUIRE));
	pthread_mutex_lock(&act_mu);
	registered = g_comp_cb != NULL;
	pthread_mutex_unlock(&act_mu);
	if (registered) {
		pthread_mutex_lock(&deliver_mu);
		deliver_ready(0, 1);
		pthread_mutex_unlock(&deliver_mu);
	}
}

CUptiResult __mock_cuptiFinalize(void)
{
	struct abuf *b, *lists[3];
	struct mock_ctx *ctx;

	pthread_mutex_lock(&sub_mu);
	__atomic_store_n(&g_sub, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sub_mu);
	memset(g_kind_on, 0, sizeof(g_kind_on));
	worker_stop();

	pthread_mutex_lock(&deliver_mu);
	pthread_mutex_lock(&act_mu);
	lists[0] = g_cur;
	lists[1] = g_spare;
	lists[2] = g_q_head;
	g_cur = g_spare = g_q_head = NULL;
	g_q_tail = &g_q_head;
	/* The client's memory stays the client's: only our bookkeeping goes. */
	free(lists[0]);
	for (int i = 1; i < 3; i++) {
		while ((b = lists[i])) {
			lists[i] = b->next;
			free(b);
		}
	}
	g_req_cb = NULL;
	g_comp_cb = NULL;
	g_flush_period_ms = 0;
	g_dropped_unreported = 0;
	g_worker_stop = 0;	/* a new session may start a new worker */
	pthread_mutex_unlock(&act_mu);
	pthread_mutex_unlock(&deliver_mu);

	pthread_mutex_lock(&mock_obj_mu);
	pthread_mutex_lock(&pcs_mu);
	for (ctx = mock_all_ctx; ctx; ctx = ctx->all_next) {
		struct mock_pcs *s = ctx->pcs;
		struct pc_rec *r;

		if (!s)
			continue;
		while ((r = s->head)) {
			s->head = r->next;
			free(r);
		}
		free(s);
		ctx->pcs = NULL;
	}
	pthread_mutex_unlock(&pcs_mu);
	pthread_mutex_unlock(&mock_obj_mu);
	return CUPTI_SUCCESS;
}
