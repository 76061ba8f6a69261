/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * profd.h - the contract between profd's BPF programs and user space.
 *
 * Owns: the event record formats that travel through the `events` ringbuf,
 * the per-CPU scratch state the tail-called unwinder chain works on, the
 * indices of that chain in its program arrays, the named drop/error
 * counters, and the configuration the loader writes into .rodata.
 *
 * Every record starts with a __u32 event type (enum profd_event_type), so
 * one reader thread dispatches CPU samples, process lifecycle events and
 * (later) GPU/NVTX events on one path.
 */
#ifndef PROFD_BPF_PROFD_H
#define PROFD_BPF_PROFD_H

#ifndef __VMLINUX_H__	/* user space; BPF code gets the types from vmlinux.h */
#include <linux/types.h>
#endif

#include "runtime.h"

#define PROFD_TASK_COMM_LEN	16
/* Kernel stacks: the kernel's own limit (sysctl kernel.perf_event_max_stack). */
#define PROFD_MAX_KERNEL_FRAMES	127
/* User stacks: hard upper bound of --max-stack-depth. */
#define PROFD_MAX_USER_FRAMES	512
#define PROFD_MAX_IPS		(PROFD_MAX_KERNEL_FRAMES + PROFD_MAX_USER_FRAMES)
/* __u64 slots after the header: IPs, then two per runtime frame. */
#define PROFD_MAX_RECORD_SLOTS	(PROFD_MAX_IPS + 2 * PROFD_MAX_INTERP_FRAMES)
/* Scratch slots: a power of two >= PROFD_MAX_RECORD_SLOTS, so BPF can mask indices. */
#define PROFD_SCRATCH_IPS	1024
/* The scratch record area: IPs, then a stack copy and a page of slack. */
#define PROFD_SCRATCH_WORDS	(PROFD_SCRATCH_IPS + \
				 (sizeof(struct profd_stack_copy) + PROFD_STACK_COPY_MAX + 4096) / 8)
/* Frames one frame-pointer program invocation walks before tail-calling itself. */
#define PROFD_FP_FRAMES_PER_PROG	64

enum profd_event_type {
	PROFD_EVENT_SAMPLE = 1,		/* struct profd_sample (+ ips) */
	PROFD_EVENT_PROC_EXEC = 2,	/* struct profd_proc_event */
	PROFD_EVENT_PROC_EXIT = 3,	/* struct profd_proc_event */
	PROFD_EVENT_LIB_MAPPED = 4,	/* struct profd_proc_event: the process
					 * loaded or closed a shared library (gpu.bpf.h) */
	PROFD_EVENT_OFFCPU_END = 5,	/* struct profd_offcpu_end (offcpu.bpf.h) */
	PROFD_EVENT_PROC_FORK = 6,	/* struct profd_proc_fork */
	/* 16..: GPU events in the cupti_events ringbuf (gpu_events.h) */
};

/* Where a sample came from (struct profd_sample.origin). */
enum profd_sample_origin {
	PROFD_ORIGIN_CPU_CLOCK = 1,	/* perf_event program, cpu-clock timer */
	PROFD_ORIGIN_PROBE = 2,		/* uprobe/USDT program (e.g. GPU launch) */
	PROFD_ORIGIN_OFF_CPU = 3,	/* sched_switch: the thread blocked (switch-out);
					 * cookie: its switch-out time (ns) */
};

/* Flags in struct profd_sample.flags. */
#define PROFD_SAMPLE_USER_TRUNCATED	(1u << 0) /* user walk hit max depth */
#define PROFD_SAMPLE_USER_ERROR		(1u << 1) /* user walk stopped on a read error */
#define PROFD_SAMPLE_KERNEL_MODE	(1u << 2) /* interrupted in kernel mode */
#define PROFD_SAMPLE_NO_USER		(1u << 3) /* kernel thread: no user stack */
#define PROFD_SAMPLE_UNWIND_MISSING	(1u << 4) /* no unwind info for the pid or a pc:
						   * user space loads it (discovery) */
