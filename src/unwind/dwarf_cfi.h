/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_cfi.h - the CIE/FDE parser behind the unwind-table compiler
 * (internal to src/unwind/).
 *
 * Owns: walking one .eh_frame or .debug_frame section entry by entry,
 * decoding CIEs (cached by offset) and FDEs, and collecting each FDE's
 * rows (its instructions run in cfa_interp.c) in a cfi_builder. It knows
 * nothing of libelf: compile.c hands it the section bytes and what it
 * may need of the object around them (code ranges, .got, a reader for
 * DW_EH_PE_indirect).
 *
 * Rows come out per FDE, pc relative to the FDE's start, consecutive
 * equal rows merged; compile.c sorts the FDEs and builds the table.
 */
#ifndef PROFD_UNWIND_DWARF_CFI_H
#define PROFD_UNWIND_DWARF_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/compile.h"

/* An executable address range [start, end) of the object. */
struct cfi_range {
	uint64_t start, end;
};

/* What the parser may know of the ELF object around a section. */
struct cfi_env {
	const struct cfi_range *code;	/* sorted, disjoint; NULL: no check */
	size_t nr_code;
	bool has_got;			/* DW_EH_PE_datarel base known */
	uint64_t got;			/* ... the .got vaddr */
	/* DW_EH_PE_indirect: read 8 bytes at @vaddr; NULL: unsupported */
	bool (*read_u64)(void *ctx, uint64_t vaddr, uint64_t *val);
	void *ctx;
};

struct cfi_section {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;			/* where the object maps byte 0 */
	bool debug_frame;		/* .debug_frame rules, else .eh_frame */
	bool stop_at_zero;		/* end at a zero length (size unknown) */
};

/* One accepted FDE. */
struct cfi_fde {
	uint64_t start, end;		/* [start, end) ELF vaddrs, end > start */
	uint32_t first_row;		/* index into cfi_builder.rows */
	uint32_t nr_rows;		/* >= 1 */
	uint32_t seq;			/* discovery order: the overlap tie-break */
};

/* FDEs and rows gathered over all sections of one object. */
struct cfi_builder {
	struct unwind_row *rows;	/* pc relative to the FDE's start */
	size_t nr_rows, cap_rows;
	struct cfi_fde *fdes;
	size_t nr_fdes, cap_fdes;
	struct unwind_build_stats *st;	/* never NULL */
};

/*
 * cfi_parse_section - append the FDEs of @sec (and their rows) to @b.
 * Malformed entries are counted in @b->st (err[], errors) and skipped;
 * an entry whose length cannot be trusted ends the walk. Returns 0 or
 * -ENOMEM (the builder keeps what it had; free it with
 * cfi_builder_free()).
 */
int cfi_parse_section(struct cfi_builder *b, const struct cfi_section *sec,
		      const struct cfi_env *env);

/* cfi_builder_free - free @b's arrays (not @b->st). */
void cfi_builder_free(struct cfi_builder *b);

/*
 * cfi_grow - double the array *@arr of *@cap elements of @elem bytes
 * (@min when empty). Returns 0 or -ENOMEM (also past UINT32_MAX
 * elements: rows and FDEs are indexed with u32).
 */
int cfi_grow(void **arr, size_t *cap, size_t elem, size_t min);

/* cfi_count_error - count one rejected entry of kind @e in @st. */
static inline void cfi_count_error(struct unwind_build_stats *st,
				   enum unwind_err e)
{
	st->err[e]++;
	st->errors++;
}

#endif /* PROFD_UNWIND_DWARF_CFI_H */
