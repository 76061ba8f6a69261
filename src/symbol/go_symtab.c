// SPDX-License-Identifier: GPL-2.0
/*
 * go_symtab.c - a Go executable's pclntab as a source of names, files,
 * lines and inlined frames (see go_symtab.h).
 *
 * Owns: finding the pclntab in the ELF image (section, or the scan of a
 * read-only segment for its magic when there are no section headers),
 * finding runtime.firstmoduledata (for the exact end of the pclntab and
 * gofunc, the base of Go 1.18+'s funcdata offsets), the one copy of
 * [gofunc, end of pclntab) the lookups read, and the inline expansion of
 * Go's runtime.CallersFrames (src/runtime/symtab.go Next()): at each
 * level the PCDATA_InlTreeIndex value at the pc picks the inline tree
 * entry whose name is that level's function; the pcfile/pcln values at
 * the pc are its file and line; the next level's pc is the function's
 * entry plus the entry's parentPc.
 *
 * Input is untrusted: the image is read only inside its bounds, every
 * table offset is checked by src/util/gopclntab.c, tree entries are read
 * only inside the copy, and a level's pc must stay inside its function.
 */
#include <endian.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "symbol/go_symtab.h"
#include "util/gopclntab.h"

COUNTER_DEFINE(go_pclntab_unreadable, COUNTER_PARTIAL,
	       "Go executables whose .gopclntab failed its checks (corrupt, "
	       "truncated, unknown version): named from ELF symbols, if any");
COUNTER_DEFINE(go_pclntab_bad_func, COUNTER_PARTIAL,
	       "Go pcs whose pclntab function, name or inline tree entry failed "
	       "its checks: named from ELF symbols, if any");

/* Scanned at most per segment for a pclntab without section headers. */
#define SCAN_MAX	(1ULL << 30)

struct go_symtab {
	uint8_t *blob;		/* [blob_vaddr, blob_vaddr + blob_n) of the image */
	size_t blob_n;
	uint64_t blob_vaddr;
	struct gopclntab pt;	/* points into blob */
	uint64_t gofunc;	/* vaddr of go:func.* (0: unknown, no inline trees) */
};

/* The image's bytes at @vaddr, a PT_LOAD's file data up to its end. */
struct span {
	const uint8_t *p;
	size_t n;		/* bytes from p to the end of the segment's file data */
	uint64_t seg_vaddr;	/* the segment's start */
	uint32_t flags;		/* its p_flags */
};

static uint64_t rd8(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static bool image_at(Elf *elf, const uint8_t *raw, size_t rawsz, uint64_t vaddr,
		     struct span *sp)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz ||
		    ph.p_offset > rawsz || ph.p_filesz > rawsz - ph.p_offset)
			continue;
		sp->p = raw + ph.p_offset + (vaddr - ph.p_vaddr);
		sp->n = ph.p_filesz - (vaddr - ph.p_vaddr);
		sp->seg_vaddr = ph.p_vaddr;
		sp->flags = ph.p_flags;
		return true;
	}
	return false;
}

/* Whether [@lo, @hi) lies in one executable PT_LOAD. */
static bool in_text(Elf *elf, uint64_t lo, uint64_t hi)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph) || hi < lo)
		return false;
	for (size_t i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X) && lo >= ph.p_vaddr &&
		    hi <= ph.p_vaddr + ph.p_memsz)
			return true;
	return false;
}

static Elf_Scn *section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * The checks a table must pass beyond its header: the functions inside
 * one executable segment, the function table sorted, the first and last
 * _func matching it.
 */
static int check_table(Elf *elf, const struct gopclntab *pt)
{
	struct gopclntab_func f;
	uint64_t prev = gopclntab_entry(pt, 0);

	if (!in_text(elf, prev, gopclntab_entry(pt, pt->nfunc)))
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
 * The pclntab at its magic in a read-only segment, for an image without
 * section headers: *@sp set to it (to the segment's end), *@vaddr to
 * where it is. -ENOENT when none passes the checks.
 */
static int scan_segments(Elf *elf, const uint8_t *raw, size_t rawsz,
			 struct span *sp, uint64_t *vaddr)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph))
		return -ENOENT;
	for (size_t i = 0; i < nph; i++) {
		struct span s;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & (PF_X | PF_W)) || !ph.p_filesz ||
		    ph.p_filesz > SCAN_MAX ||
		    !image_at(elf, raw, rawsz, ph.p_vaddr, &s))
			continue;
		for (size_t o = 0; o + 72 <= s.n; o += 8) {
			struct gopclntab pt;

			if (!gopclntab_header_ok(s.p + o, s.n - o) ||
			    gopclntab_init(&pt, s.p + o, s.n - o, 0) ||
			    check_table(elf, &pt))
				continue;
			sp->p = s.p + o;
			sp->n = s.n - o;
			sp->seg_vaddr = s.seg_vaddr;
			sp->flags = s.flags;
			*vaddr = ph.p_vaddr + o;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * runtime.firstmoduledata: the word in a writable segment that points at
 * the pclntab, whose slices (funcnametab, cutab, filetab, pctab,
 * pclntable, ftab) are the header's tables and whose text is its
 * textStart. Sets *@end to the pclntab's end (pclntable's) and *@gofunc
 * (1.18+; left 0 when not within [rodata, pclntab)). False: not found.
 */
