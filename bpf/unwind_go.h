/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_go.h - Go's stack switches in the frame step: the rules of a
 * UNWIND_CFA_GO_SWITCH row (bpf/unwind_table.h), part of unwind_step.h's
 * one set of rules and compiled with it into BPF (live memory, the
 * thread's g: unwind_go.bpf.h) and into user space's walker of stack
 * copies (src/unwind/walk.c: a copy holds one stack and no thread state,
 * so there the thread's g is not known and every switch row cuts the
 * walk, counted go_switch_stack_copy).
 *
 * Owns: unwind_go_switch() and the runtime layout it reads.
 *
 * Go runs runtime code on the thread's system stack (g0):
 * runtime.systemstack(fn), runtime.mcall(fn) and runtime.morestack save
 * the goroutine's pc/sp/bp in g.sched and move sp to g0's stack. A walk
 * that reaches one of them from g0 continues on the goroutine's stack, as
 * Go's own traceback does (runtime/traceback.go: on g0 at
 * systemstack/morestack, continue from gp.m.curg.sched); the return
 * address on g0's stack is stale. g comes from the thread pointer (fs
 * base + the row's offset), then g.m, m.curg (offset from the row: it
 * varies by Go version; src/unwind/go.c takes it from the binary's DWARF
 * or its version), curg.sched. mcall passes the calling g to fn on g0's
 * stack (m.curg is dropped or already another g when fn schedules): that
 * g's sched. No curg (the scheduler after dropg() in morestack's
 * newstack): the stack ends there, complete, like Go's traceback ends at
 * a system-stack top. The vDSO calls (nanotime1, time.now) move sp to
 * g0's stack without switching g; they leave the caller's sp and pc in
 * m.vdsoSP/m.vdsoPC for Go's profiler, and so for us.
 *
 * cgo (runtime/asm_amd64.s). runtime.cgocall calls asmcgocall(fn, arg),
 * which runs the C function on g0 and keeps, in its g0 frame, the
 * calling g (sp + 48) and that g's stack.hi minus its sp (sp + 40: the
 * goroutine's stack may move meanwhile); it returns through them, and so
 * does the walk (curg.sched is not used: a cgo callback's Go code
 * overwrites it, and systemstack zeroes its sp on return). When the C
 * code calls an exported Go function (crosscall2 -> cgocallback),
 * cgocallback saves m.g0.sched.sp at its g0 sp, puts that sp in
 * m.g0.sched.sp, and moves to m.curg's stack, where it opens a frame of
 * its g0 frame's size whose return pc is curg.sched.pc
 * (systemstack_switch: Go's traceback goes on from there on the
 * goroutine's stack, leaving the C frames out). The walk instead takes
 * that frame's caller from the g0 frame (crosscall2, the C frames, then
 * asmcgocall's switch back): the true chain. A callback inside a
 * callback's C call saved the outer g0 sp at its own: the walk carries
 * it to the next callback frame out (unwind_frame.go_g0_sp; so does a
 * callback's frame met on g0, before its switch or back from it, once
 * m.g0.sched.sp points at it). Which
 * stack a cgocallback or asmcgocall frame is on is decided by the
 * goroutine's stack bounds, not by where the pc is in the code: the
 * goroutine the walk switched to last (unwind_frame.go_g: a callback's
 * goroutine that mcall'd into the scheduler is no longer m.curg), else
 * m.curg.
 *
 * Whatever cannot be followed safely cuts the walk ([truncated]),
 * counted: a sample inside asmcgocall on g0 (the saved words may not be
 * written yet: go_switch_mid); a saved g that is not m.curg or a saved
 * sp outside its stack (go_switch_bad_sp). An unreadable g, m or g0 stops
 * it (go_switch_read_error).
 *
 * The includer defines, with unwind_step.h's hooks:
 *   unwind_go_thread_g(g, off)  0 when *@g holds the thread's g (the word
 *       at the fs base + @off, bytes), else non-zero (counted by the hook);
 *   UNWIND_GO_NO_THREAD         the step's result when that failed.
 */
#ifndef PROFD_BPF_UNWIND_GO_H
#define PROFD_BPF_UNWIND_GO_H

/*
 * Stable since Go 1.9 (checked against the DWARF of a binary by
 * src/unwind/go.c, which keeps a copy of these).
 */
#define GO_G_STACK_LO	0	/* runtime.g.stack.lo */
#define GO_G_STACK_HI	8	/* runtime.g.stack.hi */
#define GO_G_M		48	/* runtime.g.m */
#define GO_G_SCHED	56	/* runtime.g.sched (runtime.gobuf) */
#define GO_GOBUF_SP	0
#define GO_GOBUF_PC	8
#define GO_GOBUF_BP	48
#define GO_GOBUF_WORDS	7
#define GO_M_G0		0	/* runtime.m.g0 */
/* asmcgocall's g0 frame (asm_amd64.s, since Go 1.5): at its sp when it
 * calls the C function, after SUBQ $64, SP; ANDQ $~15, SP */
#define GO_CGO_DEPTH	40	/* g.stack.hi - g's sp; nil g: the sp */
#define GO_CGO_G	48	/* the calling g, or 0 (called on g0) */
#define GO_CGO_FRAME	64	/* the sp at the call is 64..79 bytes above */

/* No switch: a frame of @cfa bytes from sp, the return address at its
 * top, rbp unchanged (Go's frames, as their pcsp rows say). */
static inline int go_plain_step(struct unwind_frame *f, __u64 cfa UNWIND_ENV_PARAM)
{
	__u64 ra;

	if (cfa < 8 || unwind_read(&ra, sizeof(ra), f->sp + cfa - 8)) {
		unwind_count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	f->sp += cfa;
	f->ip = ra;
	f->pc_exact = 0;
	return ra ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
}

/* @size bytes of the runtime's memory at @addr: 0, or -1 counted. */
static inline int go_read(void *dst, __u64 size, __u64 addr UNWIND_ENV_PARAM)
{
	if (!addr || unwind_read(dst, size, addr)) {
		unwind_count(PROFD_CNT_GO_SWITCH_ERROR);
		return -1;
	}
	return 0;
}

/* Cut the walk, counted @why: the switch cannot be followed safely. */
static inline int go_cut(int why UNWIND_ENV_PARAM)
{
	unwind_count(why);
	return DWARF_STEP_CUT;
}

/*
 * The asmcgocall frame on a system stack (g0, gsignal) at the call of the
 * C function: back to the sp asmcgocall was called at, on the calling
 * g's stack (@curg, the goroutine followed, whose stack is @stk) or,
 * called on g0 already, on this one.
 */
static inline int go_asmcgocall(struct unwind_frame *f, __u64 curg, const __u64 *stk
				UNWIND_ENV_PARAM)
{
	__u64 saved[2], sp, ra;	/* sp + GO_CGO_DEPTH, sp + GO_CGO_G */
	bool switched = false;

	if (f->pc_exact)	/* where in asmcgocall: saved words written? */
		return go_cut(PROFD_CNT_GO_SWITCH_MID UNWIND_ENV_ARG);
	if (unwind_read(saved, sizeof(saved), f->sp + GO_CGO_DEPTH)) {
		unwind_count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	if (!saved[1]) {
		/* no g saved: called on this stack, the sp kept as it was */
		sp = saved[0];
		if (sp < f->sp + GO_CGO_FRAME || sp >= f->sp + GO_CGO_FRAME + 16)
			return go_cut(PROFD_CNT_GO_SWITCH_BAD_SP UNWIND_ENV_ARG);
	} else {
		if (!curg || saved[1] != curg || saved[0] > stk[1] - stk[0])
			return go_cut(PROFD_CNT_GO_SWITCH_BAD_SP UNWIND_ENV_ARG);
		sp = stk[1] - saved[0];
		if (sp < stk[0] || sp + 8 > stk[1])
			return go_cut(PROFD_CNT_GO_SWITCH_BAD_SP UNWIND_ENV_ARG);
		switched = true;
	}
	if (unwind_read(&ra, sizeof(ra), sp)) {
		unwind_count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	if (switched) {
		f->go_g = curg;
		unwind_count(PROFD_CNT_GO_STACK_SWITCHES);
	}
	f->sp = sp + 8;		/* asmcgocall has no frame: its caller's */
	f->ip = ra;
	f->pc_exact = 0;	/* rbp: as the C frames restored it */
	return ra ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
}

/*
 * The cgocallback frame on the goroutine's stack (a copy of its g0
 * frame, @cfa bytes): its caller from the g0 frame, at the g0 sp the walk
 * carries or m.g0.sched.sp (@m's g0).
 */
static inline int go_cgocallback(struct unwind_frame *f, __u64 m, __u64 cfa
				 UNWIND_ENV_PARAM)
{
	__u64 g0, stk[2], sp = f->go_g0_sp, saved, top[2];

	if (go_read(&g0, sizeof(g0), m + GO_M_G0 UNWIND_ENV_ARG) ||
	    go_read(stk, sizeof(stk), g0 + GO_G_STACK_LO UNWIND_ENV_ARG) ||
	    (!sp && go_read(&sp, sizeof(sp), g0 + GO_G_SCHED + GO_GOBUF_SP UNWIND_ENV_ARG)))
		return DWARF_STEP_ERROR;
	if (cfa < 16 || sp < stk[0] || sp > stk[1] || cfa > stk[1] - sp)
		return go_cut(PROFD_CNT_GO_SWITCH_BAD_SP UNWIND_ENV_ARG);
	/* the old m.g0.sched.sp at sp; rbp and the return address at the top */
	if (unwind_read(&saved, sizeof(saved), sp) ||
	    unwind_read(top, sizeof(top), sp + cfa - 16)) {
		unwind_count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	/* an outer callback's frame lies above this one (1: none, cut there) */
	f->go_g0_sp = saved >= sp + cfa ? saved : 1;
	f->sp = sp + cfa;
	f->bp = top[0];
	f->ip = top[1];
	f->pc_exact = 0;
	unwind_count(PROFD_CNT_GO_STACK_SWITCHES);
	return f->ip ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
}

/*
 * The cgocallback frame on g0 (before its switch, or back from it): a
 * plain frame of @cfa bytes. When m.g0.sched.sp is this frame's sp
 * already (or still), the g0 sp saved at it is the next callback's out.
 */
static inline int go_cgocallback_g0(struct unwind_frame *f, __u64 m, __u64 cfa
				    UNWIND_ENV_PARAM)
{
	__u64 g0, sp, saved;

	if (!f->go_g0_sp && m) {
		if (go_read(&g0, sizeof(g0), m + GO_M_G0 UNWIND_ENV_ARG) ||
		    go_read(&sp, sizeof(sp), g0 + GO_G_SCHED + GO_GOBUF_SP UNWIND_ENV_ARG))
			return DWARF_STEP_ERROR;
		if (sp == f->sp) {
			if (unwind_read(&saved, sizeof(saved), sp)) {
				unwind_count(PROFD_CNT_USER_READ_ERR);
				return DWARF_STEP_ERROR;
			}
			f->go_g0_sp = saved >= sp + cfa ? saved : 1;
		}
	}
	return go_plain_step(f, cfa UNWIND_ENV_ARG);
}

/*
 * unwind_go_switch - the step of @r (a UNWIND_CFA_GO_SWITCH row) from the
 * frame @f: to the frame on the other stack it was entered from (the
 * goroutine's, or g0's for a cgo callback), or, on the same stack, a
 * plain step (the rules above). Returns enum dwarf_step.
 */
static inline int unwind_go_switch(struct unwind_frame *f, const struct unwind_row *r
				   UNWIND_ENV_PARAM)
{
	__u32 kind = UNWIND_ROW_RBP_TYPE(r);
	__u64 g, m, curg, ra, sched[GO_GOBUF_WORDS], stk[2] = { 0, 0 };
	__u64 curg_off = (__u64)r->cfa_off8 * 8, cfa = 8;

	if (kind == UNWIND_GO_CGOCALLBACK) {
		curg_off = (__u64)UNWIND_GO_CB_CURG8(r) * 8;
		cfa = (__u64)UNWIND_GO_CB_CFA8(r) * 8;
	}
	if (unwind_go_thread_g(&g, (__s64)r->rbp_off8 * 8))
		return UNWIND_GO_NO_THREAD;
	if (!g && kind == UNWIND_GO_CGOCALLBACK)	/* a C thread before needm */
		return go_cgocallback_g0(f, 0, cfa UNWIND_ENV_ARG);
	if (!g && kind == UNWIND_GO_ASMCGOCALL)
		return go_asmcgocall(f, 0, stk UNWIND_ENV_ARG);	/* no g: nothing saved */
	if (go_read(&m, sizeof(m), g + GO_G_M UNWIND_ENV_ARG))
		return DWARF_STEP_ERROR;
	if (!m) {
		unwind_count(PROFD_CNT_GO_SWITCH_ERROR);
		return DWARF_STEP_ERROR;
	}
	if (kind == UNWIND_GO_VDSO) {
		/* m.vdsoSP, m.vdsoPC: the caller's sp and pc (Go's sigprof) */
		if (go_read(sched, 2 * sizeof(__u64), m + curg_off UNWIND_ENV_ARG))
			return DWARF_STEP_ERROR;
		if (!sched[0]) {
			unwind_count(PROFD_CNT_GO_SWITCH_ERROR);
			return DWARF_STEP_ERROR;
		}
		f->sp = sched[0];
		f->ip = sched[1];
		f->pc_exact = 0;
		unwind_count(PROFD_CNT_GO_STACK_SWITCHES);
		return f->ip ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
	}
	if (go_read(&curg, sizeof(curg), m + curg_off UNWIND_ENV_ARG))
		return DWARF_STEP_ERROR;
	if (kind == UNWIND_GO_ASMCGOCALL || kind == UNWIND_GO_CGOCALLBACK) {
		/* the goroutine followed: m.curg is nil once it mcall'd */
		if (f->go_g)
			curg = f->go_g;
		if (curg && go_read(stk, sizeof(stk), curg + GO_G_STACK_LO UNWIND_ENV_ARG))
			return DWARF_STEP_ERROR;
		/* on the goroutine's stack: asmcgocall before or after the
		 * switch, cgocallback's copy of its frame */
		if (curg && f->sp >= stk[0] && f->sp < stk[1])
			return kind == UNWIND_GO_ASMCGOCALL ?
			       go_plain_step(f, 8 UNWIND_ENV_ARG) :
			       go_cgocallback(f, m, cfa UNWIND_ENV_ARG);
		return kind == UNWIND_GO_ASMCGOCALL ?
		       go_asmcgocall(f, curg, stk UNWIND_ENV_ARG) :
		       go_cgocallback_g0(f, m, cfa UNWIND_ENV_ARG);
	}
	if (curg == g)	/* not switched yet (or back already): no frame */
		return go_plain_step(f, 8 UNWIND_ENV_ARG);
	if (kind == UNWIND_GO_MCALL &&
	    go_read(&curg, sizeof(curg), f->sp UNWIND_ENV_ARG))
		return DWARF_STEP_ERROR;	/* fn's argument: the g that called mcall */
	if (!curg) {
		/* no goroutine on this M: the scheduler's own stack */
		f->flags |= PROFD_SAMPLE_USER_COMPLETE;
		return DWARF_STEP_DONE;
	}
	if (go_read(sched, sizeof(sched), curg + GO_G_SCHED UNWIND_ENV_ARG))
		return DWARF_STEP_ERROR;
	if (kind == UNWIND_GO_SYSTEMSTACK) {
		/* sched.sp is systemstack's own sp: its return address */
		if (go_read(&ra, sizeof(ra), sched[GO_GOBUF_SP / 8] UNWIND_ENV_ARG))
			return DWARF_STEP_ERROR;
		f->ip = ra;
		f->sp = sched[GO_GOBUF_SP / 8] + 8;
	} else {
		f->ip = sched[GO_GOBUF_PC / 8];
		f->sp = sched[GO_GOBUF_SP / 8];
	}
	f->bp = sched[GO_GOBUF_BP / 8];
	f->pc_exact = 0;
	f->go_g = curg;
	unwind_count(PROFD_CNT_GO_STACK_SWITCHES);
	return f->ip ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
}

#endif /* PROFD_BPF_UNWIND_GO_H */
