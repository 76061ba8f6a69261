// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nvtx.c - the NVTX half of libprofd_inject.so: InitializeInjectionNvtx2
 * and one handler per NVTX call.
 *
 * NVTX v3 (header-only, compiled into the program and its libraries)
 * dlopens the library named by NVTX_INJECTION64_PATH at the first NVTX
 * call of each NVTX instance and calls InitializeInjectionNvtx2 with its
 * export table; we write our handlers into the instance's function tables
 * of modules CORE, CORE2, CUDA and CUDART (OpenCL and sync stay no-ops).
 * `profd exec` sets the variable to the same copy as CUDA_INJECTION64_PATH,
 * so a CUDA program loads the library once; an NVTX-only program loads it
 * without CUDA, and nothing here touches CUPTI or the driver.
 *
 * Owns: decoding each call (event attributes: message ASCII, wide or
 * registered, ARGB color, category, payload of each type) into a struct
 * profd_nvtx_event, the values NVTX calls return (push/pop depth per
 * thread and domain, range ids from one counter, domain, string and
 * resource handles), and the fast exit. With no agent (profd:nvtx's
 * semaphore 0) a push or pop is a thread-local counter, one load and a
 * thread-local count of events nobody saw (handed over by the thread's
 * next recorded event, its exit or the process's: an agent attaching
 * late is told what it missed); with
 * an agent the event goes to the thread's batch (nvtx_batch.c), costing
 * no trap until the batch leaves.
 *
 * Handles are small integers cast to pointers: a domain handle is its
 * domain id, a registered string handle its string id; the program never
 * dereferences them.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "nvtx.h"
#include "probes.h"

/* Push depth per thread: the default domain and 63 slots other domains share. */
#define DEPTH_SLOTS 64

static __thread int depth[DEPTH_SLOTS];
static __thread uint64_t unseen;	/* events fired while no agent listened */
static uint64_t next_range;		/* atomic: range ids */
static uint64_t next_resource;		/* atomic: resource handles */

static inline unsigned depth_slot(uint32_t domain)
{
	return domain < DEPTH_SLOTS ? domain : 1 + (domain - 1) % (DEPTH_SLOTS - 1);
}

static inline uint32_t domain_of(nvtxDomainHandle_t d)
{
	return (uint32_t)(uintptr_t)d;
}

static void ev_init(struct profd_nvtx_event *ev, unsigned kind, uint32_t domain)
{
	memset(ev, 0, sizeof(*ev));
	ev->time_ns = inject_now_ns();
	ev->kind = (uint16_t)kind;
	ev->domain_id = domain;
}

/* Does attribute struct a (a->size bytes) hold field f? */
#define HAS(a, f) ((a)->size >= offsetof(nvtxEventAttributes_t, f) + sizeof((a)->f))

/* Category, color, payload and message of an Ex call into ev and m. */
static void attrs_apply(struct profd_nvtx_event *ev, struct nvtx_msg *m,
			const nvtxEventAttributes_t *a)
{
	if (!a)
		return;
	if (HAS(a, category))
		ev->category = a->category;
	if (HAS(a, color) && a->colorType == NVTX_COLOR_ARGB) {
		ev->color = a->color;
		ev->flags |= PROFD_NVTX_F_COLOR;
	}
	if (HAS(a, payload)) {
		switch (a->payloadType) {
		case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		case NVTX_PAYLOAD_TYPE_INT64:
		case NVTX_PAYLOAD_TYPE_DOUBLE:
			ev->payload = a->payload.ullValue;
			ev->payload_type = (uint8_t)a->payloadType;
			break;
		case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		case NVTX_PAYLOAD_TYPE_INT32:
		case NVTX_PAYLOAD_TYPE_FLOAT:
			ev->payload = a->payload.uiValue;
			ev->payload_type = (uint8_t)a->payloadType;
			break;
		default:
			break;
		}
	}
	if (!HAS(a, message))
		return;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		*m = (struct nvtx_msg){ NVTX_MSG_ASCII, a->message.ascii, 0 };
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		*m = (struct nvtx_msg){ NVTX_MSG_UNICODE, a->message.unicode, 0 };
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		*m = (struct nvtx_msg){ NVTX_MSG_REGISTERED, NULL,
					(uint32_t)(uintptr_t)a->message.registered };
		break;
	default:
		break;
	}
}

/*
 * An event while an agent listens: push, pop, start, end or mark. Kept
 * out of line so the no-agent path stays a few instructions.
 */
