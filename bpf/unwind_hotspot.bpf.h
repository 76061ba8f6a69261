/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_hotspot.bpf.h - the HotSpot walker (JDK 17 - 25, x86-64).
 *
 * Owns: the step that looks at each native user IP of the sample, after
 * the native walk, and records a frame (format: unwind_hotspot.h) for
 * each one in the JVM's code: a pc in the interpreter's code is an
 * interpreted frame (its Method* and bcp read from the frame's slots at
 * the rbp the native walk had for it, the method's class name and the
 * bci recorded); a pc in a code heap is looked up
 * in the heap's segment map, as HotSpot's CodeHeap::find_blob_unsafe()
 * does (the pc's segment, back by the hop counts to the block's first
 * segment, a 0; 0xFF: free), at most PROFD_HS_MAX_HOPS hops, and the
 * blob after the block's header must hold the pc. User space names the
 * frames (src/hotspot/) only after checking the live blob is still the
 * one recorded. Included by runtime.bpf.h (the registry), after its maps.
 *
 * Frames that keep no frame pointer (C1/C2 code without
 * -XX:+PreserveFramePointer) are not unwound here: the native walk stops
 * or goes astray at them, and only the frames it found are looked at.
 */
#ifndef PROFD_BPF_UNWIND_HOTSPOT_BPF_H
#define PROFD_BPF_UNWIND_HOTSPOT_BPF_H

#include "maps.bpf.h"
#include "unwind_hotspot.h"

_Static_assert(PROFD_MAX_USER_FRAMES <= PROFD_HS_INDEX_MASK + 1,
	       "a native index fits its bits");
_Static_assert(PROFD_MAX_IPS + 2 * PROFD_MAX_INTERP_FRAMES <= PROFD_SCRATCH_IPS,
	       "HotSpot's frames fit the scratch IPs");

/* The HotSpot state of the capture's process (copied from runtime_procs). */
#define HS(st) ((const struct profd_hotspot_proc *)(st)->rt_state)

#define HS_FREE_SENTINEL	0xff
/* hs_find_blob()'s results that are no address */
#define HS_NOT_CODE		0	/* in no code heap */
#define HS_NO_BLOB		1	/* in a heap, no blob holds it */
#define HS_READ_ERR		2

/*
 * hs_find_blob - the CodeBlob whose block holds @pc (its address, after
 * the block's HeapBlock header), or HS_NOT_CODE, HS_NO_BLOB, HS_READ_ERR.
 * A global function: the verifier checks its loop once.
 */
__attribute__((noinline))
__u64 hs_find_blob(struct profd_unwind_state *st, __u64 pc)
{
	const struct profd_hotspot_proc *hs;
	__u64 low = 0, segmap = 0, seg;
	__u32 log2;
	__u8 v;

	if (!st)
		return HS_NOT_CODE;
	hs = HS(st);
	log2 = hs->log2_segment & 31;
	for (int i = 0; i < PROFD_HS_MAX_HEAPS; i++) {
		if (i >= hs->nheaps)
			break;
		if (pc >= hs->heap_low[i] && pc - hs->heap_low[i] < hs->heap_size[i]) {
			low = hs->heap_low[i];
			segmap = hs->heap_segmap[i];
			break;
		}
	}
	if (!low)
		return HS_NOT_CODE;
	seg = (pc - low) >> log2;
	for (int hop = 0; hop < PROFD_HS_MAX_HOPS; hop++) {
		if (bpf_probe_read_user(&v, 1, (void *)(segmap + seg)))
			return HS_READ_ERR;
		if (v == HS_FREE_SENTINEL || v > seg)
			return HS_NO_BLOB;
		if (!v)
			return low + (seg << log2) + hs->block_header;
		seg -= v;
	}
	return HS_NO_BLOB;
}

enum hs_step_result {
	HS_STEP_NEXT = 0,
	HS_STEP_FULL = 1,	/* PROFD_MAX_INTERP_FRAMES kept */
};

/* Append frame (@w0, @w1). */
static __always_inline void hs_put(struct profd_unwind_state *st, __u32 n, __u64 w0, __u64 w1)
{
	__u32 idx = (__u32)st->sample.kernel_len + st->sample.user_len + 2 * n;

	put_ip(st, idx, w0);
	put_ip(st, idx + 1, w1);
	st->sample.interp_len = n + 1;
}

/* The pointer at @addr, 0 when unreadable. */
static __always_inline __u64 hs_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/*
 * hs_interp_frame - record interpreted frame @i running @method at @bcp:
 * the method's class name Symbol and the bci (unwind_hotspot.h). A bcp
 * outside the method's bytecodes (the frame is being built or torn
 * down) records nothing, counted.
 */
static __always_inline int hs_interp_frame(struct profd_unwind_state *st, __u32 n, __u32 i,
					   __u64 method, __u64 bcp)
{
	const struct profd_hotspot_proc *hs = HS(st);
	__u64 cm, sym, code;

	cm = method ? hs_read_ptr(method + hs->method_const_method) : 0;
	sym = cm ? hs_read_ptr(cm + hs->cm_constants) : 0;
	sym = sym ? hs_read_ptr(sym + hs->cp_pool_holder) : 0;
	sym = sym ? hs_read_ptr(sym + hs->klass_name) : 0;
	if (!sym) {
		count(PROFD_CNT_HS_READ_ERR);
		return HS_STEP_NEXT;
	}
	code = cm + hs->const_method_size;
	if (bcp < code || bcp - code >= 0xffff) {
		count(PROFD_CNT_HS_BAD_INTERP);
		return HS_STEP_NEXT;
	}
	hs_put(st, n, profd_hs_frame0(method, i, PROFD_HS_FRAME_INTERP),
	       (sym & PROFD_HS_ADDR_MASK) | (bcp - code) << PROFD_HS_BCI_SHIFT);
	return HS_STEP_NEXT;
}

