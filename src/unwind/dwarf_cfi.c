// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_cfi.c - CIE/FDE parser (see dwarf_cfi.h).
 *
 * Owns: the walk over one CFI section, the CIE cache of that walk, the
 * DW_EH_PE_* pointer decoder, and each FDE's trip from its bytes to rows
 * (the instructions themselves run in cfa_interp.c).
 *
 * Specs: DWARF 5 §6.4.1 for .debug_frame (CIE id 0xffffffff, or all ones
 * in the 64-bit format; CIE versions 1, 3 and 4, the last with address
 * and segment selector sizes; the FDE's CIE pointer a section offset);
 * the LSB 5.0 "Exception Frames" chapter for .eh_frame (CIE id 0, the
 * FDE's CIE pointer relative to its own field, augmentations "z", "R",
 * "P", "L", "S", the legacy "eh" and its EH data word, DW_EH_PE_*
 * pointers; an unknown letter after "z" ends the parse of the string and
 * the "z" length skips the rest, as libgcc does; "B" and "G" carry no
 * data). As readelf and .eh_frame_hdr users do, a zero length is skipped
 * and the walk goes on (a stray terminator mid-section hides nothing),
 * except in a section found through PT_GNU_EH_FRAME, whose size is only
 * known from its terminator.
 *
 * Input is untrusted: an entry whose length runs past the section ends
 * the walk (nothing says where the next one starts); any other malformed
 * entry is counted and skipped. A bad CIE is parsed once (cached by
 * offset), counted once, and each FDE that uses it counts again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/cfa_interp.h"

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

int cfi_grow(void **arr, size_t *cap, size_t elem, size_t min)
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

/*
 * cfi_read_ptr - pcrel: relative to the field's own vaddr; datarel: to
 * .got (as on i386; x86-64 toolchains do not emit it); aligned: absptr at
 * the next @addr_size boundary; indirect: through env->read_u64. textrel
 * and funcrel are never used for x86-64 FDE addresses: rejected.
 */
int cfi_read_ptr(const struct cfi_section *sec, const struct cfi_env *env,
		 struct cur *c, uint8_t enc, unsigned int addr_size,
		 uint64_t *out)
{
	uint64_t base = 0, v;
	uint64_t field = sec->vaddr + (uint64_t)(c->p - sec->data);

	if (enc == DW_EH_PE_omit)
		return CFI_ERR(UNWIND_ERR_POINTER);
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		base = field;
		break;
	case DW_EH_PE_datarel:
		if (!env || !env->has_got)
			return CFI_ERR(UNWIND_ERR_POINTER);
		base = env->got;
		break;
	case DW_EH_PE_aligned: {
		uint64_t pad = -field & (addr_size - 1);

		if ((enc & 0x0f) != DW_EH_PE_absptr ||
		    pad > (uint64_t)(c->end - c->p))
			return CFI_ERR(UNWIND_ERR_POINTER);
		c->p += pad;
		break;
	}
	default:
		return CFI_ERR(UNWIND_ERR_POINTER);
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
		return CFI_ERR(UNWIND_ERR_POINTER);
	}
	if (c->bad)
		return CFI_ERR(UNWIND_ERR_TRUNCATED);
	v += base;
	if (enc & DW_EH_PE_indirect) {
		if (!env || !env->read_u64 ||
		    !env->read_u64(env->ctx, v, &v))
			return CFI_ERR(UNWIND_ERR_POINTER);
	}
	*out = v;
	return 0;
}

/* One framed entry (CIE or FDE) of a section. */
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
 * CFI_ERR(UNWIND_ERR_TRUNCATED), with e->next valid, when it is too
 * short for its id.
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
		return CFI_ERR(UNWIND_ERR_TRUNCATED);
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

/* skip_ptr - step over a pointer of encoding @enc (the personality). */
static int skip_ptr(const struct cfi_section *sec, struct cur *c, uint8_t enc)
{
	/* a .got base and no indirection: we only need its length */
	static const struct cfi_env skip_env = { .has_got = true };
	uint64_t v;

	if (enc == DW_EH_PE_omit)
		return 0;
	return cfi_read_ptr(sec, &skip_env, c, enc & ~DW_EH_PE_indirect, 8, &v);
}