static __attribute__((noinline, cold)) void
record(unsigned kind, uint32_t domain, uint64_t id, int mtype, const void *p,
       const nvtxEventAttributes_t *a)
{
	struct profd_nvtx_event ev;
	struct nvtx_msg m = { mtype, p, 0 };

	nvtx_unseen_flush();
	ev_init(&ev, kind, domain);
	ev.id = id;
	attrs_apply(&ev, &m, a);
	nvtx_batch_event(&ev, &m);
}

#define AGENT() __builtin_expect(PROBE_ON(nvtx), 0)

void nvtx_unseen_forget(void)
{
	unseen = 0;
}

void nvtx_unseen_flush(void)
{
	if (unseen) {
		nvtx_batch_unseen(unseen);
		unseen = 0;
	}
}

static pthread_key_t unseen_key;
static pthread_once_t unseen_once = PTHREAD_ONCE_INIT;
static int unseen_key_ok;

static void unseen_thread_exit(void *arg)
{
	(void)arg;
	nvtx_unseen_flush();	/* a thread gone before an agent came */
}

static void unseen_key_init(void)
{
	unseen_key_ok = pthread_key_create(&unseen_key, unseen_thread_exit) == 0;
}

/* A thread's first unseen event: have its count handed over at its exit. */
static __attribute__((noinline, cold)) void unseen_first(void)
{
	pthread_once(&unseen_once, unseen_key_init);
	if (unseen_key_ok)
		pthread_setspecific(unseen_key, &unseen);
}

#define UNSEEN() do { if (!unseen++) unseen_first(); } while (0)

static inline int push(uint32_t domain, int mtype, const void *p,
		       const nvtxEventAttributes_t *a)
{
	int level = depth[depth_slot(domain)]++;

	if (AGENT())
		record(PROFD_NVTX_PUSH, domain, 0, mtype, p, a);
	else
		UNSEEN();
	return level;
}

static inline int pop(uint32_t domain)
{
	int *d = &depth[depth_slot(domain)];
	int level = *d > 0 ? --*d : -1;

	if (AGENT())
		record(PROFD_NVTX_POP, domain, 0, 0, NULL, NULL);
	else
		UNSEEN();
	return level;
}

static inline nvtxRangeId_t start(uint32_t domain, int mtype, const void *p,
				  const nvtxEventAttributes_t *a)
{
	uint64_t id = __atomic_add_fetch(&next_range, 1, __ATOMIC_RELAXED);

	if (AGENT())
		record(PROFD_NVTX_START, domain, id, mtype, p, a);
	else
		UNSEEN();
	return id;
}

static inline void end(uint32_t domain, nvtxRangeId_t id)
{
	if (AGENT())
		record(PROFD_NVTX_END, domain, id, 0, NULL, NULL);
	else
		UNSEEN();
}

static inline void mark(uint32_t domain, int mtype, const void *p,
			const nvtxEventAttributes_t *a)
{
	if (AGENT())
		record(PROFD_NVTX_MARK, domain, 0, mtype, p, a);
	else
		UNSEEN();
}

/* --- CORE --- */

static void h_mark_ex(const nvtxEventAttributes_t *a) { mark(0, 0, NULL, a); }
static void h_mark_a(const char *s) { mark(0, NVTX_MSG_ASCII, s, NULL); }
static void h_mark_w(const wchar_t *s) { mark(0, NVTX_MSG_UNICODE, s, NULL); }

static nvtxRangeId_t h_start_ex(const nvtxEventAttributes_t *a)
{
	return start(0, 0, NULL, a);
}

static nvtxRangeId_t h_start_a(const char *s) { return start(0, NVTX_MSG_ASCII, s, NULL); }
static nvtxRangeId_t h_start_w(const wchar_t *s) { return start(0, NVTX_MSG_UNICODE, s, NULL); }
static void h_end(nvtxRangeId_t id) { end(0, id); }
static int h_push_ex(const nvtxEventAttributes_t *a) { return push(0, 0, NULL, a); }
static int h_push_a(const char *s) { return push(0, NVTX_MSG_ASCII, s, NULL); }
static int h_push_w(const wchar_t *s) { return push(0, NVTX_MSG_UNICODE, s, NULL); }
static int h_pop(void) { return pop(0); }

/* A rare naming call: kind of ev, ids, and the name. */
static void name(unsigned kind, uint32_t domain, uint64_t id, uint32_t category,
		 int mtype, const void *p)
{
	struct profd_nvtx_event ev;
	struct nvtx_msg m = { mtype, p, 0 };

	ev_init(&ev, kind, domain);
	ev.id = id;
	ev.category = category;
	nvtx_batch_define(&ev, &m, 0, 0);
}

