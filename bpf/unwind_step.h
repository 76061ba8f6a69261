/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_step.h - one frame step over the compiled unwind rows: the rules
 * of the DWARF unwinder, compiled twice, into BPF (unwind_dwarf.bpf.h,
 * over live user memory) and into user space (src/unwind/walk.c, over a
 * stack copy the sample carried), so that both walk with one set of rules
 * over one table format (unwind_table.h).
 *
 * Owns: the two binary searches (range of a pc, row of a pc),
 * dwarf_step() and the leaf's step at a function's entry or return
 * (leaf_entry_step()).
 *
 * The includer defines, before including this file:
 *   UNWIND_ENV_PARAM / UNWIND_ENV_ARG  an extra trailing parameter and
 *       argument (", struct x *env" / ", env"), or nothing;
 *   unwind_read(dst, size, addr)       0 when @size bytes at user address
 *       @addr were copied to @dst, else non-zero;
 *   unwind_count(c)                    count enum profd_counter @c;
 *   unwind_shard_rows(shard)           the rows of shard @shard, or NULL;
 *   UNWIND_GLOBAL                      the linkage of the searches and of
 *       dwarf_step() (BPF: global noinline functions, verified once);
 *   unwind_go_thread_g(), UNWIND_GO_NO_THREAD  the thread's Go g
 *       (unwind_go.h);
 *   UNWIND_CALLS_CHECKED_LATER         (optional) the code before a return
 *       address cannot be read here: leaf_entry_step() leaves the call
 *       check to the includer's caller (user space: callsite_verify()).
 *
 * The rules, frame by frame:
 *   - a pc in a range with rows: the row's CFA rule; the return address
 *     at CFA - 8, rbp restored from its save slot;
 *   - a row whose CFA rule cannot be expressed: a frame-pointer step only
 *     when the same row says rbp was saved at CFA - 16 (the code keeps a
 *     frame pointer); otherwise the walk ends, truncated and counted
 *     (dwarf_unfollowable), rather than guess;
 *   - a range without rows (JIT, objects without CFI) or a pc no FDE
 *     covers: a frame-pointer step, checked: the next pc must lie in a
 *     known range (else the frame is dropped, DWARF_STEP_BOGUS), and user
 *     space checks each return address for a call before it. For the
 *     leaf, when the caller asks (UNWIND_STEP_LEAF_ENTRY), first the
 *     instruction at the pc: at a function's entry or return the frame
 *     is not made or already gone, the caller's return address is at the
 *     stack top (leaf_entry_step());
 *   - a pc outside every range: the leaf (where the CPU was) steps by
 *     frame pointer, a return address is dropped (DWARF_STEP_BOGUS); both
 *     ask user space for the process's maps (PROFD_SAMPLE_UNWIND_MISSING);
 *   - a Go stack switch: to the stack the frame was entered from, through
 *     the thread's g (unwind_go.h); cut where that cannot be done safely.
 */
#ifndef PROFD_BPF_UNWIND_STEP_H
#define PROFD_BPF_UNWIND_STEP_H

#include "profd.h"
#include "unwind_table.h"

enum dwarf_step {
	DWARF_STEP_NEXT = 0,	/* the frame holds the caller's registers */
	DWARF_STEP_DONE = 1,	/* outermost frame reached */
	DWARF_STEP_ERROR = 2,	/* read fault or inconsistent frame: stop */
	DWARF_STEP_BOGUS = 3,	/* this frame's pc is in no known range: it
				 * came from a frame-pointer guess, drop it */
	DWARF_STEP_CUT = 4,	/* a rule that cannot be followed: the walk
				 * ends here, truncated (counted) */
};

/*
 * Go's stack switches (a UNWIND_CFA_GO_SWITCH row: systemstack, mcall,
 * morestack, asmcgocall, cgocallback, the vDSO callers): unwind_go_switch()
 * and its rules, with the includer's two Go hooks (unwind_go.h).
 */
#include "unwind_go.h"

/* x86-64 struct ucontext: uc_mcontext.gregs[] starts at byte 40. */
#define UC_GREGS_OFF	40
#define UC_REG_RBP	10
#define UC_REG_RSP	15
#define UC_REG_RIP	16

