// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cuda_driver.c - the mock CUDA driver API of libcuda.so.1 (tests only).
 *
 * Owns: cuInit (loads CUDA_INJECTION64_PATH and calls its
 * InitializeInjection, like the real driver), devices (MOCK_CUDA_DEVICES,
 * "Mock H200"), contexts, streams, modules loaded from ELF "cubins"
 * (functions are the cubin's FUNC symbols), kernel launches, graphs and
 * error strings. Every call goes through __mock_api_enter/__mock_api_exit
 * (cupti_core.c), which report it to the CUPTI subscriber. Kernels do not
 * run: a launch's duration in ns is the uint64 kernelParams[0] points at.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <zlib.h>

#include "mock_internal.h"

/* Versions the CUDA 13 headers no longer declare (or only per-thread). */
MOCK_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
MOCK_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *p, int n,
		unsigned int flags, CUdevice dev);
MOCK_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
		unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
		unsigned int shmem, CUstream s, void **params, void **extra);
MOCK_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
		unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
		unsigned int bz, unsigned int shmem, CUstream s, void **params);
MOCK_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
		void **params, void **extra);
MOCK_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec g, CUstream s);
MOCK_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s);

int mock_device_count = 1;
pthread_mutex_t mock_obj_mu = PTHREAD_MUTEX_INITIALIZER;
struct mock_ctx *mock_all_ctx;

static __thread struct mock_ctx *tls_ctx;

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t init_cv = PTHREAD_COND_INITIALIZER;
static int init_state;			/* 0 no, 1 running (init_tid), 2 done */
static pid_t init_tid;

static uint32_t next_ctx_id = 1;
static uint32_t next_stream_id = 13;
static uint32_t next_module_id = 1;
static uint32_t next_graph_id = 1;
static uint32_t next_gexec_id = 1;
static uint64_t next_node_id = 1;

#define DCALL(fn, pp, rp) {						\
	.domain = CUPTI_CB_DOMAIN_DRIVER_API,				\
	.cbid = CUPTI_DRIVER_TRACE_CBID_##fn,				\
	.name = #fn, .params = (pp), .ret = (rp),			\
	.ctx = (CUcontext)tls_ctx }

static int inited(void)
{
	return __atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 0;
}

struct mock_ctx *mock_ctx_current(void)
{
	return tls_ctx;
}

CUcontext __mock_current_ctx(void)
{
	return (CUcontext)tls_ctx;
}

struct mock_ctx *mock_ctx_check(CUcontext c)
{
	struct mock_ctx *ctx = (struct mock_ctx *)c;

	if (!ctx || ctx->magic != MOCK_CTX_MAGIC)
		return NULL;
	return ctx;
}

__attribute__((constructor)) static void driver_env(void)
{
	const char *e = getenv("MOCK_CUDA_DEVICES");

	if (e && *e) {
		int n = atoi(e);
		mock_device_count = n < 0 ? 0 : n > 64 ? 64 : n;
	}
}

/* ---------------------------------------------------------------- init */

static void load_injection(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	void *h;
	int (*init)(void);

	if (!path || !*path)
		return;
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "mock libcuda: cannot load CUDA_INJECTION64_PATH %s: %s\n",
			path, dlerror());
		return;
	}
	*(void **)&init = dlsym(h, "InitializeInjection");
	if (!init) {
		fprintf(stderr, "mock libcuda: %s has no InitializeInjection\n", path);
		return;
	}
	init();
}

static CUresult init_once(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);

	pthread_mutex_lock(&init_mu);
	if (init_state == 2 || (init_state == 1 && init_tid == self)) {
		pthread_mutex_unlock(&init_mu);
		return CUDA_SUCCESS;
	}
	if (init_state == 1) {
		while (init_state != 2)
			pthread_cond_wait(&init_cv, &init_mu);
		pthread_mutex_unlock(&init_mu);
		return CUDA_SUCCESS;
	}
	init_tid = self;
	__atomic_store_n(&init_state, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&init_mu);

	/* The injection may call the driver: it sees an initialized one. */
	load_injection();
	mock_resource(CUPTI_CBID_RESOURCE_CU_INIT_FINISHED, NULL, NULL, NULL);

	pthread_mutex_lock(&init_mu);
	__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&init_cv);
	pthread_mutex_unlock(&init_mu);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags)
{
	CUresult r = CUDA_SUCCESS;
	cuInit_params p = { Flags };
	struct mock_call c = DCALL(cuInit, &p, &r);

	__mock_api_enter(&c);
	r = Flags ? CUDA_ERROR_INVALID_VALUE : init_once();
	if (r == CUDA_SUCCESS && !mock_device_count)
		r = CUDA_ERROR_NO_DEVICE;
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	CUresult r = CUDA_SUCCESS;
	cuDriverGetVersion_params p = { driverVersion };
	struct mock_call c = DCALL(cuDriverGetVersion, &p, &r);

	__mock_api_enter(&c);
	if (!driverVersion)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*driverVersion = CUDA_VERSION;
	__mock_api_exit(&c);
	return r;
}

