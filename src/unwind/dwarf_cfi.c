// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_cfi.c - CIE/FDE parser and DW_CFA_* interpreter (see dwarf_cfi.h).
 *
 * Owns: the walk over one CFI section, the CIE cache of that walk, the
 * DW_EH_PE_* pointer decoder and the interpreter that turns an FDE's
 * instructions into compact rows.
 *
 * Specs: DWARF 5 §6.4 for .debug_frame (CIE id 0xffffffff, or all ones
 * in the 64-bit format; versions 1, 3 and 4 with address and segment
 * selector sizes) and for the instructions; the LSB "Exception Frames"
 * chapter for .eh_frame (CIE id 0, CIE pointer relative to the FDE's own
 * id field, augmentations "z", "R", "P", "L", "S", the legacy "eh", the
 * DW_EH_PE_* pointer encodings). Where a case is left open, we do what
 * binutils' readelf does, because the tests use it as the oracle:
 *   - a zero length is skipped and the walk goes on (readelf, and FDEs
 *     behind a stray terminator are still found through .eh_frame_hdr);
 *   - DW_CFA_remember_state saves the CFA rule too (DWARF 5, GCC);
 *   - DW_CFA_def_cfa_offset after an expression keeps the expression,
 *     DW_CFA_def_cfa_register turns it back into register + offset.
 *
 * Only three rules matter to the unwinder: the CFA, rbp (reg 6) and the
 * return address (the CIE's column, 16 on x86-64). Every other register
 * operand is parsed and dropped, so the interpreter state is a few words
 * and the rows come out in one pass. A row whose return address is not
 * saved at CFA-8 (e.g. DW_CFA_undefined rip in _start) is UNSUPPORTED:
 * the BPF side assumes CFA-8 always.
 *
 * Input is untrusted: every read is bounds-checked through a cursor that
 * latches "bad" instead of reading past the entry, every loop consumes
 * bytes, and an FDE makes at most one row per instruction, so the work
 * and memory are linear in the section size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/dwarf_cfi.h"

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

enum {
	DW_EH_PE_absptr = 0x00,
	DW_EH_PE_uleb128 = 0x01,
	DW_EH_PE_udata2 = 0x02,
	DW_EH_PE_udata4 = 0x03,
	DW_EH_PE_udata8 = 0x04,
	DW_EH_PE_signed = 0x08,
	DW_EH_PE_sleb128 = 0x09,
	DW_EH_PE_sdata2 = 0x0a,
	DW_EH_PE_sdata4 = 0x0b,
	DW_EH_PE_sdata8 = 0x0c,
	DW_EH_PE_pcrel = 0x10,
	DW_EH_PE_textrel = 0x20,
	DW_EH_PE_datarel = 0x30,
	DW_EH_PE_funcrel = 0x40,
	DW_EH_PE_aligned = 0x50,
	DW_EH_PE_indirect = 0x80,
	DW_EH_PE_omit = 0xff,
};

/* Internal results: 0, -ENOMEM, or ERR(kind) for a rejected entry. */
#define ERR(kind)	(1 + (kind))
#define ERR_KIND(r)	((enum unwind_err)((r) - 1))

/* ---- byte cursor ---------------------------------------------------- */

struct cur {
	const uint8_t *p, *end;
	bool bad;		/* a read ran past end; reads then return 0 */
};

static inline uint8_t rd_u8(struct cur *c)
{
	if (c->p >= c->end) {
		c->bad = true;
		return 0;
	}
	return *c->p++;
}

/* rd_le - @n (1..8) bytes little-endian. */
static inline uint64_t rd_le(struct cur *c, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static inline uint64_t rd_uleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

static inline int64_t rd_sleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return (int64_t)v;
		}
	}
	c->bad = true;
	return 0;
}

/* skip_block - skip a ULEB128 length and that many bytes. */
static inline void skip_block(struct cur *c)
{
	uint64_t len = rd_uleb(c);

	if (len > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		c->p = c->end;
		return;
	}
	c->p += len;
}

/* ---- register rules ------------------------------------------------- */

