/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_events.h - the contract between the CUDA injection library
 * (inject/), profd's GPU BPF programs (bpf/gpu.bpf.h) and user space
 * (src/gpu/).
 *
 * Owns: the USDT probes of provider "profd" the injection library fires,
 * the fixed-size payload structs those probes point at, and the records
 * the BPF programs forward through the `cupti_events` ringbuf.
 *
 * Probes (all with a semaphore; the library does no work for a probe
 * whose semaphore is zero, i.e. when no agent is attached):
 *
 *   profd:launch(u64 correlation_id, u32 cbid, u32 flags)
 *	A kernel or graph launch whose CPU stack is wanted (the library's
 *	per-thread token bucket had a token), fired in the launching thread
 *	at API entry: BPF captures the CPU stack with the CPU sampler's
 *	unwinder (a struct profd_sample of origin PROFD_ORIGIN_PROBE,
 *	cookie = correlation id, in the `events` ringbuf). Without
 *	PROFD_GPU_LAUNCH_STACK in flags, BPF forwards a struct
 *	profd_gpu_launch record instead.
 *   profd:launches(const struct profd_gpu_launch_rec *v, u32 n)
 *	Launches without a stack (bucket empty), batched per thread so
 *	they cost no trap each; flushed when a batch fills, every
 *	PROFD_ACTIVITY_FLUSH_MS and at thread and process exit.
 *   profd:kernels(const struct profd_gpu_kernel *v, u32 n)
 *   profd:pc_samples(const struct profd_gpu_pc_sample *v, u32 n)
 *   profd:stall_reasons(const struct profd_gpu_stall_reason *v, u32 n)
 *   profd:cubin(const struct profd_gpu_cubin *v, u32 n)
 *   profd:device(const struct profd_gpu_device *v, u32 n)
 *   profd:error(const struct profd_gpu_error *v, u32 n)
 *	Batches of n fixed-size structs (n <= PROFD_GPU_BATCH_MAX); BPF
 *	copies them as one record (struct profd_gpu_batch + n structs).
 *   profd:name(u32 name_id, const char *name)
 *	A string the library interned (kernel and SASS function names),
 *	fired once per name per process when first seen with an agent
 *	attached. BPF copies at most PROFD_GPU_NAME_MAX - 1 bytes
 *	(struct profd_gpu_name). Records name strings by id so batches stay
 *	fixed-size; each struct also carries the string's address, which
 *	stays valid for the life of the process, so user space can read a
 *	name it missed (agent attached later) from process memory.
 *   profd:nvtx(const struct profd_nvtx_event *v, u32 n)
 *	NVTX ranges, marks and names, batched per thread
 *	(n <= PROFD_NVTX_BATCH_MAX); see bpf/nvtx_events.h. Forwarded like
 *	the batches above, as record type PROFD_EVENT_NVTX.
 *
 * Every ringbuf record starts with a __u32 event type from
 * enum profd_event_type (bpf/profd.h). All ids are the process's own
 * (CUPTI correlation ids are unique per process, not per host).
 */
#ifndef PROFD_BPF_GPU_EVENTS_H
#define PROFD_BPF_GPU_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "nvtx_events.h"

#define PROFD_USDT_PROVIDER	"profd"

/* Most structs one batch probe carries. */
#define PROFD_GPU_BATCH_MAX	64
/* Longest name string forwarded, terminating NUL included. */
#define PROFD_GPU_NAME_MAX	1024

/* Record types in the cupti_events ringbuf (continue enum profd_event_type). */
enum profd_gpu_event_type {
	PROFD_EVENT_GPU_LAUNCH = 16,		/* struct profd_gpu_launch */
	PROFD_EVENT_GPU_KERNELS = 17,		/* batch of struct profd_gpu_kernel */
	PROFD_EVENT_GPU_NAME = 18,		/* struct profd_gpu_name */
	PROFD_EVENT_GPU_CUBIN = 19,		/* batch of struct profd_gpu_cubin */
	PROFD_EVENT_GPU_PC_SAMPLES = 20,	/* batch of struct profd_gpu_pc_sample */
	PROFD_EVENT_GPU_STALL_REASONS = 21,	/* batch of struct profd_gpu_stall_reason */
	PROFD_EVENT_GPU_DEVICE = 22,		/* batch of struct profd_gpu_device */
	PROFD_EVENT_GPU_ERROR = 23,		/* batch of struct profd_gpu_error */
	PROFD_EVENT_GPU_LAUNCHES = 24,		/* batch of struct profd_gpu_launch_rec */
};

/* profd:launch flags */
#define PROFD_GPU_LAUNCH_STACK	(1u << 0)	/* capture the CPU stack */
#define PROFD_GPU_LAUNCH_GRAPH	(1u << 1)	/* cudaGraphLaunch/cuGraphLaunch */

/* Header of every batch record: then n structs of the event's type. */
struct profd_gpu_batch {
	__u32 type;		/* enum profd_gpu_event_type */
	__u32 pid;		/* thread group id of the firing process */
	__u32 tid;
	__u32 n;		/* structs that follow */
	__u64 ktime_ns;		/* bpf_ktime_get_ns() at the probe */
};

/* A launch whose stack was not captured (token bucket empty). */
struct profd_gpu_launch {
	__u32 type;		/* PROFD_EVENT_GPU_LAUNCH */
	__u32 pid;
	__u32 tid;
	__u32 flags;		/* PROFD_GPU_LAUNCH_* */
	__u64 correlation_id;
	__u64 ktime_ns;
	char comm[16];
};

