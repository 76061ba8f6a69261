/* SPDX-License-Identifier: GPL-2.0 */
/*
 * preflight.h - start-up checks of kernel and privileges.
 *
 * Owns: the checks that run before any BPF object is loaded, each failing
 * with one line on stderr that says what to do.
 */
#ifndef PROFD_TRACER_PREFLIGHT_H
#define PROFD_TRACER_PREFLIGHT_H

#include <stdbool.h>

/* Oldest kernel profd runs on: bpf_task_pt_regs() arrived in 5.15. */
#define PROFD_MIN_KERNEL_MAJOR 5
#define PROFD_MIN_KERNEL_MINOR 15

/*
 * preflight_check - check, in order: the kernel version (unless
 * !@check_version), BTF at /sys/kernel/btf/vmlinux, the capabilities
 * (CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN), and that the bpf() syscall
 * can load a perf_event program. Prints one "profd: error: ..." line and
 * returns -1 on the first failure; returns 0 when all pass, after one
 * "profd: warning: ..." line naming the capabilities profd runs without
 * (CAP_SYSLOG, CAP_SYS_PTRACE, ...; CAP_SYS_ADMIN only when @uprobes, the
 * GPU/NVTX probes, are wanted) and what each costs, if any.
 */
int preflight_check(bool check_version, bool uprobes);

/*
 * preflight_parse_release - parse "MAJOR.MINOR[.PATCH...]" of uname -r.
 * Returns 0 or -1 if it does not start with two numbers.
 */
int preflight_parse_release(const char *release, int *major, int *minor);

#endif /* PROFD_TRACER_PREFLIGHT_H */
