// SPDX-License-Identifier: GPL-2.0
/*
 * go_elf.c - finding a Go executable's tables in its ELF image (see
 * go_elf.h).
 *
 * Where Go's linker leaves them (go1.19, amd64; cmd/link/internal/ld):
 *   internal linking: .gopclntab in the read-only segment after .rodata,
 *     runtime.firstmoduledata in .noptrdata, its pointers in the file.
 *   internal linking, -buildmode=pie: .data.rel.ro.gopclntab in the
 *     RELRO segment; moduledata's pointers in the file and as
 *     R_X86_64_RELATIVE relocations.
 *   external linking (cgo), PIE: the host linker merges the table into
 *     .data.rel.ro (no section of its own); the pointers are relocations
 *     (their place in the file left 0 by some linkers).
 *   A section-header stripper (llvm-objcopy --strip-sections) leaves the
 *     segments alone: the table is found by its magic there.
 * The build info (.go.buildinfo) is the first thing in its writable
 * segment when Go links (debug/buildinfo looks for its magic there), after
 * .data when a host linker does.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/elf_section.h"
#include "util/go_elf.h"

/* Scanned at most per segment for a pclntab found by its magic. */
#define SCAN_MAX	(1ULL << 30)
/*
 * Headers that parse checked in full (each costs a pass over its function
 * table) before the scan gives up: hostile data full of fake headers
 * costs bounded time.
 */
#define SCAN_TRIES	8
#define MAX_SEGS	16		/* PT_LOADs looked at (Go writes 4-5) */
#define PCHDR_TEXT	24		/* pcHeader.textStart's offset (1.18+) */

struct seg {
	uint64_t vaddr, offset, filesz, memsz;
	uint32_t flags;
	const uint8_t *p;	/* its file data (read on first use), or NULL */
	bool tried;
};

struct reloc {
	uint64_t off, addend;
};

/*
 * The image's bytes by address, and its 8-byte words as the loader
 * leaves them: a relocation's addend where one is, else the file's.
 */
struct image {
	Elf *elf;
	struct seg seg[MAX_SEGS];
	size_t nseg;
	uint64_t relro_lo, relro_hi;	/* PT_GNU_RELRO: [lo, hi) */
	struct reloc *rel;	/* RELATIVE relocations, by offset */
	size_t nrel;
	bool rel_read;		/* rel read (on first use) */
	int rel_err;		/* -ENOMEM reading them, else 0 */
};

/* The image's bytes at an address, up to its segment's file end. */
struct span {
	const uint8_t *p;
	size_t n;
	const struct seg *seg;
};

static uint64_t rd8(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* @img's segments; -ENOENT not a 64-bit little-endian x86-64 ELF. */
static int image_init(struct image *img, Elf *elf)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t nph;

	memset(img, 0, sizeof(*img));
	img->elf = elf;
	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    elf_getphdrnum(elf, &nph))
		return -ENOENT;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_GNU_RELRO && ph.p_vaddr + ph.p_memsz >= ph.p_vaddr) {
			img->relro_lo = ph.p_vaddr;
			img->relro_hi = ph.p_vaddr + ph.p_memsz;
		}
		if (ph.p_type != PT_LOAD || img->nseg == MAX_SEGS ||
		    ph.p_vaddr + ph.p_memsz < ph.p_vaddr || ph.p_filesz > ph.p_memsz)
			continue;
		img->seg[img->nseg++] = (struct seg){
			.vaddr = ph.p_vaddr, .offset = ph.p_offset,
			.filesz = ph.p_filesz, .memsz = ph.p_memsz, .flags = ph.p_flags,
		};
	}
	return 0;
}

static void image_free(struct image *img)
{
	free(img->rel);
	img->rel = NULL;
	img->nrel = 0;
}

/* @s's file data (libelf checks it lies in the file), or NULL. */
static const uint8_t *seg_data(struct image *img, struct seg *s)
{
	Elf_Data *d;

	if (!s->tried) {
		s->tried = true;
		d = s->filesz ? elf_getdata_rawchunk(img->elf, (int64_t)s->offset,
						     (size_t)s->filesz, ELF_T_BYTE) : NULL;
		s->p = d ? d->d_buf : NULL;
	}
	return s->p;
}

