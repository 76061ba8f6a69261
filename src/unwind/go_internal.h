/* SPDX-License-Identifier: GPL-2.0 */
/*
 * go_internal.h - what go.c and go_cgo.c share: replacing a range of a
 * table's rows, and the rows of the cgo functions (go_cgo.c).
 */
#ifndef PROFD_UNWIND_GO_INTERNAL_H
#define PROFD_UNWIND_GO_INTERNAL_H

#include <stdint.h>

#include "unwind/go.h"

struct Elf;

/*
 * go_set_rows - @t's rows for [@start, @end) replaced by the @n rows @r
 * (absolute pcs in r[i].pc's place: @pcs, sorted, pcs[0] == @start, all
 * below @end); the rule that applied at @end still applies from there.
 * -ERANGE outside @t's base or 4 GiB, -EINVAL unsorted, -ENOMEM.
 */
int go_set_rows(struct unwind_table *t, uint64_t start, uint64_t end,
		const struct unwind_row *r, const uint64_t *pcs, uint32_t n);

/*
 * go_cgocallback_rows - runtime.cgocallback's range [@start, @end) of @t:
 * each of its rows (CFA = rsp + N, from CFI or pcsp) becomes a
 * UNWIND_GO_CGOCALLBACK switch row with the same N and @info's m.curg and
 * TLS offsets; END rows after the first (padding) stay. 0; -ENOTSUP a row of another kind or offsets that do not
 * fit (@t unchanged); -ENOMEM.
 */
int go_cgocallback_rows(struct unwind_table *t, uint64_t start, uint64_t end,
			const struct unwind_go_info *info);

/*
 * go_crosscall2_rows - crosscall2's range [@start, @end) of @t (Go
 * assembly that C code calls: its C caller may find its CFA from rbp):
 * rbp saved at CFA - 16 in the rows after its prologue's
 * `mov %rbp, N-16(%rsp)` (N: the CFA offset there; the instruction is
 * checked in @elf's code). 0; -ENOTSUP no such prologue (@t unchanged);
 * -ENOMEM.
 */
int go_crosscall2_rows(struct Elf *elf, struct unwind_table *t, uint64_t start,
		       uint64_t end);

#endif /* PROFD_UNWIND_GO_INTERNAL_H */
