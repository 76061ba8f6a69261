/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_v8.bpf.h - the V8 (Node) walker.
 *
 * Owns: the step that records the JS frames of the sampled thread's
 * frame-pointer chain (format: unwind_v8.h), from the process's
 * `runtime_procs` state (V8's frame slots and object layout, written by
 * src/v8/). Included by runtime.bpf.h (the registry), after its maps.
 *
 * The walk: fp = the sample's rbp, pc = its ip (or, when the sample is
 * in C++ code that keeps no frame pointer, the first native frame whose
 * rbp is its own: v8_first_frame()); per frame one read of
 * [fp - 48, fp + 16) (the frame's slots, the caller's fp and the return
 * address); then fp = [fp], pc = [fp + 8] while the chain goes up the
 * stack. A frame whose context and function slots are heap objects is
 * checked: the context's map's instance type a Context's, the
 * function's a JSFunction's, its `shared` a SharedFunctionInfo's (whose
 * name and script fields are read for the check user space repeats).
 * Marker (typed) frames and native frames are passed over. The frame at
 * the sample's rbp is recorded with the sample's ip (flagged the leaf):
 * user space tells whether it is the leaf's or, for a leaf that has no
 * frame at its pc (prologue, epilogue), its caller's (whose return
 * address the header holds). It is not recorded while sp lies above its
 * function slot (rbp set, the slots not pushed yet: they hold what an
 * earlier frame left), and its bytecode offset slot is left out while sp
 * lies above it.
 * Walker state between calls: st->rt_cursor the next frame's fp (0: no
 * more), st->f.ip its pc, st->f.pc_exact 1 while it is the leaf (the
 * native walk is over: st->f is free).
 */
#ifndef PROFD_BPF_UNWIND_V8_BPF_H
#define PROFD_BPF_UNWIND_V8_BPF_H

#include "maps.bpf.h"
#include "unwind_v8.h"

#define V8(st) ((const struct profd_v8_proc *)(st)->rt_state)

/* Where each read lands in st->rt_buf. */
#define V8_BUF_FRAME	0	/* PROFD_V8_FP_BELOW + 16 bytes */
#define V8_BUF_FN	64	/* PROFD_V8_FN_READ */
#define V8_BUF_SFI	128	/* PROFD_V8_SFI_READ */

enum v8_step_result {
	V8_STEP_NEXT = 0,
	V8_STEP_DONE = 1,	/* the chain ended */
	V8_STEP_FULL = 2,	/* PROFD_V8_MAX_FRAMES kept */
};

static __always_inline __u64 v8_buf64(struct profd_unwind_state *st, __u32 off)
{
	barrier_var(off);
	return *(__u64 *)&st->rt_buf[off & 255];
}

static __always_inline bool v8_heap(const struct profd_v8_proc *v, __u64 w)
{
	return (w & v->heap_tag_mask) == v->heap_tag && w > 4096;
}

/* The instance type of heap object @tagged's map, or -1 (unreadable). */
static __always_inline int v8_type(const struct profd_v8_proc *v, __u64 tagged)
{
	__u64 map = 0;
	__u16 type = 0;

	if (bpf_probe_read_user(&map, sizeof(map), (void *)(tagged - v->heap_tag + v->map)) ||
	    !v8_heap(v, map) ||
	    bpf_probe_read_user(&type, sizeof(type),
				(void *)(map - v->heap_tag + v->map_instance_type)))
		return -1;
	return type;
}

/*
 * v8_first_frame - where the walk starts: the first native frame whose
 * rbp is its own frame pointer, i.e. whose [rbp + 8] is the native
 * walk's next return address (within PROFD_V8_SCAN_FRAMES frames). The
 * sample's own rbp (frame 0) in JS code; in C++ code V8 called (a
 * runtime function, a C++ builtin, the GC: compiled without frame
 * pointers, rbp is any register there) the frame that called it
 * (CEntry's, an exit frame), whose rbp the native walk restored by CFI.
 * None found: the sample's rbp, as it was.
 */