/* The image's bytes at @vaddr (a PT_LOAD's file data), or false. */
static bool image_at(struct image *img, uint64_t vaddr, struct span *sp)
{
	for (size_t i = 0; i < img->nseg; i++) {
		struct seg *s = &img->seg[i];

		if (vaddr < s->vaddr || vaddr - s->vaddr >= s->filesz || !seg_data(img, s))
			continue;
		sp->p = s->p + (vaddr - s->vaddr);
		sp->n = (size_t)(s->filesz - (vaddr - s->vaddr));
		sp->seg = s;
		return true;
	}
	return false;
}

/*
 * The image's @size bytes at @vaddr, inside one PT_LOAD's file data:
 * only those read when their segment was not (a section's), or false.
 */
static bool image_range(struct image *img, uint64_t vaddr, uint64_t size, struct span *sp)
{
	for (size_t i = 0; i < img->nseg; i++) {
		struct seg *s = &img->seg[i];
		Elf_Data *d;

		if (vaddr < s->vaddr || vaddr - s->vaddr >= s->filesz ||
		    size > s->filesz - (vaddr - s->vaddr))
			continue;
		if (s->p) {
			sp->p = s->p + (vaddr - s->vaddr);
		} else {
			d = size ? elf_getdata_rawchunk(img->elf,
							(int64_t)(s->offset + (vaddr - s->vaddr)),
							(size_t)size, ELF_T_BYTE) : NULL;
			if (!d || !d->d_buf)
				return false;
			sp->p = d->d_buf;
		}
		sp->n = (size_t)size;
		sp->seg = s;
		return true;
	}
	return false;
}

static void relocs_read(struct image *img);

/* The word at @vaddr (a relocation's addend where one is), or false. */
static bool word(struct image *img, uint64_t vaddr, uint64_t *v)
{
	size_t lo = 0, hi;
	struct span s;

	relocs_read(img);
	hi = img->nrel;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->rel[mid].off < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < img->nrel && img->rel[lo].off == vaddr) {
		*v = img->rel[lo].addend;
		return true;
	}
	if (!image_at(img, vaddr, &s) || s.n < 8)
		return false;
	*v = rd8(s.p);
	return true;
}

