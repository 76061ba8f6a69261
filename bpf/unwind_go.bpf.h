/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_go.bpf.h - the BPF side of Go's stack switches: the thread's g
 * for the rules of unwind_go.h (compiled into the frame step of
 * unwind_step.h), read live at the sample from the current task's fs
 * base.
 *
 * Owns: unwind_go_thread_g() and UNWIND_GO_NO_THREAD for BPF. Included
 * before unwind_step.h.
 */
#ifndef PROFD_BPF_UNWIND_GO_BPF_H
#define PROFD_BPF_UNWIND_GO_BPF_H

#include "maps.bpf.h"

/*
 * bpf_go_thread_g - the current thread's g into *@g: the word at its fs
 * base + @off. 0, or -1 counted go_switch_read_error.
 */
static __always_inline int bpf_go_thread_g(__u64 *g, __s64 off)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (bpf_probe_read_user(g, sizeof(*g), (void *)(task->thread.fsbase + off))) {
		count(PROFD_CNT_GO_SWITCH_ERROR);
		return -1;
	}
	return 0;
}

#define unwind_go_thread_g(g, off)	bpf_go_thread_g((g), (off))
/* an unreadable thread pointer: the walk stops, an error */
#define UNWIND_GO_NO_THREAD		DWARF_STEP_ERROR

#endif /* PROFD_BPF_UNWIND_GO_BPF_H */
