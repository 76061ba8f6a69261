// SPDX-License-Identifier: GPL-2.0
/*
 * parts.bpf.c - cost breakdown of the work profd_sample does per sample.
 *
 * Each program below does one piece of profd's capture path (see
 * bpf/stack.bpf.h) on its own, so bpf_stats of each program prices that
 * piece. parts.c attaches every program to its own cpu-clock perf event on
 * every CPU at the same frequency and reads run_time_ns / run_cnt.
 * Diagnostic only: none of this is profd's code path.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define KFRAMES 127
#define UFRAMES 32
#define RECORD 120	/* a profd record with ~7 IPs: 64 B header + 7 x 8 */

struct buf { __u64 ips[1024]; };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct buf);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} rb_wake SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} rb_nowake SEC(".maps");

__u64 rb_fail = 0;

static __always_inline struct buf *sbuf(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* Nothing: the floor (perf_event BPF dispatch + the stats bookkeeping). */
SEC("perf_event")
int p_empty(struct bpf_perf_event_data *ctx)
{
	return 0;
}

/* The sample header: pid/tid, cpu, ktime, comm into per-CPU scratch. */
SEC("perf_event")
int p_header(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();

	if (!b)
		return 0;
	b->ips[0] = bpf_get_current_pid_tgid();
	b->ips[1] = bpf_get_smp_processor_id();
	b->ips[2] = bpf_ktime_get_ns();
	bpf_get_current_comm(&b->ips[3], 16);
	return 0;
}

/* Kernel stack, as profd asks for it (127 frames, flags 0). */
SEC("perf_event")
int p_kstack(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();

	if (b)
		bpf_get_stack(ctx, b->ips, KFRAMES * sizeof(__u64), 0);
	return 0;
}

/* The same, with an 8-frame buffer: is it the helper or the 1 KiB copy? */
SEC("perf_event")
int p_kstack8(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();

	if (b)
		bpf_get_stack(ctx, b->ips, 8 * sizeof(__u64), 0);
	return 0;
}

/*
 * Kernel stack only when the sample interrupted kernel mode (CPL of the
 * interrupted CS != 3); a user-mode sample has no kernel frames to get.
 */
SEC("perf_event")
int p_kstack_guard(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();
	/* full-width read: the verifier refuses narrow loads of regs.cs */
	__u64 cs = *(volatile __u64 *)&ctx->regs.cs;

	if (b && (cs & 3) != 3)
		bpf_get_stack(ctx, b->ips, KFRAMES * sizeof(__u64), 0);
	return 0;
}

/* User registers + frame-pointer walk with bpf_probe_read_user (<= 32). */
SEC("perf_event")
int p_ufp(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;
	__u64 bp, frame[2];

	if (!b || (task->flags & 0x00200000))
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	b->ips[0] = BPF_CORE_READ(regs, ip);
	bp = BPF_CORE_READ(regs, bp);
	for (int i = 1; i < UFRAMES; i++) {
		if (!bp || bpf_probe_read_user(frame, sizeof(frame), (void *)bp))
			break;
		b->ips[i] = frame[1];
		if (!frame[1] || frame[0] <= bp)
			break;
		bp = frame[0];
	}
	return 0;
}

/* One ringbuf record with the default (adaptive) wakeup, as profd does. */
SEC("perf_event")
int p_rb_wakeup(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();

	if (b && bpf_ringbuf_output(&rb_wake, b, RECORD, 0))
		__sync_fetch_and_add(&rb_fail, 1);
	return 0;
}

/* The same record without a wakeup (the reader polls on a timeout). */
SEC("perf_event")
int p_rb_nowakeup(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();

	if (b && bpf_ringbuf_output(&rb_nowake, b, RECORD, BPF_RB_NO_WAKEUP))
		__sync_fetch_and_add(&rb_fail, 1);
	return 0;
}

SEC("perf_event") int p_tail_target(struct bpf_perf_event_data *ctx);

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, int(void *));
} tail_progs SEC(".maps") = {
	.values = { [0] = (void *)&p_tail_target },
};

/* Two tail calls into an empty program (profd's chain takes two). */
SEC("perf_event")
int p_tail2(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();

	if (b) {
		b->ips[0] = 0;
		bpf_tail_call(ctx, &tail_progs, 0);
	}
	return 0;
}

SEC("perf_event")
int p_tail_target(struct bpf_perf_event_data *ctx)
{
	struct buf *b = sbuf();

	if (b && b->ips[0]++ == 0)
		bpf_tail_call(ctx, &tail_progs, 0);
	return 0;
}
