// SPDX-License-Identifier: GPL-2.0
/*
 * gopclntab.c - decoding Go's pc-line table (see gopclntab.h).
 *
 * Layouts (src/runtime/symtab.go of each version; 64-bit):
 *   pcHeader   1.16-1.17: magic, pad1, pad2, minLC, ptrSize, nfunc,
 *              nfiles, funcnameOffset, cuOffset, filetabOffset,
 *              pctabOffset, pclnOffset (64 bytes); 1.18+ adds textStart
 *              after nfiles (72 bytes).
 *   functab    1.16-1.17 {entry uintptr, funcoff uintptr}; 1.18+
 *              {entryoff uint32, funcoff uint32}; nfunc + 1 entries,
 *              funcoff from the functab's start.
 *   _func      1.16-1.17 entry uintptr, then nameoff, args, deferreturn,
 *              pcsp, pcfile, pcln, npcdata, cuOffset (int32/uint32),
 *              funcID, flag, pad, nfuncdata (bytes): 44 bytes; 1.18-1.19
 *              entryoff uint32 instead of entry: 40 bytes; 1.20+ adds
 *              startLine before funcID: 44 bytes. pcdata uint32s follow,
 *              then funcdata: uint32 offsets from moduledata.gofunc
 *              (1.18+) or pointers aligned to 8 (1.16-1.17).
 */
#include <errno.h>
#include <string.h>

#include "util/gopclntab.h"

