/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_go.bpf.h - Go's stack switches in the DWARF walk.
 *
 * Owns: go_switch_step(), the step of a UNWIND_CFA_GO_SWITCH row
 * (bpf/unwind_table.h). Go runs runtime code on the thread's system stack
 * (g0): runtime.systemstack(fn), runtime.mcall(fn) and runtime.morestack
 * save the goroutine's pc/sp/bp in g.sched and move sp to g0's stack. A
 * walk that reaches one of them from g0 must continue on the goroutine's
 * stack, as Go's own traceback does (runtime/traceback.go: on g0 at
 * systemstack/morestack, continue from gp.m.curg.sched); the return
 * address on g0's stack is stale.
 *
 * Here: g from the thread pointer (fs base + the row's offset), g.m,
 * m.curg (offset from the row: it varies by Go version, src/unwind/go.c
 * takes it from the binary's DWARF or its version), curg.sched. mcall
 * passes the calling g to fn on g0's stack (m.curg is dropped or already
 * another g when fn schedules): that g's sched. No curg (the scheduler
 * after dropg() in morestack's newstack): the stack ends there, complete,
 * like Go's traceback ends at a system-stack top. The vDSO calls
 * (nanotime1, time.now) move sp to g0's stack without switching g; they
 * leave the caller's sp and pc in m.vdsoSP/m.vdsoPC for Go's profiler,
 * and so for us.
 *
 * The row (and its offsets) comes from the table compiler
 * (src/unwind/go.c); nothing here is per process.
 */
#ifndef PROFD_BPF_UNWIND_GO_BPF_H
#define PROFD_BPF_UNWIND_GO_BPF_H

#include "maps.bpf.h"
#include "unwind_table.h"

/* Stable since Go 1.9 (checked against the DWARF of go1.19 by src/unwind/go.c). */
#define GO_G_M		48	/* runtime.g.m */
#define GO_G_SCHED	56	/* runtime.g.sched (runtime.gobuf) */
#define GO_GOBUF_SP	0
#define GO_GOBUF_PC	8
#define GO_GOBUF_BP	48
#define GO_GOBUF_WORDS	7

/*
 * unwind_go_switch - the step of @r (a UNWIND_CFA_GO_SWITCH row) from the
 * frame @f: to the goroutine's frame that entered the system stack,
 * or, still on the goroutine's stack, the plain CFA = rsp + 8 step.
 * Returns enum dwarf_step (bpf/unwind_step.h).
 */
static inline int unwind_go_switch(struct unwind_frame *f, const struct unwind_row *r)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = task->thread.fsbase;
	__u64 g, m, curg, ra, sched[GO_GOBUF_WORDS];

	if (bpf_probe_read_user(&g, sizeof(g),
				(void *)(fsbase + (__s64)r->rbp_off8 * 8)) ||
	    !g || bpf_probe_read_user(&m, sizeof(m), (void *)(g + GO_G_M)) ||
	    !m) {
		count(PROFD_CNT_GO_SWITCH_ERROR);
		return DWARF_STEP_ERROR;
	}
	if (UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_VDSO) {
		/* m.vdsoSP, m.vdsoPC: the caller's sp and pc (Go's sigprof) */
		if (bpf_probe_read_user(sched, 2 * sizeof(__u64),
					(void *)(m + (__u64)r->cfa_off8 * 8)) ||
		    !sched[0]) {
			count(PROFD_CNT_GO_SWITCH_ERROR);
			return DWARF_STEP_ERROR;
		}
		f->sp = sched[0];
		f->ip = sched[1];
		f->pc_exact = 0;
		count(PROFD_CNT_GO_STACK_SWITCHES);
		return f->ip ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
	}
	if (bpf_probe_read_user(&curg, sizeof(curg),
				(void *)(m + (__u64)r->cfa_off8 * 8))) {
		count(PROFD_CNT_GO_SWITCH_ERROR);
		return DWARF_STEP_ERROR;
	}
	if (curg == g) {
		/* not switched yet (or back already): no frame, ra at rsp */
		if (bpf_probe_read_user(&ra, sizeof(ra), (void *)f->sp)) {
			count(PROFD_CNT_USER_READ_ERR);
			return DWARF_STEP_ERROR;
		}
		f->sp += 8;
		f->ip = ra;
		f->pc_exact = 0;
		return ra ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
	}
	if (UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_MCALL &&
	    bpf_probe_read_user(&curg, sizeof(curg), (void *)f->sp)) {
		/* fn's argument: the g that called mcall */
		count(PROFD_CNT_GO_SWITCH_ERROR);
		return DWARF_STEP_ERROR;
	}
	if (!curg) {
		/* no goroutine on this M: the scheduler's own stack */
		f->flags |= PROFD_SAMPLE_USER_COMPLETE;
		return DWARF_STEP_DONE;
	}
	if (bpf_probe_read_user(sched, sizeof(sched), (void *)(curg + GO_G_SCHED))) {
		count(PROFD_CNT_GO_SWITCH_ERROR);
		return DWARF_STEP_ERROR;
	}
	if (UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_SYSTEMSTACK) {
		/* sched.sp is systemstack's own sp: its return address */
		if (bpf_probe_read_user(&ra, sizeof(ra),
					(void *)sched[GO_GOBUF_SP / 8])) {
			count(PROFD_CNT_GO_SWITCH_ERROR);
			return DWARF_STEP_ERROR;
		}
		f->ip = ra;
		f->sp = sched[GO_GOBUF_SP / 8] + 8;
	} else {
		f->ip = sched[GO_GOBUF_PC / 8];
		f->sp = sched[GO_GOBUF_SP / 8];
	}
	f->bp = sched[GO_GOBUF_BP / 8];
	f->pc_exact = 0;
	count(PROFD_CNT_GO_STACK_SWITCHES);
	return f->ip ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
}

#endif /* PROFD_BPF_UNWIND_GO_BPF_H */