static void h_name_category_a(uint32_t c, const char *s)
{
	name(PROFD_NVTX_NAME_CATEGORY, 0, 0, c, NVTX_MSG_ASCII, s);
}

static void h_name_category_w(uint32_t c, const wchar_t *s)
{
	name(PROFD_NVTX_NAME_CATEGORY, 0, 0, c, NVTX_MSG_UNICODE, s);
}

static void h_name_thread_a(uint32_t tid, const char *s)
{
	name(PROFD_NVTX_NAME_THREAD, 0, tid, 0, NVTX_MSG_ASCII, s);
}

static void h_name_thread_w(uint32_t tid, const wchar_t *s)
{
	name(PROFD_NVTX_NAME_THREAD, 0, tid, 0, NVTX_MSG_UNICODE, s);
}

/* --- CORE2: domains --- */

static void h_domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	mark(domain_of(d), 0, NULL, a);
}

static nvtxRangeId_t h_domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return start(domain_of(d), 0, NULL, a);
}

static void h_domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { end(domain_of(d), id); }

static int h_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return push(domain_of(d), 0, NULL, a);
}

static int h_domain_pop(nvtxDomainHandle_t d) { return pop(domain_of(d)); }

static nvtxResourceHandle_t h_resource_create(nvtxDomainHandle_t d,
					      nvtxResourceAttributes_t *a)
{
	uint64_t h = __atomic_add_fetch(&next_resource, 1, __ATOMIC_RELAXED);
	struct profd_nvtx_event ev;
	struct nvtx_msg m = { 0 };

	ev_init(&ev, PROFD_NVTX_NAME_RESOURCE, domain_of(d));
	ev.category = PROFD_NVTX_RES_GENERIC;
	if (a && a->size >= sizeof(*a)) {
		ev.id = a->identifier.ullValue;
		ev.payload = (uint32_t)a->identifierType;	/* NVTX_RESOURCE_TYPE_* */
		if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
			m = (struct nvtx_msg){ NVTX_MSG_ASCII, a->message.ascii, 0 };
		else if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE)
			m = (struct nvtx_msg){ NVTX_MSG_UNICODE, a->message.unicode, 0 };
		else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
			m = (struct nvtx_msg){ NVTX_MSG_REGISTERED, NULL,
					       (uint32_t)(uintptr_t)a->message.registered };
	}
	nvtx_batch_define(&ev, &m, 0, h);
	return (nvtxResourceHandle_t)(uintptr_t)h;
}

static void h_resource_destroy(nvtxResourceHandle_t r)
{
	if (r)
		nvtx_batch_forget(0, (uint64_t)(uintptr_t)r, NULL);
}

static void h_domain_category_a(nvtxDomainHandle_t d, uint32_t c, const char *s)
{
	name(PROFD_NVTX_NAME_CATEGORY, domain_of(d), 0, c, NVTX_MSG_ASCII, s);
}

static void h_domain_category_w(nvtxDomainHandle_t d, uint32_t c, const wchar_t *s)
{
	name(PROFD_NVTX_NAME_CATEGORY, domain_of(d), 0, c, NVTX_MSG_UNICODE, s);
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t d, int mtype, const void *p)
{
	struct profd_nvtx_event ev;
	struct nvtx_msg m = { mtype, p, 0 };
	uint32_t id = nvtx_new_string_id();

	ev_init(&ev, PROFD_NVTX_STRING, domain_of(d));
	nvtx_batch_define(&ev, &m, id, 0);
	return (nvtxStringHandle_t)(uintptr_t)id;
}

static nvtxStringHandle_t h_register_a(nvtxDomainHandle_t d, const char *s)
{
	return register_string(d, NVTX_MSG_ASCII, s);
}

static nvtxStringHandle_t h_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
	return register_string(d, NVTX_MSG_UNICODE, s);
}

static nvtxDomainHandle_t h_domain_create_a(const char *s)
{
	struct nvtx_msg m = { NVTX_MSG_ASCII, s, 0 };

	return (nvtxDomainHandle_t)(uintptr_t)nvtx_batch_domain(&m);
}

static nvtxDomainHandle_t h_domain_create_w(const wchar_t *s)
{
	struct nvtx_msg m = { NVTX_MSG_UNICODE, s, 0 };

	return (nvtxDomainHandle_t)(uintptr_t)nvtx_batch_domain(&m);
}

