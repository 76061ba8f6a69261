// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * activity.c - kernel execution records from the CUPTI activity API.
 *
 * Owns: the buffer callbacks (CUPTI asks for empty buffers and hands back
 * full ones, often on its own thread), turning CUPTI_ACTIVITY_KIND_
 * CONCURRENT_KERNEL records into struct profd_gpu_kernel batches on
 * profd:kernels, the dropped-record check, switching collection on and off
 * (only while an agent listens on profd:kernels) and the flusher thread
 * that makes CUPTI hand back partly filled buffers every
 * PROFD_ACTIVITY_FLUSH_MS while collection is on.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inject.h"
#include "probes.h"

static int registered;		/* buffer callbacks registered with CUPTI */
static int enabled;		/* CONCURRENT_KERNEL collection on */
static int ever_enabled;
static __thread int in_buffer_cb;

static pthread_mutex_t flusher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flusher_cond;
static pthread_t flusher;
static int flusher_running;
static int flusher_stop;

int activity_in_buffer_callback(void)
{
	return in_buffer_cb != 0;
}

/* CUPTI wants an empty buffer: PROFD_ACTIVITY_BUFFER_KB, 8-byte aligned. */
static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
				      size_t *max_records)
{
	void *p = NULL;
	int err;

	*max_records = 0;	/* as many as fit */
	err = posix_memalign(&p, 8, inject_cfg.buffer_bytes);
	if (err) {
		*buffer = NULL;
		*size = 0;
		inject_error(PROFD_GPU_ERR_BUFFER_ALLOC, -err, 1,
			     "activity buffer of %zu bytes: %s",
			     inject_cfg.buffer_bytes, strerror(err));
		return;
	}
	*buffer = p;
	*size = inject_cfg.buffer_bytes;
}

static void kernel_from_record(struct profd_gpu_kernel *out,
			       const CUpti_ActivityKernel10 *k,
			       uint32_t name_id, const char *name)
{
	memset(out, 0, sizeof(*out));
	out->start_ns = k->start;
	out->end_ns = k->end;
	out->graph_node_id = k->graphNodeId;
	out->name_ptr = (uint64_t)(uintptr_t)name;
	out->correlation_id = k->correlationId;
	out->device_id = k->deviceId;
	out->stream_id = k->streamId;
	out->graph_id = k->graphId;
	out->name_id = name_id;
	out->context_id = k->contextId;
}

/* Walk one completed buffer and fire its kernels in batches. */
static void parse_buffer(uint8_t *buf, size_t valid)
{
	struct profd_gpu_kernel batch[PROFD_GPU_BATCH_MAX];
	const char *last_cupti_name = NULL, *last_name = NULL;
	uint32_t last_id = 0, n = 0;
	CUpti_Activity *rec = NULL;
	CUptiResult r;

	for (;;) {
		const CUpti_ActivityKernel10 *k;

		r = cupti.cuptiActivityGetNextRecord(buf, valid, &rec);
		if (r != CUPTI_SUCCESS)
			break;
		if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
		    rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
			continue;
		k = (const CUpti_ActivityKernel10 *)rec;
		/* Records of one kernel share CUPTI's name pointer. */
		if (!k->name || k->name != last_cupti_name) {
			last_cupti_name = k->name;
			last_id = names_intern(k->name, &last_name);
		}
		kernel_from_record(&batch[n++], k, last_id, last_name);
		if (n == PROFD_GPU_BATCH_MAX) {
			FIRE_KERNELS(batch, n);
			n = 0;
		}
	}
	if (n)
		FIRE_KERNELS(batch, n);
	if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)
		inject_cupti_error(PROFD_GPU_ERR_ACTIVITY, r,
				   "cuptiActivityGetNextRecord");
}

/* Records CUPTI dropped since the last call (no buffer space): report. */
static void report_dropped(CUcontext ctx, uint32_t stream)
{
	size_t dropped = 0;

	if (cupti.cuptiActivityGetNumDroppedRecords &&
	    cupti.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) ==
		    CUPTI_SUCCESS &&
	    dropped)
		inject_error(PROFD_GPU_ERR_RECORDS_DROPPED, 0, dropped,
			     "CUPTI dropped %zu activity records", dropped);
}

