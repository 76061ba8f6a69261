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

/* The pointer at @addr, 0 when unreadable. */
static __always_inline __u64 hs_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* Stage frame @n: (@w0, @w1). */
static __always_inline void hs_put(struct profd_unwind_state *st, __u32 n, __u64 w0, __u64 w1)
{
	barrier_var(n);
	st->ips[PROFD_RUNTIME_STAGE(2 * n)] = w0;
	st->ips[PROFD_RUNTIME_STAGE(2 * n + 1)] = w1;
	st->sample.interp_len = n + 1;
}

/*
 * hs_interp_frame - the record of an interpreted frame running @method at
 * @bcp: w0 and w1 (unwind_hotspot.h) in @out. 0, or -1 (unreadable, or
 * a bcp outside the method's bytecodes: counted). A native method's
 * frame (bcp 0) gets bci PROFD_HS_BCI_NATIVE.
 */
static __always_inline int hs_interp_frame(struct profd_unwind_state *st, __u32 i,
					   __u64 method, __u64 bcp, __u64 *out)
{
	const struct profd_hotspot_proc *hs = HS(st);
	__u64 cm, sym, code;

	cm = method ? hs_read_ptr(method + hs->method_const_method) : 0;
	sym = cm ? hs_read_ptr(cm + hs->cm_constants) : 0;
	sym = sym ? hs_read_ptr(sym + hs->cp_pool_holder) : 0;
	sym = sym ? hs_read_ptr(sym + hs->klass_name) : 0;
	if (!sym) {
		count(PROFD_CNT_HS_READ_ERR);
		return -1;
	}
	code = cm + hs->const_method_size;
	/* a native method's frame has no bcp (user space checks the method
	 * has no bytecodes) */
	if (!bcp)
		bcp = code + PROFD_HS_BCI_NATIVE;
	else if (bcp < code || bcp - code >= PROFD_HS_BCI_NATIVE) {
		count(PROFD_CNT_HS_BAD_INTERP);
		return -1;
	}
	out[0] = profd_hs_frame0(method, i, PROFD_HS_FRAME_INTERP);
	out[1] = (sym & PROFD_HS_ADDR_MASK) | (bcp - code) << PROFD_HS_BCI_SHIFT;
	return 0;
}

/* Bytes from a frame's sp to its fp in an interpreted frame, at most. */
#define HS_MAX_FRAME	(1u << 20)

/* ModRM byte @m of an FF /2 (call r/m64) with mode @mod; @sib: rm is 4 */
static __always_inline bool hs_call_modrm(__u8 m, __u8 mod, bool sib)
{
	return (m >> 6) == mod && ((m >> 3) & 7) == 2 && ((m & 7) == 4) == sib;
}

/*
 * hs_after_call - whether the code before @ra ends in a call, as HotSpot
 * emits them: call rel32 (E8), call through a register (FF D0+r, with a
 * REX prefix 41 for r8-r15) or through memory (FF /2: [reg+disp8],
 * [reg+disp32], [rip+disp32], with a SIB byte or not: the interpreter's
 * calls through the Method).
 */
static __always_inline bool hs_after_call(__u64 ra)
{
	__u8 b[8];	/* b[7] is the byte before ra */

	if (bpf_probe_read_user(b, sizeof(b), (void *)(ra - 8)))
		return false;
	return b[3] == 0xe8 ||
	       (b[6] == 0xff && hs_call_modrm(b[7], 3, false)) ||
	       (b[6] == 0xff && hs_call_modrm(b[7], 3, true)) ||
	       (b[5] == 0xff && hs_call_modrm(b[6], 1, false)) ||
	       (b[4] == 0xff && hs_call_modrm(b[5], 1, true)) ||
	       (b[2] == 0xff && (hs_call_modrm(b[3], 2, false) || b[3] == 0x15)) ||
	       (b[1] == 0xff && hs_call_modrm(b[2], 2, true));
}

/* Whether @pc is the JVM's code: in the interpreter or a code heap. */
static __always_inline bool hs_is_jvm_pc(const struct profd_hotspot_proc *hs, __u64 pc)
{
	if (pc - hs->interp_low < hs->interp_size)
		return true;
	for (int i = 0; i < PROFD_HS_MAX_HEAPS; i++)
		if (i < hs->nheaps && pc - hs->heap_low[i] < hs->heap_size[i])
			return true;
	return false;
}