/* ------------------------------------------------------------- devices */

static CUresult check_dev(CUdevice dev)
{
	if (!inited())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= mock_device_count)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	CUresult r = CUDA_SUCCESS;
	cuDeviceGetCount_params p = { count };
	struct mock_call c = DCALL(cuDeviceGetCount, &p, &r);

	__mock_api_enter(&c);
	if (!inited())
		r = CUDA_ERROR_NOT_INITIALIZED;
	else if (!count)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*count = mock_device_count;
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult r;
	cuDeviceGet_params p = { device, ordinal };
	struct mock_call c = DCALL(cuDeviceGet, &p, &r);

	__mock_api_enter(&c);
	r = check_dev(ordinal);
	if (r == CUDA_SUCCESS && !device)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		*device = ordinal;
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult r;
	cuDeviceGetName_params p = { name, len, dev };
	struct mock_call c = DCALL(cuDeviceGetName, &p, &r);

	__mock_api_enter(&c);
	r = check_dev(dev);
	if (r == CUDA_SUCCESS && (!name || len <= 0))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		snprintf(name, (size_t)len, "%s", "Mock H200");
	__mock_api_exit(&c);
	return r;
}

static int device_attribute(CUdevice_attribute a)
{
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;		/* kHz */
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
	case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x19;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 3201000;	/* kHz */
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 50331648;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
	default: return 0;
	}
}

MOCK_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult r;
	cuDeviceGetAttribute_params p = { pi, attrib, dev };
	struct mock_call c = DCALL(cuDeviceGetAttribute, &p, &r);

	__mock_api_enter(&c);
	r = check_dev(dev);
	if (r == CUDA_SUCCESS && (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		*pi = device_attribute(attrib);
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult r;
	cuDeviceTotalMem_v2_params p = { bytes, dev };
	struct mock_call c = DCALL(cuDeviceTotalMem_v2, &p, &r);

	__mock_api_enter(&c);
	r = check_dev(dev);
	if (r == CUDA_SUCCESS && !bytes)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		*bytes = 150754820096ull;	/* 143771 MiB, an H200's */
	__mock_api_exit(&c);
	return r;
}

/* ------------------------------------------------------------ contexts */

static CUresult ctx_create(CUcontext *pctx, CUdevice dev)
{
	struct mock_ctx *ctx;
	CUresult r = check_dev(dev);

	if (r != CUDA_SUCCESS)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx->device = dev;
	ctx->null_stream.magic = MOCK_STREAM_MAGIC;
	ctx->null_stream.id = MOCK_DEFAULT_STREAM_ID;
	ctx->null_stream.ctx = ctx;
	pthread_mutex_lock(&mock_obj_mu);
	ctx->id = next_ctx_id++;
	ctx->all_next = mock_all_ctx;
	mock_all_ctx = ctx;
	pthread_mutex_unlock(&mock_obj_mu);
	__atomic_store_n(&ctx->magic, MOCK_CTX_MAGIC, __ATOMIC_RELEASE);
	tls_ctx = ctx;
	*pctx = (CUcontext)ctx;
	mock_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, (CUcontext)ctx, NULL, NULL);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult r;
	cuCtxCreate_v2_params p = { pctx, flags, dev };
	struct mock_call c = DCALL(cuCtxCreate_v2, &p, &r);

	__mock_api_enter(&c);
	r = ctx_create(pctx, dev);
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
		int numParams, unsigned int flags, CUdevice dev)
{
	CUresult r;
	cuCtxCreate_v3_params p = { pctx, paramsArray, numParams, flags, dev };
	struct mock_call c = DCALL(cuCtxCreate_v3, &p, &r);

	__mock_api_enter(&c);
	r = ctx_create(pctx, dev);
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
		unsigned int flags, CUdevice dev)
{
	CUresult r;
	cuCtxCreate_v4_params p = { pctx, ctxCreateParams, flags, dev };
	struct mock_call c = DCALL(cuCtxCreate_v4, &p, &r);

	__mock_api_enter(&c);
	r = ctx_create(pctx, dev);
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult r = CUDA_SUCCESS;
	cuCtxDestroy_v2_params p = { ctx };
	struct mock_call c = DCALL(cuCtxDestroy_v2, &p, &r);
	struct mock_ctx *m = mock_ctx_check(ctx);

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!m) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		mock_resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, ctx, NULL, NULL);
		mock_ctx_destroying(m);
		__atomic_store_n(&m->magic, MOCK_CTX_DEAD, __ATOMIC_RELEASE);
		if (tls_ctx == m)
			tls_ctx = NULL;
		/* Not freed: records and handles may still point at it. */
	}
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	CUresult r = CUDA_SUCCESS;
	cuCtxSetCurrent_params p = { ctx };
	struct mock_call c = DCALL(cuCtxSetCurrent, &p, &r);

	__mock_api_enter(&c);
	if (!inited())
		r = CUDA_ERROR_NOT_INITIALIZED;
	else if (ctx && !mock_ctx_check(ctx))
		r = CUDA_ERROR_INVALID_CONTEXT;
	else
		tls_ctx = (struct mock_ctx *)ctx;
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult r = CUDA_SUCCESS;
	cuCtxGetCurrent_params p = { pctx };
	struct mock_call c = DCALL(cuCtxGetCurrent, &p, &r);

	__mock_api_enter(&c);
	if (!inited())
		r = CUDA_ERROR_NOT_INITIALIZED;
	else if (!pctx)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*pctx = (CUcontext)tls_ctx;
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
	CUresult r = CUDA_SUCCESS;
	cuCtxGetDevice_params p = { device };
	struct mock_call c = DCALL(cuCtxGetDevice, &p, &r);

	__mock_api_enter(&c);
	if (!inited())
		r = CUDA_ERROR_NOT_INITIALIZED;
	else if (!device)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!mock_ctx_check((CUcontext)tls_ctx))
		r = CUDA_ERROR_INVALID_CONTEXT;
	else
		*device = tls_ctx->device;
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	CUresult r = CUDA_SUCCESS;
	cuCtxGetId_params p = { ctx, ctxId };
	struct mock_call c = DCALL(cuCtxGetId, &p, &r);
	struct mock_ctx *m = ctx ? mock_ctx_check(ctx) : tls_ctx;

	__mock_api_enter(&c);
	if (!inited())
		r = CUDA_ERROR_NOT_INITIALIZED;
	else if (!ctxId)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!m)
		r = CUDA_ERROR_INVALID_CONTEXT;
	else
		*ctxId = m->id;
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
	CUresult r = CUDA_SUCCESS;
	struct mock_call c = DCALL(cuCtxSynchronize, NULL, &r);
	struct mock_ctx *m = tls_ctx;

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!mock_ctx_check((CUcontext)m)) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		mock_gpu_sync(__atomic_load_n(&m->max_end_ns, __ATOMIC_ACQUIRE));
		mock_sync_cb(CUPTI_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED, (CUcontext)m, NULL);
	}
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
	CUresult r = CUDA_SUCCESS;
	cuCtxSynchronize_v2_params p = { ctx };
	struct mock_call c = DCALL(cuCtxSynchronize_v2, &p, &r);
	struct mock_ctx *m = ctx ? mock_ctx_check(ctx) : tls_ctx;

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!mock_ctx_check((CUcontext)m)) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		mock_gpu_sync(__atomic_load_n(&m->max_end_ns, __ATOMIC_ACQUIRE));
		mock_sync_cb(CUPTI_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED, (CUcontext)m, NULL);
	}
	__mock_api_exit(&c);
	return r;
}

