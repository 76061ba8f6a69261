/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * usdt_spec.h - where a USDT probe's arguments are, as libbpf's BPF side
 * (<bpf/usdt.bpf.h>, struct __bpf_usdt_spec) reads them.
 *
 * Owns: user space's copy of that struct, for src/tracer/usdt_multi.c,
 * which writes one per probe site into libbpf's `__bpf_usdt_specs` map
 * when it attaches the GPU programs itself (uprobe-multi links; libbpf
 * 1.1 attaches USDT probes only as perf-event uprobes). bpf/gpu.bpf.h
 * asserts the layout against libbpf's, so a libbpf that changes it
 * fails the build, not the probes.
 */
#ifndef PROFD_BPF_USDT_SPEC_H
#define PROFD_BPF_USDT_SPEC_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Arguments one probe may have (libbpf's BPF_USDT_MAX_ARG_CNT). */
#define PROFD_USDT_MAX_ARGS 12

/* enum __bpf_usdt_arg_type */
enum profd_usdt_arg_type {
	PROFD_USDT_ARG_CONST,		/* the value is val_off ("4@$71") */
	PROFD_USDT_ARG_REG,		/* a register ("-4@%eax") */
	PROFD_USDT_ARG_REG_DEREF,	/* memory at register + val_off ("8@-16(%rbp)") */
};

/* struct __bpf_usdt_arg_spec */
struct profd_usdt_arg_spec {
	__u64 val_off;
	__u32 arg_type;		/* enum profd_usdt_arg_type */
	__s16 reg_off;		/* offset of the register in struct pt_regs */
	__u8 arg_signed;
	__s8 arg_bitshift;	/* 64 - 8 * size: bits cleared (or sign-extended) */
};

/* struct __bpf_usdt_spec */
struct profd_usdt_spec {
	struct profd_usdt_arg_spec args[PROFD_USDT_MAX_ARGS];
	__u64 usdt_cookie;
	__s16 arg_cnt;
};

#endif /* PROFD_BPF_USDT_SPEC_H */