/*
 * hs_call_into - the target of the call that return address @ra returns
 * from, when @ra is in the JVM's code and that target is in [@lo, @hi);
 * else 0. The two ways the JVM calls a stub: call rel32 (E8: C1, the
 * interpreter) and C2's runtime call, mov r10, imm64 then call r10
 * (49 BA imm64 41 FF D2: x86_64.ad, Java_To_Runtime).
 */
static __always_inline __u64 hs_call_into(const struct profd_hotspot_proc *hs, __u64 ra,
					  __u64 lo, __u64 hi)
{
	__u8 b[13];	/* b[12] is the byte before ra */
	__u64 t;

	if (!hs_is_jvm_pc(hs, ra - 1) || bpf_probe_read_user(b, sizeof(b), (void *)(ra - 13)))
		return 0;
	if (b[8] == 0xe8)
		t = ra + (__s64)(__s32)((__u32)b[9] | (__u32)b[10] << 8 | (__u32)b[11] << 16 |
					(__u32)b[12] << 24);
	else if (b[0] == 0x49 && b[1] == 0xba && b[10] == 0x41 && b[11] == 0xff && b[12] == 0xd2)
		__builtin_memcpy(&t, &b[2], sizeof(t));
	else
		return 0;
	return t >= lo && t < hi ? t : 0;
}

/* Bytes a stub pushes below the frame enter() built, at most. */
#define HS_STUB_MAX_PUSH	256

/*
 * hs_stub_leaf - the leaf pc @pc is in a stub without a frame size
 * (StubRoutines: arraycopy, fill, crc32, math): find its return address
 * as async-profiler's StackFrame::unwindStub() does on x86-64. Such a stub
 * starts with enter() (push rbp; mov rbp, rsp) or builds no frame; at its
 * entry or its ret the return address is at [sp], one instruction after
 * the entry it is at [sp + 8] (rbp at [sp]), past enter() at [rbp + 8]
 * (rbp at [rbp]). Each candidate is taken only if it returns into the
 * JVM's code right after a call rel32 whose target is in this blob
 * (@lo, @hi) and that target is where the rule needs it (the pc, the
 * byte before the pc and a push rbp, or an enter() with the pc neither
 * at it nor at a ret: the stubs jump to each other's shared loops, so
 * the pc may be anywhere in the blob, before the entry too).
 * @regs gets [saved rbp, return address]; returns the caller's sp, or 0:
 * nothing verified (the walk stops).
 */
static __always_inline __u64 hs_stub_leaf(const struct profd_hotspot_proc *hs, __u64 pc,
					  __u64 sp, __u64 bp, __u64 lo, __u64 hi, __u64 *regs)
{
	__u64 w[2], t;
	__u8 op = 0, e[4];

	if (bpf_probe_read_user(w, sizeof(w), (void *)sp) ||
	    bpf_probe_read_user(&op, 1, (void *)pc))
		return 0;
	/* at the entry or the ret: nothing of its own on the stack */
	t = hs_call_into(hs, w[0], lo, hi);
	if (t && (pc == t || op == 0xc3)) {
		regs[0] = bp;
		regs[1] = w[0];
		return sp + 8;
	}
	/* after the entry's push rbp */
	t = hs_call_into(hs, w[1], lo, hi);
	if (t && pc == t + 1 && !bpf_probe_read_user(e, 1, (void *)t) && e[0] == 0x55) {
		regs[0] = w[0];
		regs[1] = w[1];
		return sp + 16;
	}
	/* past enter(): rbp is the frame */
	if (bp < sp || bp - sp > HS_STUB_MAX_PUSH || bpf_probe_read_user(w, sizeof(w), (void *)bp))
		return 0;
	t = hs_call_into(hs, w[1], lo, hi);
	if (!t || pc - t < 2 || op == 0xc3 || bpf_probe_read_user(e, sizeof(e), (void *)t) ||
	    e[0] != 0x55 ||
	    e[1] != 0x48 || !((e[2] == 0x8b && e[3] == 0xec) || (e[2] == 0x89 && e[3] == 0xe5)))
		return 0;
	regs[0] = w[0];
	regs[1] = w[1];
	return bp + 16;
}

