/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_ruby.h - the contract between the BPF CRuby unwinder and user
 * space (src/ruby/).
 *
 * User space recognises a CRuby interpreter in a process by its symbols
 * (libruby.so or a static ruby: `ruby_current_vm_ptr`, `rb_vm_exec`,
 * `ruby_version`), picks the struct offsets of its version (data:
 * src/ruby/offsets.c, checked against the live process) and writes one
 * `runtime_procs` entry (bpf/runtime.h) of runtime PROFD_RUNTIME_CRUBY
 * whose state is a struct profd_ruby_proc.
 *
 * The unwinder finds the sampled thread's rb_thread_t (the thread whose
 * `tid` is the sampled task's pid, searched in the thread lists of the
 * VM's ractors and cached in `runtime_threads`), follows thread->ec (the running
 * fiber's execution context) to ec->cfp, and walks the control frames
 * from cfp up to the end of the VM stack (vm_stack + vm_stack_size
 * VALUEs). It appends to the sample, after the user IPs,
 * sample.interp_len frames of two __u64 each, leaf first:
 *
 *   Ruby method frame (VM_FRAME_MAGIC_METHOD):
 *     [0] ep[VM_ENV_DATA_INDEX_ME_CREF] (the method entry, or an svar
 *         holding it; user space follows it to the method's iseq and its
 *         owner, for "Owner#method") | PROFD_RB_METHOD |
 *         PROFD_RB_GROUP_END if the frame has VM_FRAME_FLAG_FINISH (the
 *         outermost frame its rb_vm_exec() call runs)
 *     [1] cfp->pc as read (an address in the iseq's encoded instructions;
 *         | the GC epoch, see PROFD_RB_EPOCH below;
 *         user space checks that it lies inside the iseq it names, which
 *         also tells an iseq from another later allocated at its address)
 *   Other Ruby frame (cfp->iseq set: block, class body, top, main, eval,
 *   rescue, ensure):
 *     [0] iseq address (rb_iseq_t *) | (PROFD_RB_GROUP_END as above)
 *     [1] cfp->pc as read
 *   C frame (VM_FRAME_MAGIC_CFUNC):
 *     [0] ep[VM_ENV_DATA_INDEX_ME_CREF] (the method entry) |
 *         PROFD_RB_CFUNC | (PROFD_RB_GROUP_END as above)
 *     [1] the GC epoch only (pc 0)
 *
 * As in Ruby's own backtraces (vm_backtrace.c), the outermost control
 * frame (the top frame below the main script's) is not walked, and frames
 * without an iseq that are not C frames, or with an iseq but no pc, are
 * skipped. User space names each frame and puts each group (frames up to
 * and including one with PROFD_RB_GROUP_END) where its rb_vm_exec()
 * native frame is in the native stack (src/ruby/).
 */
#ifndef PROFD_BPF_UNWIND_RUBY_H
#define PROFD_BPF_UNWIND_RUBY_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "runtime.h"

/* Ruby frames kept per sample (deeper stacks are flagged truncated). */
#define PROFD_MAX_RUBY_FRAMES		PROFD_MAX_INTERP_FRAMES
/* Control frames one program invocation walks before tail-calling itself. */
#define PROFD_RB_FRAMES_PER_PROG	32
/* Self tail calls the Ruby walker may take. */
#define PROFD_RB_MAX_TAIL_CALLS \
	(PROFD_MAX_RUBY_FRAMES / PROFD_RB_FRAMES_PER_PROG - 1)
/* Threads looked at when searching for a thread (all ractors together). */
#define PROFD_RB_MAX_THREAD_SCAN	256
/* Ractors whose threads are searched (vm->ractor.set, the main one first). */
#define PROFD_RB_MAX_RACTORS		16
/* Bytes read of an rb_thread_t: its offsets must lie below this - 8. */
#define PROFD_RB_THREAD_BUF		128

#define PROFD_RB_GROUP_END		(1ULL << 63)
#define PROFD_RB_CFUNC			(1ULL << 62)
#define PROFD_RB_METHOD			(1ULL << 61)
#define PROFD_RB_ADDR_MASK		((1ULL << 56) - 1)

/*
 * Every frame's [1] also carries what user space needs to know which
 * object a frame's address held when the sample was taken: the low 14
 * bits of the process's GC count (rb_objspace's profile.count) in bits
 * 48-61 with PROFD_RB_EPOCH set (bits 0-46 are the pc);
 * PROFD_RB_GC_QUIET when no GC was marking or running then, and
 * PROFD_RB_GC_MARKING when a GC cycle was marking (the count read
 * first, then rb_objspace's flags).
 *
 * CRuby frees objects only when a cycle sweeps; cycle c + 1 starts (the
 * count becomes c + 1) after cycle c's sweep ended, marks, then sweeps.
 * An object a live control frame references outside marking was marked
 * by its cycle (or allocated after its marking), so it lives until cycle
 * c + 1 sweeps: a read that starts after a quiet sample and ends with the
 * count still c sees the sample's object, and so do later samples in
 * epoch c and those of epoch c + 1 taken while it marks. During marking a
 * frame that returns before its iseq is marked lets the iseq be freed in
 * that cycle's sweep. Within one epoch a slot is freed at most once
 * (src/ruby/iseq_cache.c).
 */
#define PROFD_RB_PC_MASK		((1ULL << 47) - 1)
#define PROFD_RB_EPOCH			(1ULL << 47)
#define PROFD_RB_EPOCH_SHIFT		48
#define PROFD_RB_EPOCH_MASK		0x3fffULL
#define PROFD_RB_GC_MARKING		(1ULL << 62)
#define PROFD_RB_GC_QUIET		(1ULL << 63)

/* rb_objspace.flags (3.1; rb_during_gc()'s code checks during_gc's bit) */
#define PROFD_RB_GC_MODE_MASK		3	/* enum gc_mode */
#define PROFD_RB_GC_MODE_MARKING	1
#define PROFD_RB_GC_DURING_GC_BIT	5

/* The runtime_procs state of a CRuby process (src/ruby/offsets.h fills it). */
struct profd_ruby_proc {
	__u64 vm_ptr_addr;		/* runtime address of ruby_current_vm_ptr */
	__u16 vm_ractor_set;		/* rb_vm_t.ractor.set (list head) */
	__u16 ractor_threads;		/* rb_ractor_t.threads.set (list head) */
	__u16 thread_lt_node;		/* rb_thread_t.lt_node (list node) */
	__u16 thread_ec;		/* rb_thread_t.ec; < PROFD_RB_THREAD_BUF - 8 */
	__u16 thread_tid;		/* rb_thread_t.tid (int); < PROFD_RB_THREAD_BUF - 4 */
	__u16 ec_vm_stack;		/* rb_execution_context_t.vm_stack */
	__u16 ec_vm_stack_size;		/* .vm_stack_size (VALUEs) */
	__u16 ec_cfp;			/* .cfp */
	__u16 cfp_size;			/* sizeof(rb_control_frame_t), <= 128 */
	__u16 cfp_pc;			/* rb_control_frame_t.pc */
	__u16 cfp_iseq;			/* .iseq */
	__u16 cfp_ep;			/* .ep */
	__s16 ep_flags;			/* VM_ENV_DATA_INDEX_FLAGS * 8 (bytes from ep) */
	__s16 ep_me_cref;		/* VM_ENV_DATA_INDEX_ME_CREF * 8 */
	__u32 frame_magic_mask;		/* VM_FRAME_MAGIC_MASK */
	__u32 frame_magic_cfunc;	/* VM_FRAME_MAGIC_CFUNC */
	__u32 frame_magic_method;	/* VM_FRAME_MAGIC_METHOD */
	__u32 frame_flag_finish;	/* VM_FRAME_FLAG_FINISH */
	__u16 vm_main_thread;		/* rb_vm_t.ractor.main_thread */
	__u16 flags;			/* PROFD_RB_PROC_* */
	__u16 ractor_vmlr_node;		/* rb_ractor_t.vmlr_node (list node) */
	__u64 gc_count_addr;		/* runtime address of the GC count
					 * (rb_objspace profile.count); 0: none */
	__u64 gc_flags_addr;		/* runtime address of rb_objspace.flags;
					 * 0: none (no sample is quiet) */
};

/*
 * flags: the main thread's rb_thread_t.tid is stale: a forked child
 * (CRuby 3.1 sets tid at thread start only, so the child's main thread
 * keeps its parent's), whose thread-group leader is the main thread.
 */
#define PROFD_RB_PROC_STALE_MAIN_TID	1

/* The CRuby walker's counters (slots of bpf/profd.h's `counters`). */
#define PROFD_CNT_RB_SAMPLES \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CRUBY, 0)	/* samples walked (not a loss) */
#define PROFD_CNT_RB_NO_THREAD \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CRUBY, 1)	/* thread without an rb_thread_t */
#define PROFD_CNT_RB_READ_ERR \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CRUBY, 2)	/* frame unreadable: walk ended */
#define PROFD_CNT_RB_TRUNCATED \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CRUBY, 3)	/* more frames than kept */
#define PROFD_CNT_RB_BAD_STACK \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_CRUBY, 4)	/* cfp outside its VM stack: walk refused */

_Static_assert(sizeof(struct profd_ruby_proc) <= PROFD_RUNTIME_STATE_SIZE,
	       "CRuby's state fits runtime_procs");
_Static_assert(PROFD_RB_THREAD_BUF <= PROFD_RUNTIME_BUF,
	       "CRuby's reads fit the scratch buffer");
_Static_assert(PROFD_RB_MAX_TAIL_CALLS <= PROFD_RUNTIME_TAIL_CALLS,
	       "the native walk leaves CRuby its tail calls");

#endif /* PROFD_BPF_UNWIND_RUBY_H */
