// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * inject.c - entry point of libprofd_inject.so, the CUDA injection library.
 *
 * libcuda loads the library named by CUDA_INJECTION64_PATH at cuInit and
 * calls InitializeInjection(), its only exported symbol. This file owns
 * that entry: reading the settings, dlopen'ing libcupti and resolving its
 * functions (nothing is linked), the one CUPTI subscriber and the callbacks
 * it enables, dispatching callbacks to launch.c / modules.c /
 * pcsampling.c, noticing an agent attach or detach (semaphores), and the
 * exit handler. The library never aborts its host: a failure turns the
 * feature off and is reported (probes.c).
 *
 * Environment:
 *   PROFD_INJECT_VERBOSE=1      one stderr line per error / setup step
 *   PROFD_CUPTI_LIBRARY=PATH    libcupti to dlopen (default: libcupti.so.13,
 *                               libcupti.so, /usr/local/cuda/extras/CUPTI/
 *                               lib64/libcupti.so, /usr/local/cuda/lib64/
 *                               libcupti.so, first that loads)
 *   PROFD_LAUNCH_STACK_RATE=N   launches per second per thread whose CPU
 *                               stack is captured (token bucket; default
 *                               1000; 0 = every launch)
 *   PROFD_LAUNCH_STACK_BURST=N  bucket size (default 100)
 *   PROFD_ACTIVITY_BUFFER_KB=N  CUPTI activity buffer size (default 1024,
 *                               16 .. 262144)
 *   PROFD_ACTIVITY_FLUSH_MS=N   while an agent is attached, a library thread
 *                               calls cuptiActivityFlushAll(0) every N ms so
 *                               kernel records arrive before a buffer fills
 *                               (default 1000; 0 = no thread)
 *   PROFD_CUBIN_BUDGET_MB=N     cubin bytes the library keeps copies of
 *                               (default 256)
 *   PROFD_PC_SAMPLING=1         CUPTI PC sampling on every context
 *   PROFD_PC_SAMPLING_PERIOD=N  sample every 2^N cycles (default 5, 5..31)
 *
 * InitializeInjection returns 1 whether or not profiling could start:
 * libcuda's handling of 0 is not documented, and a failure must never
 * change the host's behaviour; failures are reported on profd:error and,
 * verbose, on stderr.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "inject.h"
#include "probes.h"

struct inject_config inject_cfg;
struct cupti_api cupti;
struct driver_api driver;
unsigned inject_seen_mask;

static CUpti_SubscriberHandle subscriber;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static int exiting;
static pid_t init_pid;		/* the process InitializeInjection ran in */

static const char *const cupti_paths[] = {
	"libcupti.so.13",
	"libcupti.so",
	"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	"/usr/local/cuda/lib64/libcupti.so",
};

/* Runtime launches: the outermost API of a kernel launched via cudart. */
static const CUpti_CallbackId runtime_launch_cbids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
	/* CUDA 13 nvcc compiles <<<...>>> to __cudaLaunchKernel. */
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};

static const CUpti_CallbackId driver_launch_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
};

/* PC sampling collection points (exit), enabled only with PC sampling. */
static const CUpti_CallbackId driver_sync_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
	CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
	CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
	CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
};

