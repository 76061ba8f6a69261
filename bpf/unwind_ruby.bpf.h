/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_ruby.bpf.h - the CRuby unwinder (3.1; layouts: src/ruby/offsets.c).
 *
 * Owns: the step that appends the sampled thread's Ruby control frames to
 * the sample (format: unwind_ruby.h), reading the process's
 * `runtime_procs` state (where ruby_current_vm_ptr is and the struct
 * offsets, written by src/ruby/) and caching each thread's rb_thread_t in
 * `runtime_threads`. Included by runtime.bpf.h (the registry), after
 * those maps.
 *
 * Finding the thread: rb_thread_t.tid is the kernel's thread id (CRuby
 * sets it from gettid() in native_thread_init()), so the cached thread is
 * checked against the sampled task's tid on every sample (one read, which
 * also gives th->ec); on a mismatch the unwinder scans the thread lists
 * of the VM's ractors: vm->ractor.set is a ccan list_head of every ractor
 * that runs or blocks (the main one first, then Ractor.new's in the order
 * they started) linked by rb_ractor_t.vmlr_node, and each ractor's
 * threads.set one of its threads linked by rb_thread_t.lt_node; a list
 * ends at its head's own address. At most PROFD_RB_MAX_RACTORS ractors
 * and PROFD_RB_MAX_THREAD_SCAN threads in all are looked at. A
 * thread that is not a Ruby thread (the timer thread, a thread of a C
 * library) is remembered for 100 ms so it is not scanned each sample.
 * In a forked child CRuby 3.1 leaves the main thread's tid its parent's:
 * user space flags that (PROFD_RB_PROC_STALE_MAIN_TID) and the child's
 * thread-group leader is taken to run vm->ractor.main_thread. A
 * thread's entry is deleted when it exits (profd.bpf.c), and an exiting
 * thread's sample never inserts one.
 *
 * The walk: th->ec is the running fiber's execution context; its control
 * frames lie at the top of its VM stack, from ec->cfp (the innermost) up
 * to vm_stack + vm_stack_size VALUEs (exclusive), cfp_size bytes apart.
 * A cfp outside that stack, or not on a frame boundary, is refused
 * (PROFD_CNT_RB_BAD_STACK: the memory is torn or not a Ruby thread's).
 * The outermost control frame is left out, as CRuby's own backtraces do
 * (vm_backtrace.c): it is the dummy frame every execution context starts
 * with (th_init, rb_ec_initialize_vm_stack), and on the main thread it
 * holds a "<main>" iseq and VM_FRAME_FLAG_FINISH that no rb_vm_exec()
 * call runs (Init_VM).
 * Per frame: the control frame (pc, iseq, ep; read 14 at a time) and
 * ep[-2..0] (method entry or cref, specval, flags), taken from a window
 * of the VM stack read 768 bytes at a time (rb_frame_ep()): ~0.2 reads
 * a frame for a deep stack of method calls. Frames that Ruby's own
 * backtraces leave out (no iseq or no pc, and not a C frame: dummy and
 * IFUNC frames) are skipped.
 */
#ifndef PROFD_BPF_UNWIND_RUBY_BPF_H
#define PROFD_BPF_UNWIND_RUBY_BPF_H

#include "maps.bpf.h"
#include "unwind_ruby.h"

#define PROFD_RB_NEGATIVE_TTL_NS	(100ULL * 1000 * 1000)

/* The CRuby state of the capture's process (copied from runtime_procs). */
#define RB(st) ((const struct profd_ruby_proc *)(st)->rt_state)

/*
 * Where the walker keeps things in st->rt_buf: a thread, or a batch of
 * up to RB_BATCH_BYTES of consecutive control frames (one read for up to
 * 14 frames: they are contiguous), at 0; an execution context's first 64
 * bytes, or the ep[-2..0] of a frame whose env is not on the VM stack
 * (moved to the heap by a block or binding that outlived it), at
 * RB_BUF_EP; a window of up to RB_EPW_BYTES of the VM stack's values at
 * RB_BUF_EPW, from which the eps of consecutive frames are taken (see
 * rb_frame_ep()); across tail calls the bounds of the VM stack being
 * walked (RB_BUF_STACK, RB_BUF_END), the batch held (its address,
 * RB_BUF_BATCH, and bytes, RB_BUF_BATCH_LEN) and the window held
 * (RB_BUF_EPW_BASE, RB_BUF_EPW_LEN).
 */
#define RB_BATCH_BYTES	896
#define RB_BUF_EP	896
#define RB_EC_READ	64
#define RB_EP_READ	24	/* ep[-2], ep[-1], ep[0] */
#define RB_BUF_EPW	1024
#define RB_EPW_BYTES	768
#define RB_BUF_EPW_LEN	(PROFD_RUNTIME_BUF - 56)
#define RB_BUF_EPW_BASE	(PROFD_RUNTIME_BUF - 48)
#define RB_BUF_STACK	(PROFD_RUNTIME_BUF - 40)
#define RB_BUF_EPOCH	(PROFD_RUNTIME_BUF - 32)	/* [1]'s epoch bits, or 0 */
#define RB_BUF_BATCH_LEN	(PROFD_RUNTIME_BUF - 24)
#define RB_BUF_BATCH	(PROFD_RUNTIME_BUF - 16)
#define RB_BUF_END	(PROFD_RUNTIME_BUF - 8)
_Static_assert(RB_BATCH_BYTES <= RB_BUF_EP && RB_BUF_EP + RB_EC_READ <= RB_BUF_EPW &&
	       RB_BUF_EPW + RB_EPW_BYTES <= RB_BUF_EPW_LEN && RB_EPW_BYTES < 1024,
	       "CRuby's buffer layout");
/* A VM stack larger than this (VALUEs) is torn memory (CRuby's: 128 KiB). */
#define RB_MAX_VM_STACK	(1ULL << 28)

/* The 8 bytes at @off of the read buffer (its slack covers off 255). */
static __always_inline __u64 rb_buf_u64(struct profd_unwind_state *st, __u32 off)
{
	barrier_var(off);
	return *(__u64 *)&st->rt_buf[off & (PROFD_RUNTIME_BUF - 1)];
}

static __always_inline __u32 rb_buf_u32(struct profd_unwind_state *st, __u32 off)
{
	barrier_var(off);
	return *(__u32 *)&st->rt_buf[off & (PROFD_RUNTIME_BUF - 1)];
}

static __always_inline __u64 rb_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* Read rb_thread_t @th's first PROFD_RB_THREAD_BUF bytes into st->rt_buf. */
static __always_inline int rb_read_thread(struct profd_unwind_state *st, __u64 th)
{
	return bpf_probe_read_user(st->rt_buf, PROFD_RB_THREAD_BUF, (void *)th);
}

/* rb_scan_ractor()'s result when the thread is not on the list. */
#define RB_SCAN_MISS	(1ULL << 63)

/*
 * rb_scan_ractor - the rb_thread_t on the thread list at @head (a
 * ractor's threads.set) whose tid is @tid (its fields left in
 * st->rt_buf), looking at no more than @left threads; else RB_SCAN_MISS
 * | the number looked at (@left when the list is unreadable or longer).
 * A global function, so the verifier checks the loop once.
 */
__attribute__((noinline))
__u64 rb_scan_ractor(struct profd_unwind_state *st, __u64 head, __u32 tid, __u32 left)
{
	__u64 node, th;

	if (!st)
		return RB_SCAN_MISS | left;
	node = rb_read_ptr(head);	/* head.n.next */
	for (__u32 i = 0; i < PROFD_RB_MAX_THREAD_SCAN; i++) {
		if (node == head)
			return RB_SCAN_MISS | i;
		if (!node || i >= left)
			break;
		th = node - RB(st)->thread_lt_node;
		if (rb_read_thread(st, th))
			break;
		if (rb_buf_u32(st, RB(st)->thread_tid) == tid)
			return th;
		node = rb_buf_u64(st, RB(st)->thread_lt_node);	/* lt_node.next */
	}
	return RB_SCAN_MISS | left;
}

/*
 * rb_scan_threads - the rb_thread_t of any ractor of the VM whose tid is
 * @tid (its fields left in st->rt_buf), or 0: the ractors of
 * vm->ractor.set in turn, at most PROFD_RB_MAX_RACTORS of them and
 * PROFD_RB_MAX_THREAD_SCAN threads in all. A global function.
 */
__attribute__((noinline))
__u64 rb_scan_threads(struct profd_unwind_state *st, __u32 tid)
{
	__u64 vm, rhead, rnode, ractor, res;
	__u32 left = PROFD_RB_MAX_THREAD_SCAN, n;

	if (!st)
		return 0;
	vm = rb_read_ptr(RB(st)->vm_ptr_addr);
	if (!vm)
		return 0;
	rhead = vm + RB(st)->vm_ractor_set;
	rnode = rb_read_ptr(rhead);	/* ractor.set.n.next: the main ractor */
	for (int i = 0; i < PROFD_RB_MAX_RACTORS; i++) {
		if (!rnode || rnode == rhead || !left)
			return 0;
		ractor = rnode - RB(st)->ractor_vmlr_node;
		res = rb_scan_ractor(st, ractor + RB(st)->ractor_threads, tid, left);
		if (!(res & RB_SCAN_MISS))
			return res;
		n = (__u32)res;
		if (n >= left)
			return 0;
		left -= n;
		rnode = rb_read_ptr(rnode);	/* vmlr_node.next */
	}
	return 0;
}

/*
 * rb_gc_epoch - the GC epoch bits of this sample's frames (unwind_ruby.h):
 * the count first, then the flags, so a count that is already the next
 * cycle's is seen with during_gc set (gc_start() sets it before counting).
 */
static __always_inline __u64 rb_gc_epoch(struct profd_unwind_state *st)
{
	__u64 gc = 0, w;
	__u32 flags = 0;

	if (!RB(st)->gc_count_addr ||
	    bpf_probe_read_user(&gc, sizeof(gc), (void *)RB(st)->gc_count_addr))
		return 0;
	w = PROFD_RB_EPOCH | (gc & PROFD_RB_EPOCH_MASK) << PROFD_RB_EPOCH_SHIFT;
	if (!RB(st)->gc_flags_addr ||
	    bpf_probe_read_user(&flags, sizeof(flags), (void *)RB(st)->gc_flags_addr))
		return w;
	if ((flags & PROFD_RB_GC_MODE_MASK) == PROFD_RB_GC_MODE_MARKING)
		w |= PROFD_RB_GC_MARKING;
	else if (!(flags & (1u << PROFD_RB_GC_DURING_GC_BIT)))
		w |= PROFD_RB_GC_QUIET;
	return w;
}

/*
 * rb_start - find the thread, its execution context and the innermost
 * control frame, and keep the VM stack's end at RB_BUF_END. Returns the
 * frame's address, or 0 when there is nothing to walk (counted; a
 * refused or unreadable context also flags the sample).
 */
__attribute__((noinline))
__u64 rb_start(struct profd_unwind_state *st)
{
	struct profd_runtime_thread *cached, fresh = {};
	__u64 th = 0, ec, stack, size, cfp, end, csize;
	bool leader;
	__u32 tid;

	if (!st)
		return 0;
	tid = st->sample.tid;
	/* a forked child's leader runs the main thread, whose tid is stale */
	leader = (RB(st)->flags & PROFD_RB_PROC_STALE_MAIN_TID) && tid == st->sample.pid;
	cached = bpf_map_lookup_elem(&runtime_threads, &tid);
	if (cached && cached->thread) {
		if (!rb_read_thread(st, cached->thread) &&
		    (rb_buf_u32(st, RB(st)->thread_tid) == tid || leader) &&
		    rb_buf_u64(st, RB(st)->thread_ec))
			th = cached->thread;
	} else if (cached &&
		   bpf_ktime_get_ns() - cached->checked_ns < PROFD_RB_NEGATIVE_TTL_NS) {
		count(PROFD_CNT_RB_NO_THREAD);
		return 0;
	}
	if (!th) {
		th = rb_scan_threads(st, tid);
		if (!th && leader) {
			th = rb_read_ptr(rb_read_ptr(RB(st)->vm_ptr_addr) + RB(st)->vm_main_thread);
			if (th && rb_read_thread(st, th))
				th = 0;
		}
		fresh.thread = th;
		fresh.checked_ns = bpf_ktime_get_ns();
		/* an exiting thread's entry was deleted at its exit: keep it so */
		if (!(st->sample.flags & PROFD_SAMPLE_EXITING))
			bpf_map_update_elem(&runtime_threads, &tid, &fresh, BPF_ANY);
		if (!th) {
			count(PROFD_CNT_RB_NO_THREAD);
			return 0;
		}
	}
	ec = rb_buf_u64(st, RB(st)->thread_ec);
	if (!ec) {
		count(PROFD_CNT_RB_NO_THREAD);	/* not started, or finished */
		return 0;
	}
	if (bpf_probe_read_user(&st->rt_buf[RB_BUF_EP], RB_EC_READ, (void *)ec)) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_ERROR;
		count(PROFD_CNT_RB_READ_ERR);
		return 0;
	}
	stack = rb_buf_u64(st, RB_BUF_EP + RB(st)->ec_vm_stack);
	size = rb_buf_u64(st, RB_BUF_EP + RB(st)->ec_vm_stack_size);
	cfp = rb_buf_u64(st, RB_BUF_EP + RB(st)->ec_cfp);
	csize = RB(st)->cfp_size;
	end = stack + size * 8;
	if (!stack || !size || size > RB_MAX_VM_STACK || end < stack ||
	    cfp < stack || cfp >= end || !csize || (end - cfp) % csize) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_ERROR;
		count(PROFD_CNT_RB_BAD_STACK);
		return 0;
	}
	/* the outermost frame is the thread's dummy (backtraces skip it too) */
	*(__u64 *)&st->rt_buf[RB_BUF_END] = end - csize;
	/* the GC epoch names are checked against (bpf/unwind_ruby.h) */
	*(__u64 *)&st->rt_buf[RB_BUF_EPOCH] = rb_gc_epoch(st);
	*(__u64 *)&st->rt_buf[RB_BUF_STACK] = stack;
	*(__u64 *)&st->rt_buf[RB_BUF_BATCH] = 0;
	*(__u64 *)&st->rt_buf[RB_BUF_BATCH_LEN] = 0;
	*(__u64 *)&st->rt_buf[RB_BUF_EPW_BASE] = 0;
	*(__u64 *)&st->rt_buf[RB_BUF_EPW_LEN] = 0;
	return cfp;
}