static void h_domain_destroy(nvtxDomainHandle_t d)
{
	struct profd_nvtx_event ev;

	if (!d)
		return;
	ev_init(&ev, PROFD_NVTX_DOMAIN_DESTROY, domain_of(d));
	nvtx_batch_forget(domain_of(d), 0, &ev);
}

static void h_initialize(const void *reserved) { (void)reserved; }

/* --- CUDA and CUDART resource names --- */

#define RES_NAME(fn, type, kind, ctype)						\
	static void fn##_a(type h, const char *s)				\
	{									\
		name(PROFD_NVTX_NAME_RESOURCE, 0, (uint64_t)(ctype)h, kind,	\
		     NVTX_MSG_ASCII, s);					\
	}									\
	static void fn##_w(type h, const wchar_t *s)				\
	{									\
		name(PROFD_NVTX_NAME_RESOURCE, 0, (uint64_t)(ctype)h, kind,	\
		     NVTX_MSG_UNICODE, s);					\
	}

RES_NAME(h_cu_device, nvtx_CUdevice, PROFD_NVTX_RES_CUDA_DEVICE, int64_t)
RES_NAME(h_cu_context, nvtx_CUcontext, PROFD_NVTX_RES_CUDA_CONTEXT, uintptr_t)
RES_NAME(h_cu_stream, nvtx_CUstream, PROFD_NVTX_RES_CUDA_STREAM, uintptr_t)
RES_NAME(h_cu_event, nvtx_CUevent, PROFD_NVTX_RES_CUDA_EVENT, uintptr_t)
RES_NAME(h_cuda_device, int, PROFD_NVTX_RES_CUDA_DEVICE, int64_t)
RES_NAME(h_cuda_stream, nvtx_cudaStream_t, PROFD_NVTX_RES_CUDA_STREAM, uintptr_t)
RES_NAME(h_cuda_event, nvtx_cudaEvent_t, PROFD_NVTX_RES_CUDA_EVENT, uintptr_t)

/* --- the export table --- */

#define FN(f) ((NvtxFunctionPointer)(f))

static const NvtxFunctionPointer core_fns[NVTX_CBID_CORE_SIZE] = {
	[NVTX_CBID_CORE_MarkEx] = FN(h_mark_ex),
	[NVTX_CBID_CORE_MarkA] = FN(h_mark_a),
	[NVTX_CBID_CORE_MarkW] = FN(h_mark_w),
	[NVTX_CBID_CORE_RangeStartEx] = FN(h_start_ex),
	[NVTX_CBID_CORE_RangeStartA] = FN(h_start_a),
	[NVTX_CBID_CORE_RangeStartW] = FN(h_start_w),
	[NVTX_CBID_CORE_RangeEnd] = FN(h_end),
	[NVTX_CBID_CORE_RangePushEx] = FN(h_push_ex),
	[NVTX_CBID_CORE_RangePushA] = FN(h_push_a),
	[NVTX_CBID_CORE_RangePushW] = FN(h_push_w),
	[NVTX_CBID_CORE_RangePop] = FN(h_pop),
	[NVTX_CBID_CORE_NameCategoryA] = FN(h_name_category_a),
	[NVTX_CBID_CORE_NameCategoryW] = FN(h_name_category_w),
	[NVTX_CBID_CORE_NameOsThreadA] = FN(h_name_thread_a),
	[NVTX_CBID_CORE_NameOsThreadW] = FN(h_name_thread_w),
};

static const NvtxFunctionPointer core2_fns[NVTX_CBID_CORE2_SIZE] = {
	[NVTX_CBID_CORE2_DomainMarkEx] = FN(h_domain_mark_ex),
	[NVTX_CBID_CORE2_DomainRangeStartEx] = FN(h_domain_start_ex),
	[NVTX_CBID_CORE2_DomainRangeEnd] = FN(h_domain_end),
	[NVTX_CBID_CORE2_DomainRangePushEx] = FN(h_domain_push_ex),
	[NVTX_CBID_CORE2_DomainRangePop] = FN(h_domain_pop),
	[NVTX_CBID_CORE2_DomainResourceCreate] = FN(h_resource_create),
	[NVTX_CBID_CORE2_DomainResourceDestroy] = FN(h_resource_destroy),
	[NVTX_CBID_CORE2_DomainNameCategoryA] = FN(h_domain_category_a),
	[NVTX_CBID_CORE2_DomainNameCategoryW] = FN(h_domain_category_w),
	[NVTX_CBID_CORE2_DomainRegisterStringA] = FN(h_register_a),
	[NVTX_CBID_CORE2_DomainRegisterStringW] = FN(h_register_w),
	[NVTX_CBID_CORE2_DomainCreateA] = FN(h_domain_create_a),
	[NVTX_CBID_CORE2_DomainCreateW] = FN(h_domain_create_w),
	[NVTX_CBID_CORE2_DomainDestroy] = FN(h_domain_destroy),
	[NVTX_CBID_CORE2_Initialize] = FN(h_initialize),
};