uint64_t inject_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int inject_thread_start(pthread_t *th, pthread_cond_t *cond, void *(*fn)(void *))
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int err;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
	/* The host's signals must not land on our thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(th, NULL, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

long inject_env_long(const char *name, long def, long min, long max)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max) {
		inject_log("%s=%s ignored (want %ld..%ld), using %ld", name, s,
			   min, max, def);
		return def;
	}
	return v;
}

static void config_load(void)
{
	const char *v = getenv("PROFD_INJECT_VERBOSE");

	inject_cfg.verbose = v && strcmp(v, "0") != 0 && *v;
	inject_cfg.stack_rate =
		(double)inject_env_long("PROFD_LAUNCH_STACK_RATE", 1000, 0, 100000000);
	inject_cfg.stack_burst =
		(double)inject_env_long("PROFD_LAUNCH_STACK_BURST", 100, 1, 100000000);
	inject_cfg.buffer_bytes =
		(size_t)inject_env_long("PROFD_ACTIVITY_BUFFER_KB", 1024, 16, 262144) *
		1024;
	inject_cfg.flush_ms =
		(uint32_t)inject_env_long("PROFD_ACTIVITY_FLUSH_MS", 1000, 0, 3600000);
	inject_cfg.cubin_budget =
		(uint64_t)inject_env_long("PROFD_CUBIN_BUDGET_MB", 256, 0, 1 << 20) << 20;
	inject_cfg.pc_sampling = inject_env_long("PROFD_PC_SAMPLING", 0, 0, 1) == 1;
	inject_cfg.pc_period =
		(uint32_t)inject_env_long("PROFD_PC_SAMPLING_PERIOD", 5, 5, 31);
}

static void *cupti_open(void)
{
	const char *path = getenv("PROFD_CUPTI_LIBRARY");
	const char *why = "not found";
	void *lib;
	size_t i;

	if (path && *path) {
		lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			const char *err = dlerror();
			size_t len = strlen(path);

			/* dlerror() is "PATH: reason": keep the reason whole */
			if (err && !strncmp(err, path, len) && err[len] == ':')
				err += len + 2;
			inject_error(PROFD_GPU_ERR_CUPTI_INIT, 0, 1,
				     "PROFD_CUPTI_LIBRARY: %s", err ? err : "dlopen failed");
		}
		return lib;
	}
	for (i = 0; i < sizeof(cupti_paths) / sizeof(cupti_paths[0]); i++) {
		lib = dlopen(cupti_paths[i], RTLD_NOW | RTLD_LOCAL);
		if (lib) {
			inject_log("loaded %s", cupti_paths[i]);
			return lib;
		}
		why = dlerror();
	}
	inject_error(PROFD_GPU_ERR_CUPTI_INIT, 0, 1,
		     "libcupti not found (set PROFD_CUPTI_LIBRARY): %.50s",
		     why ? why : "");
	return NULL;
}