enum hs_walk_result {
	HS_WALK_NEXT = 0,	/* the caller's registers are in st->f */
	HS_WALK_NATIVE = 1,	/* the pc in st->f is not the JVM's: native walk */
	HS_WALK_STOP = 2,	/* walk ended (flags say why) */
};

/*
 * hs_walk_frame - the frame in st->f is the JVM's: append its pc as
 * native user frame st->sample.user_len and its record, and move st->f to
 * its caller (the rules: unwind_hotspot.h). A global function: the
 * verifier checks it once.
 */
__attribute__((noinline))
int hs_walk_frame(struct profd_unwind_state *st)
{
	const struct profd_hotspot_proc *hs;
	__u64 ip, pc, blob, bp, sp, name = 0, code = 0, rec[2], regs[2];
	__u64 slots[PROFD_HS_BCP_BELOW_METHOD + 1];
	__u32 i, n, cid = 0, cid_off;
	__s32 size = 0, fsize = 0, complete = 0;
	bool leaf;

	if (!st)
		return HS_WALK_STOP;
	hs = HS(st);
	i = st->sample.user_len;
	n = st->sample.interp_len;
	if (i >= st->max_user_frames || i >= PROFD_MAX_USER_FRAMES ||
	    st->sample.kernel_len + i >= PROFD_MAX_IPS) {
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		count(PROFD_CNT_USER_TRUNCATED);
		return HS_WALK_STOP;
	}
	if (n >= PROFD_MAX_INTERP_FRAMES) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_TRUNCATED | PROFD_SAMPLE_USER_TRUNCATED;
		count(PROFD_CNT_HS_TRUNCATED);
		return HS_WALK_STOP;
	}
	ip = st->f.ip;
	leaf = st->f.pc_exact;
	pc = leaf ? ip : ip - 1;
	bp = st->f.bp;
	sp = st->f.sp;
	put_ip(st, st->sample.kernel_len + i, ip | (i && leaf ? PROFD_IP_EXACT : 0));
	st->sample.user_len = i + 1;
	st->ips[PROFD_FRAME_BP_SLOT(i)] = bp;
	st->ips[PROFD_FRAME_SP_SLOT(i)] = sp;

	if (pc - hs->interp_low < hs->interp_size) {
		/* [bcp ... Method*]: the slots from fp + (method - 5) words up */
		if (bp < sp || bp - sp > HS_MAX_FRAME || bpf_probe_read_user(slots, sizeof(slots),
					       (void *)(bp + (__s64)(hs->interp_method_slot -
								PROFD_HS_BCP_BELOW_METHOD) * 8)) ||
		    bpf_probe_read_user(regs, sizeof(regs), (void *)bp)) {
			count(PROFD_CNT_HS_READ_ERR);
			st->sample.flags |= PROFD_SAMPLE_USER_ERROR;
			return HS_WALK_STOP;
		}
		if (!hs_interp_frame(st, i, slots[PROFD_HS_BCP_BELOW_METHOD], slots[0], rec))
			hs_put(st, n, rec[0], rec[1]);
		/* the caller: pc at fp + 8, rbp at fp, sp in the sender sp slot */
		sp = hs_read_ptr(bp + (__s64)hs->interp_sender_sp_slot * 8);
		if (!sp || sp <= st->f.sp) {
			count(PROFD_CNT_HS_UNWIND_STOP);
			st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
			return HS_WALK_STOP;
		}
		goto caller;
	}
	blob = hs_find_blob(st, pc);
	if (blob == HS_NOT_CODE) {
		/* not the JVM's: the native walk records it again */
		st->sample.user_len = i;
		return HS_WALK_NATIVE;
	}
	if (blob == HS_READ_ERR || blob == HS_NO_BLOB) {
		count(blob == HS_READ_ERR ? PROFD_CNT_HS_READ_ERR : PROFD_CNT_HS_NO_BLOB);
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		return HS_WALK_STOP;
	}
	if (bpf_probe_read_user(&size, sizeof(size), (void *)(blob + hs->blob_size_off)) ||
	    bpf_probe_read_user(&name, sizeof(name), (void *)(blob + hs->blob_name_off)) ||
	    bpf_probe_read_user(&fsize, sizeof(fsize), (void *)(blob + hs->blob_frame_size_off)) ||
	    bpf_probe_read_user(&complete, hs->blob_frame_complete_size == 2 ? 2 : 4,
				(void *)(blob + hs->blob_frame_complete_off)) ||
	    bpf_probe_read_user(&code, hs->blob_code_is_ptr ? 8 : 4,
				(void *)(blob + hs->blob_code_off))) {
		count(PROFD_CNT_HS_READ_ERR);
		st->sample.flags |= PROFD_SAMPLE_USER_ERROR;
		return HS_WALK_STOP;
	}
	if (size <= 0 || pc >= blob + (__u32)size) {
		count(PROFD_CNT_HS_NO_BLOB);
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		return HS_WALK_STOP;
	}
	cid_off = hs->compile_id_off;
	if (cid_off + 4 <= (__u32)size)
		bpf_probe_read_user(&cid, sizeof(cid), (void *)(blob + cid_off));
	hs_put(st, n, profd_hs_frame0(blob, i, PROFD_HS_FRAME_BLOB),
	       (__u64)cid | (name & 0xffffffffULL) << 32);
	if (hs->blob_frame_complete_size == 2)
		complete = (__s16)complete;
	if (!hs->blob_code_is_ptr)
		code = blob + (__u32)code;
	if (fsize > 0 && fsize < (1 << 20)) {
		/* a leaf still building its frame: its size does not hold yet */
		if (leaf && (complete < 0 || pc < code + complete)) {
			count(PROFD_CNT_HS_UNWIND_STOP);
			st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
			return HS_WALK_STOP;
		}
		sp += (__u64)fsize * 8;
		if (bpf_probe_read_user(regs, sizeof(regs), (void *)(sp - 16))) {
			count(PROFD_CNT_HS_READ_ERR);
			st->sample.flags |= PROFD_SAMPLE_USER_ERROR;
			return HS_WALK_STOP;
		}
		/* a leaf in its epilogue has popped its frame: its size no longer
		 * leads to the return address; one after a call it must be, or
		 * an interpreter's return entry (the interpreter pushes those
		 * and jumps) */
		if (leaf && regs[1] - 1 - hs->interp_low >= hs->interp_size &&
		    !hs_after_call(regs[1])) {
			count(PROFD_CNT_HS_UNWIND_STOP);
			st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
			return HS_WALK_STOP;
		}
		goto caller;
	}
	/* no frame size, a leaf: a stub (StubRoutines) called from compiled
	 * code or the interpreter, its frame built or not (hs_stub_leaf) */
	if (leaf) {
		sp = hs_stub_leaf(hs, pc, sp, bp, code, blob + (__u32)size, regs);
		if (sp)
			goto caller;
		count(PROFD_CNT_HS_UNWIND_STOP);
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		return HS_WALK_STOP;
	}
	/* no frame size: a stub that keeps rbp as its frame (the call stub) */
	if (bp < sp || bpf_probe_read_user(regs, sizeof(regs), (void *)bp)) {
		count(PROFD_CNT_HS_UNWIND_STOP);
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		return HS_WALK_STOP;
	}
	sp = bp + 16;