enum rb_step_result {
	RB_STEP_NEXT = 0,
	RB_STEP_DONE = 1,	/* the end of the VM stack */
	RB_STEP_FULL = 2,	/* PROFD_MAX_RUBY_FRAMES kept */
	RB_STEP_ERROR = 3,	/* frame unreadable */
};

/*
 * rb_frame_ep - where in st->rt_buf the frame's ep[-2..0] (RB_EP_READ
 * bytes ending at @ep + 8) now lie, or -1 when unreadable. An env on the
 * VM stack (below the control frames; @ep inside the stack's values) is
 * taken from the window of the stack held at RB_BUF_EPW, and when it is
 * not there the window becomes the RB_EPW_BYTES (fewer at the stack's
 * start) that end with it: the VM stack grows upwards and each frame's
 * env lies below its callee's, so walking outwards the next frames'
 * eps are in that window until it is used up (~8-12 method frames a
 * read; a frame's env is its locals and 3 words, its caller's operands
 * between). A heap env is read alone into RB_BUF_EP, leaving the
 * window as it is.
 */
static __always_inline int rb_frame_ep(struct profd_unwind_state *st, __u64 ep)
{
	__u64 lo = ep - 16, hi = ep + 8, stack, wbase, wlen, size;

	if (lo > ep)
		return -1;
	wbase = *(__u64 *)&st->rt_buf[RB_BUF_EPW_BASE];
	wlen = *(__u64 *)&st->rt_buf[RB_BUF_EPW_LEN];
	if (lo >= wbase && hi <= wbase + wlen)
		return RB_BUF_EPW + (int)(lo - wbase);
	stack = *(__u64 *)&st->rt_buf[RB_BUF_STACK];
	if (lo < stack || hi > st->rt_cursor) {
		/* not on the VM stack's value side: a heap env */
		if (bpf_probe_read_user(&st->rt_buf[RB_BUF_EP], RB_EP_READ, (void *)lo))
			return -1;
		return RB_BUF_EP;
	}
	size = hi - stack < RB_EPW_BYTES ? hi - stack : RB_EPW_BYTES;
	size &= ~7ULL;
	barrier_var(size);
	if (size < RB_EP_READ || size > RB_EPW_BYTES ||
	    bpf_probe_read_user(&st->rt_buf[RB_BUF_EPW], size & 1023, (void *)(hi - size)))
		return -1;
	*(__u64 *)&st->rt_buf[RB_BUF_EPW_BASE] = hi - size;
	*(__u64 *)&st->rt_buf[RB_BUF_EPW_LEN] = size;
	return RB_BUF_EPW + (int)(size - RB_EP_READ);
}