/*
 * hs_frame_step - look at native user frame @i: record it when it is
 * the JVM's code. A global function: the verifier checks it once.
 */
__attribute__((noinline))
int hs_frame_step(struct profd_unwind_state *st, __u32 i)
{
	const struct profd_hotspot_proc *hs;
	__u64 ip, pc, blob, bp, name = 0, slots[PROFD_HS_BCP_BELOW_METHOD + 1];
	__u32 n, cid = 0, cid_off;
	__s32 size = 0;
	bool exact;

	if (!st)
		return HS_STEP_FULL;
	hs = HS(st);
	n = st->sample.interp_len;
	if (n >= PROFD_MAX_INTERP_FRAMES)
		return HS_STEP_FULL;
	barrier_var(i);
	ip = st->ips[(st->sample.kernel_len + i) & (PROFD_SCRATCH_IPS - 1)];
	exact = !i || (ip & PROFD_IP_EXACT);
	ip &= ~PROFD_IP_EXACT;
	pc = exact ? ip : ip - 1;
	if (pc >= hs->interp_low && pc - hs->interp_low < hs->interp_size) {
		bp = st->ips[PROFD_FRAME_BP_SLOT(i)];
		/* [bcp ... Method*]: the slots from bp + (method - 5) words up */
		if (!bp || bpf_probe_read_user(slots, sizeof(slots),
					       (void *)(bp + (__s64)(hs->interp_method_slot -
								PROFD_HS_BCP_BELOW_METHOD) * 8))) {
			count(PROFD_CNT_HS_READ_ERR);
			return HS_STEP_NEXT;
		}
		return hs_interp_frame(st, n, i, slots[PROFD_HS_BCP_BELOW_METHOD], slots[0]);
	}
	blob = hs_find_blob(st, pc);
	if (blob == HS_NOT_CODE)
		return HS_STEP_NEXT;
	if (blob == HS_READ_ERR || blob == HS_NO_BLOB) {
		count(blob == HS_READ_ERR ? PROFD_CNT_HS_READ_ERR : PROFD_CNT_HS_NO_BLOB);
		return HS_STEP_NEXT;
	}
	if (bpf_probe_read_user(&size, sizeof(size), (void *)(blob + hs->blob_size_off)) ||
	    bpf_probe_read_user(&name, sizeof(name), (void *)(blob + hs->blob_name_off))) {
		count(PROFD_CNT_HS_READ_ERR);
		return HS_STEP_NEXT;
	}
	if (size <= 0 || pc >= blob + (__u32)size) {
		count(PROFD_CNT_HS_NO_BLOB);
		return HS_STEP_NEXT;
	}
	cid_off = hs->compile_id_off;
	if (cid_off + 4 <= (__u32)size &&
	    bpf_probe_read_user(&cid, sizeof(cid), (void *)(blob + cid_off))) {
		count(PROFD_CNT_HS_READ_ERR);
		return HS_STEP_NEXT;
	}
	hs_put(st, n, profd_hs_frame0(blob, i, PROFD_HS_FRAME_BLOB),
	       (__u64)cid | (name & 0xffffffffULL) << 32);
	return HS_STEP_NEXT;
}

/*
 * unwind_hotspot_step - look at up to PROFD_HS_FRAMES_PER_PROG native
 * user frames from rt_cursor - 1 (rt_cursor 0: the walk starts), then
 * tail-call itself or emit. More frames than it can look at or keep:
 * PROFD_SAMPLE_INTERP_TRUNCATED (the rest stay native).
 */
static __always_inline int unwind_hotspot_step(void *ctx, void *progs, __u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	int ret = HS_STEP_NEXT;
	__u32 i, nuser;

	if (!st)
		return 0;
	if (!st->rt_cursor) {
		count(PROFD_CNT_HS_SAMPLES);
		st->sample.flags |= PROFD_SAMPLE_INTERP;
		st->rt_cursor = 1;
	}
	i = (__u32)st->rt_cursor - 1;
	nuser = st->sample.user_len;
	for (int k = 0; k < PROFD_HS_FRAMES_PER_PROG; k++) {
		if (i >= nuser || i >= PROFD_MAX_USER_FRAMES)
			break;
		ret = hs_frame_step(st, i);
		if (ret != HS_STEP_NEXT)
			break;
		i++;
	}
	st->rt_cursor = (__u64)i + 1;
	if (ret == HS_STEP_NEXT && i < nuser && st->rt_tail_calls < PROFD_HS_MAX_TAIL_CALLS) {
		st->rt_tail_calls++;
		bpf_tail_call(ctx, progs, PROFD_PROG_RUNTIME + PROFD_RUNTIME_HOTSPOT - 1);
	}
	if (i < nuser) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_TRUNCATED;
		count(PROFD_CNT_HS_TRUNCATED);
	}
	bpf_tail_call(ctx, progs, PROFD_PROG_EMIT);
	return chain_broken(st);
}

#endif /* PROFD_BPF_UNWIND_HOTSPOT_BPF_H */