caller:
	/* regs: [saved rbp, return address] */
	if (!regs[1] || sp <= st->f.sp) {
		count(PROFD_CNT_HS_UNWIND_STOP);
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		return HS_WALK_STOP;
	}
	st->f.ip = regs[1];
	st->f.bp = regs[0];
	st->f.sp = sp;
	st->f.pc_exact = 0;
	return hs_is_jvm_pc(hs, regs[1] - 1) ? HS_WALK_NEXT : HS_WALK_NATIVE;
}

/*
 * hs_scan_frame - native user frame @i: is it the JVM's? Then st->f gets
 * its registers (kept by the native walk) and the native frames from @i
 * on are dropped: the walker takes over. Returns whether it did.
 */
static __always_inline bool hs_scan_frame(struct profd_unwind_state *st, __u32 i)
{
	const struct profd_hotspot_proc *hs = HS(st);
	__u64 ip, pc;
	bool exact;

	barrier_var(i);
	ip = st->ips[(st->sample.kernel_len + i) & (PROFD_SCRATCH_IPS - 1)];
	exact = !i || (ip & PROFD_IP_EXACT);
	ip &= ~PROFD_IP_EXACT;
	pc = exact ? ip : ip - 1;
	if (!hs_is_jvm_pc(hs, pc))
		return false;
	st->f.ip = ip;
	st->f.bp = st->ips[PROFD_FRAME_BP_SLOT(i)];
	st->f.sp = st->ips[PROFD_FRAME_SP_SLOT(i)];
	st->f.pc_exact = exact;
	st->sample.user_len = i;
	/* what the native walk said of the frames after it is void */
	st->sample.flags &= ~(PROFD_SAMPLE_USER_TRUNCATED | PROFD_SAMPLE_USER_ERROR |
			      PROFD_SAMPLE_USER_COMPLETE);
	return true;
}

