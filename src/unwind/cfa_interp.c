// SPDX-License-Identifier: GPL-2.0
/*
 * cfa_interp.c - the DW_CFA_* interpreter (see cfa_interp.h).
 *
 * Owns: running a CIE's or FDE's call frame instructions (DWARF 5
 * §6.4.2: every opcode of DWARF 5, plus DW_CFA_GNU_args_size,
 * DW_CFA_GNU_negative_offset_extended and DW_CFA_MIPS_advance_loc8) and
 * turning the rules in force into the compact rows of bpf/unwind_table.h.
 *
 * Only three rules matter to the unwinder: the CFA, rbp (DWARF reg 6)
 * and the return address (the CIE's column, 16 on x86-64). Every other
 * register operand is parsed and dropped, so the state is a few words
 * and the rows come out in one pass. Where the spec leaves a case open
 * we do what binutils' readelf does, because the tests use it as the
 * oracle:
 *   - DW_CFA_remember_state saves the CFA rule too (as DWARF 5 and GCC);
 *   - DW_CFA_def_cfa_offset after an expression keeps the expression,
 *     DW_CFA_def_cfa_register turns it back into register + offset;
 *   - DW_CFA_restore in a CIE's own instructions means "no rule".
 *
 * Row rules (make_row()): an undefined return address (DW_CFA_undefined
 * rip in _start and clone, the outermost frame) is RA_UNDEFINED; a row
 * whose return address is saved anywhere but CFA-8 is UNSUPPORTED: the
 * BPF side assumes CFA-8 always. The CFA must be rsp or rbp plus a
 * multiple of 8 in 0..65535*8, or one of the three PLT expressions; rbp must be unchanged or saved at CFA + a multiple of 8
 * within s8 * 8; anything else is UNSUPPORTED. A CIE with augmentation
 * "S" makes every row of its FDEs SIGNAL.
 *
 * Bounds: every operand goes through the dwarf_read.h cursor, an advance
 * past the FDE's end or a set_loc backward is an error, and at most one
 * row is made per instruction, so work and memory are linear in the
 * section size.
 */
#include <errno.h>
#include <string.h>

#include "unwind/cfa_interp.h"

#define REG_RBP		6	/* x86-64 psABI DWARF register numbers */
#define REG_RSP		7

enum {
	DW_CFA_nop = 0x00,
	DW_CFA_set_loc = 0x01,
	DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03,
	DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05,
	DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07,
	DW_CFA_same_value = 0x08,
	DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a,
	DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e,
	DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10,
	DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12,
	DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14,
	DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_MIPS_advance_loc8 = 0x1d,
	DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
	/* high two bits, low six the operand */
	DW_CFA_advance_loc = 0x40,
	DW_CFA_offset = 0x80,
	DW_CFA_restore = 0xc0,
};

const struct regs cfa_regs_none = {
	.cfa_reg = UINT64_MAX, .cfa_how = CFA_REG,
	.rbp_how = HOW_UNDEF, .ra_how = HOW_UNDEF,
};

/* make_row - the compact row for rules @r under @cie (pc left 0). */
static struct unwind_row make_row(const struct regs *r, const struct cie *cie)
{
	struct unwind_row row = { 0 };
	uint8_t cfa = UNWIND_CFA_UNSUPPORTED, rbp = UNWIND_RBP_UNSUPPORTED;

	if (cie->signal) {
		row.rules = UNWIND_ROW_RULES(UNWIND_CFA_SIGNAL,
					     UNWIND_RBP_UNCHANGED);
		return row;
	}
	if (r->rbp_how == HOW_UNDEF || r->rbp_how == HOW_SAME) {
		rbp = UNWIND_RBP_UNCHANGED;
	} else if (r->rbp_how == HOW_OFFSET && !(r->rbp_off & 7) &&
		   r->rbp_off >= -128 * 8 && r->rbp_off <= 127 * 8) {
		rbp = UNWIND_RBP_CFA_OFFSET;
		row.rbp_off8 = (int8_t)(r->rbp_off / 8);
	}
	if (r->ra_how == HOW_UNDEF) {
		/* DW_CFA_undefined rip: the outermost frame (_start, clone) */
		cfa = UNWIND_CFA_RA_UNDEFINED;
		rbp = UNWIND_RBP_UNCHANGED;
	} else if (r->ra_how != HOW_OFFSET || r->ra_off != -8) {
		/* return address not at CFA-8: the unwinder cannot use it */
	} else if (r->cfa_how == CFA_PLT1 || r->cfa_how == CFA_PLT2 ||
		   r->cfa_how == CFA_PLT3) {
		cfa = r->cfa_how == CFA_PLT1 ? UNWIND_CFA_PLT1 :
		      r->cfa_how == CFA_PLT2 ? UNWIND_CFA_PLT2 : UNWIND_CFA_PLT3;
		row.cfa_off8 = 1;	/* the expression's DW_OP_breg7 8 */
	} else if (r->cfa_how == CFA_REG &&
		   (r->cfa_reg == REG_RSP || r->cfa_reg == REG_RBP) &&
		   r->cfa_off >= 0 && r->cfa_off <= 65535 * 8 &&
		   !(r->cfa_off & 7)) {
		cfa = r->cfa_reg == REG_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		row.cfa_off8 = (uint16_t)(r->cfa_off / 8);
	}
	row.rules = UNWIND_ROW_RULES(cfa, rbp);
	return row;
}