static uint64_t rd(const uint8_t *p, int size)
{
	uint64_t v = 0;

	for (int i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* gopclntab_uvarint - see gopclntab.h. */
bool gopclntab_uvarint(const uint8_t *p, size_t n, size_t *off, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64 && *off < n; shift += 7) {
		uint8_t b = p[(*off)++];

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

static bool is_116(const struct gopclntab *pt)
{
	return pt->magic == GOPCLNTAB_MAGIC_116;
}

/* gopclntab_header_ok - see gopclntab.h. */
bool gopclntab_header_ok(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t magic;

	if (n < 72)
		return false;
	magic = (uint32_t)rd(b, 4);
	return (magic == GOPCLNTAB_MAGIC_116 || magic == GOPCLNTAB_MAGIC_118 ||
		magic == GOPCLNTAB_MAGIC_120) &&
	       !b[4] && !b[5] && b[6] == 1 && b[7] == 8;
}

/* gopclntab_init - see gopclntab.h. */
int gopclntab_init(struct gopclntab *pt, const void *p, size_t n, uint64_t text)
{
	const uint8_t *b = p;
	uint64_t pcln, fsz;
	uint32_t magic;
	int h;

	memset(pt, 0, sizeof(*pt));
	if (n < 72)
		return -ENOENT;
	magic = (uint32_t)rd(b, 4);
	if ((magic & 0xfffffff0u) != 0xfffffff0u || b[7] != 8)
		return -ENOENT;	/* not a pclntab, or not 64-bit */
	if (magic != GOPCLNTAB_MAGIC_116 && magic != GOPCLNTAB_MAGIC_118 &&
	    magic != GOPCLNTAB_MAGIC_120)
		return -EPROTONOSUPPORT;	/* before 1.16, or newer than known */
	if (b[4] || b[5] || b[6] != 1)
		return -ENOENT;	/* pads, quantum: amd64's are 0, 0, 1 */
	pt->p = b;
	pt->n = n;
	pt->magic = magic;
	pt->minlc = b[6];
	pt->nfunc = rd(b + 8, 8);
	h = magic == GOPCLNTAB_MAGIC_116 ? 24 : 32;	/* funcnameOffset */
	if (magic != GOPCLNTAB_MAGIC_116)
		pt->text = rd(b + 24, 8) ? rd(b + 24, 8) : text;
	pt->nametab = rd(b + h, 8);
	pt->cutab = rd(b + h + 8, 8);
	pt->filetab = rd(b + h + 16, 8);
	pt->pctab = rd(b + h + 24, 8);
	pcln = rd(b + h + 32, 8);
	pt->functab = pcln;
	fsz = is_116(pt) ? 16 : 8;
	/* the tables in their order, each inside; nfunc + 1 functab entries */
	if (pt->nametab < (uint64_t)h + 40 || pt->cutab < pt->nametab ||
	    pt->filetab < pt->cutab || pt->pctab < pt->filetab ||
	    pcln < pt->pctab || pcln > n || pt->nfunc == 0 ||
	    pt->nfunc >= (n - pcln) / fsz)
		return -EINVAL;
	pt->ncu = (pt->filetab - pt->cutab) / 4;
	if (!is_116(pt) && !pt->text)
		return -EINVAL;	/* entries relative to an unknown start */
	return 0;
}

/* gopclntab_entry - see gopclntab.h. */
uint64_t gopclntab_entry(const struct gopclntab *pt, uint64_t i)
{
	if (is_116(pt))
		return rd(pt->p + pt->functab + i * 16, 8);
	return pt->text + rd(pt->p + pt->functab + i * 8, 4);
}

/* gopclntab_find - see gopclntab.h. */
int64_t gopclntab_find(const struct gopclntab *pt, uint64_t pc)
{
	uint64_t lo = 0, hi = pt->nfunc;

	if (pc < gopclntab_entry(pt, 0) || pc >= gopclntab_entry(pt, pt->nfunc))
		return -1;
	while (hi - lo > 1) {	/* entry(lo) <= pc < entry(hi) */
		uint64_t mid = lo + (hi - lo) / 2;

		if (gopclntab_entry(pt, mid) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	/* a malformed (unsorted) table can break the invariant: check */
	if (gopclntab_entry(pt, lo) > pc || gopclntab_entry(pt, lo + 1) <= pc)
		return -1;
	return (int64_t)lo;
}

/* gopclntab_func - see gopclntab.h. */
int gopclntab_func(const struct gopclntab *pt, uint64_t i,
		   struct gopclntab_func *f)
{
	bool v116 = is_116(pt);
	bool v120 = pt->magic == GOPCLNTAB_MAGIC_120;
	uint64_t off, fd, entry;
	const uint8_t *s;
	int base = v116 ? 8 : 4;	/* nameoff's offset */
	int tail = v120 || v116 ? 40 : 36;	/* funcID's offset */

	if (i >= pt->nfunc)
		return -EINVAL;
	off = v116 ? rd(pt->p + pt->functab + i * 16 + 8, 8) :
		     rd(pt->p + pt->functab + i * 8 + 4, 4);
	off += pt->functab;
	if (off < pt->functab || off > pt->n || pt->n - off < (uint64_t)tail + 4)
		return -EINVAL;
	s = pt->p + off;
	memset(f, 0, sizeof(*f));
	entry = v116 ? rd(s, 8) : pt->text + rd(s, 4);
	f->entry = gopclntab_entry(pt, i);
	f->end = gopclntab_entry(pt, i + 1);
	if (entry != f->entry || f->end < f->entry)
		return -EINVAL;	/* not this function's _func */
	f->nameoff = (uint32_t)rd(s + base, 4);
	f->pcsp = (uint32_t)rd(s + base + 12, 4);
	f->pcfile = (uint32_t)rd(s + base + 16, 4);
	f->pcln = (uint32_t)rd(s + base + 20, 4);
	f->npcdata = (uint32_t)rd(s + base + 24, 4);
	f->cu = (uint32_t)rd(s + base + 28, 4);
	f->funcid = s[tail];
	f->flag = v116 ? 0 : s[tail + 1];	/* 1.16 has none; 1.17's not read */
	f->nfuncdata = s[tail + 3];
	f->pcdata = s + tail + 4;
	fd = off + tail + 4 + (uint64_t)f->npcdata * 4;
	if (v116 && (fd & 4))
		fd += 4;	/* pointers aligned to 8 (the table is) */
	if (f->npcdata > pt->n || fd > pt->n ||
	    pt->n - fd < (uint64_t)f->nfuncdata * (v116 ? 8 : 4))
		return -EINVAL;
	f->funcdata_off = fd;
	return 0;
}

/* gopclntab_name - see gopclntab.h. */
const char *gopclntab_name(const struct gopclntab *pt, uint32_t nameoff)
{
	uint64_t off = pt->nametab + nameoff;

	if (off >= pt->cutab || !pt->p[off] ||
	    !memchr(pt->p + off, 0, pt->cutab - off))
		return NULL;
	return (const char *)pt->p + off;
}

/* gopclntab_file - see gopclntab.h (Go's funcfile()). */
const char *gopclntab_file(const struct gopclntab *pt,
			   const struct gopclntab_func *f, int32_t fileno)
{
	uint64_t idx = (uint64_t)f->cu + (uint32_t)fileno, off;

	if (fileno < 0 || idx >= pt->ncu)
		return NULL;
	off = rd(pt->p + pt->cutab + idx * 4, 4);
	if (off == UINT32_MAX)
		return NULL;
	off += pt->filetab;
	if (off >= pt->pctab || !pt->p[off] || !memchr(pt->p + off, 0, pt->pctab - off))
		return NULL;
	return (const char *)pt->p + off;
}

/* gopclntab_iter_start - see gopclntab.h. */
void gopclntab_iter_start(struct gopclntab_iter *it, const struct gopclntab *pt,
			  const struct gopclntab_func *f, uint32_t off)
{
	it->pt = pt;
	it->off = off ? pt->pctab + off : pt->n;	/* no table: ends at once */
	it->pc = it->next_pc = f->entry;
	it->val = -1;
	it->first = true;
}

/* gopclntab_iter_next - see gopclntab.h (Go's step()). */
bool gopclntab_iter_next(struct gopclntab_iter *it)
{
	const struct gopclntab *pt = it->pt;
	uint64_t uv, pcd;
	size_t off = it->off;

	if (off >= pt->n || !gopclntab_uvarint(pt->p, pt->n, &off, &uv) || (!uv && !it->first))
		return false;
	if (!gopclntab_uvarint(pt->p, pt->n, &off, &pcd))
		return false;
	it->val += (int32_t)(uv & 1 ? ~(uv >> 1) : uv >> 1);
	it->pc = it->next_pc;
	it->next_pc += pcd * pt->minlc;
	it->off = off;
	it->first = false;
	return true;
}

/* gopclntab_pcvalue - see gopclntab.h (Go's pcvalue()). */
bool gopclntab_pcvalue(const struct gopclntab *pt, const struct gopclntab_func *f,
		       uint32_t off, uint64_t pc, int32_t *val)
{
	struct gopclntab_iter it;

	if (!off || pc < f->entry || pc >= f->end)
		return false;
	gopclntab_iter_start(&it, pt, f, off);
	/* each step moves pc on by at least 1 or ends: bounded by the table */
	while (gopclntab_iter_next(&it)) {
		if (pc < it.next_pc) {
			*val = it.val;
			return true;
		}
		if (it.next_pc >= f->end)
			break;
	}
	return false;
}

/* gopclntab_pcdata_off - see gopclntab.h. */
uint32_t gopclntab_pcdata_off(const struct gopclntab_func *f, uint32_t k)
{
	return k < f->npcdata ? (uint32_t)rd(f->pcdata + 4 * k, 4) : 0;
}

/* gopclntab_funcdata - see gopclntab.h. */
bool gopclntab_funcdata(const struct gopclntab *pt, const struct gopclntab_func *f,
			uint32_t k, uint64_t *val)
{
	if (k >= f->nfuncdata)
		return false;
	if (is_116(pt)) {
		*val = rd(pt->p + f->funcdata_off + 8 * k, 8);
		return *val != 0;
	}
	*val = rd(pt->p + f->funcdata_off + 4 * k, 4);
	return *val != UINT32_MAX;
}

/* gopclntab_inl_size - see gopclntab.h. */
size_t gopclntab_inl_size(const struct gopclntab *pt)
{
	return pt->magic == GOPCLNTAB_MAGIC_120 ? 16 : 20;
}

/* gopclntab_inl_decode - see gopclntab.h. */
void gopclntab_inl_decode(const struct gopclntab *pt, const uint8_t *e,
			  struct gopclntab_inl *out)
{
	if (pt->magic == GOPCLNTAB_MAGIC_120) {
		/* funcID, pad[3], nameOff, parentPc, startLine */
		out->funcid = e[0];
		out->nameoff = (uint32_t)rd(e + 4, 4);
		out->parent_pc = (uint32_t)rd(e + 8, 4);
	} else {
		/* parent int16, funcID, pad, file, line, func_, parentPc */
		out->funcid = e[2];
		out->nameoff = (uint32_t)rd(e + 12, 4);
		out->parent_pc = (uint32_t)rd(e + 16, 4);
	}
}