enum how {
	HOW_UNDEF,		/* DW_CFA_undefined, or never set */
	HOW_SAME,		/* DW_CFA_same_value */
	HOW_OFFSET,		/* saved at CFA + off */
	HOW_OTHER,		/* register, expression, val_* */
};

enum cfa_how {
	CFA_REG,		/* reg + off */
	CFA_PLT1,		/* the .plt expression (lit11) */
	CFA_PLT2,		/* the .plt.sec expression (lit10) */
	CFA_EXPR,		/* any other expression */
};

/* The rules the rows are made of; small, copied on remember_state. */
struct regs {
	uint64_t cfa_reg;
	int64_t cfa_off;
	int64_t rbp_off;
	int64_t ra_off;
	uint8_t cfa_how;
	uint8_t rbp_how;
	uint8_t ra_how;
};

static const struct regs regs_none = {
	.cfa_reg = UINT64_MAX, .cfa_how = CFA_REG,
	.rbp_how = HOW_UNDEF, .ra_how = HOW_UNDEF,
};

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
	int err;		/* 0, or why the CIE is unusable */
};

/* One section walk. */
struct walk {
	const struct cfi_section *sec;
	const struct cfi_env *env;
	struct cfi_builder *b;
	struct cie *cies;	/* parsed CIEs, good and bad */
	size_t nr_cies, cap_cies;
	uint32_t *slots;	/* open addressing: index + 1, 0 empty */
	size_t nr_slots;	/* power of two */
};