static inline bool row_rules_equal(const struct unwind_row *a,
				   const struct unwind_row *b)
{
	return a->rules == b->rules && a->cfa_off8 == b->cfa_off8 &&
	       a->rbp_off8 == b->rbp_off8;
}

int cfa_emit(struct cfa_interp *in)
{
	struct cfi_builder *b = in->b;
	struct unwind_row row = make_row(&in->r, in->cie);

	row.pc = (uint32_t)in->loc;
	if (b->nr_rows > in->first_row) {
		struct unwind_row *last = &b->rows[b->nr_rows - 1];

		if (row_rules_equal(last, &row))
			return 0;
		if (last->pc == row.pc) {
			*last = row;
			return 0;
		}
	}
	if (b->nr_rows == b->cap_rows &&
	    cfi_grow((void **)&b->rows, &b->cap_rows, sizeof(*b->rows), 1024))
		return -ENOMEM;
	b->rows[b->nr_rows++] = row;
	return 0;
}

/* advance - move the location by @n code alignment units. */
static int advance(struct cfa_interp *in, uint64_t n)
{
	uint64_t delta;
	int err;

	if (!in->in_fde)
		return CFI_ERR(UNWIND_ERR_ADVANCE);
	if (__builtin_mul_overflow(n, in->cie->code_align, &delta) ||
	    delta > in->range - in->loc)
		return CFI_ERR(UNWIND_ERR_ADVANCE);
	if (!delta)
		return 0;
	err = cfa_emit(in);
	in->loc += delta;
	return err;
}

/* set_rule - register @reg's rule becomes @how (@off for HOW_OFFSET). */
static void set_rule(struct cfa_interp *in, uint64_t reg, enum how how,
		     int64_t off)
{
	if (reg == REG_RBP) {
		in->r.rbp_how = how;
		in->r.rbp_off = off;
	}
	if (reg == in->cie->ra_reg) {
		in->r.ra_how = how;
		in->r.ra_off = off;
	}
}

/* restore - @reg's rule as the CIE's initial instructions left it. */
static void restore(struct cfa_interp *in, uint64_t reg)
{
	const struct regs *init = in->in_fde ? &in->cie->init : &cfa_regs_none;

	if (reg == REG_RBP) {
		in->r.rbp_how = init->rbp_how;
		in->r.rbp_off = init->rbp_off;
	}
	if (reg == in->cie->ra_reg) {
		in->r.ra_how = init->ra_how;
		in->r.ra_off = init->ra_off;
	}
}

/* factored - @v times the data alignment factor, wrapping like readelf. */
static inline int64_t factored(const struct cfa_interp *in, uint64_t v)
{
	return (int64_t)(v * (uint64_t)in->cie->data_align);
}

/*
 * classify_expr - which CFA a DW_CFA_def_cfa_expression block means. The
 * two binutils PLT expressions the row format has types for,
 *   DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
 *   DW_OP_lit11|lit10; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * (lit11: the classic lazy .plt; lit10: the IBT lazy .plt of older
 * binutils, with BND prefixes; lit9: binutils 2.40's IBT lazy .plt,
 * endbr64; push; jmp), or any other: lit5 is the MPX one; GCC's
 * stack realignment writes DW_OP_breg6 -8; DW_OP_deref; OpenSSL's
 * perlasm DW_OP_breg7 N; DW_OP_deref; DW_OP_plus_uconst 8.
 */
static enum cfa_how classify_expr(const uint8_t *p, uint64_t len)
{
	static const uint8_t plt[] = {
		0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
	};

	if (len != sizeof(plt) || memcmp(p, plt, 6) || memcmp(p + 7, plt + 7, 4))
		return CFA_EXPR;
	if (p[6] == 0x3b)
		return CFA_PLT1;
	if (p[6] == 0x3a)
		return CFA_PLT2;
	if (p[6] == 0x39)
		return CFA_PLT3;
	return CFA_EXPR;
}