static __always_inline void v8_first_frame(struct profd_unwind_state *st)
{
	__u32 n = st->sample.user_len, base = st->sample.kernel_len;
	__u64 bp, ip, w;

	for (__u32 i = 0; i < PROFD_V8_SCAN_FRAMES; i++) {
		if (i + 1 >= n)
			return;
		bp = st->ips[PROFD_FRAME_BP_SLOT(i)];
		ip = st->ips[(base + i + 1) & (PROFD_SCRATCH_IPS - 1)] & ~PROFD_IP_EXACT;
		if (!bp || bpf_probe_read_user(&w, sizeof(w), (void *)(bp + 8)) || w != ip)
			continue;
		if (i) {
			st->rt_cursor = bp;
			st->f.ip = st->ips[(base + i) & (PROFD_SCRATCH_IPS - 1)] & ~PROFD_IP_EXACT;
			st->f.pc_exact = 0;
			count(PROFD_CNT_V8_FROM_NATIVE);
		}
		return;
	}
}

/*
 * v8_start - the header entry ([sp], the offset register) and the walk's
 * first frame. A global function: the verifier checks it once.
 */
__attribute__((noinline))
int v8_start(struct profd_unwind_state *st)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 spw = 0, reg = 0, ra = 0;
	__u32 idx;
	void *regs;

	if (!st)
		return 0;
	bpf_probe_read_user(&spw, sizeof(spw), (void *)st->start.sp);
	if (V8(st)->offset_reg < 0x1000) {
		regs = (void *)bpf_task_pt_regs(task);
		bpf_probe_read_kernel(&reg, sizeof(reg), regs + V8(st)->offset_reg);
	}
	/* after `push rbp`, before `mov rbp, rsp`: the return address is above it */
	if (spw == st->start.bp && spw &&
	    !bpf_probe_read_user(&ra, sizeof(ra), (void *)(st->start.sp + 8)))
		spw = (ra & PROFD_V8_PC_MASK) | PROFD_V8_H_PUSHED;
	idx = (__u32)st->sample.kernel_len + st->sample.user_len;
	put_ip(st, idx, spw);
	put_ip(st, idx + 1, reg);
	st->sample.interp_len = 1;
	st->rt_cursor = st->start.bp;
	st->f.ip = st->start.ip;
	st->f.pc_exact = 1;
	v8_first_frame(st);
	return 0;
}

/*
 * v8_js_frame - check the JS frame whose context and function slots
 * are @ctx and @fn; on success append its two entries. Returns
 * V8_STEP_NEXT, or V8_STEP_FULL when no room was left.
 */
static __always_inline int v8_js_frame(struct profd_unwind_state *st, __u64 fp, __u64 ctx,
				       __u64 fn)
{
	const struct profd_v8_proc *v = V8(st);
	__u64 sfi, name, script, w, ba = 0, off = 0, flags = 0;
	__u32 n, idx;
	int type;

	type = v8_type(v, ctx);
	if (type < 0)
		goto read_err;
	if (type < v->first_context || type > v->last_context)
		goto not_js;
	if (bpf_probe_read_user(&st->rt_buf[V8_BUF_FN], PROFD_V8_FN_READ,
				(void *)(fn - v->heap_tag)))
		goto read_err;
	type = v8_type(v, fn);
	if (type < 0)
		goto read_err;
	if (type < v->t_js_function || type > v->t_js_function_last)
		goto not_js;
	sfi = v8_buf64(st, V8_BUF_FN + (v->fn_shared & 63));
	if (!v8_heap(v, sfi) ||
	    bpf_probe_read_user(&st->rt_buf[V8_BUF_SFI], PROFD_V8_SFI_READ,
				(void *)(sfi - v->heap_tag)))
		goto read_err;
	type = v8_type(v, sfi);
	if (type < 0)
		goto read_err;
	if (type != v->t_sfi)
		goto not_js;
	name = v8_buf64(st, V8_BUF_SFI + (v->sfi_name & 63));
	script = v8_buf64(st, V8_BUF_SFI + (v->sfi_script & 63));
	w = v8_buf64(st, V8_BUF_FRAME + ((PROFD_V8_FP_BELOW + v->fp_bytecode_offset) & 63));
	if ((w & v->smi_tag_mask) == v->smi_tag &&
	    (st->f.pc_exact != 1 || st->start.sp <= fp + v->fp_bytecode_offset)) {
		off = (__u32)((__s64)w >> (v->smi_shift & 63));
		ba = v8_buf64(st, V8_BUF_FRAME +
			      ((PROFD_V8_FP_BELOW + v->fp_bytecode_array) & 63));
		flags |= PROFD_V8_F_OFFSET;
	}
	if (st->f.pc_exact == 1)
		flags |= PROFD_V8_F_LEAF;

	n = st->sample.interp_len;
	if (n + 2 > PROFD_MAX_INTERP_FRAMES)
		return V8_STEP_FULL;
	idx = (__u32)st->sample.kernel_len + st->sample.user_len + 2 * n;
	put_ip(st, idx, (st->f.ip & PROFD_V8_PC_MASK) | flags);
	put_ip(st, idx + 1, sfi);
	put_ip(st, idx + 2, off | (__u64)profd_v8_check(name, script) << 32);
	put_ip(st, idx + 3, ba);
	st->sample.interp_len = n + 2;
	count(PROFD_CNT_V8_FRAMES);
	return V8_STEP_NEXT;
not_js:
	count(PROFD_CNT_V8_NOT_JS);
	return V8_STEP_NEXT;
read_err:
	count(PROFD_CNT_V8_OBJ_READ);
	return V8_STEP_NEXT;
}

