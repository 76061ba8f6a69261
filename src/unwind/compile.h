/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compile.h - the unwind-table compiler: an ELF object's DWARF call frame
 * information (.eh_frame, .debug_frame) turned into the sorted compact
 * rows of bpf/unwind_table.h that the BPF unwinder binary-searches.
 *
 * Owns: the table of one object (rows in malloc'd memory the caller frees
 * with unwind_table_free()) and the counters of what went into it. The
 * CIE/FDE parser is dwarf_cfi.c, the DW_CFA_* interpreter cfa_interp.c;
 * compile.c finds the sections with libelf, orders the FDEs, resolves
 * overlaps, merges equal rows and writes END rows at gaps.
 *
 * The table: rows sorted by pc, no two neighbours with the same rules, an
 * END row where an FDE ends and the next one does not start, an END row
 * last. Where FDEs overlap, the one that starts first keeps its range and
 * a later one only counts from that range's end ("first start wins"; at
 * one start address: .eh_frame before .debug_frame, then section order).
 *
 * Specs followed: DWARF 5 §6.4 (Call Frame Information), the LSB 5.0
 * "Exception Frames" chapter (.eh_frame, augmentations z/R/P/L/S and the
 * legacy "eh", DW_EH_PE_* pointer encodings), the x86-64 psABI DWARF
 * register numbers (rbp = 6, rsp = 7, return address = 16).
 *
 * Why our own parser rather than libdw's dwarf_cfi_addrframe(): libdw
 * answers one address at a time; the table needs every row of every FDE,
 * in one pass over the section, in a few ms for libc.
 */
#ifndef PROFD_UNWIND_COMPILE_H
#define PROFD_UNWIND_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind_table.h"

struct Elf;	/* libelf's Elf (typedef struct Elf Elf) */

/* One object's table. All zero is an empty table. */
struct unwind_table {
	uint64_t base;			/* ELF vaddr of row pc 0: lowest FDE start */
	uint32_t nr_rows;		/* END rows included; the last row is END */
	struct unwind_row *rows;	/* sorted by pc, malloc'd, owned */
};

/*
 * Why an entry (CIE or FDE) was rejected. Each rejected entry counts
 * once: a bad CIE when it is parsed, and then each FDE that uses it.
 */
enum unwind_err {
	UNWIND_ERR_TRUNCATED,	/* length or operand runs past its entry/section */
	UNWIND_ERR_CIE,		/* bad CIE (version, augmentation, id), or an FDE
				 * whose CIE pointer leads to none or to a bad one */
	UNWIND_ERR_POINTER,	/* DW_EH_PE_* encoding we cannot decode, an
				 * indirect pointer to unreadable memory */
	UNWIND_ERR_OPCODE,	/* unknown DW_CFA_* opcode */
	UNWIND_ERR_ADVANCE,	/* location moves backward, past the FDE's end,
				 * or an advance inside a CIE */
	UNWIND_ERR_RANGE,	/* FDE range wraps, outside every code section,
				 * or more than 4 GiB from the table base */
	UNWIND_ERR_STATE,	/* remember_state stack overflow (depth
				 * UNWIND_STATE_DEPTH) or restore_state underflow */
	UNWIND_ERR__COUNT
};

#define UNWIND_STATE_DEPTH	32	/* DW_CFA_remember_state nesting bound */

/* Counters of one build. Filled on success and on failure. */
struct unwind_build_stats {
	uint32_t sections;		/* CFI sections read (.eh_frame, .debug_frame) */
	uint64_t section_bytes;		/* their size, decompressed */
	uint32_t cies;			/* CIEs parsed without error */
	uint32_t fdes;			/* FDEs whose rows are in the table */
	uint32_t fdes_empty;		/* zero-length FDEs (ignored, not errors) */
	uint32_t fdes_overlap;		/* FDEs clipped or hidden by an earlier one */
	uint32_t rows;			/* table rows, END rows included */
	uint32_t rows_unsupported;	/* rows with an UNSUPPORTED CFA or rbp rule */
	uint32_t rows_plt;		/* PLT1 + PLT2 rows */
	uint32_t rows_signal;		/* SIGNAL rows */
	uint32_t errors;		/* sum of err[] */
	uint32_t err[UNWIND_ERR__COUNT];
};