/* ------------------------------------------------------------- streams */

static struct mock_stream *stream_resolve(CUstream hs, struct mock_ctx *ctx)
{
	struct mock_stream *s = (struct mock_stream *)hs;

	if (!ctx)
		return NULL;
	if (!hs || hs == CU_STREAM_LEGACY || hs == CU_STREAM_PER_THREAD)
		return &ctx->null_stream;
	if (s->magic != MOCK_STREAM_MAGIC || s->ctx != ctx)
		return NULL;
	return s;
}

MOCK_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	CUresult r = CUDA_SUCCESS;
	cuStreamCreate_params p = { phStream, Flags };
	struct mock_call c = DCALL(cuStreamCreate, &p, &r);
	struct mock_stream *s;

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (!mock_ctx_check((CUcontext)tls_ctx)) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else if (!(s = calloc(1, sizeof(*s)))) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		s->ctx = tls_ctx;
		pthread_mutex_lock(&mock_obj_mu);
		s->id = next_stream_id++;
		pthread_mutex_unlock(&mock_obj_mu);
		s->magic = MOCK_STREAM_MAGIC;
		*phStream = (CUstream)s;
		mock_resource(CUPTI_CBID_RESOURCE_STREAM_CREATED, (CUcontext)s->ctx,
			      (CUstream)s, NULL);
	}
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
	CUresult r = CUDA_SUCCESS;
	cuStreamDestroy_v2_params p = { hStream };
	struct mock_call c = DCALL(cuStreamDestroy_v2, &p, &r);
	struct mock_stream *s = (struct mock_stream *)hStream;

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!s || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD ||
		   s->magic != MOCK_STREAM_MAGIC) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		mock_resource(CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING,
			      (CUcontext)s->ctx, hStream, NULL);
		s->magic = 0;	/* not freed: a late launch must not crash */
	}
	__mock_api_exit(&c);
	return r;
}

