/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_step.h - one frame step over the compiled unwind rows: the rules
 * of the DWARF unwinder, compiled twice, into BPF (unwind_dwarf.bpf.h,
 * over live user memory) and into user space (src/unwind/walk.c, over a
 * stack copy the sample carried), so that both walk with one set of rules
 * over one table format (unwind_table.h).
 *
 * Owns: the two binary searches (range of a pc, row of a pc) and
 * dwarf_step().
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
 *       (unwind_go.h).
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
 *     space checks each return address for a call before it;
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
 * @proc's tables (the rules above). Sets PROFD_SAMPLE_UNWIND_MISSING in
 * f->flags for a pc outside every known range or in an evicted table, so
 * user space refreshes the process; PROFD_SAMPLE_USER_COMPLETE at the
 * outermost frame.
 */
UNWIND_GLOBAL
int dwarf_step(struct unwind_frame *f, const struct unwind_proc *proc UNWIND_ENV_PARAM)
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
		return f->pc_exact ? fp_step(f UNWIND_ENV_ARG) : DWARF_STEP_BOGUS;
	}
	m = &proc->mappings[idx & (UNWIND_MAX_PROC_MAPPINGS - 1)];
	shard = m->shard;
	if (shard == UNWIND_NO_TABLE)
		return fp_step(f UNWIND_ENV_ARG);
	if (shard == UNWIND_EVICTED) {
		unwind_count(PROFD_CNT_DWARF_TABLE_EVICTED);
		f->flags |= PROFD_SAMPLE_UNWIND_MISSING;
		return fp_step(f UNWIND_ENV_ARG);
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
		return fp_step(f UNWIND_ENV_ARG);
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
		return fp_step(f UNWIND_ENV_ARG);
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
}

#endif /* PROFD_BPF_UNWIND_STEP_H */