/*
 * rb_frame_step - read control frame st->rt_cursor and its ep[-2..0],
 * append it (unless Ruby's backtraces skip it) and move to its caller.
 * A global function: the verifier checks it once.
 */
__attribute__((noinline))
int rb_frame_step(struct profd_unwind_state *st)
{
	__u64 cfp, end, base, len, size, pc, iseq, ep, flags, me, w0, w1;
	__u32 n, idx, magic, rel;
	int at;

	if (!st)
		return RB_STEP_ERROR;
	cfp = st->rt_cursor;
	end = *(__u64 *)&st->rt_buf[RB_BUF_END];
	if (cfp >= end)
		return RB_STEP_DONE;
	n = st->sample.interp_len;
	if (n >= PROFD_MAX_RUBY_FRAMES)
		return RB_STEP_FULL;
	base = *(__u64 *)&st->rt_buf[RB_BUF_BATCH];
	len = *(__u64 *)&st->rt_buf[RB_BUF_BATCH_LEN];
	if (cfp < base || cfp - base >= len) {
		/* the next frames, as many as fit, up to the end */
		size = RB_BATCH_BYTES - RB_BATCH_BYTES % RB(st)->cfp_size;
		if (size > end - cfp)
			size = end - cfp;
		if (size > RB_BATCH_BYTES)
			size = RB_BATCH_BYTES;
		barrier_var(size);
		if (!size || bpf_probe_read_user(st->rt_buf, size & 1023, (void *)cfp))
			goto unreadable;
		base = cfp;
		*(__u64 *)&st->rt_buf[RB_BUF_BATCH] = cfp;
		*(__u64 *)&st->rt_buf[RB_BUF_BATCH_LEN] = size;
	}
	rel = (__u32)(cfp - base);	/* < RB_BATCH_BYTES; the frame's fields below it */
	pc = rb_buf_u64(st, rel + RB(st)->cfp_pc);
	iseq = rb_buf_u64(st, rel + RB(st)->cfp_iseq);
	ep = rb_buf_u64(st, rel + RB(st)->cfp_ep);
	at = rb_frame_ep(st, ep);
	st->rt_cursor = cfp + RB(st)->cfp_size;
	if (at < 0)
		goto unreadable;
	flags = rb_buf_u64(st, (__u32)at + 16 + RB(st)->ep_flags);
	me = rb_buf_u64(st, (__u32)at + 16 + RB(st)->ep_me_cref);
	magic = (__u32)flags & RB(st)->frame_magic_mask;
	if (magic == RB(st)->frame_magic_cfunc) {
		w0 = (me & PROFD_RB_ADDR_MASK) | PROFD_RB_CFUNC;
		w1 = 0;
	} else if (!iseq || !pc) {
		return RB_STEP_NEXT;	/* dummy or IFUNC frame */
	} else if (magic == RB(st)->frame_magic_method) {
		w0 = (me & PROFD_RB_ADDR_MASK) | PROFD_RB_METHOD;
		w1 = pc & PROFD_RB_PC_MASK;
	} else {
		w0 = iseq & PROFD_RB_ADDR_MASK;
		w1 = pc & PROFD_RB_PC_MASK;
	}
	w1 |= *(__u64 *)&st->rt_buf[RB_BUF_EPOCH];
	if (flags & RB(st)->frame_flag_finish)
		w0 |= PROFD_RB_GROUP_END;
	idx = (__u32)st->sample.kernel_len + st->sample.user_len + 2 * n;
	put_ip(st, idx, w0);
	put_ip(st, idx + 1, w1);
	st->sample.interp_len = n + 1;
	return RB_STEP_NEXT;
unreadable:
	st->sample.flags |= PROFD_SAMPLE_INTERP_ERROR;
	count(PROFD_CNT_RB_READ_ERR);
	return RB_STEP_ERROR;
}