/* CUPTI hands back a buffer: forward its kernels, then free it. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
				      uint8_t *buf, size_t size, size_t valid)
{
	in_buffer_cb++;
	if (buf && valid && PROBE_ON(kernels))
		parse_buffer(buf, valid);
	report_dropped(ctx, stream);
	free(buf);
	in_buffer_cb--;
}

int activity_init(void)
{
	CUptiResult r;

	if (!cupti.cuptiActivityRegisterCallbacks ||
	    !cupti.cuptiActivityEnable || !cupti.cuptiActivityDisable ||
	    !cupti.cuptiActivityFlushAll || !cupti.cuptiActivityGetNextRecord) {
		inject_error(PROFD_GPU_ERR_ACTIVITY, 0, 1,
			     "libcupti lacks the activity API: no kernel times");
		return -1;
	}
	r = cupti.cuptiActivityRegisterCallbacks(buffer_requested,
						  buffer_completed);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_ACTIVITY, r,
				   "cuptiActivityRegisterCallbacks");
		return -1;
	}
	registered = 1;
	return 0;
}

static void *flusher_main(void *arg)
{
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&flusher_lock);
	while (!flusher_stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += inject_cfg.flush_ms / 1000;
		ts.tv_nsec += (long)(inject_cfg.flush_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&flusher_cond, &flusher_lock, &ts);
		if (flusher_stop)
			break;
		if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_unlock(&flusher_lock);
		launch_flush_all();
		cupti.cuptiActivityFlushAll(0);
		pthread_mutex_lock(&flusher_lock);
	}
	pthread_mutex_unlock(&flusher_lock);
	return NULL;
}

/* Start the flusher once; it sleeps while collection is off. */
static void flusher_start(void)
{
	int err;

	if (flusher_running || flusher_stop || !inject_cfg.flush_ms)
		return;
	err = inject_thread_start(&flusher, &flusher_cond, flusher_main);
	if (err) {
		inject_error(PROFD_GPU_ERR_ACTIVITY, -err, 1,
			     "flusher thread: %s (records arrive per full "
			     "buffer)", strerror(err));
		return;
	}
	pthread_setname_np(flusher, "profd-flush");
	flusher_running = 1;
}

int activity_start(void)
{
	CUptiResult r;

	if (!registered || enabled)
		return registered ? 0 : -1;
	r = cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_ACTIVITY, r,
				   "cuptiActivityEnable(CONCURRENT_KERNEL)");
		return -1;
	}
	if (!ever_enabled && cupti.cuptiActivityFlushPeriod) {
		r = cupti.cuptiActivityFlushPeriod(100);
		if (r != CUPTI_SUCCESS)
			inject_log("cuptiActivityFlushPeriod(100) failed: %d",
				   (int)r);
	}
	__atomic_store_n(&ever_enabled, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
	flusher_start();
	inject_log("kernel activity on");
	return 0;
}

void activity_stop(void)
{
	CUptiResult r;

	if (!enabled)
		return;
	__atomic_store_n(&enabled, 0, __ATOMIC_RELEASE);
	r = cupti.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (r != CUPTI_SUCCESS)
		inject_cupti_error(PROFD_GPU_ERR_ACTIVITY, r,
				   "cuptiActivityDisable(CONCURRENT_KERNEL)");
	inject_log("kernel activity off");
}

void activity_flush(void)
{
	CUptiResult r;

	if (!__atomic_load_n(&ever_enabled, __ATOMIC_ACQUIRE) || in_buffer_cb)
		return;
	r = cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (r != CUPTI_SUCCESS)
		inject_cupti_error(PROFD_GPU_ERR_ACTIVITY, r,
				   "cuptiActivityFlushAll(FORCED)");
	/* Drops after the last buffer handed back. */
	report_dropped(NULL, 0);
}

void activity_shutdown(void)
{
	struct timespec ts;

	launch_flush_all();
	if (flusher_running) {
		pthread_mutex_lock(&flusher_lock);
		flusher_stop = 1;
		pthread_cond_signal(&flusher_cond);
		pthread_mutex_unlock(&flusher_lock);
		/* Bounded: never hang the host's exit on a stuck flush. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 2;
		if (pthread_timedjoin_np(flusher, NULL, &ts) == 0)
			flusher_running = 0;
	}
	activity_flush();
}