static int cmp_reloc(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * @img's R_X86_64_RELATIVE relocations, from PT_DYNAMIC's DT_RELA table
 * (what ld.so applies; there with or without section headers), read
 * once. None when there is no such table or it is unreadable
 * (img->rel_err: -ENOMEM).
 */
static void relocs_read(struct image *img)
{
	uint64_t rela = 0, relasz = 0, relaent = 0;
	const uint8_t *dyn = NULL;
	size_t ndyn = 0, nph, n = 0;
	struct span sp;
	GElf_Phdr ph;

	if (img->rel_read)
		return;
	img->rel_read = true;
	if (elf_getphdrnum(img->elf, &nph))
		return;
	for (size_t i = 0; i < nph && !dyn; i++) {
		Elf_Data *d;

		if (!gelf_getphdr(img->elf, (int)i, &ph) || ph.p_type != PT_DYNAMIC ||
		    !ph.p_filesz)
			continue;
		d = elf_getdata_rawchunk(img->elf, (int64_t)ph.p_offset, (size_t)ph.p_filesz,
					 ELF_T_BYTE);
		if (d && d->d_buf) {
			dyn = d->d_buf;
			ndyn = d->d_size / 16;
		}
	}
	for (size_t i = 0; i < ndyn; i++) {
		uint64_t tag = rd8(dyn + 16 * i), val = rd8(dyn + 16 * i + 8);

		if (tag == DT_NULL)
			break;
		if (tag == DT_RELA)
			rela = val;
		else if (tag == DT_RELASZ)
			relasz = val;
		else if (tag == DT_RELAENT)
			relaent = val;
	}
	if (!rela || relaent != 24 || !image_at(img, rela, &sp))
		return;
	if (relasz > sp.n)
		relasz = sp.n;
	for (size_t i = 0; i < relasz / 24; i++)
		n += (uint32_t)rd8(sp.p + 24 * i + 8) == R_X86_64_RELATIVE;
	if (!n)
		return;
	img->rel = malloc(n * sizeof(*img->rel));
	if (!img->rel) {
		img->rel_err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < relasz / 24; i++) {
		const uint8_t *r = sp.p + 24 * i;

		if ((uint32_t)rd8(r + 8) == R_X86_64_RELATIVE)
			img->rel[img->nrel++] = (struct reloc){ rd8(r), rd8(r + 16) };
	}
	qsort(img->rel, img->nrel, sizeof(*img->rel), cmp_reloc);
}

/* Whether [@lo, @hi) lies in one executable PT_LOAD. */
static bool in_text(const struct image *img, uint64_t lo, uint64_t hi)
{
	if (hi < lo)
		return false;
	for (size_t i = 0; i < img->nseg; i++) {
		const struct seg *s = &img->seg[i];

		if ((s->flags & PF_X) && lo >= s->vaddr && hi <= s->vaddr + s->memsz)
			return true;
	}
	return false;
}

/*
 * The checks a table must pass beyond its header: the functions inside
 * one executable segment, the function table sorted, the first and last
 * _func matching it.
 */
static int check_table(const struct image *img, const struct gopclntab *pt)
{
	struct gopclntab_func f;
	uint64_t prev = gopclntab_entry(pt, 0);

	if (!in_text(img, prev, gopclntab_entry(pt, pt->nfunc)))
		return -EINVAL;
	for (uint64_t i = 1; i <= pt->nfunc; i++) {
		uint64_t e = gopclntab_entry(pt, i);

		if (e < prev)
			return -EINVAL;
		prev = e;
	}
	if (gopclntab_func(pt, 0, &f) || gopclntab_func(pt, pt->nfunc - 1, &f))
		return -EINVAL;
	return 0;
}

/*
 * The text start gopclntab_init() is to use for the table @p[0..@n) at
 * @vaddr when its header says 0 (a PIE's textStart, relocated at load):
 * its relocation's addend, else .text's address, else 0.
 */
static uint64_t text_hint(struct image *img, const uint8_t *p, size_t n, uint64_t vaddr)
{
	GElf_Shdr sh;
	uint64_t v;

	if (n >= PCHDR_TEXT + 8 && rd8(p + PCHDR_TEXT))
		return 0;	/* the header's own */
	if (word(img, vaddr + PCHDR_TEXT, &v) && v)
		return v;
	if (elf_section_by_name(img->elf, ".text", &sh))
		return sh.sh_addr;
	return 0;
}

/*
 * Whether to look for the table by its magic: no section headers, or a
 * Go executable (its build ID note, its build info) whose table has no
 * section of its own.
 */
static bool wants_scan(Elf *elf)
{
	GElf_Shdr sh;
	size_t shnum;

	if (elf_getshdrnum(elf, &shnum) || shnum <= 1)
		return true;
	return elf_section_by_name(elf, ".note.go.buildid", &sh) ||
	       elf_section_by_name(elf, ".go.buildinfo", &sh);
}

/*
 * The first table at its magic in a read-only segment or RELRO that
 * passes the checks: *@sp set to it (to the segment's end), *@vaddr to
 * where it is, *@pt parsed. -ENOENT when none does.
 */
static int scan(struct image *img, struct span *sp, uint64_t *vaddr,
		struct gopclntab *pt)
{
	int tries = 0;

	for (size_t i = 0; i < img->nseg && tries < SCAN_TRIES; i++) {
		struct seg *s = &img->seg[i];
		uint64_t lo = s->vaddr, hi = s->vaddr + s->filesz;
		struct span seg;

		if (s->flags & PF_X)
			continue;
		if (s->flags & PF_W) {	/* its RELRO part only: a PIE's table */
			lo = lo > img->relro_lo ? lo : img->relro_lo;
			hi = hi < img->relro_hi ? hi : img->relro_hi;
		}
		lo = (lo + 7) & ~7ULL;
		if (lo >= hi || hi - lo > SCAN_MAX || !seg_data(img, s))
			continue;
		/* this segment's bytes (another may overlap it) */
		seg = (struct span){ s->p + (lo - s->vaddr), (size_t)(hi - lo), s };
		for (uint64_t o = 0; o + 72 <= seg.n && tries < SCAN_TRIES; o += 8) {
			if (!gopclntab_header_ok(seg.p + o, seg.n - o) ||
			    gopclntab_init(pt, seg.p + o, seg.n - o,
					   text_hint(img, seg.p + o, seg.n - o, lo + o)))
				continue;
			if (tries++, check_table(img, pt))
				continue;
			sp->p = seg.p + o;
			sp->n = seg.n - o;
			sp->seg = seg.seg;
			*vaddr = lo + o;
			return 0;
		}
	}
	memset(pt, 0, sizeof(*pt));
	return -ENOENT;
}

/*
 * Whether runtime.firstmoduledata is at @md: its pcHeader is the table at
 * @vaddr, its slices (funcnametab, cutab, filetab, pctab, pclntable, ftab)
 * are the header's tables and its text is the header's textStart. Sets
 * *@end to the table's end (pclntable's) and *@gofunc (1.18+; 0 when not
 * within [rodata, table)).
 */
static bool moduledata_at(struct image *img, uint64_t md, const struct gopclntab *pt,
			  uint64_t vaddr, uint64_t *end, uint64_t *gofunc)
{
	/* rodata's word: 37 (1.18-1.19), 39 (1.20+: covctrs, ecovctrs) */
	int rodata_w = pt->magic == GOPCLNTAB_MAGIC_120 ? 39 : 37;
	/* moduledata's words and what each must be */
	const struct {
		int word;
		uint64_t want;
	} want[] = {
		{ 0, vaddr },			/* pcHeader */
		{ 1, vaddr + pt->nametab },	/* funcnametab */
		{ 4, vaddr + pt->cutab },	/* cutab */
		{ 7, vaddr + pt->filetab },	/* filetab */
		{ 10, vaddr + pt->pctab },	/* pctab */
		{ 13, vaddr + pt->functab },	/* pclntable */
		{ 16, vaddr + pt->functab },	/* ftab */
		{ 17, pt->nfunc + 1 },		/* len(ftab) */
		{ 22, pt->text },		/* text (none to compare in 1.16) */
	};
	size_t nwant = sizeof(want) / sizeof(want[0]) -
		       (pt->magic == GOPCLNTAB_MAGIC_116);
	uint64_t v, len, rodata, gf;

	for (size_t i = 0; i < nwant; i++)
		if (!word(img, md + 8 * want[i].word, &v) || v != want[i].want)
			return false;
	if (!word(img, md + 8 * 14, &len))
		return false;
	*end = pt->functab + len;	/* pclntable's length */
	*gofunc = 0;
	if (pt->magic == GOPCLNTAB_MAGIC_116)
		return true;	/* funcdata are pointers: no gofunc */
	if (word(img, md + 8 * rodata_w, &rodata) && word(img, md + 8 * (rodata_w + 1), &gf) &&
	    rodata <= gf && gf < vaddr)
		*gofunc = gf;
	return true;
}

/*
 * runtime.firstmoduledata: a PIE's relocation, or a word in a writable
 * segment, that points at the table (moduledata_at() then checks the
 * rest). False: not found.
 */
static bool find_moduledata(struct image *img, const struct gopclntab *pt,
			    uint64_t vaddr, uint64_t *end, uint64_t *gofunc)
{
	relocs_read(img);
	for (size_t i = 0; i < img->nrel; i++)
		if (img->rel[i].addend == vaddr &&
		    moduledata_at(img, img->rel[i].off, pt, vaddr, end, gofunc))
			return true;
	for (size_t i = 0; i < img->nseg; i++) {
		struct seg *s = &img->seg[i];

		if (!(s->flags & PF_W) || s->filesz > SCAN_MAX || !seg_data(img, s))
			continue;
		for (uint64_t o = 0; o + 8 <= s->filesz; o += 8)
			if (rd8(s->p + o) == vaddr &&
			    moduledata_at(img, s->vaddr + o, pt, vaddr, end, gofunc))
				return true;
	}
	return false;
}

/* The table found (by section or scan) into *@sp, *@vaddr, @out->pt. */
static int locate(struct image *img, struct span *sp, uint64_t *vaddr,
		  struct go_elf_pclntab *out)
{
	GElf_Shdr sh;
	int err;

	/* a PIE's is in its RELRO segment: .data.rel.ro.gopclntab */
	if (elf_section_by_name(img->elf, ".gopclntab", &sh) ||
	    elf_section_by_name(img->elf, ".data.rel.ro.gopclntab", &sh)) {
		if (sh.sh_type != SHT_PROGBITS || !image_range(img, sh.sh_addr, sh.sh_size, sp))
			return -EINVAL;
		*vaddr = sh.sh_addr;
		err = gopclntab_init(&out->pt, sp->p, sp->n, text_hint(img, sp->p, sp->n, *vaddr));
		return err ? err : check_table(img, &out->pt);
	}
	if (!wants_scan(img->elf))
		return -ENOENT;
	out->by_magic = true;
	return scan(img, sp, vaddr, &out->pt);
}

/* go_elf_pclntab - see go_elf.h. */
int go_elf_pclntab(Elf *elf, bool funcdata, struct go_elf_pclntab *out)
{
	struct image img;
	struct span sp, fs;
	uint64_t vaddr = 0, end, gofunc = 0;
	int err;

	memset(out, 0, sizeof(*out));
	err = image_init(&img, elf);
	if (!err)
		err = locate(&img, &sp, &vaddr, out);
	if (err || !funcdata)
		goto out;
	end = sp.n;
	out->moduledata = find_moduledata(&img, &out->pt, vaddr, &end, &gofunc);
	if (out->moduledata) {
		/* the table to moduledata's end, not the section's or segment's */
		if (end > sp.n || end < out->pt.functab ||
		    gopclntab_init(&out->pt, sp.p, (size_t)end, out->pt.text)) {
			err = -EINVAL;	/* moduledata and table disagree */
			goto out;
		}
	}
	/*
	 * go:func.* from gofunc to the end of its segment's file data or
	 * the table, whichever comes first (a PIE keeps the table in RELRO,
	 * go:func.* in the read-only segment).
	 */
	if (gofunc && image_at(&img, gofunc, &fs) && !(fs.seg->flags & PF_X)) {
		out->gofunc = gofunc;
		out->gofunc_p = fs.p;
		out->gofunc_n = fs.seg == sp.seg && vaddr > gofunc ?
				(size_t)(vaddr - gofunc) : fs.n;
	}
out:
	if (!err)
		err = img.rel_err;
	if (!err)
		out->vaddr = vaddr;
	image_free(&img);
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

/* The version in the build info at @p[0..@size) into @buf. */
static int buildinfo_version(const uint8_t *p, size_t size, char *buf, size_t n)
{
	static const char magic[] = "\xff Go buildinf:";
	size_t off = 32;
	uint64_t len;

	if (size < 33 || memcmp(p, magic, 14) || !(p[15] & 2))
		return -ENOENT;	/* pointer format (before 1.18): not read */
	if (!gopclntab_uvarint(p, size, &off, &len) || len > size - off)
		return -ENOENT;
	if (len >= n)
		return -ERANGE;
	memcpy(buf, p + off, len);
	buf[len] = 0;
	return 0;
}

/* go_elf_version - see go_elf.h. */
int go_elf_version(Elf *elf, char *buf, size_t n)
{
	static const char magic[] = "\xff Go buildinf:";
	struct image img;
	GElf_Shdr sh;
	Elf_Scn *scn = elf_section_by_name(elf, ".go.buildinfo", &sh);

	if (scn) {
		Elf_Data *d = elf_getdata(scn, NULL);

		return d && d->d_buf ? buildinfo_version(d->d_buf, d->d_size, buf, n) : -ENOENT;
	}
	if (image_init(&img, elf))
		return -ENOENT;
	/*
	 * No section: its 16-byte aligned magic in a writable segment (the
	 * segment's start when Go links, after .data when a host linker does).
	 */
	for (size_t i = 0; i < img.nseg; i++) {
		struct seg *s = &img.seg[i];

		if ((s->flags & (PF_W | PF_X)) != PF_W || s->filesz > SCAN_MAX ||
		    !seg_data(&img, s))
			continue;
		for (uint64_t o = 0; o + 33 <= s->filesz; o += 16)
			if (!memcmp(s->p + o, magic, 14))
				return buildinfo_version(s->p + o, (size_t)(s->filesz - o), buf, n);
	}
	return -ENOENT;
}
