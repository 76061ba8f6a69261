/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu.bpf.h - the USDT programs on the CUDA injection library's probes.
 *
 * Owns: the `cupti_events` ringbuf and one program per probe of provider
 * "profd" (bpf/gpu_events.h, bpf/nvtx_events.h). The launch probe captures the launching
 * thread's CPU stack with capture_stack(), the routine the CPU sampler
 * uses, through the kprobe-type unwinder chain; the other probes copy
 * the library's fixed-size batches into one record each.
 *
 * Programs are attached by src/tracer/usdt.c to every copy of the library
 * (pid -1: every process mapping it, now and later), as uprobe-multi
 * links where the kernel has them (src/tracer/usdt_multi.c). The kernel bumps each
 * probe's semaphore while a program is attached, which is what turns the
 * library's work on.
 */
#ifndef PROFD_BPF_GPU_BPF_H
#define PROFD_BPF_GPU_BPF_H

/*
 * Each probe site of each copy of the injection library (10 a copy now,
 * at most TRACER_GPU_SITES_PER_COPY) is a USDT spec: room for
 * TRACER_GPU_MAX_LIBRARIES (src/tracer/tracer_internal.h) copies.
 */
#define BPF_USDT_MAX_SPEC_CNT 2048
#include <bpf/usdt.bpf.h>

#include "gpu_events.h"
#include "usdt_spec.h"

/* src/tracer/usdt_multi.c writes libbpf's specs through usdt_spec.h. */
_Static_assert(sizeof(struct __bpf_usdt_spec) == sizeof(struct profd_usdt_spec) &&
	       BPF_USDT_MAX_ARG_CNT == PROFD_USDT_MAX_ARGS &&
	       __builtin_offsetof(struct __bpf_usdt_spec, arg_cnt) ==
	       __builtin_offsetof(struct profd_usdt_spec, arg_cnt) &&
	       __builtin_offsetof(struct __bpf_usdt_spec, usdt_cookie) ==
	       __builtin_offsetof(struct profd_usdt_spec, usdt_cookie) &&
	       sizeof(struct __bpf_usdt_arg_spec) == sizeof(struct profd_usdt_arg_spec) &&
	       __builtin_offsetof(struct __bpf_usdt_arg_spec, reg_off) ==
	       __builtin_offsetof(struct profd_usdt_arg_spec, reg_off) &&
	       __builtin_offsetof(struct __bpf_usdt_arg_spec, arg_signed) ==
	       __builtin_offsetof(struct profd_usdt_arg_spec, arg_signed) &&
	       __builtin_offsetof(struct __bpf_usdt_arg_spec, arg_bitshift) ==
	       __builtin_offsetof(struct profd_usdt_arg_spec, arg_bitshift),
	       "libbpf's USDT spec layout changed: update bpf/usdt_spec.h");
#include "stack.bpf.h"

/* Payload bytes one batch record may carry. */
#define PROFD_GPU_BATCH_BYTES	(PROFD_GPU_BATCH_MAX * 64)

/* A full NVTX batch fits forward_batch's bounds. */
_Static_assert(PROFD_NVTX_BATCH_MAX <= PROFD_GPU_BATCH_MAX &&
	       PROFD_NVTX_BATCH_MAX * PROFD_NVTX_TEXT_CHUNK <= PROFD_GPU_BATCH_BYTES,
	       "NVTX batch larger than a batch record");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* resized by the loader */
} cupti_events SEC(".maps");

struct gpu_scratch {
	struct profd_gpu_batch hdr;
	__u8 payload[PROFD_GPU_BATCH_BYTES];
	struct profd_gpu_name name;
	char name_buf[PROFD_GPU_NAME_MAX];
	__u64 owner;	/* scratch_take(): uprobe programs are preemptible */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpu_scratch);
} gpu_scratch SEC(".maps");

static __always_inline void count_n(enum profd_counter c, __u64 n)
{
	__u32 key = c;
	__u64 *v = bpf_map_lookup_elem(&counters, &key);

	if (v)
		*v += n;
}