#define PROFD_SAMPLE_DWARF		(1u << 5) /* walked with DWARF tables */
#define PROFD_SAMPLE_INTERP		(1u << 6) /* a runtime's walk ran (sample.runtime) */
#define PROFD_SAMPLE_INTERP_TRUNCATED	(1u << 7) /* more runtime frames than kept */
#define PROFD_SAMPLE_INTERP_ERROR	(1u << 8) /* a runtime frame was unreadable */
#define PROFD_SAMPLE_USER_COMPLETE	(1u << 9) /* user walk reached the outermost
						   * frame (CFI: return address undefined) */
#define PROFD_SAMPLE_EXITING		(1u << 10) /* the task was exiting (PF_EXITING):
						   * the sample belongs to the process
						   * whose exit event may precede it */

/*
 * Flag in a user IP: the pc is exact (where a signal interrupted the
 * thread, or the entry of the sigreturn trampoline), not a return address,
 * so user space symbolizes it as is rather than at pc - 1. User addresses
 * are below 2^47, so the top bit is free. The leaf IP is always exact.
 */
#define PROFD_IP_EXACT		(1ULL << 63)

/*
 * One CPU stack sample. Followed in the record by kernel_len kernel IPs
 * (leaf first), then user_len user IPs (leaf first), each a __u64. The
 * first IP of each part is where the CPU was; the others are return
 * addresses (symbolize them at address - 1, the call instruction).
 * Then interp_len frames of two __u64 each of runtime @runtime, whose
 * meaning is that runtime's (runtime.h).
 */
struct profd_sample {
	__u32 type;		/* PROFD_EVENT_SAMPLE */
	__u32 origin;		/* enum profd_sample_origin */
	__u32 pid;		/* thread group id (user-visible PID) */
	__u32 tid;		/* thread id */
	__u32 cpu;
	__u32 flags;		/* PROFD_SAMPLE_* */
	__u64 ktime_ns;		/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u64 cookie;		/* origin-specific (probe: correlation id) */
	__u16 kernel_len;
	__u16 user_len;
	__u16 interp_len;	/* runtime frames (two __u64 each) */
	__u16 runtime;		/* enum profd_runtime_id of those frames; 0: none */
	char comm[PROFD_TASK_COMM_LEN];	/* thread name (task->comm) */
	__u32 stack_len;	/* bytes of user stack copied (0: none) */
	__u32 _pad;
	/*
	 * followed by __u64 ips[kernel_len + user_len + 2 * interp_len],
	 * then, when stack_len, struct profd_stack_copy and stack_len bytes
	 */
};

/*
 * The user registers at a sample whose unwind tables were not in BPF yet
 * (PROFD_SAMPLE_UNWIND_MISSING, or every sample under --check-unwinder),
 * followed by stack_len bytes of its user stack from sp up: user space
 * walks them with the same rows once they are loaded (src/unwind/walk.c).
 */
struct profd_stack_copy {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	/*
	 * The code at the pc: bytes [ip - 1, ip + 6] (the leaf's instruction,
	 * bpf/unwind_step.h leaf_entry_step()); code_len 0 when they could not
	 * be read.
	 */
	__u8 code[7];
	__u8 code_len;
};

/* Most bytes of user stack one sample carries (--stack-copy-bytes). */
#define PROFD_STACK_COPY_MAX	16384

/*
 * Values in pid_filter: a PID profiled, and one that exited under `profd
 * exec` (still profiled: its samples after the exit event count; user
 * space deletes it after a grace period, a fork reusing the PID decides
 * anew).
 */
#define PROFD_PID_WANTED	1
#define PROFD_PID_EXITED	2

/* Process lifecycle (sched tracepoints). */
struct profd_proc_event {
	__u32 type;		/* PROFD_EVENT_PROC_{EXEC,EXIT} */
	__u32 pid;		/* thread group id */
	__u64 ktime_ns;
	char comm[PROFD_TASK_COMM_LEN];
};

/*
 * A new process (sched_process_fork, not a thread): @pid starts with a
 * copy of @ppid's address space, so until it execs, its mappings are its
 * parent's as of the fork. Emitted before the child first runs: every
 * record of the child follows it in the ringbuf.
 */
