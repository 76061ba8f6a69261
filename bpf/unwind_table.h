/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_table.h - the compact unwind rows shared by the table compiler
 * (src/unwind/) and the BPF DWARF unwinder.
 *
 * A table covers one ELF object and is sorted by pc. Row i applies to
 * [row[i].pc, row[i + 1].pc). pc is the ELF virtual address minus the
 * table's base (the lowest address it covers), so it fits 32 bits.
 *
 * x86-64 only. What the unwinder needs per row:
 *   CFA = rsp + off | rbp + off | one of the two PLT expressions
 *   return address at CFA - 8 (always, on x86-64 SysV)
 *   rbp: unchanged, or saved at CFA + off
 * Anything else (registers other than rsp/rbp as CFA base, expressions
 * other than the PLT ones, offsets that are not multiples of 8 or too
 * large) is a row of type UNWIND_CFA_UNSUPPORTED: the unwinder falls back
 * to the frame pointer for that frame.
 */
#ifndef PROFD_BPF_UNWIND_TABLE_H
#define PROFD_BPF_UNWIND_TABLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum unwind_cfa_type {
	UNWIND_CFA_END = 0,		/* no unwind info here: end of an FDE / gap */
	UNWIND_CFA_RSP = 1,		/* CFA = rsp + cfa_off8 * 8 */
	UNWIND_CFA_RBP = 2,		/* CFA = rbp + cfa_off8 * 8 */
	/*
	 * PLT stubs (the expression GCC/binutils emit for .plt):
	 *   CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0)   (PLT1, 16-byte entries)
	 *   CFA = rsp + 8 + ((rip & 15) >= 10 ? 8 : 0)   (PLT2, .plt.sec/IBT)
	 */
	UNWIND_CFA_PLT1 = 3,
	UNWIND_CFA_PLT2 = 4,
	UNWIND_CFA_UNSUPPORTED = 5,	/* rule we cannot express: use FP */
	UNWIND_CFA_SIGNAL = 6,		/* sigreturn trampoline: regs in ucontext at rsp */
	UNWIND_CFA_RA_UNDEFINED = 7,	/* DW_CFA_undefined rip: outermost frame (_start, clone) */
	/* IBT lazy .plt of binutils >= 2.40 (endbr64; push; jmp): lit9 */
	UNWIND_CFA_PLT3 = 8,		/* CFA = rsp + 8 + ((rip & 15) >= 9 ? 8 : 0) */
	/*
	 * Go's stack switches (runtime.systemstack, mcall, morestack,
	 * asmcgocall, cgocallback): on the system stack (g0) the caller is
	 * on the goroutine's stack, or the other way round
	 * (bpf/unwind_go.h). The row's fields mean:
	 *   rbp_type  enum unwind_go_switch (where the caller is)
	 *   cfa_off8  offset of runtime.m's curg / 8 (but see
	 *             UNWIND_GO_VDSO and UNWIND_GO_CGOCALLBACK)
	 *   rbp_off8  offset of g from the thread pointer (fs base) / 8
	 * Still on the goroutine's stack (g == m.curg: before the switch):
	 * CFA = rsp + 8, rbp unchanged (these functions have no frame).
	 */
	UNWIND_CFA_GO_SWITCH = 9,
};

/* Where a UNWIND_CFA_GO_SWITCH row's caller is (its rbp_type). */
enum unwind_go_switch {
	UNWIND_GO_SYSTEMSTACK = 0,	/* systemstack: return address at
					 * curg.sched.sp (as Go's traceback) */
	UNWIND_GO_MORESTACK = 1,	/* morestack: at curg.sched.pc/sp/bp
					 * (pc: a return address) */
	UNWIND_GO_MCALL = 2,		/* mcall(fn): fn's argument (the g that
					 * called mcall, pushed on g0 at the
					 * caller's sp) .sched.pc/sp/bp; m.curg is
					 * nil or another g once fn scheduled */
	UNWIND_GO_VDSO = 3,		/* nanotime1, time.now: vDSO called on g0
					 * (g not switched): the caller at
					 * m.vdsoPC/m.vdsoSP; cfa_off8 holds
					 * m.vdsoSP's offset / 8, not curg's */
	UNWIND_GO_ASMCGOCALL = 4,	/* asmcgocall(fn, arg): C on g0; its g0
					 * frame holds the calling g at sp + 48
					 * and that g's stack.hi - its sp at
					 * sp + 40 (nil g: the sp itself, the
					 * call made on g0), as asmcgocall
					 * restores them; curg.sched is not used
					 * (a cgo callback's Go code overwrites
					 * it) */
	UNWIND_GO_CGOCALLBACK = 5,	/* cgocallback: C called Go back; on
					 * the goroutine's stack (sp within
					 * curg's) its frame is a copy, the
					 * caller (crosscall2) is on g0 at the g0
					 * sp cgocallback saved in m.g0.sched.sp
					 * (an inner callback's frame keeps the
					 * outer one's at its sp); elsewhere a
					 * plain frame. cfa_off8: m.curg / 8 in
					 * its low byte, the frame's CFA offset
					 * (rsp + N) / 8 at this pc in its high
					 * byte */
};