/* exec_ext - one opcode whose high two bits are zero. */
static int exec_ext(struct cfa_interp *in, struct cur *c, uint8_t op)
{
	const uint8_t *blk;
	uint64_t reg, u;
	int err;

	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
		if (!in->in_fde)
			return CFI_ERR(UNWIND_ERR_ADVANCE);
		err = cfi_read_ptr(in->sec, in->env, c, in->sec->debug_frame ?
			       DW_EH_PE_absptr : in->cie->fde_enc,
			       in->cie->addr_size, &u);
		if (err)
			return err;
		if (u < in->start + in->loc || u - in->start > in->range)
			return CFI_ERR(UNWIND_ERR_ADVANCE);
		if (u - in->start == in->loc)
			return 0;
		err = cfa_emit(in);
		in->loc = u - in->start;
		return err;
	case DW_CFA_advance_loc1:
		u = rd_le(c, 1);
		return c->bad ? 0 : advance(in, u);
	case DW_CFA_advance_loc2:
		u = rd_le(c, 2);
		return c->bad ? 0 : advance(in, u);
	case DW_CFA_advance_loc4:
		u = rd_le(c, 4);
		return c->bad ? 0 : advance(in, u);
	case DW_CFA_MIPS_advance_loc8:
		u = rd_le(c, 8);
		return c->bad ? 0 : advance(in, u);
	case DW_CFA_offset_extended:
		reg = rd_uleb(c);
		set_rule(in, reg, HOW_OFFSET, factored(in, rd_uleb(c)));
		return 0;
	case DW_CFA_offset_extended_sf:
		reg = rd_uleb(c);
		set_rule(in, reg, HOW_OFFSET, factored(in, rd_sleb(c)));
		return 0;
	case DW_CFA_GNU_negative_offset_extended:
		reg = rd_uleb(c);
		set_rule(in, reg, HOW_OFFSET, factored(in, 0 - rd_uleb(c)));
		return 0;
	case DW_CFA_restore_extended:
		restore(in, rd_uleb(c));
		return 0;
	case DW_CFA_undefined:
		set_rule(in, rd_uleb(c), HOW_UNDEF, 0);
		return 0;
	case DW_CFA_same_value:
		set_rule(in, rd_uleb(c), HOW_SAME, 0);
		return 0;
	case DW_CFA_register:
		reg = rd_uleb(c);
		rd_uleb(c);
		set_rule(in, reg, HOW_OTHER, 0);
		return 0;
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
		reg = rd_uleb(c);
		rd_uleb(c);	/* sleb or uleb: same length */
		set_rule(in, reg, HOW_OTHER, 0);
		return 0;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		reg = rd_uleb(c);
		skip_block(c);
		set_rule(in, reg, HOW_OTHER, 0);
		return 0;
	case DW_CFA_remember_state:
		if (in->depth == UNWIND_STATE_DEPTH)
			return CFI_ERR(UNWIND_ERR_STATE);
		in->stack[in->depth++] = in->r;
		return 0;
	case DW_CFA_restore_state:
		if (!in->depth)
			return CFI_ERR(UNWIND_ERR_STATE);
		in->r = in->stack[--in->depth];
		return 0;
	case DW_CFA_def_cfa:
		in->r.cfa_reg = rd_uleb(c);
		in->r.cfa_off = (int64_t)rd_uleb(c);
		in->r.cfa_how = CFA_REG;
		return 0;
	case DW_CFA_def_cfa_sf:
		in->r.cfa_reg = rd_uleb(c);
		in->r.cfa_off = factored(in, rd_sleb(c));
		in->r.cfa_how = CFA_REG;
		return 0;
	case DW_CFA_def_cfa_register:
		in->r.cfa_reg = rd_uleb(c);
		in->r.cfa_how = CFA_REG;
		return 0;
	case DW_CFA_def_cfa_offset:
		in->r.cfa_off = (int64_t)rd_uleb(c);
		return 0;
	case DW_CFA_def_cfa_offset_sf:
		in->r.cfa_off = factored(in, rd_sleb(c));
		return 0;
	case DW_CFA_def_cfa_expression:
		u = rd_uleb(c);
		blk = c->p;
		if (c->bad || u > (uint64_t)(c->end - c->p)) {
			c->bad = true;
			return 0;
		}
		c->p += u;
		in->r.cfa_how = classify_expr(blk, u);
		return 0;
	case DW_CFA_GNU_args_size:
		rd_uleb(c);
		return 0;
	}
	return CFI_ERR(UNWIND_ERR_OPCODE);
}

int cfa_run(struct cfa_interp *in, struct cur *c)
{
	while (c->p < c->end) {
		uint8_t op = *c->p++;
		int err = 0;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			err = advance(in, op & 0x3f);
			break;
		case DW_CFA_offset:
			set_rule(in, op & 0x3f, HOW_OFFSET,
				 factored(in, rd_uleb(c)));
			break;
		case DW_CFA_restore:
			restore(in, op & 0x3f);
			break;
		default:
			err = exec_ext(in, c, op);
		}
		if (c->bad)
			return CFI_ERR(UNWIND_ERR_TRUNCATED);
		if (err)
			return err;
	}
	return 0;
}