static __always_inline struct gpu_scratch *gpu_scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&gpu_scratch, &zero);
}

/* @n records of a batch of @type were lost: counted in the batch's unit. */
static __always_inline void batch_lost(__u32 type, __u32 n)
{
	count_n(type == PROFD_EVENT_GPU_KERNELS ? PROFD_CNT_GPU_KERNELS_LOST :
		type == PROFD_EVENT_NVTX ? PROFD_CNT_NVTX_EVENTS_LOST :
		PROFD_CNT_GPU_EVENTS_LOST, n);
}

/*
 * forward_batch - copy @n structs (profd_gpu_batch_elem_size(@type) bytes
 * each) from user address @ptr into one cupti_events record of @type. A batch larger than the
 * contract allows or an unreadable one is counted, not forwarded.
 */
static __always_inline int forward_batch(__u32 type, const void *ptr, __u32 n)
{
	__u32 size = profd_gpu_batch_elem_size(type);
	struct gpu_scratch *s;
	__u64 id = bpf_get_current_pid_tgid();
	__u64 bytes;	/* 64-bit: a 32-bit copy loses its bound to the verifier */

	if (!pid_wanted(id >> 32))
		return 0;
	s = gpu_scratch_get();
	if (!s) {
		count(PROFD_CNT_NO_SCRATCH);
		return 0;
	}
	if (n == 0 || n > PROFD_GPU_BATCH_MAX || n * size > PROFD_GPU_BATCH_BYTES) {
		count(PROFD_CNT_GPU_BAD_BATCH);
		return 0;
	}
	bytes = (__u64)n * size;
	barrier_var(bytes);
	if (bytes > PROFD_GPU_BATCH_BYTES)
		return 0;
	if (!scratch_take(&s->owner)) {
		batch_lost(type, n);
		return 0;
	}
	if (bpf_probe_read_user(s->payload, bytes, ptr)) {
		count(PROFD_CNT_GPU_BAD_BATCH);
		scratch_release(&s->owner);
		return 0;
	}
	s->hdr.type = type;
	s->hdr.pid = id >> 32;
	s->hdr.tid = (__u32)id;
	s->hdr.n = n;
	s->hdr.ktime_ns = bpf_ktime_get_ns();
	if (!scratch_held(&s->owner)) {
		count(PROFD_CNT_SCRATCH_LOST);
		batch_lost(type, n);
		return 0;
	}
	if (bpf_ringbuf_output(&cupti_events, s, sizeof(s->hdr) + bytes, 0))
		batch_lost(type, n);
	scratch_release(&s->owner);
	return 0;
}

SEC("usdt")
int BPF_USDT(profd_gpu_launch, __u64 correlation_id, __u32 cbid, __u32 flags)
{
	struct profd_gpu_launch *r;
	__u64 id = bpf_get_current_pid_tgid();

	if (!pid_wanted(id >> 32))
		return 0;
	count(PROFD_CNT_GPU_LAUNCHES);
	if (flags & PROFD_GPU_LAUNCH_STACK)
		return capture_stack(ctx, &unwind_progs_kprobe, PROFD_SCRATCH_PROBE,
				     PROFD_ORIGIN_PROBE,
				     correlation_id, false);
	r = bpf_ringbuf_reserve(&cupti_events, sizeof(*r), 0);
	if (!r) {
		count(PROFD_CNT_GPU_EVENTS_LOST);
		return 0;
	}
	r->type = PROFD_EVENT_GPU_LAUNCH;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->flags = flags;
	r->correlation_id = correlation_id;
	r->ktime_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	bpf_ringbuf_submit(r, 0);
	return 0;
}

