/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cfa_interp.h - the DW_CFA_* instruction interpreter (internal to
 * src/unwind/): what dwarf_cfi.c's CIE/FDE parser and cfa_interp.c share.
 *
 * Owns: the decoded CIE (struct cie), the register rules the rows are
 * made of (struct regs: CFA, rbp, return address; nothing else matters to
 * the BPF unwinder), and the interpreter state of one CIE or FDE.
 */
#ifndef PROFD_UNWIND_CFA_INTERP_H
#define PROFD_UNWIND_CFA_INTERP_H

#include "unwind/dwarf_cfi.h"
#include "unwind/dwarf_read.h"

/* Internal results: 0, -ENOMEM, or CFI_ERR(kind) for a rejected entry. */
#define CFI_ERR(kind)		(1 + (kind))
#define CFI_ERR_KIND(r)		((enum unwind_err)((r) - 1))

enum how {
	HOW_UNDEF,		/* DW_CFA_undefined, or never set */
	HOW_SAME,		/* DW_CFA_same_value */
	HOW_OFFSET,		/* saved at CFA + off */
	HOW_OTHER,		/* register, expression, val_* */
};

enum cfa_how {
	CFA_REG,		/* reg + off */
	CFA_PLT1,		/* the .plt expression (lit11) */
	CFA_PLT2,		/* the older IBT .plt expression (lit10) */
	CFA_PLT3,		/* the binutils >= 2.40 IBT .plt expression (lit9) */
	CFA_EXPR,		/* any other expression */
};

/* The rules rows are made of; small, copied on DW_CFA_remember_state. */
struct regs {
	uint64_t cfa_reg;
	int64_t cfa_off;
	int64_t rbp_off;
	int64_t ra_off;
	uint8_t cfa_how;
	uint8_t rbp_how;
	uint8_t ra_how;
};

/* No rule at all: before a CIE's initial instructions. */
extern const struct regs cfa_regs_none;

/* A decoded CIE (DWARF 5 §6.4.1, LSB 10.6.1.1). */
struct cie {
	uint64_t off;		/* section offset: the cache key */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;	/* return address column */
	struct regs init;	/* after the initial instructions */
	uint8_t fde_enc;	/* DW_EH_PE_* of FDE addresses (.eh_frame) */
	uint8_t addr_size;	/* .debug_frame address size */
	uint8_t seg_size;	/* .debug_frame segment selector size */
	bool aug_z;		/* FDEs carry augmentation data */
	bool signal;		/* "S": signal trampoline */
	int err;		/* 0, or CFI_ERR(why the CIE is unusable) */
};

/* The interpreter of one CIE's or FDE's instructions. */
struct cfa_interp {
	const struct cie *cie;
	const struct cfi_section *sec;	/* for DW_CFA_set_loc pointers */
	const struct cfi_env *env;
	struct cfi_builder *b;		/* FDE rows go here */
	bool in_fde;			/* false: CIE initial instructions */
	uint64_t start;			/* FDE start vaddr */
	uint64_t range;			/* FDE length, bytes */
	uint64_t loc;			/* current location, from start */
	size_t first_row;		/* this FDE's first row in @b */
	struct regs r;
	unsigned int depth;
	struct regs stack[UNWIND_STATE_DEPTH];
};

/*
 * cfa_run - run the instructions at @c from @in->r. In an FDE, each
 * advance appends the row in force to @in->b (merged with an equal
 * predecessor of the same FDE). Returns 0, -ENOMEM or CFI_ERR(kind).
 */
int cfa_run(struct cfa_interp *in, struct cur *c);

/* cfa_emit - append the row in force from @in->loc (the FDE's last). */
int cfa_emit(struct cfa_interp *in);

/*
 * cfi_read_ptr - a DW_EH_PE_* encoded pointer at @c (dwarf_cfi.c).
 * absptr is @addr_size bytes. Returns 0, CFI_ERR(UNWIND_ERR_POINTER) or
 * CFI_ERR(UNWIND_ERR_TRUNCATED).
 */
int cfi_read_ptr(const struct cfi_section *sec, const struct cfi_env *env,
		 struct cur *c, uint8_t enc, unsigned int addr_size,
		 uint64_t *out);

#endif /* PROFD_UNWIND_CFA_INTERP_H */