static bool find_moduledata(Elf *elf, const uint8_t *raw, size_t rawsz,
			    const struct gopclntab *pt, uint64_t vaddr,
			    uint64_t *end, uint64_t *gofunc)
{
	/* rodata's word: 37 (1.18-1.19), 39 (1.20+: covctrs, ecovctrs) */
	int rodata_w = pt->magic == GOPCLNTAB_MAGIC_120 ? 39 : 37;
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		struct span s;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_W) || ph.p_filesz > SCAN_MAX ||
		    !image_at(elf, raw, rawsz, ph.p_vaddr, &s))
			continue;
		for (size_t o = 0; o + (size_t)(rodata_w + 2) * 8 <= s.n; o += 8) {
			const uint8_t *m = s.p + o;
			uint64_t rodata, gf;

			if (rd8(m) != vaddr || rd8(m + 8) != vaddr + pt->nametab ||
			    rd8(m + 32) != vaddr + pt->cutab ||
			    rd8(m + 56) != vaddr + pt->filetab ||
			    rd8(m + 80) != vaddr + pt->pctab ||
			    rd8(m + 104) != vaddr + pt->functab ||
			    rd8(m + 128) != vaddr + pt->functab ||
			    rd8(m + 136) != pt->nfunc + 1)
				continue;
			if (pt->magic != GOPCLNTAB_MAGIC_116 && rd8(m + 176) != pt->text)
				continue;
			*end = pt->functab + rd8(m + 112);	/* pclntable's length */
			*gofunc = 0;
			if (pt->magic == GOPCLNTAB_MAGIC_116)
				return true;	/* funcdata are pointers: no gofunc */
			rodata = rd8(m + 8 * rodata_w);
			gf = rd8(m + 8 * (rodata_w + 1));
			if (rodata <= gf && gf < vaddr)
				*gofunc = gf;
			return true;
		}
	}
	return false;
}

static int read_table(Elf *elf, struct go_symtab *g)
{
	const uint8_t *raw;
	size_t rawsz;
	struct span sp;
	struct gopclntab pt;
	GElf_Shdr sh, tsh;
	uint64_t vaddr, text = 0, end, gofunc = 0, lo;
	int err;

	raw = (const uint8_t *)elf_rawfile(elf, &rawsz);
	if (!raw)
		return -ENOENT;
	if (section(elf, ".gopclntab", &sh)) {
		if (sh.sh_type != SHT_PROGBITS || !image_at(elf, raw, rawsz, sh.sh_addr, &sp) ||
		    sp.n < sh.sh_size)
			return -EINVAL;
		sp.n = sh.sh_size;
		vaddr = sh.sh_addr;
		if (section(elf, ".text", &tsh))
			text = tsh.sh_addr;	/* PIE: textStart is relocated */
	} else {
		size_t shnum;

		/* scanned only when the section headers are gone */
		if (elf_getshdrnum(elf, &shnum) || shnum > 1)
			return -ENOENT;
		err = scan_segments(elf, raw, rawsz, &sp, &vaddr);
		if (err)
			return err;
	}
	err = gopclntab_init(&pt, sp.p, sp.n, text);
	if (!err)
		err = check_table(elf, &pt);
	if (err)
		return err;
	end = sp.n;
	if (find_moduledata(elf, raw, rawsz, &pt, vaddr, &end, &gofunc) &&
	    (end > sp.n || end < pt.functab))
		return -EINVAL;	/* moduledata and section disagree */
	/*
	 * One copy from gofunc (in the same segment, below the table) to
	 * the table's end (moduledata's; else the section's or segment's).
	 */
	lo = vaddr;
	if (gofunc && gofunc >= sp.seg_vaddr && gofunc < vaddr)
		lo = gofunc;
	else
		gofunc = 0;
	g->blob_n = (size_t)(vaddr - lo + end);
	g->blob = malloc(g->blob_n);
	if (!g->blob)
		return -ENOMEM;
	memcpy(g->blob, sp.p - (vaddr - lo), g->blob_n);
	g->blob_vaddr = lo;
	g->gofunc = gofunc;
	return gopclntab_init(&g->pt, g->blob + (vaddr - lo), end, pt.text);
}