/*
 * unwind_ruby_step - walk up to PROFD_RB_FRAMES_PER_PROG control frames,
 * then tail-call itself or emit. A frame that cannot be read ends the
 * walk (PROFD_SAMPLE_INTERP_ERROR: user space adds an error frame).
 */
static __always_inline int unwind_ruby_step(void *ctx, void *progs, __u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	int ret = RB_STEP_NEXT;

	if (!st)
		return 0;
	if (!st->rt_cursor) {
		count(PROFD_CNT_RB_SAMPLES);
		st->sample.flags |= PROFD_SAMPLE_INTERP;
		st->rt_cursor = rb_start(st);
		if (!st->rt_cursor)
			goto emit;
	}
	for (int i = 0; i < PROFD_RB_FRAMES_PER_PROG; i++) {
		ret = rb_frame_step(st);
		if (ret != RB_STEP_NEXT)
			break;
	}
	if (ret == RB_STEP_NEXT && st->rt_cursor < *(__u64 *)&st->rt_buf[RB_BUF_END] &&
	    st->rt_tail_calls < PROFD_RB_MAX_TAIL_CALLS) {
		st->rt_tail_calls++;
		bpf_tail_call(ctx, progs, PROFD_PROG_RUNTIME + PROFD_RUNTIME_CRUBY - 1);
	}
	if ((ret == RB_STEP_NEXT || ret == RB_STEP_FULL) &&
	    st->rt_cursor < *(__u64 *)&st->rt_buf[RB_BUF_END]) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_TRUNCATED;
		count(PROFD_CNT_RB_TRUNCATED);
	}
emit:
	bpf_tail_call(ctx, progs, PROFD_PROG_EMIT);
	return chain_broken(st);
}

#endif /* PROFD_BPF_UNWIND_RUBY_BPF_H */
