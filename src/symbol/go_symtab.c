// SPDX-License-Identifier: GPL-2.0
/*
 * go_symtab.c - a Go executable's pclntab as a source of names, files,
 * lines and inlined frames (see go_symtab.h).
 *
 * Owns: finding the pclntab in the ELF image (section, or the scan of a
 * read-only segment for its magic when there are no section headers),
 * finding runtime.firstmoduledata (for the exact end of the pclntab and
 * gofunc, the base of Go 1.18+'s funcdata offsets; a PIE's through its
 * R_X86_64_RELATIVE relocations), the copies of the pclntab and of
 * go:func.* the lookups read, and the inline expansion of
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
#include "util/elf_section.h"
#include "util/gopclntab.h"

COUNTER_DEFINE(go_pclntab_unreadable, COUNTER_PARTIAL,
	       "Go executables whose .gopclntab failed its checks (corrupt, "
	       "truncated, unknown version): named from ELF symbols, if any");
COUNTER_DEFINE(go_pclntab_bad_func, COUNTER_PARTIAL,
	       "Go pcs whose pclntab function, name or inline tree entry failed "
	       "its checks: named from ELF symbols, if any");

/* Scanned at most per segment for a pclntab without section headers. */
#define SCAN_MAX	(1ULL << 30)
/*
 * Headers that parse checked in full (each costs a pass over its function
 * table) before the scan gives up: hostile data full of fake headers
 * costs bounded time.
 */
#define SCAN_TRIES	8

struct go_symtab {
	uint8_t *blob;		/* the pclntab */
	size_t blob_n;
	struct gopclntab pt;	/* points into blob */
	uint8_t *fd;		/* go:func.* from gofunc on (funcdata), or NULL */
	size_t fd_n;
	uint64_t gofunc;	/* its vaddr (0: unknown, no inline trees) */
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
	int tries = 0;

	if (elf_getphdrnum(elf, &nph))
		return -ENOENT;
	for (size_t i = 0; i < nph; i++) {
		struct span s;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & (PF_X | PF_W)) || !ph.p_filesz ||
		    ph.p_filesz > SCAN_MAX ||
		    !image_at(elf, raw, rawsz, ph.p_vaddr, &s))
			continue;
		for (size_t o = 0; o + 72 <= s.n && tries < SCAN_TRIES; o += 8) {
			struct gopclntab pt;

			if (!gopclntab_header_ok(s.p + o, s.n - o) ||
			    gopclntab_init(&pt, s.p + o, s.n - o, 0))
				continue;
			if (tries++, check_table(elf, &pt))
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
 * The image's 8-byte words by vaddr, as the loader leaves them: a PIE's
 * pointers are 0 in the file, their values the addends of R_X86_64_RELATIVE
 * relocations (SHT_RELA sections), sorted by address here.
 */
struct words {
	Elf *elf;
	const uint8_t *raw;
	size_t rawsz;
	GElf_Rela *rel;		/* RELATIVE relocations, by r_offset */
	size_t nrel;
};

static int cmp_rela(const void *a, const void *b)
{
	const GElf_Rela *x = a, *y = b;

	return x->r_offset < y->r_offset ? -1 : x->r_offset > y->r_offset;
}

/* @w's relocations read (none on error: then only the file's words). */
static void words_init(struct words *w, Elf *elf, const uint8_t *raw, size_t rawsz)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	memset(w, 0, sizeof(*w));
	w->elf = elf;
	w->raw = raw;
	w->rawsz = rawsz;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;

			if (!gelf_getrela(d, (int)i, &r))
				break;
			if (GELF_R_TYPE(r.r_info) != R_X86_64_RELATIVE)
				continue;
			if (w->nrel == cap) {
				size_t nc = cap ? 2 * cap : 1024;
				GElf_Rela *nr = realloc(w->rel, nc * sizeof(*nr));

				if (!nr) {
					free(w->rel);
					w->rel = NULL;
					w->nrel = 0;
					return;
				}
				w->rel = nr;
				cap = nc;
			}
			w->rel[w->nrel++] = r;
		}
	}
	if (w->nrel)
		qsort(w->rel, w->nrel, sizeof(*w->rel), cmp_rela);
}

/* The word at @vaddr (a relocation's addend where one is), or false. */
static bool word(const struct words *w, uint64_t vaddr, uint64_t *v)
{
	size_t lo = 0, hi = w->nrel;
	struct span s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->rel[mid].r_offset < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < w->nrel && w->rel[lo].r_offset == vaddr) {
		*v = (uint64_t)w->rel[lo].r_addend;
		return true;
	}
	if (!image_at(w->elf, w->raw, w->rawsz, vaddr, &s) || s.n < 8)
		return false;
	*v = rd8(s.p);
	return true;
}