static CUresult stream_sync(CUstream hs)
{
	struct mock_stream *s;

	if (!inited())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!mock_ctx_check((CUcontext)tls_ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	s = stream_resolve(hs, tls_ctx);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	/* The legacy stream synchronizes with every stream of the context. */
	mock_gpu_sync(s == &tls_ctx->null_stream ?
		      __atomic_load_n(&tls_ctx->max_end_ns, __ATOMIC_ACQUIRE) :
		      __atomic_load_n(&s->ready_ns, __ATOMIC_ACQUIRE));
	mock_sync_cb(CUPTI_CBID_SYNCHRONIZE_STREAM_SYNCHRONIZED, (CUcontext)tls_ctx, hs);
	return CUDA_SUCCESS;
}

MOCK_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	CUresult r;
	cuStreamSynchronize_params p = { hStream };
	struct mock_call c = DCALL(cuStreamSynchronize, &p, &r);

	__mock_api_enter(&c);
	r = stream_sync(hStream);
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
	CUresult r;
	cuStreamSynchronize_ptsz_params p = { hStream };
	struct mock_call c = DCALL(cuStreamSynchronize_ptsz, &p, &r);

	__mock_api_enter(&c);
	r = stream_sync(hStream);
	__mock_api_exit(&c);
	return r;
}

/* ------------------------------------------------------------- modules */

/* Size of an in-memory ELF image: the end of its furthest header or section. */
static size_t elf_image_size(const unsigned char *img)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Shdr *sh;
	size_t end, i;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	end = sizeof(*eh);
	if (eh->e_phoff && eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize > end)
		end = eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize;
	if (eh->e_shoff && eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize > end)
		end = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (eh->e_shentsize != sizeof(Elf64_Shdr))
		return end;
	sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	for (i = 0; eh->e_shoff && i < eh->e_shnum; i++)
		if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_offset + sh[i].sh_size > end)
			end = sh[i].sh_offset + sh[i].sh_size;
	for (i = 0; eh->e_phoff && eh->e_phentsize == sizeof(Elf64_Phdr) && i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(img + eh->e_phoff) + i;
		if (ph->p_offset + ph->p_filesz > end)
			end = ph->p_offset + ph->p_filesz;
	}
	return end;
}

/* A FUNC symbol of the module's .symtab, by name. */
static int elf_find_func(const struct mock_module *m, const char *name,
			 uint32_t *index, uint64_t *size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m->image;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(m->image + eh->e_shoff);
	size_t i, j;

	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr))
		return 0;
	for (i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *st = &sh[i], *str;
		const Elf64_Sym *sym;

		if (st->sh_type != SHT_SYMTAB || st->sh_link >= eh->e_shnum ||
		    st->sh_entsize != sizeof(Elf64_Sym))
			continue;
		str = &sh[st->sh_link];
		if (st->sh_offset + st->sh_size > m->size ||
		    str->sh_offset + str->sh_size > m->size)
			continue;
		sym = (const Elf64_Sym *)(m->image + st->sh_offset);
		for (j = 0; j < st->sh_size / sizeof(*sym); j++) {
			const char *n;

			if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC ||
			    sym[j].st_name >= str->sh_size)
				continue;
			n = (const char *)m->image + str->sh_offset + sym[j].st_name;
			if (strnlen(n, str->sh_size - sym[j].st_name) < str->sh_size - sym[j].st_name &&
			    !strcmp(n, name)) {
				*index = (uint32_t)j;
				*size = sym[j].st_size;
				return 1;
			}
		}
	}
	return 0;
}

static struct mock_module *module_check(CUmodule hmod)
{
	struct mock_module *m = (struct mock_module *)hmod;

	return m && m->magic == MOCK_MODULE_MAGIC ? m : NULL;
}