/* proc_find_mapping - index of @proc's range containing @pc, or -1. */
UNWIND_GLOBAL
int proc_find_mapping(const struct unwind_proc *proc, __u64 pc)
{
	__u32 lo = 0, hi, mid;
	const struct unwind_mapping *m;

	if (!proc)
		return -1;
	hi = proc->nmappings;
	if (hi > UNWIND_MAX_PROC_MAPPINGS)
		hi = UNWIND_MAX_PROC_MAPPINGS;
	for (int i = 0; i <= UNWIND_PROC_MAPPING_BITS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (proc->mappings[mid & (UNWIND_MAX_PROC_MAPPINGS - 1)].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	m = &proc->mappings[(lo - 1) & (UNWIND_MAX_PROC_MAPPINGS - 1)];
	return pc < m->end ? (int)((lo - 1) & (UNWIND_MAX_PROC_MAPPINGS - 1)) : -1;
}

/*
 * shard_find_row - offset (in [0, nrows)) of the last row with pc <= @rel
 * among rows [first, first + nrows) of @shard, or -1.
 */
UNWIND_GLOBAL
int shard_find_row(__u32 shard, __u32 first, __u32 nrows, __u32 rel UNWIND_ENV_PARAM)
{
	const struct unwind_row *rows = unwind_shard_rows(shard);
	__u32 lo = 0, hi = nrows, mid;

	if (!rows || nrows > UNWIND_SHARD_ROWS)
		return -1;
	for (int i = 0; i <= UNWIND_SHARD_ROW_BITS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (rows[(first + mid) & (UNWIND_SHARD_ROWS - 1)].pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (int)(lo - 1) : -1;
}

/* One frame-pointer step: ip = [bp + 8], sp = bp + 16, bp = [bp]. */
static inline int fp_step(struct unwind_frame *f UNWIND_ENV_PARAM)
{
	__u64 frame[2];

	if (!f->bp)
		return DWARF_STEP_DONE;
	if (unwind_read(frame, sizeof(frame), f->bp)) {
		unwind_count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	if (!frame[1])
		return DWARF_STEP_DONE;
	if (frame[0] && frame[0] <= f->bp)
		return DWARF_STEP_DONE;	/* frame chain does not go up: bottom */
	f->ip = frame[1];
	f->sp = f->bp + 16;
	f->bp = frame[0];
	f->pc_exact = 0;
	return DWARF_STEP_NEXT;
}

/* dwarf_step()'s @opts */
#define UNWIND_STEP_LEAF_ENTRY	1u	/* leaf_entry_step() for a leaf without rows */

/*
 * after_call - whether the 7 bytes @b before a return address end in an
 * x86-64 near call: `E8 rel32`, or `FF /2` through a register, [reg],
 * [reg + disp8], [reg + disp32], [rip + disp32] or their SIB forms
 * (callsite_x86_after_call() is user space's full decoder, V8's merge
 * uses it too; this is the BPF side's first check, without prefixes
 * beyond one REX).
 */
static inline bool after_call(const __u8 *b)
{
#define CALL_RM(m, mod) (((m) & 0x38) == 0x10 && ((m) >> 6) == (mod))
	return b[2] == 0xe8 ||						/* call rel32 */
	       (b[5] == 0xff && (CALL_RM(b[6], 3) ||			/* call reg */
				 (CALL_RM(b[6], 0) && (b[6] & 7) != 4 &&
				  (b[6] & 7) != 5))) ||			/* [reg] */
	       (b[4] == 0xff && CALL_RM(b[5], 0) && (b[5] & 7) == 4 &&
		(b[6] & 7) != 5) ||					/* [sib] */
	       (b[4] == 0xff && CALL_RM(b[5], 1) && (b[5] & 7) != 4) ||	/* [reg + disp8] */
	       (b[3] == 0xff && CALL_RM(b[4], 1) && (b[4] & 7) == 4) ||	/* [sib + disp8] */
	       (b[1] == 0xff && ((CALL_RM(b[2], 2) && (b[2] & 7) != 4) ||	/* [reg + disp32] */
				 (CALL_RM(b[2], 0) && (b[2] & 7) == 5))) ||	/* [rip + disp32] */
	       (b[0] == 0xff && CALL_RM(b[1], 2) && (b[1] & 7) == 4);	/* [sib + disp32] */
#undef CALL_RM
}

/* Whether the bytes before return address @ra are a call (after_call()). */
static inline bool call_before(__u64 ra UNWIND_ENV_PARAM)
{
#ifdef UNWIND_CALLS_CHECKED_LATER
	return true;
#else
	__u8 b[7];

	return !unwind_read(b, sizeof(b), ra - sizeof(b)) && after_call(b);
#endif
}

/*
 * leaf_entry_step - the leaf (@f->pc_exact: where the CPU was, or where a
 * signal interrupted it) in code without unwind rows (JIT code, objects
 * without CFI) may be at a function's first instruction or at its
 * return, where rbp is still (or again) the caller's and the return
 * address is on top of the stack: a frame-pointer step from there would
 * skip the caller. The instruction at the pc tells (x86-64 opcodes, the
 * pc being an instruction's first byte): `push %rbp` (55: nothing pushed
 * yet, the return address at [sp]); `mov %rsp,%rbp` (48 89 e5, 48 8b ec)
 * right after a `push %rbp` whose word at [sp] is rbp (the return
 * address at [sp + 8]); `ret` / `ret imm16` (c3, c2: rbp restored, the
 * return address at [sp]). The word found must be a return address: in
 * a range of @proc, the bytes before it a call (call_before(); user
 * space checks that of every caller again, callsite_verify()); else the
 * walk is cut there (DWARF_STEP_CUT, counted
 * unwind_leaf_entry_unverified): a frame-pointer step would skip the
 * caller all the same. Returns DWARF_STEP_NEXT with @f moved to the
 * caller (counted unwind_leaf_entry), DWARF_STEP_CUT, or -1 when the pc
 * is at none of these instructions or its code is unreadable (a stack
 * copy holds no code): the caller takes a frame-pointer step.
 */
UNWIND_GLOBAL
int leaf_entry_step(struct unwind_frame *f, const struct unwind_proc *proc UNWIND_ENV_PARAM)
{
	__u8 code[4];
	__u64 top[2], ra;
	bool pushed;

	if (!f || !proc || unwind_read(code, sizeof(code), f->ip - 1))
		return -1;
	pushed = code[0] == 0x55 && code[1] == 0x48 &&
		 ((code[2] == 0x89 && code[3] == 0xe5) || (code[2] == 0x8b && code[3] == 0xec));
	if (!pushed && code[1] != 0x55 && code[1] != 0xc3 && code[1] != 0xc2)
		return -1;
	if (unwind_read(top, sizeof(top), f->sp))
		return -1;
	if (pushed && top[0] != f->bp)
		return -1;	/* the 55 before is no `push %rbp` just run */
	ra = pushed ? top[1] : top[0];
	if (ra < 8 || proc_find_mapping(proc, ra - 1) < 0 || !call_before(ra UNWIND_ENV_ARG)) {
		unwind_count(PROFD_CNT_UNWIND_LEAF_ENTRY_UNVERIFIED);
		return DWARF_STEP_CUT;
	}
	f->ip = ra;
	f->sp += pushed ? 16 : 8;
	f->pc_exact = 0;
	unwind_count(PROFD_CNT_UNWIND_LEAF_ENTRY);
	return DWARF_STEP_NEXT;
}

/* Continue from the ucontext the kernel saved for a signal handler. */
static inline int signal_step(struct unwind_frame *f UNWIND_ENV_PARAM)
{
	__u64 regs[UC_REG_RIP + 1 - UC_REG_RBP];

	if (unwind_read(regs, sizeof(regs), f->sp + UC_GREGS_OFF + UC_REG_RBP * 8)) {
		unwind_count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	unwind_count(PROFD_CNT_SIGNAL_FRAMES);
	f->bp = regs[0];
	f->sp = regs[UC_REG_RSP - UC_REG_RBP];
	f->ip = regs[UC_REG_RIP - UC_REG_RBP];
	f->pc_exact = 1;	/* interrupted, not called: the pc is exact */
	return f->ip ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
}

/*
 * dwarf_step - move @f from the current frame to its caller's, using
 * @proc's tables (the rules above); @opts: UNWIND_STEP_* (0: none). Sets
 * PROFD_SAMPLE_UNWIND_MISSING in f->flags for a pc outside every known
 * range or in an evicted table, so user space refreshes the process;
 * PROFD_SAMPLE_USER_COMPLETE at the outermost frame.
 */
UNWIND_GLOBAL
int dwarf_step(struct unwind_frame *f, const struct unwind_proc *proc,
	       __u32 opts UNWIND_ENV_PARAM)
{
	const struct unwind_mapping *m;
	const struct unwind_row *row;
	struct unwind_row r;
	__u64 pc, cfa, ra, slot[1];
	const struct unwind_row *rows;
	__u32 shard;
	int idx, off;
	__u8 cfa_type, rbp_type;

	if (!f || !proc)
		return DWARF_STEP_ERROR;
	pc = f->pc_exact ? f->ip : f->ip - 1;
	idx = proc_find_mapping(proc, pc);
	if (idx < 0) {
		unwind_count(PROFD_CNT_DWARF_PC_UNKNOWN);
		f->flags |= PROFD_SAMPLE_UNWIND_MISSING;
		/*
		 * Where the CPU was is real (code mapped after the maps were
		 * read: user space re-reads them); a return address outside
		 * every executable range is garbage from a frame-pointer
		 * step through code that has neither frame pointers nor CFI.
		 */
		if (!f->pc_exact)
			return DWARF_STEP_BOGUS;
		goto no_rows;
	}
	m = &proc->mappings[idx & (UNWIND_MAX_PROC_MAPPINGS - 1)];
	shard = m->shard;
	if (shard == UNWIND_NO_TABLE)
		goto no_rows;
	if (shard == UNWIND_EVICTED) {
		unwind_count(PROFD_CNT_DWARF_TABLE_EVICTED);
		f->flags |= PROFD_SAMPLE_UNWIND_MISSING;
		goto no_rows;
	}
	row = NULL;
	if (pc >= m->pc_base && pc - m->pc_base <= 0xffffffffULL) {
		off = shard_find_row(shard, m->first_row, m->nrows,
				     (__u32)(pc - m->pc_base) UNWIND_ENV_ARG);
		rows = unwind_shard_rows(shard);
		if (off >= 0 && rows)
			row = &rows[(m->first_row + off) & (UNWIND_SHARD_ROWS - 1)];
	}
	if (!row) {
		unwind_count(PROFD_CNT_DWARF_NO_ROW);
		goto no_rows;
	}
	r = *row;
	cfa_type = UNWIND_ROW_CFA_TYPE(&r);
	rbp_type = UNWIND_ROW_RBP_TYPE(&r);
	switch (cfa_type) {
	case UNWIND_CFA_RSP:
		cfa = f->sp + (__u64)r.cfa_off8 * 8;
		break;
	case UNWIND_CFA_RBP:
		cfa = f->bp + (__u64)r.cfa_off8 * 8;
		break;
	case UNWIND_CFA_PLT1:
		cfa = f->sp + 8 + ((f->ip & 15) >= 11 ? 8 : 0);
		break;
	case UNWIND_CFA_PLT2:
		cfa = f->sp + 8 + ((f->ip & 15) >= 10 ? 8 : 0);
		break;
	case UNWIND_CFA_PLT3:
		cfa = f->sp + 8 + ((f->ip & 15) >= 9 ? 8 : 0);
		break;
	case UNWIND_CFA_SIGNAL:
		return signal_step(f UNWIND_ENV_ARG);
	case UNWIND_CFA_GO_SWITCH:
		return unwind_go_switch(f, &r UNWIND_ENV_ARG);
	case UNWIND_CFA_RA_UNDEFINED:
		/* _start, clone3: the whole stack was walked */
		f->flags |= PROFD_SAMPLE_USER_COMPLETE;
		return DWARF_STEP_DONE;
	case UNWIND_CFA_END:
		/* a gap no FDE covers: code without CFI, checked FP step */
		unwind_count(PROFD_CNT_DWARF_NO_ROW);
		goto no_rows;
	default:
		unwind_count(PROFD_CNT_DWARF_UNSUPPORTED);
		/* the code keeps a frame pointer (rbp saved at CFA - 16) */
		if (rbp_type == UNWIND_RBP_CFA_OFFSET && r.rbp_off8 == -2)
			return fp_step(f UNWIND_ENV_ARG);
		unwind_count(PROFD_CNT_DWARF_UNFOLLOWABLE);
		return DWARF_STEP_CUT;
	}
	if (cfa <= f->sp && cfa_type != UNWIND_CFA_RBP) {
		unwind_count(PROFD_CNT_DWARF_BAD_FRAME);
		return DWARF_STEP_ERROR;
	}
	if (unwind_read(&ra, sizeof(ra), cfa - 8)) {
		unwind_count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	if (rbp_type == UNWIND_RBP_CFA_OFFSET) {
		if (unwind_read(slot, sizeof(slot), cfa + (__s64)r.rbp_off8 * 8)) {
			unwind_count(PROFD_CNT_USER_READ_ERR);
			return DWARF_STEP_ERROR;
		}
		f->bp = slot[0];
	} else if (rbp_type == UNWIND_RBP_UNSUPPORTED) {
		/* rbp is not recoverable: forget it, so that no later rule
		 * builds a frame on a stale value (fp_step() ends at 0) */
		unwind_count(PROFD_CNT_DWARF_UNSUPPORTED);
		f->bp = 0;
	}
	if (cfa <= f->sp) {
		unwind_count(PROFD_CNT_DWARF_BAD_FRAME);
		return DWARF_STEP_ERROR;
	}
	f->sp = cfa;
	f->ip = ra;
	f->pc_exact = 0;
	return ra ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
no_rows:
	/* code without rows: the leaf's instruction first (one call site) */
	if ((opts & UNWIND_STEP_LEAF_ENTRY) && f->pc_exact) {
		idx = leaf_entry_step(f, proc UNWIND_ENV_ARG);
		if (idx >= 0)
			return idx;
	}
	return fp_step(f UNWIND_ENV_ARG);
}

#endif /* PROFD_BPF_UNWIND_STEP_H */