/*
 * Whether runtime.firstmoduledata is at @md: its pcHeader is the table at
 * @vaddr, its slices (funcnametab, cutab, filetab, pctab, pclntable, ftab)
 * are the header's tables and its text is the header's textStart. Sets
 * *@end to the table's end (pclntable's) and *@gofunc (1.18+; 0 when not
 * within [rodata, table)).
 */
static bool moduledata_at(const struct words *w, uint64_t md, const struct gopclntab *pt,
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
		if (!word(w, md + 8 * want[i].word, &v) || v != want[i].want)
			return false;
	if (!word(w, md + 8 * 14, &len))
		return false;
	*end = pt->functab + len;	/* pclntable's length */
	*gofunc = 0;
	if (pt->magic == GOPCLNTAB_MAGIC_116)
		return true;	/* funcdata are pointers: no gofunc */
	if (word(w, md + 8 * rodata_w, &rodata) && word(w, md + 8 * (rodata_w + 1), &gf) &&
	    rodata <= gf && gf < vaddr)
		*gofunc = gf;
	return true;
}

/*
 * runtime.firstmoduledata: a word in a writable segment, or a PIE's
 * relocation, that points at the table (moduledata_at() then checks the
 * rest). False: not found.
 */
static bool find_moduledata(const struct words *w, const struct gopclntab *pt,
			    uint64_t vaddr, uint64_t *end, uint64_t *gofunc)
{
	size_t nph;
	GElf_Phdr ph;

	for (size_t i = 0; i < w->nrel; i++)
		if ((uint64_t)w->rel[i].r_addend == vaddr &&
		    moduledata_at(w, w->rel[i].r_offset, pt, vaddr, end, gofunc))
			return true;
	if (elf_getphdrnum(w->elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		struct span s;

		if (!gelf_getphdr(w->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_W) || ph.p_filesz > SCAN_MAX ||
		    !image_at(w->elf, w->raw, w->rawsz, ph.p_vaddr, &s))
			continue;
		for (size_t o = 0; o + 8 <= s.n; o += 8)
			if (rd8(s.p + o) == vaddr &&
			    moduledata_at(w, ph.p_vaddr + o, pt, vaddr, end, gofunc))
				return true;
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
	uint64_t vaddr, text = 0, end, gofunc = 0;
	struct words w;
	bool found;
	int err;

	raw = (const uint8_t *)elf_rawfile(elf, &rawsz);
	if (!raw)
		return -ENOENT;
	/* a PIE's is in its RELRO segment: .data.rel.ro.gopclntab */
	if (elf_section_by_name(elf, ".gopclntab", &sh) ||
	    elf_section_by_name(elf, ".data.rel.ro.gopclntab", &sh)) {
		if (sh.sh_type != SHT_PROGBITS || !image_at(elf, raw, rawsz, sh.sh_addr, &sp) ||
		    sp.n < sh.sh_size)
			return -EINVAL;
		sp.n = sh.sh_size;
		vaddr = sh.sh_addr;
		if (elf_section_by_name(elf, ".text", &tsh))
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
	words_init(&w, elf, raw, rawsz);
	found = find_moduledata(&w, &pt, vaddr, &end, &gofunc);
	free(w.rel);
	if (found && (end > sp.n || end < pt.functab))
		return -EINVAL;	/* moduledata and section disagree */
	/*
	 * Two copies: the table to its end (moduledata's; else the
	 * section's or segment's), and go:func.* from gofunc to the end of
	 * its segment's file data or the table, whichever comes first (a
	 * PIE keeps the table in RELRO, go:func.* in the read-only segment).
	 */
	if (gofunc) {
		struct span fs;

		if (image_at(elf, raw, rawsz, gofunc, &fs) && !(fs.flags & PF_X)) {
			g->fd_n = fs.seg_vaddr == sp.seg_vaddr && vaddr > gofunc ?
				  (size_t)(vaddr - gofunc) : fs.n;
			g->fd = malloc(g->fd_n);
			if (!g->fd)
				return -ENOMEM;
			memcpy(g->fd, fs.p, g->fd_n);
			g->gofunc = gofunc;
		}
	}
	g->blob_n = (size_t)end;
	g->blob = malloc(g->blob_n);
	if (!g->blob)
		return -ENOMEM;
	memcpy(g->blob, sp.p, g->blob_n);
	return gopclntab_init(&g->pt, g->blob, end, pt.text);
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
	free(g->fd);
	free(g);
}

/* go_symtab_bytes - see go_symtab.h. */
size_t go_symtab_bytes(const struct go_symtab *g)
{
	return g ? sizeof(*g) + g->blob_n + g->fd_n : 0;
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
	at = off + (uint64_t)ix * sz;
	if (at > g->fd_n || g->fd_n - at < sz)
		return false;
	gopclntab_inl_decode(&g->pt, g->fd + at, e);
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