/* A launch without a stack, in a profd:launches batch. 16 bytes. */
struct profd_gpu_launch_rec {
	__u64 correlation_id;
	__u32 tid;		/* the launching thread */
	__u32 flags;		/* PROFD_GPU_LAUNCH_* (never _STACK) */
};

/* A string the library interned. */
struct profd_gpu_name {
	__u32 type;		/* PROFD_EVENT_GPU_NAME */
	__u32 pid;
	__u32 name_id;
	__u32 len;		/* bytes that follow, NUL included; == PROFD_GPU_NAME_MAX: cut */
	/* followed by the NUL-terminated name */
};

/* One kernel execution (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL). 64 bytes. */
struct profd_gpu_kernel {
	__u64 start_ns;		/* GPU timestamps (CUPTI clock), ns */
	__u64 end_ns;
	__u64 graph_node_id;	/* 0: not launched from a graph */
	__u64 name_ptr;		/* address of the name string in the process */
	__u32 correlation_id;	/* the launching API call's */
	__u32 device_id;
	__u32 stream_id;
	__u32 graph_id;		/* 0: not launched from a graph */
	__u32 name_id;		/* profd:name id of the (mangled) kernel name */
	__u32 context_id;
	__u32 _pad[2];
};

/* A loaded module's cubin, copied and kept by the library. 32 bytes. */
struct profd_gpu_cubin {
	__u64 crc;		/* cuptiGetCubinCrc: the key PC samples use */
	__u64 image_ptr;	/* the library's copy, valid for the process's life */
	__u64 size;		/* bytes */
	__u32 module_id;
	__u32 flags;		/* PROFD_GPU_CUBIN_* */
};
#define PROFD_GPU_CUBIN_NOT_KEPT (1u << 0)	/* over the library's copy budget:
						 * image_ptr is 0 */

/* One (pc, stall reason) count of PC sampling. 40 bytes. */
struct profd_gpu_pc_sample {
	__u64 cubin_crc;
	__u64 pc_offset;	/* offset in the function, bytes */
	__u32 samples;
	__u32 stall_reason;	/* pcSamplingStallReasonIndex */
	__u32 function_name_id;	/* profd:name id */
	__u32 function_index;
	__u32 correlation_id;	/* the kernel's launch (0 if unknown) */
	__u32 device_id;
};

/* One entry of a device's stall-reason table. 64 bytes. */
struct profd_gpu_stall_reason {
	__u32 index;		/* pcSamplingStallReasonIndex */
	__u32 device_id;
	char name[56];		/* NUL-terminated, cut to fit */
};

/* A device's configuration, sent when a context is created on it. */
struct profd_gpu_device {
	__u32 device_id;
	__u32 sm_count;			/* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
	__u32 clock_khz;		/* CU_DEVICE_ATTRIBUTE_CLOCK_RATE */
	__u32 memory_clock_khz;		/* CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE */
	__u32 cc_major;			/* compute capability */
	__u32 cc_minor;
	__u64 total_memory;		/* bytes (cuDeviceTotalMem) */
	char name[64];			/* cuDeviceGetName */
};

/* Errors the library reports (struct profd_gpu_error.code). */
enum profd_gpu_error_code {
	PROFD_GPU_ERR_CUPTI_INIT = 1,		/* libcupti missing or cuptiSubscribe failed */
	PROFD_GPU_ERR_ACTIVITY = 2,		/* cuptiActivity* call failed */
	PROFD_GPU_ERR_RECORDS_DROPPED = 3,	/* CUPTI dropped activity records (count) */
	PROFD_GPU_ERR_BUFFER_ALLOC = 4,		/* activity buffer allocation failed */
	PROFD_GPU_ERR_PC_SAMPLING = 5,		/* PC sampling setup/collection failed */
	PROFD_GPU_ERR_CUBIN = 6,		/* cubin CRC or copy failed */
	PROFD_GPU_ERR_NAMES_FULL = 7,		/* name table full: name_id 0 used */
};

struct profd_gpu_error {
	__u32 code;		/* enum profd_gpu_error_code */
	__s32 result;		/* CUptiResult / CUresult, 0 if none */
	__u64 count;		/* events this error stands for */
	char message[112];	/* NUL-terminated */
};

/*
 * profd_gpu_batch_elem_size - bytes of one struct in a batch record of
 * @type, 0 for a type that is not a batch (launch, name) or unknown.
 * Both sides use it: BPF to size its copy, user space to check a record.
 */
static inline __u32 profd_gpu_batch_elem_size(__u32 type)
{
	switch (type) {
	case PROFD_EVENT_GPU_KERNELS:		return sizeof(struct profd_gpu_kernel);
	case PROFD_EVENT_GPU_CUBIN:		return sizeof(struct profd_gpu_cubin);
	case PROFD_EVENT_GPU_PC_SAMPLES:	return sizeof(struct profd_gpu_pc_sample);
	case PROFD_EVENT_GPU_STALL_REASONS:	return sizeof(struct profd_gpu_stall_reason);
	case PROFD_EVENT_GPU_DEVICE:		return sizeof(struct profd_gpu_device);
	case PROFD_EVENT_GPU_ERROR:		return sizeof(struct profd_gpu_error);
	case PROFD_EVENT_GPU_LAUNCHES:		return sizeof(struct profd_gpu_launch_rec);
	case PROFD_EVENT_NVTX:			return sizeof(struct profd_nvtx_event);
	default:				return 0;
	}
}

#endif /* PROFD_BPF_GPU_EVENTS_H */