MOCK_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	CUresult r = CUDA_SUCCESS;
	cuModuleLoadData_params p = { module, image };
	struct mock_call c = DCALL(cuModuleLoadData, &p, &r);
	struct mock_module *m = NULL;
	size_t size;

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!module || !image) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (!mock_ctx_check((CUcontext)tls_ctx)) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else if (!(size = elf_image_size(image))) {
		r = CUDA_ERROR_INVALID_IMAGE;
	} else if (!(m = calloc(1, sizeof(*m))) || !(m->image = malloc(size))) {
		free(m);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		CUpti_ModuleResourceData d;

		memcpy(m->image, image, size);
		m->size = size;
		m->crc = crc32(0L, m->image, (uInt)size);
		m->ctx = tls_ctx;
		pthread_mutex_lock(&mock_obj_mu);
		m->id = next_module_id++;
		pthread_mutex_unlock(&mock_obj_mu);
		m->magic = MOCK_MODULE_MAGIC;
		*module = (CUmodule)m;
		d.moduleId = m->id;
		d.cubinSize = m->size;
		d.pCubin = (const char *)m->image;
		mock_resource(CUPTI_CBID_RESOURCE_MODULE_LOADED, (CUcontext)m->ctx, NULL, &d);
	}
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	CUresult r = CUDA_SUCCESS;
	cuModuleGetFunction_params p = { hfunc, hmod, name };
	struct mock_call c = DCALL(cuModuleGetFunction, &p, &r);
	struct mock_module *m = module_check(hmod);
	struct mock_func *f = NULL;
	uint32_t index;
	uint64_t size;

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (!hfunc || !name) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!m) {
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	pthread_mutex_lock(&mock_obj_mu);
	for (f = m->funcs; f; f = f->next)
		if (!strcmp(f->name, name))
			break;
	if (!f && elf_find_func(m, name, &index, &size) &&
	    (f = calloc(1, sizeof(*f))) && (f->name = strdup(name))) {
		f->index = index;
		f->size = size;
		f->mod = m;
		f->magic = MOCK_FUNC_MAGIC;
		f->next = m->funcs;
		m->funcs = f;
	} else if (f && f->magic != MOCK_FUNC_MAGIC) {
		f = NULL;
	}
	pthread_mutex_unlock(&mock_obj_mu);
	if (f)
		*hfunc = (CUfunction)f;
	else
		r = CUDA_ERROR_NOT_FOUND;
out:
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	CUresult r = CUDA_SUCCESS;
	cuModuleUnload_params p = { hmod };
	struct mock_call c = DCALL(cuModuleUnload, &p, &r);
	struct mock_module *m = module_check(hmod);

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!m) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		CUpti_ModuleResourceData d = { m->id, m->size, (const char *)m->image };
		struct mock_func *f;

		mock_resource(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, (CUcontext)m->ctx,
			      NULL, &d);
		pthread_mutex_lock(&mock_obj_mu);
		m->magic = 0;
		for (f = m->funcs; f; f = f->next)
			f->magic = 0;	/* names stay: records point at them */
		pthread_mutex_unlock(&mock_obj_mu);
		free(m->image);
		m->image = NULL;
	}
	__mock_api_exit(&c);
	return r;
}

/* ------------------------------------------------------------ launches */

static struct mock_func *func_check(CUfunction hf)
{
	struct mock_func *f = (struct mock_func *)hf;

	return f && f->magic == MOCK_FUNC_MAGIC && f->mod && f->mod->magic == MOCK_MODULE_MAGIC ?
	       f : NULL;
}

/* Duration argument of a launch: *(uint64_t *)params[0], or the first 8
 * bytes of a CU_LAUNCH_PARAM_BUFFER_POINTER buffer. */