struct profd_proc_fork {
	__u32 type;		/* PROFD_EVENT_PROC_FORK */
	__u32 pid;		/* the child's thread group id */
	__u32 ppid;		/* the forking process's thread group id */
	__u32 pad;
	__u64 ktime_ns;
};

/*
 * The end of a recorded off-CPU period (bpf/offcpu.bpf.h): the thread
 * @tid switched out at @out_ns (the cookie of its PROFD_ORIGIN_OFF_CPU
 * sample, which precedes this record in the ringbuf) ran again at @in_ns,
 * or exited (PROFD_OFFCPU_EXITED) without running again.
 */
struct profd_offcpu_end {
	__u32 type;		/* PROFD_EVENT_OFFCPU_END */
	__u32 pid;		/* thread group id */
	__u32 tid;
	__u32 flags;		/* PROFD_OFFCPU_* */
	__u64 out_ns;		/* bpf_ktime_get_ns() at switch-out */
	__u64 in_ns;		/* ... at switch-in (or exit) */
};

#define PROFD_OFFCPU_EXITED	(1u << 0)	/* in_ns is the thread's exit */
#define PROFD_OFFCPU_IN_UNSEEN	(1u << 1)	/* no sched_switch showed the switch-in:
						 * in_ns is the next switch-out less
						 * the CPU time run since (estimate) */

/* Threads blocked at once in offcpu_tid_hash (kernels before 6.4). */
#define PROFD_OFFCPU_PENDING_MAX	32768

/*
 * The registers a user walk carries from a frame to its caller's (the
 * steps of unwind_step.h and the FP walker).
 */
struct unwind_frame {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 pc_exact;	/* ip is where the CPU was (leaf, signal frame),
			 * not a return address: look it up as is */
	__u32 flags;	/* PROFD_SAMPLE_* the steps raised */
	/*
	 * Go (bpf/unwind_go.h): the goroutine the walk follows, set where it
	 * switched to one (0: the thread's m.curg); g0's sp where the next
	 * cgo callback out (a cgocallback frame on that goroutine's stack)
	 * has its caller (0: m.g0.sched.sp)
	 */
	__u64 go_g;
	__u64 go_g0_sp;
};

/*
 * Per-CPU scratch state of one stack capture. The entry program fills the
 * header and regs, each unwinder in the chain appends frames and tail-calls
 * the next one, and the emit program copies the finished record to the
 * ringbuf. Layout: the sample header directly followed by the IP array, so
 * the record can be output with one copy.
 */
struct profd_unwind_state {
	__u64 owner;		/* the capture holding this slot (scratch_take()) */
	struct unwind_frame f;	/* user registers where the user walk resumes */
	struct unwind_frame start;	/* the user registers at the sample */
	__u32 tail_calls;	/* unwinder tail calls taken so far */
	__u32 max_user_frames;	/* depth limit for this capture */
	__u32 native_tail_calls;/* self tail calls the native walkers may take
				 * (less when a runtime walker follows) */
	/* runtime walk: set by capture_stack() when runtime_procs has the pid */
	__u32 rt_id;		/* enum profd_runtime_id; 0: native only */
	__u32 rt_tail_calls;	/* self tail calls the runtime walker took */
	__u64 rt_cursor;	/* the walker's position (0: walk not started) */
	__u64 rt_code_low, rt_code_high;	/* its own code: the native walk ends there */
	__u64 rt_state[PROFD_RUNTIME_STATE_SIZE / 8];	/* runtime_procs state */
	__u8 rt_buf[PROFD_RUNTIME_BUF + 8];	/* the walker's memory reads */
	struct profd_sample sample;	/* ips[] follows directly */
	__u64 ips[PROFD_SCRATCH_WORDS];
};