/* go_symtab_read - see go_symtab.h. */
int go_symtab_read(Elf *elf, struct go_symtab **out)
{
	struct go_symtab *g = calloc(1, sizeof(*g));
	int err;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	err = read_table(elf, g);
	if (err) {
		if (err != -ENOENT && err != -ENOMEM)
			counter_inc(&counter_go_pclntab_unreadable);
		go_symtab_free(g);
		return err;
	}
	*out = g;
	return 0;
}

/* go_symtab_free - see go_symtab.h. */
void go_symtab_free(struct go_symtab *g)
{
	if (!g)
		return;
	free(g->blob);
	free(g);
}

/* go_symtab_bytes - see go_symtab.h. */
size_t go_symtab_bytes(const struct go_symtab *g)
{
	return g ? sizeof(*g) + g->blob_n : 0;
}

/* go_symtab_has_inline - see go_symtab.h. */
bool go_symtab_has_inline(const struct go_symtab *g)
{
	return g && g->gofunc;
}

/* go_symtab_entry - see go_symtab.h. */
uint64_t go_symtab_entry(const struct go_symtab *g, uint64_t vaddr)
{
	int64_t i = gopclntab_find(&g->pt, vaddr);

	return i < 0 ? 0 : gopclntab_entry(&g->pt, (uint64_t)i);
}

/* The file and line of @f at @pc (Go's funcline1; NULL/0 when none). */
static void file_line(const struct gopclntab *pt, const struct gopclntab_func *f,
		      uint64_t pc, struct sym_frame *fr)
{
	int32_t fileno, line;

	fr->file = NULL;
	fr->line = 0;
	if (!gopclntab_pcvalue(pt, f, f->pcfile, pc, &fileno) ||
	    !gopclntab_pcvalue(pt, f, f->pcln, pc, &line) || line < 0)
		return;
	fr->file = gopclntab_file(pt, f, fileno);
	if (fr->file)
		fr->line = (uint32_t)line;
}

/*
 * The inline tree entry @ix of @f, or false (no tree, or outside the
 * copy: a corrupt index or offset).
 */
static bool inl_entry(const struct go_symtab *g, const struct gopclntab_func *f,
		      int32_t ix, struct gopclntab_inl *e)
{
	size_t sz = gopclntab_inl_size(&g->pt);
	uint64_t off, at;

	if (!g->gofunc || ix < 0 ||
	    !gopclntab_funcdata(&g->pt, f, GOPCLNTAB_FUNCDATA_INLTREE, &off))
		return false;
	at = g->gofunc - g->blob_vaddr + off + (uint64_t)ix * sz;
	if (at > g->blob_n || g->blob_n - at < sz)
		return false;
	gopclntab_inl_decode(&g->pt, g->blob + at, e);
	return true;
}

/* go_symtab_frames - see go_symtab.h. */
int go_symtab_frames(const struct go_symtab *g, uint64_t vaddr,
		     struct sym_frame *out, int max)
{
	const struct gopclntab *pt = &g->pt;
	struct gopclntab_func f;
	uint32_t inl = 0;
	uint64_t pc = vaddr;
	int64_t i = gopclntab_find(pt, vaddr);
	const char *name;
	bool lost = false;	/* inlined, but the tree is unreadable */
	int n = 0;

	if (i < 0 || max < 1)
		return -ENOENT;
	if (gopclntab_func(pt, (uint64_t)i, &f) ||
	    !(name = gopclntab_name(pt, f.nameoff)))
		goto bad;
	inl = gopclntab_pcdata_off(&f, GOPCLNTAB_PCDATA_INLTREEINDEX);
	for (int depth = 0; depth < GO_SYMTAB_MAX_DEPTH; depth++) {
		struct gopclntab_inl e;
		struct sym_frame fr;
		int32_t ix;

		if (!gopclntab_pcvalue(pt, &f, inl, pc, &ix) || ix < 0)
			break;
		if (!inl_entry(g, &f, ix, &e)) {
			lost = true;
			break;
		}
		fr.name = fr.system_name = gopclntab_name(pt, e.nameoff);
		if (!fr.name || f.entry + e.parent_pc >= f.end)
			goto bad;
		file_line(pt, &f, pc, &fr);
		if (n < max - 1)
			out[n++] = fr;
		pc = f.entry + e.parent_pc;
	}
	out[n].name = out[n].system_name = name;
	if (lost) {
		out[n].file = NULL;	/* the inlined code's line: not this function's */
		out[n].line = 0;
	} else {
		file_line(pt, &f, pc, &out[n]);
	}
	return n + 1;
bad:
	counter_inc(&counter_go_pclntab_bad_func);
	return -EINVAL;
}
