/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mock_internal.h - private interface of the GPU mocks (tests only).
 *
 * Owns: the objects of the mock driver (contexts, streams, modules,
 * functions, graphs) and the hidden interface between the mock driver
 * libcuda.so.1 (which also holds the whole mock CUPTI state: callbacks,
 * activity buffers, PC sampling, the MOCK_CUPTI_LOG oracle), the thin
 * mock libcupti.so (forwards every cupti* call to the __mockcupti_*
 * functions here) and the mock libcudart.so (reports runtime API calls
 * through __mock_api_enter/__mock_api_exit).
 *
 * Nothing here is NVIDIA API; every name starts with mock_ or __mock.
 */
#ifndef PROFD_TESTS_GPU_MOCK_INTERNAL_H
#define PROFD_TESTS_GPU_MOCK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

#define MOCK_EXPORT __attribute__((visibility("default")))
#define MOCK_HIDDEN __attribute__((visibility("hidden")))

#define MOCK_CTX_MAGIC		0x43545821u	/* "CTX!" */
#define MOCK_CTX_DEAD		0x44454144u
#define MOCK_STREAM_MAGIC	0x5354524du
#define MOCK_MODULE_MAGIC	0x4d4f4455u
#define MOCK_FUNC_MAGIC		0x46554e43u
#define MOCK_GRAPH_MAGIC	0x47524150u
#define MOCK_GNODE_MAGIC	0x474e4f44u
#define MOCK_GEXEC_MAGIC	0x47455845u

/* Id of every context's NULL (legacy default) stream, as CUPTI reports it. */
#define MOCK_DEFAULT_STREAM_ID	7u
/* Duration of a kernel launched without a duration argument. */
#define MOCK_DEFAULT_KERNEL_NS	1000ull

struct mock_pcs;

struct mock_stream {
	uint32_t magic;
	uint32_t id;			/* CUPTI stream id */
	struct mock_ctx *ctx;
	uint64_t ready_ns;		/* mock GPU clock: end of the last kernel */
};

struct mock_ctx {
	uint32_t magic;
	uint32_t id;			/* CUPTI context id / contextUid, from 1 */
	int device;
	struct mock_stream null_stream;
	uint64_t max_end_ns;		/* latest kernel end on any of its streams */
	struct mock_pcs *pcs;		/* PC sampling state, NULL: not enabled */
	struct mock_ctx *all_next;	/* every context ever created (never freed) */
};

struct mock_module;

struct mock_func {
	uint32_t magic;
	uint32_t index;			/* symbol index in the cubin's .symtab */
	struct mock_module *mod;
	const char *name;		/* never freed: activity records point at it */
	uint64_t size;			/* st_size of the symbol */
	struct mock_func *next;
};

struct mock_module {
	uint32_t magic;
	uint32_t id;			/* CUpti_ModuleResourceData.moduleId */
	struct mock_ctx *ctx;
	unsigned char *image;		/* the driver's copy of the cubin */
	size_t size;
	uint64_t crc;			/* crc32 (zlib) of image[0..size) */
	struct mock_func *funcs;
};

/* One kernel execution: what an activity record is made from. */
struct mock_kexec {
	struct mock_func *f;
	struct mock_stream *s;
	uint64_t dur_ns;
	uint32_t grid[3], block[3];
	uint32_t shmem;
	uint8_t launch_type;		/* CUpti_ActivityLaunchType */
	uint32_t graph_id;
	uint64_t node_id;
};

struct mock_gnode {
	uint32_t magic;
	uint64_t id;			/* CUPTI graph node id, unique per process */
	struct mock_graph *graph;
	struct mock_kexec k;		/* .s filled at launch */
	struct mock_gnode *next;
};

struct mock_graph {
	uint32_t magic;
	uint32_t id;			/* CUPTI graph id, from 1 */
	struct mock_gnode *nodes, **tail;
	size_t n;
};

struct mock_gexec {
	uint32_t magic;
	uint32_t id;
	struct mock_graph *graph;
	uint32_t graph_id;
	size_t n;
	struct mock_kexec *k;		/* snapshot of the kernel nodes */
};

/* A launch: one kernel, or the kernels of a graph, on one stream. */
struct mock_launch {
	struct mock_ctx *ctx;
	struct mock_stream *s;
	size_t n;
	struct mock_kexec *k;
	struct mock_kexec one;
	int executed;
};

/*
 * One API call in flight, on the caller's stack, linked per thread.
 * Fill domain..ctx (and launch for a launch), then __mock_api_enter,
 * do the work, __mock_api_exit.
 */
struct mock_call {
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	const char *name;
	const void *params;
	void *ret;			/* CUresult* or cudaError_t* */
	const char *symbol;		/* kernel name for launches */
	CUcontext ctx;
	struct mock_launch *launch;
	/* set by __mock_api_enter */
	uint32_t corr;
	uint8_t entered;
	uint64_t corr_data;
	struct mock_call *outer;
};