/* The interpreter of one CIE's or FDE's instructions. */
struct interp {
	struct walk *w;
	const struct cie *cie;
	bool in_fde;
	uint64_t start;		/* FDE start vaddr */
	uint64_t range;		/* FDE length, bytes */
	uint64_t loc;		/* current location, relative to start */
	size_t first_row;	/* this FDE's first row in the builder */
	struct regs r;
	unsigned int depth;
	struct regs stack[UNWIND_STATE_DEPTH];
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
	if (r->ra_how != HOW_OFFSET || r->ra_off != -8) {
		/* return address not at CFA-8: the unwinder cannot use it */
	} else if (r->cfa_how == CFA_PLT1 || r->cfa_how == CFA_PLT2) {
		cfa = r->cfa_how == CFA_PLT1 ? UNWIND_CFA_PLT1 : UNWIND_CFA_PLT2;
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

static int grow(void **arr, size_t *cap, size_t elem, size_t min)
{
	size_t n = *cap ? *cap * 2 : min;
	void *p;

	if (n > UINT32_MAX)	/* row and FDE indices are u32 */
		return -ENOMEM;
	p = realloc(*arr, n * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

/* emit - the current rules apply from in->loc on. */
static int emit(struct interp *in)
{
	struct cfi_builder *b = in->w->b;
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
	    grow((void **)&b->rows, &b->cap_rows, sizeof(*b->rows), 1024))
		return -ENOMEM;
	b->rows[b->nr_rows++] = row;
	return 0;
}

/* advance - move the location by @n code alignment units. */
static int advance(struct interp *in, uint64_t n)
{
	uint64_t delta;
	int err;

	if (!in->in_fde)
		return ERR(UNWIND_ERR_ADVANCE);
	if (__builtin_mul_overflow(n, in->cie->code_align, &delta) ||
	    delta > in->range - in->loc)
		return ERR(UNWIND_ERR_ADVANCE);
	if (!delta)
		return 0;
	err = emit(in);
	in->loc += delta;
	return err;
}

/* set_rule - register @reg's rule becomes @how (@off for HOW_OFFSET). */
static void set_rule(struct interp *in, uint64_t reg, enum how how,
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
static void restore(struct interp *in, uint64_t reg)
{
	const struct regs *init = in->in_fde ? &in->cie->init : &regs_none;

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
static inline int64_t factored(const struct interp *in, uint64_t v)
{
	return (int64_t)(v * (uint64_t)in->cie->data_align);
}

/*
 * classify_expr - which CFA a DW_CFA_def_cfa_expression block means: the
 * two PLT expressions binutils emits (.plt: lit11, .plt.sec: lit10), or
 * any other:
 *   DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
 *   DW_OP_lit11|lit10; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
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
	return CFA_EXPR;
}

static int read_ptr(struct walk *w, struct cur *c, uint8_t enc,
		    unsigned int addr_size, uint64_t *out);

/* exec_ext - one opcode whose high two bits are zero. */
static int exec_ext(struct interp *in, struct cur *c, uint8_t op)
{
	const uint8_t *blk;
	uint64_t reg, u;
	int err;

	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
		if (!in->in_fde)
			return ERR(UNWIND_ERR_ADVANCE);
		err = read_ptr(in->w, c, in->w->sec->debug_frame ?
			       DW_EH_PE_absptr : in->cie->fde_enc,
			       in->cie->addr_size, &u);
		if (err)
			return err;
		if (u < in->start + in->loc || u - in->start > in->range)
			return ERR(UNWIND_ERR_ADVANCE);
		if (u - in->start == in->loc)
			return 0;
		err = emit(in);
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
			return ERR(UNWIND_ERR_STATE);
		in->stack[in->depth++] = in->r;
		return 0;
	case DW_CFA_restore_state:
		if (!in->depth)
			return ERR(UNWIND_ERR_STATE);
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
	return ERR(UNWIND_ERR_OPCODE);
}

/* exec - run the instructions in @c. */
static int exec(struct interp *in, struct cur *c)
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
			return ERR(UNWIND_ERR_TRUNCATED);
		if (err)
			return err;
	}
	return 0;
}

/* ---- pointers ------------------------------------------------------- */

/*
 * read_ptr - a DW_EH_PE_* encoded pointer at @c. absptr is @addr_size
 * bytes. pcrel: relative to the field's own vaddr; datarel: to .got;
 * aligned: absptr at the next @addr_size boundary. textrel and funcrel
 * are never emitted for x86-64 FDE addresses: rejected.
 */
static int read_ptr(struct walk *w, struct cur *c, uint8_t enc,
		    unsigned int addr_size, uint64_t *out)
{
	const struct cfi_section *sec = w->sec;
	uint64_t base = 0, v;
	uint64_t field = sec->vaddr + (uint64_t)(c->p - sec->data);

	if (enc == DW_EH_PE_omit)
		return ERR(UNWIND_ERR_POINTER);
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		base = field;
		break;
	case DW_EH_PE_datarel:
		if (!w->env || !w->env->has_got)
			return ERR(UNWIND_ERR_POINTER);
		base = w->env->got;
		break;
	case DW_EH_PE_aligned: {
		uint64_t pad = -field & (addr_size - 1);

		if ((enc & 0x0f) != DW_EH_PE_absptr ||
		    pad > (uint64_t)(c->end - c->p))
			return ERR(UNWIND_ERR_POINTER);
		c->p += pad;
		break;
	}
	default:
		return ERR(UNWIND_ERR_POINTER);
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		v = rd_le(c, addr_size);
		break;
	case DW_EH_PE_signed:
		v = rd_le(c, addr_size);
		if (addr_size == 4)
			v = (uint64_t)(int64_t)(int32_t)v;
		break;
	case DW_EH_PE_uleb128:
		v = rd_uleb(c);
		break;
	case DW_EH_PE_udata2:
		v = rd_le(c, 2);
		break;
	case DW_EH_PE_udata4:
		v = rd_le(c, 4);
		break;
	case DW_EH_PE_udata8:
		v = rd_le(c, 8);
		break;
	case DW_EH_PE_sleb128:
		v = (uint64_t)rd_sleb(c);
		break;
	case DW_EH_PE_sdata2:
		v = (uint64_t)(int64_t)(int16_t)rd_le(c, 2);
		break;
	case DW_EH_PE_sdata4:
		v = (uint64_t)(int64_t)(int32_t)rd_le(c, 4);
		break;
	case DW_EH_PE_sdata8:
		v = rd_le(c, 8);
		break;
	default:
		return ERR(UNWIND_ERR_POINTER);
	}
	if (c->bad)
		return ERR(UNWIND_ERR_TRUNCATED);
	v += base;
	if (enc & DW_EH_PE_indirect) {
		if (!w->env || !w->env->read_u64 ||
		    !w->env->read_u64(w->env->ctx, v, &v))
			return ERR(UNWIND_ERR_POINTER);
	}
	*out = v;
	return 0;
}

/* ---- entries -------------------------------------------------------- */

struct entry {
	const uint8_t *body;	/* after the id field */
	const uint8_t *end;	/* end of the entry */
	size_t id_pos;		/* section offset of the id field */
	uint64_t id;		/* CIE id, or the FDE's CIE pointer */
	size_t next;		/* section offset of the next entry */
	bool empty;		/* zero length: terminator/padding */
	bool is_cie;
};

/*
 * entry_at - frame the entry at section offset @off. Returns 0; -1 when
 * its length runs past the section (no next entry can be found); or
 * ERR(TRUNCATED) with e->next valid when it is too short for its id.
 */
static int entry_at(const struct cfi_section *sec, size_t off,
		    struct entry *e)
{
	const uint8_t *p = sec->data + off;
	size_t left = sec->size - off, hdr = 4, idsz = 4;
	uint64_t len;

	memset(e, 0, sizeof(*e));
	if (left < 4)
		return -1;
	len = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	      (uint64_t)p[3] << 24;
	if (len == 0xffffffff) {
		struct cur c = { p + 4, p + left, false };

		len = rd_le(&c, 8);
		if (c.bad)
			return -1;
		hdr = 12;
		idsz = 8;
	}
	if (len > left - hdr)
		return -1;
	e->next = off + hdr + (size_t)len;
	if (!len) {
		e->empty = true;
		return 0;
	}
	if (len < idsz)
		return ERR(UNWIND_ERR_TRUNCATED);
	e->id_pos = off + hdr;
	{
		struct cur c = { p + hdr, p + hdr + idsz, false };

		e->id = rd_le(&c, idsz);
	}
	e->body = p + hdr + idsz;
	e->end = p + hdr + len;
	if (sec->debug_frame)
		e->is_cie = e->id == (idsz == 8 ? UINT64_MAX : 0xffffffff);
	else
		e->is_cie = e->id == 0;
	return 0;
}

/* skip_ptr - step over a pointer of encoding @enc (personality). */
static int skip_ptr(struct walk *w, struct cur *c, uint8_t enc)
{
	uint64_t v;
	struct cfi_env none = { 0 };
	const struct cfi_env *saved = w->env;
	int err;

	if (enc == DW_EH_PE_omit)
		return 0;
	/* no indirection, no .got needed just to skip it */
	none.has_got = true;
	w->env = &none;
	err = read_ptr(w, c, enc & ~DW_EH_PE_indirect, 8, &v);
	w->env = saved;
	return err;
}

/* cie_parse - the CIE at section offset @off into @cie (err set). */
static void cie_parse(struct walk *w, size_t off, struct cie *cie)
{
	struct entry e;
	struct interp in;
	struct cur c;
	const char *aug;
	const uint8_t *nul;
	uint8_t version;
	int err;

	memset(cie, 0, sizeof(*cie));
	cie->off = off;
	cie->addr_size = 8;
	cie->ra_reg = 16;
	err = entry_at(w->sec, off, &e);
	if (err) {
		cie->err = ERR(UNWIND_ERR_TRUNCATED);
		return;
	}
	if (e.empty || !e.is_cie) {
		cie->err = ERR(UNWIND_ERR_CIE);
		return;
	}
	c = (struct cur){ e.body, e.end, false };
	version = rd_u8(&c);
	if (version != 1 && version != 3 && version != 4) {
		cie->err = ERR(UNWIND_ERR_CIE);
		return;
	}
	aug = (const char *)c.p;
	nul = c.bad ? NULL : memchr(c.p, 0, (size_t)(c.end - c.p));
	if (!nul) {
		cie->err = ERR(UNWIND_ERR_TRUNCATED);
		return;
	}
	c.p = nul + 1;
	if (aug[0] == 'e' && aug[1] == 'h') {
		rd_le(&c, 8);	/* legacy GCC: the EH data pointer */
		aug += 2;
	}
	if (version >= 4) {
		cie->addr_size = rd_u8(&c);
		cie->seg_size = rd_u8(&c);
		if ((cie->addr_size != 4 && cie->addr_size != 8) ||
		    cie->seg_size > 8) {
			cie->err = ERR(UNWIND_ERR_CIE);
			return;
		}
	}
	cie->code_align = rd_uleb(&c);
	cie->data_align = rd_sleb(&c);
	cie->ra_reg = version == 1 ? rd_u8(&c) : rd_uleb(&c);
	cie->fde_enc = DW_EH_PE_absptr;
	if (*aug == 'z') {
		uint64_t len = rd_uleb(&c);
		struct cur a;

		if (c.bad || len > (uint64_t)(c.end - c.p)) {
			cie->err = ERR(UNWIND_ERR_TRUNCATED);
			return;
		}
		a = (struct cur){ c.p, c.p + len, false };
		cie->aug_z = true;
		for (aug++; *aug && !a.bad; aug++) {
			if (*aug == 'R') {
				cie->fde_enc = rd_u8(&a);
			} else if (*aug == 'L') {
				rd_u8(&a);
			} else if (*aug == 'P') {
				err = skip_ptr(w, &a, rd_u8(&a));
				if (err) {
					cie->err = err;
					return;
				}
			} else if (*aug == 'S') {
				cie->signal = true;
			} else if (*aug != 'B' && *aug != 'G') {
				break;	/* unknown: 'z' lets us skip the rest */
			}
		}
		if (a.bad) {
			cie->err = ERR(UNWIND_ERR_TRUNCATED);
			return;
		}
		c.p += len;
	} else if (*aug) {
		cie->err = ERR(UNWIND_ERR_CIE);	/* cannot know the layout */
		return;
	}
	if (c.bad) {
		cie->err = ERR(UNWIND_ERR_TRUNCATED);
		return;
	}
	memset(&in, 0, offsetof(struct interp, stack));
	in.w = w;
	in.cie = cie;
	in.r = regs_none;
	err = exec(&in, &c);
	if (err) {
		cie->err = err;
		return;
	}
	cie->init = in.r;
}

static inline size_t slot_of(uint64_t off, size_t nr_slots)
{
	return (size_t)((off * 0x9e3779b97f4a7c15ull) >> 32) & (nr_slots - 1);
}

/* cie_get - the CIE at @off, parsed on first use. NULL: -ENOMEM. */
static const struct cie *cie_get(struct walk *w, size_t off)
{
	size_t i, j;

	if (w->nr_slots) {
		for (i = slot_of(off, w->nr_slots); w->slots[i];
		     i = (i + 1) & (w->nr_slots - 1)) {
			if (w->cies[w->slots[i] - 1].off == off)
				return &w->cies[w->slots[i] - 1];
		}
	}
	if (w->nr_cies == w->cap_cies &&
	    grow((void **)&w->cies, &w->cap_cies, sizeof(*w->cies), 8))
		return NULL;
	if (2 * (w->nr_cies + 1) > w->nr_slots) {
		size_t n = w->nr_slots ? 2 * w->nr_slots : 16;
		uint32_t *s = calloc(n, sizeof(*s));

		if (!s)
			return NULL;
		for (j = 0; j < w->nr_cies; j++) {
			for (i = slot_of(w->cies[j].off, n); s[i];
			     i = (i + 1) & (n - 1))
				;
			s[i] = (uint32_t)j + 1;
		}
		free(w->slots);
		w->slots = s;
		w->nr_slots = n;
	}
	cie_parse(w, off, &w->cies[w->nr_cies]);
	if (w->cies[w->nr_cies].err)
		cfi_count_error(w->b->st, ERR_KIND(w->cies[w->nr_cies].err));
	else
		w->b->st->cies++;
	for (i = slot_of(off, w->nr_slots); w->slots[i];
	     i = (i + 1) & (w->nr_slots - 1))
		;
	w->slots[i] = (uint32_t)++w->nr_cies;
	return &w->cies[w->nr_cies - 1];
}

/* in_code - whether [start, end) lies within one code range. */
static bool in_code(const struct cfi_env *env, uint64_t start, uint64_t end)
{
	size_t lo = 0, hi;

	if (!env || !env->code)
		return true;
	hi = env->nr_code;
	while (lo < hi) {	/* first range starting after @start */
		size_t mid = lo + (hi - lo) / 2;

		if (env->code[mid].start <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && end <= env->code[lo - 1].end;
}

/* fde_do - decode the FDE @e and append its rows. */
static int fde_do(struct walk *w, const struct entry *e)
{
	const struct cfi_section *sec = w->sec;
	struct cfi_builder *b = w->b;
	const struct cie *cie;
	struct interp in;
	struct cur c = { e->body, e->end, false };
	uint64_t start, range, cie_off;
	int err;

	if (sec->debug_frame) {
		cie_off = e->id;
	} else {
		if (e->id > e->id_pos)
			return ERR(UNWIND_ERR_CIE);
		cie_off = e->id_pos - e->id;
	}
	if (cie_off >= sec->size)
		return ERR(UNWIND_ERR_CIE);
	cie = cie_get(w, (size_t)cie_off);
	if (!cie)
		return -ENOMEM;
	if (cie->err)
		return ERR(UNWIND_ERR_CIE);

	if (sec->debug_frame) {
		rd_le(&c, cie->seg_size);
		start = rd_le(&c, cie->addr_size);
		range = rd_le(&c, cie->addr_size);
	} else {
		err = read_ptr(w, &c, cie->fde_enc, 8, &start);
		if (err)
			return err;
		err = read_ptr(w, &c, cie->fde_enc & 0x0f, 8, &range);
		if (err)
			return err;
	}
	if (cie->aug_z)
		skip_block(&c);
	if (c.bad)
		return ERR(UNWIND_ERR_TRUNCATED);
	if (!range) {
		b->st->fdes_empty++;
		return 0;
	}
	if (range > UINT32_MAX || start + range < start ||
	    !in_code(w->env, start, start + range))
		return ERR(UNWIND_ERR_RANGE);

	memset(&in, 0, offsetof(struct interp, stack));
	in.w = w;
	in.cie = cie;
	in.in_fde = true;
	in.start = start;
	in.range = range;
	in.first_row = b->nr_rows;
	in.r = cie->init;
	err = exec(&in, &c);
	if (!err && in.loc < range)
		err = emit(&in);
	if (err) {
		b->nr_rows = in.first_row;
		return err;
	}
	if (b->nr_fdes == b->cap_fdes &&
	    grow((void **)&b->fdes, &b->cap_fdes, sizeof(*b->fdes), 256)) {
		b->nr_rows = in.first_row;
		return -ENOMEM;
	}
	b->fdes[b->nr_fdes] = (struct cfi_fde){
		.start = start,
		.end = start + range,
		.first_row = (uint32_t)in.first_row,
		.nr_rows = (uint32_t)(b->nr_rows - in.first_row),
		.seq = (uint32_t)b->nr_fdes,
	};
	b->nr_fdes++;
	return 0;
}

int cfi_parse_section(struct cfi_builder *b, const struct cfi_section *sec,
		      const struct cfi_env *env)
{
	struct walk w = { .sec = sec, .env = env, .b = b };
	size_t off = 0;
	int ret = 0;

	while (off < sec->size) {
		struct entry e;
		int err = entry_at(sec, off, &e);

		if (err < 0) {
			cfi_count_error(b->st, UNWIND_ERR_TRUNCATED);
			break;
		}
		if (!err && e.empty && sec->stop_at_zero)
			break;
		if (!err && !e.empty) {
			if (e.is_cie)
				err = cie_get(&w, off) ? 0 : -ENOMEM;
			else
				err = fde_do(&w, &e);
		}
		if (err < 0) {
			ret = err;
			break;
		}
		if (err)
			cfi_count_error(b->st, ERR_KIND(err));
		off = e.next;
	}
	free(w.cies);
	free(w.slots);
	return ret;
}

void cfi_builder_free(struct cfi_builder *b)
{
	free(b->rows);
	free(b->fdes);
	b->rows = NULL;
	b->fdes = NULL;
	b->nr_rows = b->cap_rows = b->nr_fdes = b->cap_fdes = 0;
}