/*
 * hs_finish - copy the staged frames after the native IPs. A global
 * function: the verifier checks the loop once.
 */
__attribute__((noinline))
int hs_finish(struct profd_unwind_state *st)
{
	__u32 base, words;

	if (!st)
		return 0;
	base = st->sample.kernel_len + st->sample.user_len;
	words = 2 * st->sample.interp_len;
	for (__u32 k = 0; k < PROFD_RUNTIME_STAGE_WORDS; k++) {
		if (k >= words)
			break;
		put_ip(st, base + k, st->ips[PROFD_RUNTIME_STAGE(k)]);
	}
	return 0;
}

/* rt_cursor: bit 63 while the walker walks, else the next native frame to look at + 1 */
#define HS_WALKING	(1ULL << 63)

/*
 * unwind_hotspot_step - look at the native frames from the cursor on; at
 * the JVM's first, walk it and its callers (up to PROFD_HS_FRAMES_PER_PROG
 * frames an invocation, then tail-call itself), hand back to the native
 * walk where the pc leaves the JVM's code (it comes back here when it
 * ends), else copy the frames and emit.
 */
static __always_inline int unwind_hotspot_step(void *ctx, void *progs, __u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	int ret = HS_WALK_NEXT;
	__u64 cur;
	__u32 i;

	if (!st)
		return 0;
	if (!st->rt_cursor) {
		count(PROFD_CNT_HS_SAMPLES);
		st->sample.flags |= PROFD_SAMPLE_INTERP;
		st->rt_cursor = 1;
	}
	cur = st->rt_cursor;
	for (int k = 0; k < PROFD_HS_FRAMES_PER_PROG; k++) {
		if (cur & HS_WALKING) {
			ret = hs_walk_frame(st);
			if (ret == HS_WALK_NEXT)
				continue;
			cur = ret == HS_WALK_NATIVE ? st->sample.user_len + 1ULL : 0;
			break;
		}
		i = (__u32)cur - 1;
		if (i >= st->sample.user_len || i >= PROFD_MAX_USER_FRAMES) {
			cur = 0;	/* every native frame looked at */
			break;
		}
		cur++;
		if (hs_scan_frame(st, i))
			cur = HS_WALKING;
	}
	st->rt_cursor = cur ? cur : ~0ULL >> 1;	/* ~0 >> 1: done */
	if (ret == HS_WALK_NATIVE) {
		/* the native walk goes on from st->f, then comes back here: its
		 * two tail calls are taken from the native walk's own */
		if (st->tail_calls + 2 < st->native_tail_calls) {
			st->tail_calls += 2;
			count(PROFD_CNT_HS_HANDBACKS);
			if (st->sample.flags & PROFD_SAMPLE_DWARF)
				bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_DWARF);
			bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_FP);
			return chain_broken(st);
		}
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		count(PROFD_CNT_USER_TRUNCATED);
	} else if (cur && cur != ~0ULL >> 1 && st->rt_tail_calls < PROFD_HS_MAX_TAIL_CALLS) {
		st->rt_tail_calls++;
		bpf_tail_call(ctx, progs, PROFD_PROG_RUNTIME + PROFD_RUNTIME_HOTSPOT - 1);
		return chain_broken(st);
	} else if (cur && cur != ~0ULL >> 1) {
		st->sample.flags |= PROFD_SAMPLE_INTERP_TRUNCATED | PROFD_SAMPLE_USER_TRUNCATED;
		count(PROFD_CNT_HS_TRUNCATED);
	}
	hs_finish(st);
	bpf_tail_call(ctx, progs, PROFD_PROG_EMIT);
	return chain_broken(st);
}

#endif /* PROFD_BPF_UNWIND_HOTSPOT_BPF_H */
