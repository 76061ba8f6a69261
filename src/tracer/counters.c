// SPDX-License-Identifier: GPL-2.0
/*
 * counters.c - names of the BPF-side counters (see counters.h).
 */
#include <stddef.h>

#include "bpf/unwind_python.h"	/* its slots, until the counter registry */
#include "tracer/counters.h"

static const char *const names[PROFD_CNT_MAX] = {
	[PROFD_CNT_SAMPLES] = "bpf_samples",
	[PROFD_CNT_IDLE_SKIPPED] = "idle_skipped",
	[PROFD_CNT_FILTERED] = "pid_filtered",
	[PROFD_CNT_RINGBUF_FULL] = "ringbuf_full",
	[PROFD_CNT_KERNEL_STACK_ERR] = "kernel_stack_error",
	[PROFD_CNT_USER_READ_ERR] = "user_stack_read_error",
	[PROFD_CNT_USER_TRUNCATED] = "user_stack_truncated",
	[PROFD_CNT_TAIL_CALL_FAILED] = "tail_call_failed",
	[PROFD_CNT_NO_SCRATCH] = "no_scratch",
	[PROFD_CNT_PROC_EVENT_LOST] = "proc_event_lost",
	[PROFD_CNT_DWARF_NO_ROW] = "dwarf_no_row",
	[PROFD_CNT_DWARF_UNSUPPORTED] = "dwarf_unsupported_rule",
	[PROFD_CNT_DWARF_PC_UNKNOWN] = "dwarf_pc_unknown",
	[PROFD_CNT_DWARF_BAD_FRAME] = "dwarf_bad_frame",
	[PROFD_CNT_SIGNAL_FRAMES] = "signal_frames",
	[PROFD_CNT_PY_SAMPLES] = "python_samples",
	[PROFD_CNT_PY_NO_THREAD_STATE] = "python_no_thread_state",
	[PROFD_CNT_PY_READ_ERR] = "python_frame_read_error",
	[PROFD_CNT_PY_TRUNCATED] = "python_stack_truncated",
	[PROFD_CNT_GPU_LAUNCHES] = "gpu_launches",
	[PROFD_CNT_GPU_EVENTS_LOST] = "gpu_events_lost",
	[PROFD_CNT_GPU_KERNELS_LOST] = "gpu_kernels_lost",
	[PROFD_CNT_GPU_BAD_BATCH] = "gpu_bad_batch",
	[PROFD_CNT_FOLLOWED_CHILDREN] = "followed_children",
	[PROFD_CNT_NVTX_EVENTS_LOST] = "nvtx_events_lost",
	[PROFD_CNT_DWARF_TABLE_EVICTED] = "dwarf_table_evicted",
	[PROFD_CNT_SCRATCH_BUSY] = "scratch_busy",
	[PROFD_CNT_SCRATCH_LOST] = "scratch_lost",
};

const char *profd_counter_name(enum profd_counter c)
{
	return (unsigned)c < PROFD_CNT_MAX ? names[c] : NULL;
}

const char *counter_kind_name(enum counter_kind k)
{
	return k == COUNTER_LOST ? "lost" : k == COUNTER_PARTIAL ? "partial" : "stat";
}

enum counter_kind profd_counter_kind(enum profd_counter c)
{
	switch ((int)c) {
	case PROFD_CNT_RINGBUF_FULL:
	case PROFD_CNT_TAIL_CALL_FAILED:
	case PROFD_CNT_NO_SCRATCH:
	case PROFD_CNT_PROC_EVENT_LOST:
	case PROFD_CNT_GPU_EVENTS_LOST:
	case PROFD_CNT_GPU_KERNELS_LOST:
	case PROFD_CNT_GPU_BAD_BATCH:
	case PROFD_CNT_NVTX_EVENTS_LOST:
	case PROFD_CNT_SCRATCH_BUSY:
	case PROFD_CNT_SCRATCH_LOST:
		return COUNTER_LOST;
	case PROFD_CNT_KERNEL_STACK_ERR:	/* sample kept, stack cut short */
	case PROFD_CNT_USER_READ_ERR:
	case PROFD_CNT_USER_TRUNCATED:
	case PROFD_CNT_DWARF_BAD_FRAME:
	case PROFD_CNT_PY_READ_ERR:
	case PROFD_CNT_PY_TRUNCATED:
	case PROFD_CNT_DWARF_TABLE_EVICTED:	/* walked by frame pointers: maybe cut */
		return COUNTER_PARTIAL;
	default:				/* incl. fallbacks to FP */
		return COUNTER_STAT;
	}
}
