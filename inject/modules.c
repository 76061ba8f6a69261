// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * modules.c - loaded cubins and the devices contexts run on.
 *
 * Owns: copies of module images (one per distinct CUPTI cubin CRC, kept
 * for the life of the process within PROFD_CUBIN_BUDGET_MB so user space
 * can read SASS at image_ptr), the profd:cubin record of every module load
 * and the profd:device record of every device, both kept so they can be
 * sent again to an agent that attaches later. Cubins are looked at only
 * when someone wants them: the cubin probe is attached or PC sampling
 * (whose samples name cubins by CRC) is on.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "probes.h"

#define MAX_DEVICES	64
#define MAX_RECORDS	65536	/* module loads remembered for replay */

struct cubin_copy {
	uint64_t crc;
	const void *image;
	uint64_t size;
};

static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cubin_copy *copies;
static size_t ncopies, copies_cap;
static uint64_t kept_bytes;
static struct profd_gpu_cubin *records;
static size_t nrecords, records_cap;
static int crc_missing_reported;

static struct profd_gpu_device devices[MAX_DEVICES];
static unsigned char device_known[MAX_DEVICES];

/* Grow *v (elements of size sz) to hold n + 1; -1 on no memory. */
static int reserve(void **v, size_t *cap, size_t n, size_t sz)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	p = realloc(*v, ncap * sz);
	if (!p)
		return -1;
	*v = p;
	*cap = ncap;
	return 0;
}

/* The kept copy for crc, making one if the budget allows; NULL: not kept. */
static const void *copy_for(uint64_t crc, const void *image, uint64_t size)
{
	void *p;
	size_t i;

	for (i = 0; i < ncopies; i++) {
		if (copies[i].crc == crc && copies[i].size == size)
			return copies[i].image;
	}
	if (kept_bytes + size > inject_cfg.cubin_budget)
		return NULL;
	if (reserve((void **)&copies, &copies_cap, ncopies, sizeof(*copies)))
		return NULL;
	p = malloc(size);
	if (!p) {
		inject_error(PROFD_GPU_ERR_CUBIN, 0, 1,
			     "no memory for a cubin copy of %llu bytes",
			     (unsigned long long)size);
		return NULL;
	}
	memcpy(p, image, size);
	copies[ncopies++] = (struct cubin_copy){ crc, p, size };
	kept_bytes += size;
	return p;
}

void modules_on_loaded(const CUpti_ModuleResourceData *md)
{
	CUpti_GetCubinCrcParams p;
	struct profd_gpu_cubin rec;
	const void *image;
	CUptiResult r;

	if (!md || !md->pCubin || !md->cubinSize)
		return;
	/* only PC samples need cubins: no copies unless they are collected */
	if (!inject_cfg.pc_sampling || !PROBE_ON(pc_samples))
		return;
	if (!cupti.cuptiGetCubinCrc) {
		if (!__atomic_exchange_n(&crc_missing_reported, 1,
					 __ATOMIC_RELAXED))
			inject_error(PROFD_GPU_ERR_CUBIN, 0, 1,
				     "libcupti lacks cuptiGetCubinCrc: no cubins");
		return;
	}
	memset(&p, 0, sizeof(p));
	p.size = CUpti_GetCubinCrcParamsSize;
	p.cubinSize = md->cubinSize;
	p.cubin = md->pCubin;
	r = cupti.cuptiGetCubinCrc(&p);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_CUBIN, r,
				   "cuptiGetCubinCrc(module %u)", md->moduleId);
		return;
	}

	memset(&rec, 0, sizeof(rec));
	rec.crc = p.cubinCrc;
	rec.size = md->cubinSize;
	rec.module_id = md->moduleId;

	pthread_mutex_lock(&modules_lock);
	image = copy_for(rec.crc, md->pCubin, rec.size);
	rec.image_ptr = (uint64_t)(uintptr_t)image;
	if (!image)
		rec.flags |= PROFD_GPU_CUBIN_NOT_KEPT;
	if (nrecords < MAX_RECORDS &&
	    !reserve((void **)&records, &records_cap, nrecords,
		     sizeof(*records)))
		records[nrecords++] = rec;
	pthread_mutex_unlock(&modules_lock);

	if (PROBE_ON(cubin))
		FIRE_CUBIN(&rec, 1);
}