static CUresult launch_duration(void **params, void **extra, uint64_t *ns)
{
	*ns = MOCK_DEFAULT_KERNEL_NS;
	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (params) {
		if (params[0])
			memcpy(ns, params[0], sizeof(*ns));
		return CUDA_SUCCESS;
	}
	for (size_t i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER && extra[i + 1]) {
			memcpy(ns, extra[i + 1], sizeof(*ns));
		} else if (extra[i] != CU_LAUNCH_PARAM_BUFFER_SIZE &&
			   extra[i] != CU_LAUNCH_PARAM_BUFFER_POINTER) {
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	return CUDA_SUCCESS;
}

CUresult __mock_prepare_kernel(struct mock_launch *l, CUfunction hf,
			       const unsigned int grid[3], const unsigned int block[3],
			       unsigned int shmem, CUstream hs, void **params, void **extra,
			       uint8_t launch_type)
{
	struct mock_func *f;
	struct mock_ctx *ctx = tls_ctx;
	CUresult r;
	int i;

	memset(l, 0, sizeof(*l));
	if (!inited())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!mock_ctx_check((CUcontext)ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	f = func_check(hf);
	if (!f || f->mod->ctx != ctx)
		return CUDA_ERROR_INVALID_HANDLE;
	for (i = 0; i < 3; i++)
		if (!grid[i] || !block[i])
			return CUDA_ERROR_INVALID_VALUE;
	if ((uint64_t)block[0] * block[1] * block[2] > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	l->s = stream_resolve(hs, ctx);
	if (!l->s)
		return CUDA_ERROR_INVALID_HANDLE;
	r = launch_duration(params, extra, &l->one.dur_ns);
	if (r != CUDA_SUCCESS)
		return r;
	l->ctx = ctx;
	l->one.f = f;
	l->one.s = l->s;
	memcpy(l->one.grid, grid, sizeof(l->one.grid));
	memcpy(l->one.block, block, sizeof(l->one.block));
	l->one.shmem = shmem;
	l->one.launch_type = launch_type;
	l->k = &l->one;
	l->n = 1;
	return CUDA_SUCCESS;
}

static CUresult launch_kernel(CUpti_CallbackId cbid, const char *name, const void *params_st,
			      CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			      unsigned int bx, unsigned int by, unsigned int bz,
			      unsigned int shmem, CUstream s, void **params, void **extra,
			      uint8_t launch_type)
{
	CUresult r;
	const unsigned int grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
	struct mock_launch l;
	struct mock_call c = {
		.domain = CUPTI_CB_DOMAIN_DRIVER_API, .cbid = cbid, .name = name,
		.params = params_st, .ret = &r, .ctx = (CUcontext)tls_ctx,
	};

	r = __mock_prepare_kernel(&l, f, grid, block, shmem, s, params, extra, launch_type);
	if (r == CUDA_SUCCESS) {
		c.launch = &l;
		c.symbol = l.one.f->name;
	}
	__mock_api_enter(&c);
	if (r == CUDA_SUCCESS)
		__mock_launch_execute(&c);
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
		unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
		unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
		CUstream hStream, void **kernelParams, void **extra)
{
	cuLaunchKernel_params p = { f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
				    blockDimZ, sharedMemBytes, hStream, kernelParams, extra };

	return launch_kernel(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", &p,
			     f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			     sharedMemBytes, hStream, kernelParams, extra,
			     CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR);
}

MOCK_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
		unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
		unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
		CUstream hStream, void **kernelParams, void **extra)
{
	cuLaunchKernel_ptsz_params p = { f, gridDimX, gridDimY, gridDimZ, blockDimX,
					 blockDimY, blockDimZ, sharedMemBytes, hStream,
					 kernelParams, extra };

	return launch_kernel(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz",
			     &p, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			     blockDimZ, sharedMemBytes, hStream, kernelParams, extra,
			     CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR);
}

MOCK_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
		unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
		unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
		CUstream hStream, void **kernelParams)
{
	cuLaunchCooperativeKernel_params p = { f, gridDimX, gridDimY, gridDimZ, blockDimX,
					       blockDimY, blockDimZ, sharedMemBytes, hStream,
					       kernelParams };

	return launch_kernel(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
			     "cuLaunchCooperativeKernel", &p, f, gridDimX, gridDimY, gridDimZ,
			     blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
			     kernelParams, NULL,
			     CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE);
}

MOCK_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
		unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
		unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
		CUstream hStream, void **kernelParams)
{
	cuLaunchCooperativeKernel_ptsz_params p = { f, gridDimX, gridDimY, gridDimZ,
						    blockDimX, blockDimY, blockDimZ,
						    sharedMemBytes, hStream, kernelParams };

	return launch_kernel(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
			     "cuLaunchCooperativeKernel_ptsz", &p, f, gridDimX, gridDimY,
			     gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
			     kernelParams, NULL,
			     CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE);
}

static CUresult launch_ex(CUpti_CallbackId cbid, const char *name, const void *p,
			  const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	uint8_t type = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;

	if (!config) {
		CUresult r = CUDA_ERROR_INVALID_VALUE;
		struct mock_call c = {
			.domain = CUPTI_CB_DOMAIN_DRIVER_API, .cbid = cbid, .name = name,
			.params = p, .ret = &r, .ctx = (CUcontext)tls_ctx,
		};
		__mock_api_enter(&c);
		__mock_api_exit(&c);
		return r;
	}
	for (unsigned int i = 0; config->attrs && i < config->numAttrs; i++)
		if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE &&
		    config->attrs[i].value.cooperative)
			type = CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE;
	return launch_kernel(cbid, name, p, f, config->gridDimX, config->gridDimY,
			     config->gridDimZ, config->blockDimX, config->blockDimY,
			     config->blockDimZ, config->sharedMemBytes, config->hStream,
			     params, extra, type);
}

MOCK_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
		void **kernelParams, void **extra)
{
	cuLaunchKernelEx_params p = { config, f, kernelParams, extra };

	return launch_ex(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", &p,
			 config, f, kernelParams, extra);
}

MOCK_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
		void **kernelParams, void **extra)
{
	cuLaunchKernelEx_ptsz_params p = { config, f, kernelParams, extra };

	return launch_ex(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, "cuLaunchKernelEx_ptsz",
			 &p, config, f, kernelParams, extra);
}

/* -------------------------------------------------------------- graphs */

static struct mock_graph *graph_check(CUgraph hg)
{
	struct mock_graph *g = (struct mock_graph *)hg;

	return g && g->magic == MOCK_GRAPH_MAGIC ? g : NULL;
}

static struct mock_gexec *gexec_check(CUgraphExec hx)
{
	struct mock_gexec *x = (struct mock_gexec *)hx;

	return x && x->magic == MOCK_GEXEC_MAGIC ? x : NULL;
}

