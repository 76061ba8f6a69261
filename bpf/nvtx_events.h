/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nvtx_events.h - the contract between the NVTX half of the injection
 * library (inject/nvtx*.c), the BPF program that forwards its batches
 * (bpf/gpu.bpf.h) and the NVTX tracer (src/nvtx/).
 *
 * Owns: the one NVTX probe and the fixed-size event struct it carries.
 *
 *   profd:nvtx(const struct profd_nvtx_event *v, u32 n)
 *	A batch of n <= PROFD_NVTX_BATCH_MAX events of one thread (or, at
 *	process exit, of a thread the exiting thread flushes for), in the
 *	order that thread made the calls. Batched per thread so a range
 *	costs no trap; flushed when a batch fills, every
 *	PROFD_NVTX_FLUSH_MS, at once after a rare call (string
 *	registration, domain creation, naming), and at thread and process
 *	exit. With a semaphore: the library does nothing when no agent is
 *	attached. BPF copies the batch into the `cupti_events` ringbuf as
 *	struct profd_gpu_batch (type PROFD_EVENT_NVTX) + n structs.
 *
 * Strings (messages, domain, category, thread and resource names) travel
 * as ids: a PROFD_NVTX_STRING event defines id -> text before the first
 * event of that batch stream that uses it. Its text follows in the next
 * ceil(payload / PROFD_NVTX_TEXT_CHUNK) elements, raw bytes, not NUL
 * terminated; a definition and its text are never split across batches.
 * String ids are unique per process (one counter); a thread may define
 * the same text again under a new id. Registered strings and names are
 * defined and flushed at once, so every thread may use them after. The
 * library keeps them (bounded) and sends them again, same ids, when an
 * agent attaches to a process that made them earlier, and in a forked
 * child (a new pid); threads then define their message texts anew.
 *
 * Times are CLOCK_MONOTONIC ns, the clock of bpf_ktime_get_ns().
 */
#ifndef PROFD_BPF_NVTX_EVENTS_H
#define PROFD_BPF_NVTX_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Record type in the cupti_events ringbuf (continues enum profd_gpu_event_type). */
#define PROFD_EVENT_NVTX	25

#define PROFD_NVTX_BATCH_MAX	64
#define PROFD_NVTX_TEXT_CHUNK	48	/* == sizeof(struct profd_nvtx_event) */
#define PROFD_NVTX_STRING_MAX	1024	/* longer texts are cut (PROFD_NVTX_F_CUT) */

enum profd_nvtx_kind {
	PROFD_NVTX_PUSH = 1,		/* nvtx[Domain]RangePush*: opens a range on tid */
	PROFD_NVTX_POP = 2,		/* nvtx[Domain]RangePop: closes tid's innermost push */
	PROFD_NVTX_START = 3,		/* nvtx[Domain]RangeStart*: id = range id */
	PROFD_NVTX_END = 4,		/* nvtx[Domain]RangeEnd: id = range id (any thread) */
	PROFD_NVTX_MARK = 5,		/* nvtx[Domain]Mark*: an instant */
	PROFD_NVTX_STRING = 6,		/* id = string id, payload = text bytes; text follows;
					 * domain_id: the domain of a registered string */
	PROFD_NVTX_DOMAIN = 7,		/* domain_id created, named message_id */
	PROFD_NVTX_DOMAIN_DESTROY = 8,	/* domain_id destroyed */
	PROFD_NVTX_NAME_CATEGORY = 9,	/* category of domain_id named message_id */
	PROFD_NVTX_NAME_THREAD = 10,	/* OS thread id (= id) named message_id */
	PROFD_NVTX_NAME_RESOURCE = 11,	/* resource handle id of kind category
					 * (enum profd_nvtx_resource) named message_id */
	PROFD_NVTX_DROPPED = 12,	/* payload = events the library could not record */
	PROFD_NVTX_HELLO = 13,		/* an agent session began (sent at once, so
					 * profd reads the process's identity while it lives) */
	PROFD_NVTX_PROCESS = 14,	/* the process's own view of itself: id = enum
					 * profd_nvtx_process_attr, message_id = its text
					 * (a STRING defined just before, same batch) */
	PROFD_NVTX_UNSEEN = 15,		/* payload = push, pop, start, end and mark
					 * calls made while no agent listened (before
					 * one attached, or between sessions), counted
					 * by the threads that record again */
};

