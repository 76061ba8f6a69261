/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * inject.h - what the files of libprofd_inject.so share.
 *
 * Owns: the configuration read from the environment (struct inject_config),
 * the tables of CUPTI and driver functions resolved with dlsym (the library
 * never links libcupti or libcuda), the "which probes are attached" mask
 * and the entry points each file offers the others.
 *
 * Files: inject.c (entry, libcupti, subscriber, dispatch, exit),
 * probes.c/.h (USDT probes, semaphores, errors), launch.c (launch
 * callbacks), activity.c (kernel records), names.c (string interning),
 * modules.c (cubins, devices), pcsampling.c (PC sampling).
 */
#ifndef PROFD_INJECT_H
#define PROFD_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cupti_result.h>
#include <cupti_callbacks.h>
#include <cupti_activity.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_pcsampling.h>

#include "bpf/gpu_events.h"

#define INJECT_HIDDEN __attribute__((visibility("hidden")))

/* Settings, read once by InitializeInjection (see inject.c for the list). */
struct inject_config {
	int verbose;			/* PROFD_INJECT_VERBOSE=1: stderr lines */
	double stack_rate;		/* launch stack tokens/s per thread; 0: no limit */
	double stack_burst;		/* bucket size, tokens (>= 1) */
	size_t buffer_bytes;		/* one CUPTI activity buffer */
	uint32_t flush_ms;		/* periodic cuptiActivityFlushAll(0); 0: off */
	uint64_t cubin_budget;		/* bytes of cubin copies kept */
	int pc_sampling;		/* PROFD_PC_SAMPLING=1 */
	uint32_t pc_period;		/* 2^period cycles between samples, 5..31 */
};
extern struct inject_config inject_cfg INJECT_HIDDEN;

/* libcupti functions; a NULL entry was not found (the feature is then off). */
#define INJECT_FN(name) __typeof__(name) *name
struct cupti_api {
	INJECT_FN(cuptiSubscribe);
	INJECT_FN(cuptiUnsubscribe);
	INJECT_FN(cuptiEnableCallback);
	INJECT_FN(cuptiEnableDomain);
	INJECT_FN(cuptiGetResultString);
	INJECT_FN(cuptiActivityRegisterCallbacks);
	INJECT_FN(cuptiActivityEnable);
	INJECT_FN(cuptiActivityDisable);
	INJECT_FN(cuptiActivityFlushAll);
	INJECT_FN(cuptiActivityFlushPeriod);
	INJECT_FN(cuptiActivityGetNextRecord);
	INJECT_FN(cuptiActivityGetNumDroppedRecords);
	INJECT_FN(cuptiGetCubinCrc);
	INJECT_FN(cuptiGetDeviceId);
	INJECT_FN(cuptiFinalize);
	INJECT_FN(cuptiPCSamplingGetNumStallReasons);
	INJECT_FN(cuptiPCSamplingGetStallReasons);
	INJECT_FN(cuptiPCSamplingSetConfigurationAttribute);
	INJECT_FN(cuptiPCSamplingEnable);
	INJECT_FN(cuptiPCSamplingStart);
	INJECT_FN(cuptiPCSamplingStop);
	INJECT_FN(cuptiPCSamplingGetData);
	INJECT_FN(cuptiPCSamplingDisable);
};
extern struct cupti_api cupti INJECT_HIDDEN;

/* Driver functions of the libcuda that loaded us. */
struct driver_api {
	INJECT_FN(cuDeviceGet);
	INJECT_FN(cuDeviceGetAttribute);
	INJECT_FN(cuDeviceGetName);
	INJECT_FN(cuDeviceTotalMem_v2);
};
extern struct driver_api driver INJECT_HIDDEN;

/* Bits of the attached-probe mask (inject_probe_mask()). */
enum {
	INJECT_P_LAUNCH = 1u << 0,
	INJECT_P_KERNELS = 1u << 1,
	INJECT_P_NAME = 1u << 2,
	INJECT_P_CUBIN = 1u << 3,
	INJECT_P_PC_SAMPLES = 1u << 4,
	INJECT_P_STALL_REASONS = 1u << 5,
	INJECT_P_DEVICE = 1u << 6,
	INJECT_P_ERROR = 1u << 7,
	INJECT_P_LAUNCHES = 1u << 8,
};

/* Mask of the probes handled last (agent attach/detach). Read lock-free. */
extern unsigned inject_seen_mask INJECT_HIDDEN;

/* --- inject.c --- */

/*
 * inject_agent_check - compare the probes attached now with the last mask
 * handled; on a change turn activity on/off and replay cached records
 * (devices, cubins, stall reasons, errors) for probes that just attached.
 * Call from any callback thread; takes the state lock only on a change,
 * and returns at once if another thread holds it.
 */
void inject_agent_check(void) INJECT_HIDDEN;