MOCK_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	CUresult r = CUDA_SUCCESS;
	cuGraphCreate_params p = { phGraph, flags };
	struct mock_call c = DCALL(cuGraphCreate, &p, &r);
	struct mock_graph *g;

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!phGraph || flags) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (!(g = calloc(1, sizeof(*g)))) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		CUpti_GraphData d = { .graph = (CUgraph)g };

		pthread_mutex_lock(&mock_obj_mu);
		g->id = next_graph_id++;
		pthread_mutex_unlock(&mock_obj_mu);
		g->tail = &g->nodes;
		g->magic = MOCK_GRAPH_MAGIC;
		*phGraph = (CUgraph)g;
		mock_resource(CUPTI_CBID_RESOURCE_GRAPH_CREATED, (CUcontext)tls_ctx, NULL, &d);
	}
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
		const CUgraphNode *dependencies, size_t numDependencies,
		const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	CUresult r = CUDA_SUCCESS;
	cuGraphAddKernelNode_v2_params p = { phGraphNode, hGraph, dependencies,
					     numDependencies, nodeParams };
	struct mock_call c = DCALL(cuGraphAddKernelNode_v2, &p, &r);
	struct mock_graph *g = graph_check(hGraph);
	struct mock_func *f = nodeParams ? func_check(nodeParams->func) : NULL;
	struct mock_gnode *n = NULL;
	uint64_t dur = 0;
	size_t i;

	if (f)
		c.symbol = f->name;
	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (!phGraphNode || !nodeParams || (numDependencies && !dependencies)) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!g || !f) {
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	for (i = 0; i < numDependencies; i++) {
		const struct mock_gnode *d = (const struct mock_gnode *)dependencies[i];
		if (!d || d->magic != MOCK_GNODE_MAGIC || d->graph != g) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	if (!nodeParams->gridDimX || !nodeParams->gridDimY || !nodeParams->gridDimZ ||
	    !nodeParams->blockDimX || !nodeParams->blockDimY || !nodeParams->blockDimZ) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Kernel arguments are copied when the node is created. */
	r = launch_duration(nodeParams->kernelParams, nodeParams->extra, &dur);
	if (r != CUDA_SUCCESS)
		goto out;
	n = calloc(1, sizeof(*n));
	if (!n) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	n->graph = g;
	n->k.f = f;
	n->k.dur_ns = dur;
	n->k.grid[0] = nodeParams->gridDimX;
	n->k.grid[1] = nodeParams->gridDimY;
	n->k.grid[2] = nodeParams->gridDimZ;
	n->k.block[0] = nodeParams->blockDimX;
	n->k.block[1] = nodeParams->blockDimY;
	n->k.block[2] = nodeParams->blockDimZ;
	n->k.shmem = nodeParams->sharedMemBytes;
	n->k.launch_type = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
	pthread_mutex_lock(&mock_obj_mu);
	n->id = next_node_id++;
	*g->tail = n;
	g->tail = &n->next;
	g->n++;
	pthread_mutex_unlock(&mock_obj_mu);
	n->k.graph_id = g->id;
	n->k.node_id = n->id;
	n->magic = MOCK_GNODE_MAGIC;
	*phGraphNode = (CUgraphNode)n;
	{
		CUpti_GraphData d = { .graph = hGraph, .node = (CUgraphNode)n,
				      .nodeType = CU_GRAPH_NODE_TYPE_KERNEL };
		mock_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, (CUcontext)f->mod->ctx,
			      NULL, &d);
	}
out:
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
		unsigned long long flags)
{
	CUresult r = CUDA_SUCCESS;
	cuGraphInstantiateWithFlags_params p = { phGraphExec, hGraph, flags };
	struct mock_call c = DCALL(cuGraphInstantiateWithFlags, &p, &r);
	struct mock_graph *g = graph_check(hGraph);
	struct mock_gexec *x = NULL;

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!phGraphExec) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (!g) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (!(x = calloc(1, sizeof(*x))) ||
		   !(x->k = calloc(g->n ? g->n : 1, sizeof(*x->k)))) {
		free(x);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		CUpti_GraphData d = { .graph = hGraph };
		struct mock_gnode *n;

		mock_resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATE_STARTING, (CUcontext)tls_ctx,
			      NULL, &d);
		pthread_mutex_lock(&mock_obj_mu);
		for (n = g->nodes; n; n = n->next)
			x->k[x->n++] = n->k;
		x->id = next_gexec_id++;
		pthread_mutex_unlock(&mock_obj_mu);
		x->graph = g;
		x->graph_id = g->id;
		x->magic = MOCK_GEXEC_MAGIC;
		*phGraphExec = (CUgraphExec)x;
		d.graphExec = (CUgraphExec)x;
		mock_resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, (CUcontext)tls_ctx, NULL, &d);
	}
	__mock_api_exit(&c);
	return r;
}