/*
 * unwind_table_build - compile the table of the ELF object open on @fd
 * (read with pread, ELF_C_READ: no mmap, so a file truncated under us is
 * an error, not SIGBUS; @fd stays the caller's and its offset is not
 * used). Reads every .eh_frame and .debug_frame (SHF_COMPRESSED zlib
 * ones and legacy .zdebug_frame included); without section headers,
 * .eh_frame is found through PT_GNU_EH_FRAME. A Go executable's table
 * then gets src/unwind/go.c's rows (go.h: stack switches; pcsp rows
 * where its CFI has none, so it builds even without CFI).
 * @out: receives the table (caller frees with unwind_table_free());
 *	zeroed on every error.
 * @st: counters (may be NULL).
 * Returns 0 when the table holds at least one FDE (some entries may have
 * been rejected: see @st->errors); -ENOEXEC not an x86-64 ELFCLASS64
 * object; -ENODATA no CFI section, or only empty ones; -EINVAL CFI
 * present but every CIE/FDE was rejected; -ENOMEM; -EIO libelf could not
 * read the file.
 */
int unwind_table_build(int fd, struct unwind_table *out,
		       struct unwind_build_stats *st);

/*
 * unwind_table_build_fds - unwind_table_build() of @fd, plus the
 * .debug_frame of its separate debug file open on @debug_fd (-1: none;
 * e.g. /usr/lib/debug/.build-id/xx/yyyy.debug, as found by
 * src/symbol/debuginfo.c). Both describe the same vaddrs; code ranges
 * come from @fd's sections. Same returns.
 */
int unwind_table_build_fds(int fd, int debug_fd, struct unwind_table *out,
			   struct unwind_build_stats *st);

/*
 * unwind_table_build_elf - the same on libelf handles the caller opened
 * (any ELF_C_READ* command) and still owns. @debug may be NULL.
 * Priority where FDEs start at the same address: @elf's .eh_frame, then
 * its .debug_frame, then @debug's. Same returns.
 */
int unwind_table_build_elf(struct Elf *elf, struct Elf *debug,
			   struct unwind_table *out,
			   struct unwind_build_stats *st);

/*
 * unwind_table_build_mem - the table of an ELF image of @size bytes laid
 * out as a file (the vDSO), copied first: @image is not modified and may
 * go away after the call. Same returns.
 */
int unwind_table_build_mem(const void *image, size_t size,
			   struct unwind_table *out,
			   struct unwind_build_stats *st);

/*
 * unwind_table_build_section - the table of one raw CFI section: @size
 * bytes at @data that an ELF object maps at @vaddr (pcrel pointers are
 * relative to it), parsed as .debug_frame when @debug_frame, as .eh_frame
 * otherwise. No code-range check (there is no ELF to take ranges from),
 * no DW_EH_PE_datarel/indirect. For tests and the fuzzer. Returns 0,
 * -ENODATA, -EINVAL or -ENOMEM as above.
 */
int unwind_table_build_section(const void *data, size_t size, uint64_t vaddr,
			       bool debug_frame, struct unwind_table *out,
			       struct unwind_build_stats *st);

/* unwind_table_free - free @t's rows and zero it. NULL is fine. */
void unwind_table_free(struct unwind_table *t);

/*
 * unwind_table_find - the row that applies at ELF virtual address @vaddr:
 * a binary search for the last row whose pc <= @vaddr - base, as the BPF
 * unwinder does. Returns a pointer into @t, or NULL below the base, past
 * the last row, or where the row found is END (a gap without CFI).
 */
const struct unwind_row *unwind_table_find(const struct unwind_table *t,
					   uint64_t vaddr);

/* unwind_err_name - a short static name of @e ("truncated", ...). */
const char *unwind_err_name(enum unwind_err e);

#endif /* PROFD_UNWIND_COMPILE_H */