/* inject_env_long - integer env var in [min, max]; @def when unset or invalid (logged). */
long inject_env_long(const char *name, long def, long min, long max) INJECT_HIDDEN;

/*
 * inject_thread_start - init @cond on CLOCK_MONOTONIC and start @fn(NULL)
 * in *@th with every signal blocked (the host's signals must not land on
 * our threads). Returns 0 or pthread_create's error.
 */
int inject_thread_start(pthread_t *th, pthread_cond_t *cond, void *(*fn)(void *))
	INJECT_HIDDEN;

/* CLOCK_MONOTONIC now, ns. */
uint64_t inject_now_ns(void) INJECT_HIDDEN;

/* --- launch.c --- */

/*
 * launch_on_api - runtime/driver launch callback (ENTER and EXIT).
 * Fires profd:launch at ENTER of outermost launches while an agent is
 * attached; with no agent returns after two semaphore loads.
 */
void launch_on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
		   const CUpti_CallbackData *cb) INJECT_HIDDEN;

/*
 * launch_flush_all - fire every thread's batch of stack-less launches
 * (profd:launches). Called by the flusher thread and at exit.
 */
void launch_flush_all(void) INJECT_HIDDEN;

/* launch_init - read the token bucket settings; call once at init. */
void launch_init(void) INJECT_HIDDEN;

/* --- activity.c --- */

/*
 * activity_init - register the buffer callbacks with CUPTI (collection
 * stays off). Returns 0, or -1 (error reported) when activity can't be
 * used in this process.
 */
int activity_init(void) INJECT_HIDDEN;

/*
 * activity_start - cuptiActivityEnable(CONCURRENT_KERNEL) and the flusher
 * thread; 0, or -1 (reported). activity_start/stop are called under the
 * agent-state lock of inject.c.
 */
int activity_start(void) INJECT_HIDDEN;

/*
 * activity_stop - cuptiActivityDisable(CONCURRENT_KERNEL); records CUPTI
 * still holds arrive on the next activity_flush().
 */
void activity_stop(void) INJECT_HIDDEN;

/*
 * activity_flush - cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
 * if collection was ever on; no-op otherwise. Blocks until CUPTI has
 * handed back its buffers.
 */
void activity_flush(void) INJECT_HIDDEN;

/* activity_in_buffer_callback - this thread is in a buffer callback. */
int activity_in_buffer_callback(void) INJECT_HIDDEN;

/* activity_shutdown - at exit: stop the flusher thread, force-flush. */
void activity_shutdown(void) INJECT_HIDDEN;

/* --- names.c --- */

/*
 * names_intern - intern the string s (NUL-terminated; may be NULL).
 * Returns its id (>= 1) and in *stored the library's copy, which lives
 * until the process exits and must not be freed. Returns 0 and *stored =
 * NULL for NULL s, a full table (65536 names; one NAMES_FULL error) or no
 * memory. Fires profd:name the first time a name is interned while its
 * semaphore is set. Thread-safe.
 */
uint32_t names_intern(const char *s, const char **stored) INJECT_HIDDEN;

/* --- modules.c --- */

/*
 * modules_on_loaded - MODULE_LOADED: CRC, copy (within the budget),
 * profd:cubin. md may be NULL (ignored).
 */
void modules_on_loaded(const CUpti_ModuleResourceData *md) INJECT_HIDDEN;

/*
 * modules_on_context_created - query the context's device once per device
 * and fire profd:device. Returns the CUPTI device id, or UINT32_MAX.
 */
uint32_t modules_on_context_created(CUcontext ctx) INJECT_HIDDEN;

/* modules_replay_cubins / _devices - fire the cached records again. */
void modules_replay_cubins(void) INJECT_HIDDEN;
void modules_replay_devices(void) INJECT_HIDDEN;

/* --- pcsampling.c --- */

/*
 * pcsampling_on_context_created - with PROFD_PC_SAMPLING=1: enable PC
 * sampling on ctx, read its stall reasons (profd:stall_reasons), configure
 * continuous collection. Failures: PC_SAMPLING error, ctx left unsampled.
 */
void pcsampling_on_context_created(CUcontext ctx, uint32_t device_id) INJECT_HIDDEN;

/*
 * pcsampling_collect - drain ctx's PC samples (cuptiPCSamplingGetData)
 * into profd:pc_samples. final: also disable sampling on ctx and forget it
 * (context destruction). Unknown ctx: no-op.
 */
void pcsampling_collect(CUcontext ctx, int final) INJECT_HIDDEN;

/* pcsampling_shutdown - at exit: final collection of every context. */
void pcsampling_shutdown(void) INJECT_HIDDEN;

/* pcsampling_replay_stall_reasons - fire every context's table again. */
void pcsampling_replay_stall_reasons(void) INJECT_HIDDEN;

#endif /* PROFD_INJECT_H */