CUresult __mock_prepare_graph(struct mock_launch *l, CUgraphExec hx, CUstream hs)
{
	struct mock_gexec *x = gexec_check(hx);
	struct mock_ctx *ctx = tls_ctx;
	size_t i;

	memset(l, 0, sizeof(*l));
	if (!inited())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!mock_ctx_check((CUcontext)ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!x)
		return CUDA_ERROR_INVALID_HANDLE;
	l->s = stream_resolve(hs, ctx);
	if (!l->s)
		return CUDA_ERROR_INVALID_HANDLE;
	for (i = 0; i < x->n; i++)
		if (x->k[i].f->magic != MOCK_FUNC_MAGIC || x->k[i].f->mod->ctx != ctx)
			return CUDA_ERROR_INVALID_HANDLE;
	l->ctx = ctx;
	l->k = x->k;
	l->n = x->n;
	return CUDA_SUCCESS;
}

static CUresult graph_launch(CUpti_CallbackId cbid, const char *name, const void *p,
			     CUgraphExec hx, CUstream hs)
{
	CUresult r;
	struct mock_launch l;
	struct mock_call c = {
		.domain = CUPTI_CB_DOMAIN_DRIVER_API, .cbid = cbid, .name = name,
		.params = p, .ret = &r, .ctx = (CUcontext)tls_ctx,
	};

	r = __mock_prepare_graph(&l, hx, hs);
	if (r == CUDA_SUCCESS)
		c.launch = &l;
	__mock_api_enter(&c);
	if (r == CUDA_SUCCESS)
		__mock_launch_execute(&c);
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	cuGraphLaunch_params p = { hGraphExec, hStream };

	return graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", &p,
			    hGraphExec, hStream);
}

MOCK_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	cuGraphLaunch_ptsz_params p = { hGraphExec, hStream };

	return graph_launch(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz",
			    &p, hGraphExec, hStream);
}

MOCK_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	CUresult r = CUDA_SUCCESS;
	cuGraphExecDestroy_params p = { hGraphExec };
	struct mock_call c = DCALL(cuGraphExecDestroy, &p, &r);
	struct mock_gexec *x = gexec_check(hGraphExec);

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!x) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		CUpti_GraphData d = { .graph = (CUgraph)x->graph, .graphExec = hGraphExec };

		mock_resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
			      (CUcontext)tls_ctx, NULL, &d);
		x->magic = 0;
		free(x->k);
		free(x);
	}
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
	CUresult r = CUDA_SUCCESS;
	cuGraphDestroy_params p = { hGraph };
	struct mock_call c = DCALL(cuGraphDestroy, &p, &r);
	struct mock_graph *g = graph_check(hGraph);

	__mock_api_enter(&c);
	if (!inited()) {
		r = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!g) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		CUpti_GraphData d = { .graph = hGraph };
		struct mock_gnode *n, *next;

		for (n = g->nodes; n; n = n->next) {
			CUpti_GraphData nd = { .graph = hGraph, .node = (CUgraphNode)n,
					       .nodeType = CU_GRAPH_NODE_TYPE_KERNEL };
			mock_resource(CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING,
				      (CUcontext)tls_ctx, NULL, &nd);
		}
		mock_resource(CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING, (CUcontext)tls_ctx,
			      NULL, &d);
		g->magic = 0;
		for (n = g->nodes; n; n = next) {
			next = n->next;
			n->magic = 0;
			free(n);
		}
		free(g);
	}
	__mock_api_exit(&c);
	return r;
}

/* -------------------------------------------------------------- errors */

static const struct {
	CUresult code;
	const char *name, *text;
} cu_errors[] = {
#define E(c, t) { c, #c, t }
	E(CUDA_SUCCESS, "no error"),
	E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
	E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
	E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
	E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
	E(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"),
	E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
	E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
	E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
	E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
	E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
	E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
	E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
	E(CUDA_ERROR_NOT_READY, "device not ready"),
	E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
	E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
	E(CUDA_ERROR_UNKNOWN, "unknown error"),
#undef E
};

static CUresult error_lookup(CUresult e, const char **pStr, int name)
{
	size_t i;

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < sizeof(cu_errors) / sizeof(cu_errors[0]); i++) {
		if (cu_errors[i].code == e) {
			*pStr = name ? cu_errors[i].name : cu_errors[i].text;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

MOCK_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	CUresult r;
	cuGetErrorString_params p = { error, pStr };
	struct mock_call c = DCALL(cuGetErrorString, &p, &r);

	__mock_api_enter(&c);
	r = error_lookup(error, pStr, 0);
	__mock_api_exit(&c);
	return r;
}

MOCK_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
	CUresult r;
	cuGetErrorName_params p = { error, pStr };
	struct mock_call c = DCALL(cuGetErrorName, &p, &r);

	__mock_api_enter(&c);
	r = error_lookup(error, pStr, 1);
	__mock_api_exit(&c);
	return r;
}