/* cie_parse - the CIE at section offset @off into @cie (err set). */
static void cie_parse(struct walk *w, size_t off, struct cie *cie)
{
	struct entry e;
	struct cfa_interp in;
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
		cie->err = CFI_ERR(UNWIND_ERR_TRUNCATED);
		return;
	}
	if (e.empty || !e.is_cie) {
		cie->err = CFI_ERR(UNWIND_ERR_CIE);
		return;
	}
	c = (struct cur){ e.body, e.end, false };
	version = rd_u8(&c);
	if (version != 1 && version != 3 && version != 4) {
		cie->err = CFI_ERR(UNWIND_ERR_CIE);
		return;
	}
	aug = (const char *)c.p;
	nul = c.bad ? NULL : memchr(c.p, 0, (size_t)(c.end - c.p));
	if (!nul) {
		cie->err = CFI_ERR(UNWIND_ERR_TRUNCATED);
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
			cie->err = CFI_ERR(UNWIND_ERR_CIE);
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
			cie->err = CFI_ERR(UNWIND_ERR_TRUNCATED);
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
				err = skip_ptr(w->sec, &a, rd_u8(&a));
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
			cie->err = CFI_ERR(UNWIND_ERR_TRUNCATED);
			return;
		}
		c.p += len;
	} else if (*aug) {
		cie->err = CFI_ERR(UNWIND_ERR_CIE);	/* cannot know the layout */
		return;
	}
	if (c.bad) {
		cie->err = CFI_ERR(UNWIND_ERR_TRUNCATED);
		return;
	}
	memset(&in, 0, offsetof(struct cfa_interp, stack));
	in.sec = w->sec;
	in.env = w->env;
	in.b = w->b;
	in.cie = cie;
	in.r = cfa_regs_none;
	err = cfa_run(&in, &c);
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
	    cfi_grow((void **)&w->cies, &w->cap_cies, sizeof(*w->cies), 8))
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
		cfi_count_error(w->b->st, CFI_ERR_KIND(w->cies[w->nr_cies].err));
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
	struct cfa_interp in;
	struct cur c = { e->body, e->end, false };
	uint64_t start, range, cie_off;
	int err;

	if (sec->debug_frame) {
		cie_off = e->id;
	} else {
		if (e->id > e->id_pos)
			return CFI_ERR(UNWIND_ERR_CIE);
		cie_off = e->id_pos - e->id;
	}
	if (cie_off >= sec->size)
		return CFI_ERR(UNWIND_ERR_CIE);
	cie = cie_get(w, (size_t)cie_off);
	if (!cie)
		return -ENOMEM;
	if (cie->err)
		return CFI_ERR(UNWIND_ERR_CIE);

	if (sec->debug_frame) {
		rd_le(&c, cie->seg_size);
		start = rd_le(&c, cie->addr_size);
		range = rd_le(&c, cie->addr_size);
	} else {
		err = cfi_read_ptr(sec, w->env, &c, cie->fde_enc, 8, &start);
		if (err)
			return err;
		err = cfi_read_ptr(sec, w->env, &c, cie->fde_enc & 0x0f, 8, &range);
		if (err)
			return err;
	}
	if (cie->aug_z)
		skip_block(&c);
	if (c.bad)
		return CFI_ERR(UNWIND_ERR_TRUNCATED);
	if (!range) {
		b->st->fdes_empty++;
		return 0;
	}
	if (range > UINT32_MAX || start + range < start ||
	    !in_code(w->env, start, start + range))
		return CFI_ERR(UNWIND_ERR_RANGE);

	memset(&in, 0, offsetof(struct cfa_interp, stack));
	in.sec = w->sec;
	in.env = w->env;
	in.b = w->b;
	in.cie = cie;
	in.in_fde = true;
	in.start = start;
	in.range = range;
	in.first_row = b->nr_rows;
	in.r = cie->init;
	err = cfa_run(&in, &c);
	if (!err && in.loc < range)
		err = cfa_emit(&in);
	if (err) {
		b->nr_rows = in.first_row;
		return err;
	}
	if (b->nr_fdes == b->cap_fdes &&
	    cfi_grow((void **)&b->fdes, &b->cap_fdes, sizeof(*b->fdes), 256)) {
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
			cfi_count_error(b->st, CFI_ERR_KIND(err));
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
