/* SPDX-License-Identifier: GPL-2.0 */
/*
 * usdt_multi.h - USDT probes attached as uprobe-multi links (kernel >=
 * 6.6), which Debian 12's libbpf (1.1) cannot do: reading a file's
 * probe notes, encoding their arguments for libbpf's BPF side, creating
 * the link. Used by usdt.c; libbpf >= 1.5's bpf_program__attach_usdt()
 * does the same, and would replace this file once it is the floor.
 *
 * Why: a perf-event uprobe is destroyed under the kernel's event_mutex,
 * each waiting for an RCU grace period (~0.1 s under load), so exit
 * took ~1 s per library copy attached; uprobe-multi links are destroyed
 * without that mutex, and links closed at once share one wait.
 */
#ifndef PROFD_TRACER_USDT_MULTI_H
#define PROFD_TRACER_USDT_MULTI_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/usdt_spec.h"

/* BPF_TRACE_UPROBE_MULTI (linux/bpf.h of kernels >= 6.6). */
#define USDT_MULTI_ATTACH_TYPE 48

/* One probe site of a file's .note.stapsdt. */
struct usdt_site {
	char name[64];			/* the probe's name */
	char args[256];			/* its argument string, e.g. "8@%rdi -4@%esi" */
	uint64_t offset;		/* file offset of the probed instruction */
	uint64_t ref_ctr_offset;	/* file offset of its semaphore; 0: none */
};

/*
 * usdt_multi_supported - whether this kernel creates uprobe-multi links
 * (probed once: a program of that attach type loads and a link on "/"
 * fails with EBADF, not EINVAL) and PROFD_NO_UPROBE_MULTI is not set.
 * Thread-safe after the first call.
 */
bool usdt_multi_supported(void);

/*
 * usdt_sites_read - the probe sites of @provider in the ELF file open as
 * @fd (x86-64, 64-bit): up to @max into @out, in note order, offsets
 * translated from addresses through the PT_LOAD segments (and the
 * .stapsdt.base section, for a prelinked file). A note that is
 * malformed, or whose address is in no segment, is skipped. Returns the
 * count, -ENODATA when the file has no such probe, -E2BIG when more
 * than @max or a note section over 1 MiB (not read), -ENOEXEC for a file that is not ELF or another machine's.
 * Follows the SystemTap SDT note format (sourceware.org/systemtap/wiki/UserSpaceProbeImplementation).
 */
int usdt_sites_read(int fd, const char *provider, struct usdt_site *out,
		    unsigned int max);

/*
 * usdt_args_parse - encode @args (x86-64 SDT operands: "-4@%eax",
 * "8@-16(%rbp)", "8@(%rsp)", "4@$71", space-separated) into @spec as
 * libbpf's bpf_usdt_arg() reads them; @spec->usdt_cookie is set to 0.
 * Returns 0, or -EINVAL for an operand it cannot encode (an unknown
 * register, a size other than 1, 2, 4 or 8, an index register form)
 * or more than PROFD_USDT_MAX_ARGS of them.
 */
int usdt_args_parse(const char *args, struct profd_usdt_spec *spec);

/*
 * usdt_multi_link - attach BPF program @prog_fd (loaded with expected
 * attach type USDT_MULTI_ATTACH_TYPE) at @cnt file offsets of @path in
 * every process (uprobe-multi link); @ref_ctr_offsets (semaphores, 0:
 * none) and @cookies (bpf_get_attach_cookie()) have @cnt entries each.
 * Returns the link's fd (the caller closes it to detach) or -errno.
 */
int usdt_multi_link(int prog_fd, const char *path, const uint64_t *offsets,
		    const uint64_t *ref_ctr_offsets, const uint64_t *cookies,
		    unsigned int cnt);

#endif /* PROFD_TRACER_USDT_MULTI_H */