static const NvtxFunctionPointer cuda_fns[NVTX_CBID_CUDA_SIZE] = {
	[NVTX_CBID_CUDA_NameCuDeviceA] = FN(h_cu_device_a),
	[NVTX_CBID_CUDA_NameCuDeviceW] = FN(h_cu_device_w),
	[NVTX_CBID_CUDA_NameCuContextA] = FN(h_cu_context_a),
	[NVTX_CBID_CUDA_NameCuContextW] = FN(h_cu_context_w),
	[NVTX_CBID_CUDA_NameCuStreamA] = FN(h_cu_stream_a),
	[NVTX_CBID_CUDA_NameCuStreamW] = FN(h_cu_stream_w),
	[NVTX_CBID_CUDA_NameCuEventA] = FN(h_cu_event_a),
	[NVTX_CBID_CUDA_NameCuEventW] = FN(h_cu_event_w),
};

static const NvtxFunctionPointer cudart_fns[NVTX_CBID_CUDART_SIZE] = {
	[NVTX_CBID_CUDART_NameCudaDeviceA] = FN(h_cuda_device_a),
	[NVTX_CBID_CUDART_NameCudaDeviceW] = FN(h_cuda_device_w),
	[NVTX_CBID_CUDART_NameCudaStreamA] = FN(h_cuda_stream_a),
	[NVTX_CBID_CUDART_NameCudaStreamW] = FN(h_cuda_stream_w),
	[NVTX_CBID_CUDART_NameCudaEventA] = FN(h_cuda_event_a),
	[NVTX_CBID_CUDART_NameCudaEventW] = FN(h_cuda_event_w),
};

/*
 * Write fns (n entries, index = callback id) into the instance's table of
 * module mod. Returns 0, or -1 when NVTX has no such table.
 */
static int install(const NvtxExportTableCallbacks *cb, NvtxCallbackModule mod,
		   const NvtxFunctionPointer *fns, unsigned n)
{
	NvtxFunctionTable table = NULL;
	unsigned size = 0, i;

	if (!cb->GetModuleFunctionTable(mod, &table, &size) || !table)
		return -1;
	/* size: the module's callback ids; table[0] and table[size] are unused */
	for (i = 1; i < n && i < size; i++)
		if (fns[i] && table[i])
			*table[i] = fns[i];
	return 0;
}

__attribute__((visibility("default"))) int
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

/*
 * InitializeInjectionNvtx2 - NVTX's entry point, called once per NVTX
 * instance (each library or program that includes the NVTX headers) at
 * its first NVTX call. Returns 1 when our handlers are in place, 0 when
 * the export table is unusable (NVTX then unloads us and makes every call
 * a no-op).
 */
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
	const NvtxExportTableCallbacks *cb;
	const NvtxExportTableVersionInfo *vi;
	const char *v;

	if (!get_export_table)
		return 0;
	cb = get_export_table(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;

	/* NVTX-only programs never run InitializeInjection's settings */
	v = getenv("PROFD_INJECT_VERBOSE");
	if (v && *v && strcmp(v, "0"))
		inject_cfg.verbose = 1;
	nvtx_batch_init();

	if (install(cb, NVTX_CB_MODULE_CORE, core_fns, NVTX_CBID_CORE_SIZE) < 0)
		return 0;
	install(cb, NVTX_CB_MODULE_CORE2, core2_fns, NVTX_CBID_CORE2_SIZE);
	install(cb, NVTX_CB_MODULE_CUDA, cuda_fns, NVTX_CBID_CUDA_SIZE);
	install(cb, NVTX_CB_MODULE_CUDART, cudart_fns, NVTX_CBID_CUDART_SIZE);

	vi = get_export_table(NVTX_ETID_VERSIONINFO);
	if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
		vi->SetInjectionNvtxVersion(NVTX_VERSION);
	inject_log("nvtx: injection initialized (NVTX version %u)",
		   vi && vi->struct_size >= sizeof(*vi) ? vi->version : 0);
	return 1;
}