/* A probe whose batch becomes one record: profd:NAME(const T *v, u32 n). */
#define PROFD_GPU_BATCH_PROGRAM(name, type)				\
	SEC("usdt")							\
	int BPF_USDT(profd_gpu_##name, const void *v, __u32 n)		\
	{								\
		return forward_batch(type, v, n);			\
	}

PROFD_GPU_BATCH_PROGRAM(launches, PROFD_EVENT_GPU_LAUNCHES)
PROFD_GPU_BATCH_PROGRAM(kernels, PROFD_EVENT_GPU_KERNELS)
PROFD_GPU_BATCH_PROGRAM(pc_samples, PROFD_EVENT_GPU_PC_SAMPLES)
PROFD_GPU_BATCH_PROGRAM(stall_reasons, PROFD_EVENT_GPU_STALL_REASONS)
PROFD_GPU_BATCH_PROGRAM(cubin, PROFD_EVENT_GPU_CUBIN)
PROFD_GPU_BATCH_PROGRAM(device, PROFD_EVENT_GPU_DEVICE)
PROFD_GPU_BATCH_PROGRAM(error, PROFD_EVENT_GPU_ERROR)
PROFD_GPU_BATCH_PROGRAM(nvtx, PROFD_EVENT_NVTX)

SEC("usdt")
int BPF_USDT(profd_gpu_name, __u32 name_id, const char *str)
{
	struct gpu_scratch *s;
	__u64 id = bpf_get_current_pid_tgid();
	long len;

	if (!pid_wanted(id >> 32))
		return 0;
	s = gpu_scratch_get();
	if (!s) {
		count(PROFD_CNT_NO_SCRATCH);
		return 0;
	}
	if (!scratch_take(&s->owner)) {
		count(PROFD_CNT_GPU_EVENTS_LOST);
		return 0;
	}
	len = bpf_probe_read_user_str(s->name_buf, sizeof(s->name_buf), str);
	if (len <= 0) {
		count(PROFD_CNT_GPU_BAD_BATCH);
		goto out;
	}
	s->name.type = PROFD_EVENT_GPU_NAME;
	s->name.pid = id >> 32;
	s->name.name_id = name_id;
	s->name.len = len;
	barrier_var(len);
	if (len > PROFD_GPU_NAME_MAX)
		goto out;
	if (!scratch_held(&s->owner)) {
		count(PROFD_CNT_SCRATCH_LOST);
		count(PROFD_CNT_GPU_EVENTS_LOST);
		return 0;
	}
	if (bpf_ringbuf_output(&cupti_events, &s->name, sizeof(s->name) + len, 0))
		count(PROFD_CNT_GPU_EVENTS_LOST);
out:
	scratch_release(&s->owner);
	return 0;
}

/*
 * The dynamic loader's shared-library event hook (_dl_debug_state, the
 * function debuggers break on) ran: the process just dlopen'ed or closed
 * a library, perhaps the injection library libcuda loads from
 * CUDA_INJECTION64_PATH. User space looks at its maps and attaches to a
 * copy it does not know yet, before the library's first launches. A
 * uprobe on ld.so (attached by the tracer, pid -1): kprobes and fexit
 * are missing on some kernels, uprobes are what the GPU path needs anyway.
 */
/* tgid -> ld.so events seen since exec (the first two are start-up's). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} dl_events SEC(".maps");

SEC("uprobe")
int profd_dl_event(struct pt_regs *ctx)
{
	struct profd_proc_event *e;
	__u32 pid = bpf_get_current_pid_tgid() >> 32, one = 1, *n;

	if (!pid_wanted(pid))
		return 0;
	/*
	 * ld.so calls the hook twice while it loads a program's libraries
	 * (RT_ADD, RT_CONSISTENT) and twice per dlopen after that: only the
	 * dlopens matter (libcuda loads the injection library), and skipping
	 * start-up spares a maps read of every new process. (A process older
	 * than profd has its first dlopen skipped instead: the agent's maps
	 * reads and scans find that library.)
	 */
	n = bpf_map_lookup_elem(&dl_events, &pid);
	if (!n) {
		bpf_map_update_elem(&dl_events, &pid, &one, BPF_ANY);
		return 0;
	}
	if (*n < 2) {
		*n += 1;	/* the second start-up call */
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFD_CNT_PROC_EVENT_LOST);
		return 0;
	}
	e->type = PROFD_EVENT_LIB_MAPPED;
	e->pid = pid;
	e->ktime_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

#endif /* PROFD_BPF_GPU_BPF_H */