#define RESOLVE(lib, table, fn) \
	((table).fn = (__typeof__((table).fn))dlsym((lib), #fn))

/* Returns 0 when the functions the library can't do without are there. */
static int cupti_resolve(void *lib)
{
	RESOLVE(lib, cupti, cuptiSubscribe);
	RESOLVE(lib, cupti, cuptiUnsubscribe);
	RESOLVE(lib, cupti, cuptiEnableCallback);
	RESOLVE(lib, cupti, cuptiEnableDomain);
	RESOLVE(lib, cupti, cuptiGetResultString);
	RESOLVE(lib, cupti, cuptiActivityRegisterCallbacks);
	RESOLVE(lib, cupti, cuptiActivityEnable);
	RESOLVE(lib, cupti, cuptiActivityDisable);
	RESOLVE(lib, cupti, cuptiActivityFlushAll);
	RESOLVE(lib, cupti, cuptiActivityFlushPeriod);
	RESOLVE(lib, cupti, cuptiActivityGetNextRecord);
	RESOLVE(lib, cupti, cuptiActivityGetNumDroppedRecords);
	RESOLVE(lib, cupti, cuptiGetCubinCrc);
	RESOLVE(lib, cupti, cuptiGetDeviceId);
	RESOLVE(lib, cupti, cuptiFinalize);
	RESOLVE(lib, cupti, cuptiPCSamplingGetNumStallReasons);
	RESOLVE(lib, cupti, cuptiPCSamplingGetStallReasons);
	RESOLVE(lib, cupti, cuptiPCSamplingSetConfigurationAttribute);
	RESOLVE(lib, cupti, cuptiPCSamplingEnable);
	RESOLVE(lib, cupti, cuptiPCSamplingStart);
	RESOLVE(lib, cupti, cuptiPCSamplingStop);
	RESOLVE(lib, cupti, cuptiPCSamplingGetData);
	RESOLVE(lib, cupti, cuptiPCSamplingDisable);

	if (!cupti.cuptiSubscribe || !cupti.cuptiEnableCallback) {
		inject_error(PROFD_GPU_ERR_CUPTI_INIT, 0, 1,
			     "libcupti lacks cuptiSubscribe/cuptiEnableCallback");
		return -1;
	}
	return 0;
}

/* Driver functions: libcuda is loaded already (it loaded us). */
static void driver_resolve(void)
{
	void *lib = RTLD_DEFAULT;

	RESOLVE(lib, driver, cuDeviceGet);
	if (!driver.cuDeviceGet) {
		/* libcuda may be loaded RTLD_LOCAL: take its own handle. */
		lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (!lib) {
			inject_log("libcuda functions not found: no device info");
			return;
		}
		RESOLVE(lib, driver, cuDeviceGet);
	}
	RESOLVE(lib, driver, cuDeviceGetAttribute);
	RESOLVE(lib, driver, cuDeviceGetName);
	RESOLVE(lib, driver, cuDeviceTotalMem_v2);
}

/* Enable a list of callbacks; returns how many failed (the last result). */
static unsigned enable_cbids(CUpti_CallbackDomain domain,
			     const CUpti_CallbackId *ids, size_t n,
			     CUptiResult *last)
{
	unsigned failed = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		CUptiResult r = cupti.cuptiEnableCallback(1, subscriber, domain,
							  ids[i]);
		if (r != CUPTI_SUCCESS) {
			inject_log("cuptiEnableCallback(domain %d, cbid %u) "
				   "failed: %d", (int)domain, ids[i], (int)r);
			*last = r;
			failed++;
		}
	}
	return failed;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int enable_callbacks(void)
{
	static const CUpti_CallbackId resource_cbids[] = {
		CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
		CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
		CUPTI_CBID_RESOURCE_MODULE_LOADED,
	};
	static const CUpti_CallbackId unload_cbid[] = {
		CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
	};
	CUptiResult last = CUPTI_SUCCESS;
	unsigned failed = 0, launch_failed;

	launch_failed = enable_cbids(CUPTI_CB_DOMAIN_RUNTIME_API,
				     runtime_launch_cbids,
				     NELEM(runtime_launch_cbids), &last);
	launch_failed += enable_cbids(CUPTI_CB_DOMAIN_DRIVER_API,
				      driver_launch_cbids,
				      NELEM(driver_launch_cbids), &last);
	failed += launch_failed;
	failed += enable_cbids(CUPTI_CB_DOMAIN_RESOURCE, resource_cbids,
			       NELEM(resource_cbids), &last);
	if (inject_cfg.pc_sampling) {
		/* Module unload: PC data must be read before a PC can repeat. */
		failed += enable_cbids(CUPTI_CB_DOMAIN_RESOURCE, unload_cbid,
				       NELEM(unload_cbid), &last);
		failed += enable_cbids(CUPTI_CB_DOMAIN_DRIVER_API,
				       driver_sync_cbids,
				       NELEM(driver_sync_cbids), &last);
	}
	if (failed)
		inject_cupti_error(PROFD_GPU_ERR_CUPTI_INIT, last,
				   "cuptiEnableCallback failed for %u callbacks",
				   failed);
	if (launch_failed ==
	    NELEM(runtime_launch_cbids) + NELEM(driver_launch_cbids))
		return -1;
	return 0;
}

void inject_agent_check(void)
{
	unsigned now = inject_probe_mask();
	unsigned old, on, off;

	if (now == __atomic_load_n(&inject_seen_mask, __ATOMIC_ACQUIRE))
		return;

	/*
	 * Never wait here: callbacks may run under driver locks that the
	 * thread doing the transition (inside cuptiActivityEnable) needs.
	 * Whoever holds the lock handles it; later callbacks check again.
	 */
	if (pthread_mutex_trylock(&state_lock) != 0)
		return;
	old = inject_seen_mask;
	now = inject_probe_mask();
	if (now == old) {
		pthread_mutex_unlock(&state_lock);
		return;
	}
	on = now & ~old;
	off = old & ~now;
	if (on & INJECT_P_KERNELS)
		activity_start();
	if (off & INJECT_P_KERNELS)
		activity_stop();
	if (on & INJECT_P_ERROR)
		inject_replay_errors();
	if (on & INJECT_P_DEVICE)
		modules_replay_devices();
	if (on & INJECT_P_CUBIN)
		modules_replay_cubins();
	if (on & INJECT_P_STALL_REASONS)
		pcsampling_replay_stall_reasons();
	__atomic_store_n(&inject_seen_mask, now, __ATOMIC_RELEASE);
	inject_log("probes attached: mask 0x%x -> 0x%x", old, now);
	pthread_mutex_unlock(&state_lock);

	/* Agent gone: hand back what CUPTI holds (outside the lock). */
	if (off & INJECT_P_KERNELS)
		activity_flush();
}

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
	uint32_t device_id;

	if (!rd)
		return;
	switch (cbid) {
	case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
		inject_agent_check();
		device_id = modules_on_context_created(rd->context);
		pcsampling_on_context_created(rd->context, device_id);
		break;
	case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
		pcsampling_collect(rd->context, 1);
		activity_flush();
		break;
	case CUPTI_CBID_RESOURCE_MODULE_LOADED:
		inject_agent_check();
		modules_on_loaded(rd->resourceDescriptor);
		break;
	case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING:
		pcsampling_collect(rd->context, 0);
		break;
	default:
		break;
	}
}

static int is_sync_cbid(CUpti_CallbackId cbid)
{
	return cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2 ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize ||
	       cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz;
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
				 CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *cb = data;

	switch (domain) {
	case CUPTI_CB_DOMAIN_RUNTIME_API:
		launch_on_api(domain, cbid, cb);
		break;
	case CUPTI_CB_DOMAIN_DRIVER_API:
		if (inject_cfg.pc_sampling && is_sync_cbid(cbid)) {
			if (cb && cb->callbackSite == CUPTI_API_EXIT)
				pcsampling_collect(cb->context, 0);
			break;
		}
		launch_on_api(domain, cbid, cb);
		break;
	case CUPTI_CB_DOMAIN_RESOURCE:
		on_resource(cbid, data);
		break;
	default:
		break;
	}
}

/*
 * At exit: read the last PC samples and kernel records. Runs once; skipped
 * on a thread that is inside one of CUPTI's buffer callbacks (flushing
 * there would wait for itself).
 */
static void inject_atexit(void)
{
	/* a forked child exiting: CUPTI's state and threads are the parent's */
	if (getpid() != init_pid)
		return;
	if (activity_in_buffer_callback())
		return;
	if (__atomic_exchange_n(&exiting, 1, __ATOMIC_ACQ_REL))
		return;
	pcsampling_shutdown();
	activity_shutdown();
}

__attribute__((visibility("default"))) int InitializeInjection(void);

int InitializeInjection(void)
{
	static int once;
	CUptiResult r;
	void *lib;

	if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
		return 1;

	init_pid = getpid();
	config_load();
	lib = cupti_open();
	if (!lib || cupti_resolve(lib) < 0)
		return 1;	/* reported; CUDA runs unprofiled */
	driver_resolve();
	launch_init();

	r = cupti.cuptiSubscribe(&subscriber, on_callback, NULL);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_CUPTI_INIT, r,
				   "cuptiSubscribe failed");
		return 1;
	}
	activity_init();
	if (enable_callbacks() < 0) {
		/* Nothing to profile without launches: leave CUPTI alone. */
		if (cupti.cuptiUnsubscribe)
			cupti.cuptiUnsubscribe(subscriber);
		return 1;
	}
	if (atexit(inject_atexit) != 0)
		inject_log("atexit failed: records of the last interval are lost");
	inject_log("initialized (pc sampling %s)",
		   inject_cfg.pc_sampling ? "on" : "off");
	return 1;
}