/*
 * Each user frame's rbp and sp as the native walk had them, by user frame
 * index, kept only when a runtime walker follows (rt_id set): it reads
 * the slots of frames that keep a frame pointer, or unwinds from a frame
 * on by rules of its own. And a runtime walker's frames while the native
 * walk may still grow (PROFD_RUNTIME_STAGE_WORDS words), copied after the
 * native IPs before emit. They live in ips[] past the record's slots,
 * where only the stack copy writes, at emit, after every walker is done
 * (the per-CPU value is near its 32 KiB bound).
 */
#define PROFD_FRAME_BP_SLOT(n)	(PROFD_SCRATCH_IPS + ((n) & (PROFD_MAX_USER_FRAMES - 1)))
#define PROFD_FRAME_SP_SLOT(n)	(PROFD_SCRATCH_IPS + PROFD_MAX_USER_FRAMES + \
				 ((n) & (PROFD_MAX_USER_FRAMES - 1)))
#define PROFD_RUNTIME_STAGE_WORDS	(2 * PROFD_MAX_INTERP_FRAMES)
#define PROFD_RUNTIME_STAGE(k)	(PROFD_SCRATCH_IPS + 2 * PROFD_MAX_USER_FRAMES + \
				 ((k) & (PROFD_RUNTIME_STAGE_WORDS - 1)))
_Static_assert(PROFD_SCRATCH_IPS + 2 * PROFD_MAX_USER_FRAMES + PROFD_RUNTIME_STAGE_WORDS <=
	       PROFD_SCRATCH_WORDS, "the frames' registers fit the scratch record area");

/*
 * Per-CPU scratch slots, one per context that can interrupt the other: a
 * cpu-clock sample (hard interrupt) may fire while a uprobe program runs
 * on the same CPU, and uprobe programs run preemptibly, so one uprobe
 * capture may be preempted by another task's (scratch_take() keeps them
 * apart).
 */
enum profd_scratch_slot {
	PROFD_SCRATCH_PERF = 0,		/* perf_event programs */
	PROFD_SCRATCH_PROBE = 1,	/* uprobe/USDT (kprobe-type) programs */
	PROFD_SCRATCH_SWITCH = 2,	/* sched_switch (tp_btf) programs */
	PROFD_SCRATCH_SLOTS = 3,
};

/* Slots of the unwinder chain's program arrays (one array per program type). */
enum profd_unwinder_prog {
	PROFD_PROG_UNWIND_FP = 0,	/* frame-pointer walk */
	PROFD_PROG_UNWIND_DWARF = 1,	/* DWARF CFI tables, FP for code without */
	PROFD_PROG_EMIT = 2,		/* copy the record to the ringbuf */
	PROFD_PROG_RUNTIME = 3,		/* runtime ID's walker: PROFD_PROG_RUNTIME + ID - 1 */
	PROFD_PROG_MAX = PROFD_PROG_RUNTIME + PROFD_RUNTIME_COUNT,
};

/*
 * Named counters of loss and error, one per-CPU array slot each. User space
 * sums them and reports each by name (status line, profile comments).
 * Names, kinds: a COUNTER_DEFINE_BPF() per slot in the component that
 * counts it (src/counters/counters.h); a runtime's slots
 * (PROFD_CNT_RUNTIME()) in that runtime's module.
 */