void modules_replay_cubins(void)
{
	size_t i, n;

	pthread_mutex_lock(&modules_lock);
	for (i = 0; i < nrecords && PROBE_ON(cubin); i += n) {
		n = nrecords - i;
		if (n > PROFD_GPU_BATCH_MAX)
			n = PROFD_GPU_BATCH_MAX;
		FIRE_CUBIN(&records[i], n);
	}
	pthread_mutex_unlock(&modules_lock);
}

/* Fill rec from the driver; fields it can't get stay 0. */
static void query_device(struct profd_gpu_device *rec, uint32_t id)
{
	CUdevice dev;
	CUresult r;
	int v;

	memset(rec, 0, sizeof(*rec));
	rec->device_id = id;
	if (!driver.cuDeviceGet)
		return;
	r = driver.cuDeviceGet(&dev, (int)id);
	if (r != CUDA_SUCCESS) {
		inject_log("cuDeviceGet(%u) failed: %d", id, (int)r);
		return;
	}
	if (driver.cuDeviceGetAttribute) {
#define ATTR(field, attr)						     \
		if (driver.cuDeviceGetAttribute(&v, attr, dev) == CUDA_SUCCESS) \
			rec->field = (uint32_t)v
		ATTR(sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
		ATTR(clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
		ATTR(memory_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
		ATTR(cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
		ATTR(cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
#undef ATTR
	}
	if (driver.cuDeviceGetName &&
	    driver.cuDeviceGetName(rec->name, (int)sizeof(rec->name), dev) !=
		    CUDA_SUCCESS)
		rec->name[0] = '\0';
	rec->name[sizeof(rec->name) - 1] = '\0';
	if (driver.cuDeviceTotalMem_v2) {
		size_t bytes = 0;

		if (driver.cuDeviceTotalMem_v2(&bytes, dev) == CUDA_SUCCESS)
			rec->total_memory = bytes;
	}
}

uint32_t modules_on_context_created(CUcontext ctx)
{
	struct profd_gpu_device rec;
	uint32_t id = UINT32_MAX;
	CUptiResult r;
	int fresh = 0;

	if (!cupti.cuptiGetDeviceId)
		return UINT32_MAX;
	r = cupti.cuptiGetDeviceId(ctx, &id);
	if (r != CUPTI_SUCCESS) {
		inject_log("cuptiGetDeviceId failed: %d", (int)r);
		return UINT32_MAX;
	}
	if (id >= MAX_DEVICES)
		return id;
	pthread_mutex_lock(&modules_lock);
	fresh = !device_known[id];
	pthread_mutex_unlock(&modules_lock);
	if (!fresh)
		return id;

	query_device(&rec, id);
	pthread_mutex_lock(&modules_lock);
	fresh = !device_known[id];
	if (fresh) {
		devices[id] = rec;
		device_known[id] = 1;
	}
	pthread_mutex_unlock(&modules_lock);
	if (fresh && PROBE_ON(device))
		FIRE_DEVICE(&rec, 1);
	return id;
}

void modules_replay_devices(void)
{
	struct profd_gpu_device batch[MAX_DEVICES];
	uint32_t i, n = 0;

	pthread_mutex_lock(&modules_lock);
	for (i = 0; i < MAX_DEVICES; i++) {
		if (device_known[i])
			batch[n++] = devices[i];
	}
	pthread_mutex_unlock(&modules_lock);
	/* batches of at most PROFD_GPU_BATCH_MAX * 64 bytes (bpf/gpu.bpf.h) */
	for (i = 0; i < n && PROBE_ON(device); i += 32)
		FIRE_DEVICE(batch + i, n - i < 32 ? n - i : 32);
}