/* A UNWIND_GO_CGOCALLBACK row's cfa_off8: m.curg / 8, CFA offset / 8. */
#define UNWIND_GO_CB_PACK(curg8, cfa8)	((__u16)((curg8) | (cfa8) << 8))
#define UNWIND_GO_CB_CURG8(r)		((r)->cfa_off8 & 0xff)
#define UNWIND_GO_CB_CFA8(r)		((r)->cfa_off8 >> 8)

enum unwind_rbp_type {
	UNWIND_RBP_UNCHANGED = 0,	/* rbp keeps its value (same value / undefined) */
	UNWIND_RBP_CFA_OFFSET = 1,	/* rbp saved at CFA + rbp_off8 * 8 (rbp_off8 < 0) */
	UNWIND_RBP_UNSUPPORTED = 2,	/* saved elsewhere (register, expression) */
};

/* 8 bytes per row. */
struct unwind_row {
	__u32 pc;		/* vaddr - table base */
	__u16 cfa_off8;		/* CFA offset / 8 (0..65535: up to 512 KiB frames) */
	__u8 rules;		/* cfa_type | rbp_type << 4 */
	__s8 rbp_off8;		/* rbp save slot: CFA + rbp_off8 * 8 */
};

#define UNWIND_ROW_CFA_TYPE(r)	((r)->rules & 0xf)
#define UNWIND_ROW_RBP_TYPE(r)	((r)->rules >> 4)
#define UNWIND_ROW_RULES(cfa, rbp)	((__u8)((cfa) | ((rbp) << 4)))

/*
 * Where the rows live in BPF: shards (inner arrays of the array-of-maps
 * `unwind_shards`) of UNWIND_SHARD_ROWS rows each, created by user space
 * as tables are loaded, up to the memory cap. A table larger than a shard
 * is split into chunks; each chunk is its own entry in the process's
 * mapping list.
 */
#define UNWIND_SHARD_ROWS	(128 * 1024)	/* 1 MiB per shard */
#define UNWIND_SHARD_ROW_BITS	17		/* binary search steps */
#define UNWIND_MAX_SHARDS	1024
#define UNWIND_MAX_PROC_MAPPINGS 256		/* power of two */
#define UNWIND_PROC_MAPPING_BITS 8
#define UNWIND_NO_TABLE		0xffffffffu	/* shard of an entry without rows: FP */
/*
 * Shard of an entry whose table was evicted for room (--unwind-memory-limit):
 * frame pointers, counted as dwarf_table_evicted, and the sample asks user
 * space to reload the table (PROFD_SAMPLE_UNWIND_MISSING).
 */
#define UNWIND_EVICTED		0xfffffffeu

/*
 * One executable range of a process: [start, end) in its address space,
 * with the rows that cover it (or UNWIND_NO_TABLE for code without unwind
 * info: JIT, anonymous memory, objects without .eh_frame).
 */
struct unwind_mapping {
	__u64 start;
	__u64 end;
	__u64 pc_base;		/* runtime address of row pc 0 */
	__u32 shard;		/* index in unwind_shards, or UNWIND_NO_TABLE */
	__u32 first_row;	/* rows [first_row, first_row + nrows) of the shard */
	__u32 nrows;
	__u32 _pad;
};

/*
 * The entry is a forked child's copy of its parent's, made by BPF at the
 * fork (the child maps what the parent did): deleted by BPF at its exit
 * unless user space wrote the child's own entry meanwhile (flags 0).
 */
#define UNWIND_PROC_INHERITED	1u

/* Value of `unwind_procs` (key: tgid): the process's ranges, sorted by start. */
struct unwind_proc {
	__u32 nmappings;
	__u32 flags;		/* UNWIND_PROC_* */
	/*
	 * CLOCK_MONOTONIC ns the maps were read at: an entry read before the
	 * process's last exec (exec_times) describes the old image and is
	 * not used.
	 */
	__u64 maps_read_ns;
	struct unwind_mapping mappings[UNWIND_MAX_PROC_MAPPINGS];
};

#endif /* PROFD_BPF_UNWIND_TABLE_H */
