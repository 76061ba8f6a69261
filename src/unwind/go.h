/* SPDX-License-Identifier: GPL-2.0 */
/*
 * go.h - Go binaries in the unwind-table compiler: the rows where Go
 * switches stacks (runtime.systemstack, mcall, morestack, asmcgocall,
 * cgocallback) and, for binaries without .debug_frame (-ldflags=-w), rows
 * from the pclntab's frame sizes.
 *
 * Owns: reading a Go ELF's pclntab (Go 1.18+ layout; found, with its
 * version, by src/util/go_elf.c), the offset of runtime.m's curg (a table of versions
 * verified against their DWARF, else the binary's DWARF) and where g lives in TLS; the rows it writes are
 * UNWIND_CFA_GO_SWITCH (bpf/unwind_table.h, walked by bpf/unwind_go.h)
 * and plain UNWIND_CFA_RSP rows (crosscall2's with rbp saved: go_cgo.c).
 */
#ifndef PROFD_UNWIND_GO_H
#define PROFD_UNWIND_GO_H

#include <stdint.h>

#include "unwind/compile.h"

/* What unwind_go_apply() found, for tests and the loader's stats. */
struct unwind_go_info {
	char version[32];	/* "go1.19.8", "" when unknown */
	uint32_t nfuncs;	/* functions in the pclntab */
	uint32_t switch_funcs;	/* functions given a GO_SWITCH row */
	uint32_t special_funcs;	/* functions given one row: GO_SWITCH, SIGNAL
				 * (Go's sigreturn), RA_UNDEFINED (TOPFRAME) */
	uint32_t pcsp_rows;	/* rows made from pcsp (no CFI) */
	int32_t tls_g_off;	/* g's offset from the fs base, bytes */
	uint32_t m_curg_off;	/* runtime.m's curg, bytes (0: unknown) */
	uint32_t m_vdso_sp_off;	/* runtime.m's vdsoSP, bytes (0: unknown) */
	uint8_t curg_from_dwarf;/* m_curg_off read from DWARF: the version
				 * is not in the table */
	uint8_t pclntab_by_magic;/* the pclntab found by its magic (no section
				 * of its own, or no section headers) */
};

/*
 * unwind_go_apply - when @elf is a Go executable (has a pclntab of Go
 * 1.18 or later: src/util/go_elf.c), make @t Go-aware: where @t has no rows (no CFI: -s -w;
 * a cgo binary's .eh_frame covers only its C code), rows from each
 * function's pcsp table first (CFA = rsp + spdelta + 8);
 * then the ranges of runtime.systemstack, runtime.mcall,
 * runtime.morestack, runtime.asmcgocall and the vDSO callers
 * (runtime.nanotime1, time.now) become one UNWIND_CFA_GO_SWITCH row each (when the
 * offset of m.curg is known), runtime.cgocallback's rows switch rows
 * that keep its frame's CFA offsets, crosscall2's rows restore rbp
 * (C calls it), Go's signal restorer (runtime.sigreturn,
 * sigreturn__sigaction) a SIGNAL row, and functions flagged TOPFRAME
 * (goexit, mstart, rt0_go) an RA_UNDEFINED row. @t's rows are replaced (caller still frees
 * with unwind_table_free()). @info may be NULL.
 * Returns 0 when @t was changed, -ENOENT not a Go binary (or an older
 * pclntab), -ENOTSUP offsets unknown (nothing changed), -ENOMEM, -EINVAL
 * malformed pclntab.
 */
int unwind_go_apply(struct Elf *elf, struct unwind_table *t,
		    struct unwind_go_info *info);

/*
 * unwind_go_dwarf_offsets - runtime.m's curg and vdsoSP offsets (bytes)
 * from @elf's DWARF into *@curg and *@vdso_sp (0 on error; vdsoSP also 0
 * when vdsoPC does not follow it). Returns 0; -ENOENT no DWARF or no
 * runtime.m in it; -ENOTSUP runtime.g's stack/m/sched, runtime.m's g0,
 * runtime.stack's lo/hi or runtime.gobuf's sp/pc/bp are not where
 * bpf/unwind_go.h reads them (or missing).
 * Inflates .debug_info: costly on big binaries.
 */
int unwind_go_dwarf_offsets(struct Elf *elf, uint32_t *curg, uint32_t *vdso_sp);

/*
 * unwind_go_curg_offset - runtime.m's curg offset (bytes) for Go @version
 * ("go1.19.8"), from the table of versions checked against their DWARF,
 * and its vdsoSP offset into *@vdso_sp; 0 (both) when not in the table.
 */
uint32_t unwind_go_curg_offset(const char *version, uint32_t *vdso_sp);

#endif /* PROFD_UNWIND_GO_H */