/* --- exported by libcuda.so.1 for libcudart.so / libcupti.so --- */
MOCK_EXPORT void __mock_api_enter(struct mock_call *c);
MOCK_EXPORT void __mock_api_exit(struct mock_call *c);
/* Runs the launch unless an outer runtime launch call of this thread ran it. */
MOCK_EXPORT void __mock_launch_execute(struct mock_call *c);
/* Fills *l for a kernel launch; CUDA_SUCCESS or the error cuLaunchKernel returns. */
MOCK_EXPORT CUresult __mock_prepare_kernel(struct mock_launch *l, CUfunction f,
		const unsigned int grid[3], const unsigned int block[3],
		unsigned int shmem, CUstream s, void **params, void **extra,
		uint8_t launch_type);
MOCK_EXPORT CUresult __mock_prepare_graph(struct mock_launch *l, CUgraphExec g,
		CUstream s);
/* The calling thread's current context, without reporting an API call. */
MOCK_EXPORT CUcontext __mock_current_ctx(void);

/* --- inside libcuda.so.1: driver <-> CUPTI core --- */
MOCK_HIDDEN extern int mock_device_count;
MOCK_HIDDEN extern pthread_mutex_t mock_obj_mu;		/* object lists */
MOCK_HIDDEN extern struct mock_ctx *mock_all_ctx;	/* under mock_obj_mu */
MOCK_HIDDEN struct mock_ctx *mock_ctx_check(CUcontext c);
MOCK_HIDDEN struct mock_ctx *mock_ctx_current(void);
MOCK_HIDDEN uint64_t mock_now_ns(void);
MOCK_HIDDEN void mock_resource(CUpti_CallbackId cbid, CUcontext ctx, CUstream s,
		void *descriptor);
MOCK_HIDDEN void mock_sync_cb(CUpti_CallbackId cbid, CUcontext ctx, CUstream s);
MOCK_HIDDEN void mock_gpu_sync(uint64_t until_ns);
MOCK_HIDDEN void mock_execute(struct mock_launch *l, uint32_t corr, int early);
MOCK_HIDDEN void mock_ctx_destroying(struct mock_ctx *ctx);

/* --- the CUPTI API, implemented in libcuda.so.1, forwarded by libcupti.so --- */
#define MOCK_CUPTI_FUNCS(X) \
	X(cuptiSubscribe, (CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud), (s, cb, ud)) \
	X(cuptiUnsubscribe, (CUpti_SubscriberHandle s), (s)) \
	X(cuptiEnableCallback, (uint32_t en, CUpti_SubscriberHandle s, CUpti_CallbackDomain d, CUpti_CallbackId cbid), (en, s, d, cbid)) \
	X(cuptiEnableDomain, (uint32_t en, CUpti_SubscriberHandle s, CUpti_CallbackDomain d), (en, s, d)) \
	X(cuptiGetResultString, (CUptiResult r, const char **str), (r, str)) \
	X(cuptiActivityRegisterCallbacks, (CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc comp), (req, comp)) \
	X(cuptiActivityEnable, (CUpti_ActivityKind k), (k)) \
	X(cuptiActivityDisable, (CUpti_ActivityKind k), (k)) \
	X(cuptiActivityFlushAll, (uint32_t flag), (flag)) \
	X(cuptiActivityFlushPeriod, (uint32_t ms), (ms)) \
	X(cuptiActivityGetNextRecord, (uint8_t *buf, size_t valid, CUpti_Activity **rec), (buf, valid, rec)) \
	X(cuptiActivityGetNumDroppedRecords, (CUcontext ctx, uint32_t sid, size_t *dropped), (ctx, sid, dropped)) \
	X(cuptiGetCubinCrc, (CUpti_GetCubinCrcParams *p), (p)) \
	X(cuptiGetDeviceId, (CUcontext ctx, uint32_t *dev), (ctx, dev)) \
	X(cuptiGetTimestamp, (uint64_t *ts), (ts)) \
	X(cuptiFinalize, (void), ()) \
	X(cuptiPCSamplingGetNumStallReasons, (CUpti_PCSamplingGetNumStallReasonsParams *p), (p)) \
	X(cuptiPCSamplingGetStallReasons, (CUpti_PCSamplingGetStallReasonsParams *p), (p)) \
	X(cuptiPCSamplingSetConfigurationAttribute, (CUpti_PCSamplingConfigurationInfoParams *p), (p)) \
	X(cuptiPCSamplingGetConfigurationAttribute, (CUpti_PCSamplingConfigurationInfoParams *p), (p)) \
	X(cuptiPCSamplingEnable, (CUpti_PCSamplingEnableParams *p), (p)) \
	X(cuptiPCSamplingDisable, (CUpti_PCSamplingDisableParams *p), (p)) \
	X(cuptiPCSamplingStart, (CUpti_PCSamplingStartParams *p), (p)) \
	X(cuptiPCSamplingStop, (CUpti_PCSamplingStopParams *p), (p)) \
	X(cuptiPCSamplingGetData, (CUpti_PCSamplingGetDataParams *p), (p))

#define MOCK_DECLARE_CUPTI(name, proto, args) \
	MOCK_EXPORT CUptiResult __mock_##name proto;
MOCK_CUPTI_FUNCS(MOCK_DECLARE_CUPTI)
#undef MOCK_DECLARE_CUPTI

#endif /* PROFD_TESTS_GPU_MOCK_INTERNAL_H */