enum profd_counter {
	PROFD_CNT_SAMPLES = 0,		/* perf_event program runs */
	PROFD_CNT_IDLE_SKIPPED,		/* pid 0 dropped (not a loss) */
	PROFD_CNT_FILTERED,		/* not in --pid set (not a loss) */
	PROFD_CNT_RINGBUF_FULL,		/* record dropped: ringbuf full */
	PROFD_CNT_KERNEL_STACK_ERR,	/* bpf_get_stack failed */
	PROFD_CNT_USER_READ_ERR,	/* user stack read faulted */
	PROFD_CNT_USER_TRUNCATED,	/* user stack longer than the limit */
	PROFD_CNT_TAIL_CALL_FAILED,	/* chain broken: record lost */
	PROFD_CNT_NO_SCRATCH,		/* per-CPU scratch lookup failed */
	PROFD_CNT_PROC_EVENT_LOST,	/* lifecycle event dropped: ringbuf full */
	PROFD_CNT_DWARF_NO_ROW,		/* pc in a table's range but no row: FP used */
	PROFD_CNT_DWARF_UNSUPPORTED,	/* CFA rule we cannot follow: FP used */
	PROFD_CNT_DWARF_PC_UNKNOWN,	/* pc outside the process's known ranges */
	PROFD_CNT_DWARF_BAD_FRAME,	/* CFA not above sp: walk stopped */
	PROFD_CNT_SIGNAL_FRAMES,	/* sigreturn frames unwound (not a loss) */
	PROFD_CNT_GPU_LAUNCHES,		/* GPU launch probes fired (not a loss) */
	PROFD_CNT_GPU_EVENTS_LOST,	/* GPU records other than kernels dropped: cupti_events full */
	PROFD_CNT_GPU_KERNELS_LOST,	/* kernel timings dropped: cupti_events full */
	PROFD_CNT_GPU_BAD_BATCH,	/* GPU probe with an oversized or unreadable batch */
	PROFD_CNT_FOLLOWED_CHILDREN,	/* children added to the PID filter (not a loss) */
	PROFD_CNT_NVTX_EVENTS_LOST,	/* NVTX events dropped: cupti_events full */
	PROFD_CNT_DWARF_TABLE_EVICTED,	/* pc in a range whose table was evicted: FP used,
					 * user space reloads it */
	PROFD_CNT_SCRATCH_BUSY,		/* capture dropped: a preempted capture held the
					 * CPU's scratch */
	PROFD_CNT_SCRATCH_LOST,		/* capture dropped: its scratch was taken over
					 * while it was preempted */
	PROFD_CNT_DWARF_UNFOLLOWABLE,	/* CFI rule we cannot follow in code that keeps
					 * no frame pointer: walk cut, truncated */
	PROFD_CNT_STACK_COPIES,		/* samples that carried a stack copy (not a loss) */
	PROFD_CNT_STACK_COPY_FAULT,	/* stack copy wanted but its first page
					 * was unreadable: none carried */
	PROFD_CNT_GO_STACK_SWITCHES,	/* Go g0 -> goroutine stack switches followed (not a loss) */
	PROFD_CNT_GO_SWITCH_ERROR,	/* Go g/m/curg unreadable at a stack switch: walk stopped */
	PROFD_CNT_GO_SWITCH_MID,	/* Go sampled inside asmcgocall on g0, mid-switch:
					 * the goroutine's frame unknown, walk cut */
	PROFD_CNT_GO_SWITCH_BAD_SP,	/* Go cgo switch whose saved sp or g failed its
					 * check (outside its stack): walk cut */
	PROFD_CNT_OFFCPU_RECORDED,	/* switch-outs recorded (not a loss) */
	PROFD_CNT_OFFCPU_PENDING_FAILED,	/* switch-out not recorded: its pending
					 * entry could not be made */
	PROFD_CNT_OFFCPU_END_LOST,	/* off-CPU end dropped: ringbuf full */
	PROFD_CNT_OFFCPU_IN_UNSEEN,	/* off-CPU end whose switch-in no sched_switch
					 * showed: ended at the next switch-out */
	PROFD_CNT_UNWIND_LEAF_ENTRY,	/* leaf at a function's entry or return
					 * in code without rows: caller from sp */
	PROFD_CNT_UNWIND_LEAF_ENTRY_UNVERIFIED,	/* such a leaf whose word at sp is
						 * no return address: walk cut */
	PROFD_CNT_RUNTIME_FIRST,	/* then PROFD_RUNTIME_COUNTERS per runtime */
	PROFD_CNT_MAX = PROFD_CNT_RUNTIME_FIRST +
			PROFD_RUNTIME_COUNT * PROFD_RUNTIME_COUNTERS,
};

/* Slot @k (< PROFD_RUNTIME_COUNTERS) of runtime @id's counters. */
#define PROFD_CNT_RUNTIME(id, k) \
	(PROFD_CNT_RUNTIME_FIRST + ((id) - 1) * PROFD_RUNTIME_COUNTERS + (k))

#endif /* PROFD_BPF_PROFD_H */