/*
 * PROFD_NVTX_PROCESS attributes (in .id). Every session starts with them,
 * before any other event: profd reads the process's identity from
 * /proc/PID when the first batch arrives, and a short program may be gone
 * by then. profd uses them only for what /proc no longer tells.
 */
enum profd_nvtx_process_attr {
	PROFD_NVTX_PROC_EXE_PATH = 1,		/* readlink /proc/self/exe (never cut) */
	PROFD_NVTX_PROC_COMMAND_LINE = 2,	/* argv joined by spaces (may be cut) */
	PROFD_NVTX_PROC_SERVICE_NAME = 3,	/* getenv("OTEL_SERVICE_NAME"), when set */
};

/* PROFD_NVTX_NAME_RESOURCE kinds (in .category). */
enum profd_nvtx_resource {
	PROFD_NVTX_RES_CUDA_DEVICE = 1,		/* nvtxNameCuDevice / nvtxNameCudaDevice */
	PROFD_NVTX_RES_CUDA_CONTEXT = 2,	/* nvtxNameCuContext */
	PROFD_NVTX_RES_CUDA_STREAM = 3,		/* nvtxNameCuStream / nvtxNameCudaStream */
	PROFD_NVTX_RES_CUDA_EVENT = 4,		/* nvtxNameCuEvent / nvtxNameCudaEvent */
	PROFD_NVTX_RES_GENERIC = 5,		/* nvtxDomainResourceCreate: id = the identifier,
						 * payload = its NVTX_RESOURCE_TYPE_* */
};

/* Payload types (.payload_type): as NVTX's nvtxPayloadType_t. */
enum profd_nvtx_payload {
	PROFD_NVTX_PAYLOAD_NONE = 0,
	PROFD_NVTX_PAYLOAD_U64 = 1,
	PROFD_NVTX_PAYLOAD_I64 = 2,
	PROFD_NVTX_PAYLOAD_DOUBLE = 3,
	PROFD_NVTX_PAYLOAD_U32 = 4,
	PROFD_NVTX_PAYLOAD_I32 = 5,
	PROFD_NVTX_PAYLOAD_FLOAT = 6,
};

/* .flags */
#define PROFD_NVTX_F_COLOR	(1u << 0)	/* .color is set (ARGB) */
#define PROFD_NVTX_F_CUT	(1u << 1)	/* STRING: text was cut to PROFD_NVTX_STRING_MAX */

/* One NVTX call. 48 bytes. */
struct profd_nvtx_event {
	__u64 time_ns;		/* CLOCK_MONOTONIC at the call */
	__u64 id;		/* range id, string id, thread id or handle (see kind) */
	__u64 payload;		/* payload bits as payload_type says (32-bit types in
				 * the low half, zero-extended); STRING: text bytes */
	__u32 tid;		/* the calling thread */
	__u32 domain_id;	/* 0: the default domain */
	__u32 message_id;	/* string id of the message/name, 0: none */
	__u32 category;		/* 0: none (NAME_RESOURCE: enum profd_nvtx_resource) */
	__u32 color;		/* ARGB, when PROFD_NVTX_F_COLOR */
	__u16 kind;		/* enum profd_nvtx_kind */
	__u8 payload_type;	/* enum profd_nvtx_payload */
	__u8 flags;		/* PROFD_NVTX_F_* */
};

#endif /* PROFD_BPF_NVTX_EVENTS_H */