/*
 * v8_frame_step - look at frame st->rt_cursor (pc st->f.ip), record it
 * if it is a JS frame, move to its caller. A global function: the
 * verifier checks it once.
 */
__attribute__((noinline))
int v8_frame_step(struct profd_unwind_state *st)
{
	const struct profd_v8_proc *v;
	__u64 fp, next, ret, ctx, fn;
	int ret_code = V8_STEP_NEXT;

	if (!st)
		return V8_STEP_DONE;
	v = V8(st);
	fp = st->rt_cursor;
	if (!fp || fp < PROFD_V8_FP_BELOW)
		return V8_STEP_DONE;
	if (bpf_probe_read_user(&st->rt_buf[V8_BUF_FRAME], PROFD_V8_FP_BELOW + 16,
				(void *)(fp - PROFD_V8_FP_BELOW)))
		return V8_STEP_DONE;
	next = v8_buf64(st, V8_BUF_FRAME + PROFD_V8_FP_BELOW);
	ret = v8_buf64(st, V8_BUF_FRAME + PROFD_V8_FP_BELOW + 8);
	ctx = v8_buf64(st, V8_BUF_FRAME + ((PROFD_V8_FP_BELOW + v->fp_context) & 63));
	fn = v8_buf64(st, V8_BUF_FRAME + ((PROFD_V8_FP_BELOW + v->fp_function) & 63));
	/* a leaf whose sp is above its function slot has not pushed it yet:
	 * the slot holds what an earlier frame left there */
	if (st->f.pc_exact == 1 && st->start.sp > fp + v->fp_function) {
		count(PROFD_CNT_V8_PROLOGUE);
		st->f.pc_exact = 2;
	}
	if (st->f.pc_exact != 2 && v8_heap(v, ctx) && v8_heap(v, fn))
		ret_code = v8_js_frame(st, fp, ctx, fn);
	st->f.pc_exact = 0;
	st->f.ip = ret;
	st->rt_cursor = next > fp && ret ? next : 0;
	if (ret_code != V8_STEP_NEXT)
		return ret_code;
	return st->rt_cursor ? V8_STEP_NEXT : V8_STEP_DONE;
}

/*
 * unwind_v8_step - look at up to PROFD_V8_FRAMES_PER_PROG frames, then
 * tail-call itself or emit. A chain longer than the walk may go, or more
 * JS frames than kept, flags the sample PROFD_SAMPLE_INTERP_TRUNCATED.
 */
static __always_inline int unwind_v8_step(void *ctx, void *progs, __u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	int ret = V8_STEP_NEXT;

	if (!st)
		return 0;
	if (!(st->sample.flags & PROFD_SAMPLE_INTERP)) {
		count(PROFD_CNT_V8_SAMPLES);
		st->sample.flags |= PROFD_SAMPLE_INTERP;
		v8_start(st);
	}
	for (int i = 0; i < PROFD_V8_FRAMES_PER_PROG; i++) {
		ret = v8_frame_step(st);
		if (ret != V8_STEP_NEXT)
			break;
	}
	if (ret == V8_STEP_NEXT && st->rt_cursor &&
	    st->rt_tail_calls < PROFD_V8_MAX_TAIL_CALLS) {
		st->rt_tail_calls++;
		bpf_tail_call(ctx, progs, PROFD_PROG_RUNTIME + PROFD_RUNTIME_V8 - 1);
	}
	if (ret == V8_STEP_FULL || (ret == V8_STEP_NEXT && st->rt_cursor)) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_TRUNCATED;
		count(PROFD_CNT_V8_TRUNCATED);
	}
	bpf_tail_call(ctx, progs, PROFD_PROG_EMIT);
	return chain_broken(st);
}

#endif /* PROFD_BPF_UNWIND_V8_BPF_H */
