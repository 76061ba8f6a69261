// SPDX-License-Identifier: GPL-2.0
/*
 * go_symtab.c - a Go executable's pclntab as a source of names, files,
 * lines and inlined frames (see go_symtab.h).
 *
 * Owns: the copies of the pclntab and of go:func.* the lookups read
 * (src/util/go_elf.c finds both in the image: by section, by magic,
 * through runtime.firstmoduledata), and the inline expansion of
 * Go's runtime.CallersFrames (src/runtime/symtab.go Next()): at each
 * level the PCDATA_InlTreeIndex value at the pc picks the inline tree
 * entry whose name is that level's function; the pcfile/pcln values at
 * the pc are its file and line; the next level's pc is the function's
 * entry plus the entry's parentPc.
 *
 * Input is untrusted: every table offset is checked by
 * src/util/gopclntab.c, tree entries are read
 * only inside the copy, and a level's pc must stay inside its function.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "symbol/go_symtab.h"
#include "util/go_elf.h"
#include "util/gopclntab.h"

COUNTER_DEFINE(go_pclntab_unreadable, COUNTER_PARTIAL,
	       "Go executables whose .gopclntab failed its checks (corrupt, "
	       "truncated, unknown version): named from ELF symbols, if any");
COUNTER_DEFINE(go_pclntab_bad_func, COUNTER_PARTIAL,
	       "Go pcs whose pclntab function, name or inline tree entry failed "
	       "its checks: named from ELF symbols, if any");

struct go_symtab {
	uint8_t *blob;		/* the pclntab */
	size_t blob_n;
	struct gopclntab pt;	/* points into blob */
	uint8_t *fd;		/* go:func.* from gofunc on (funcdata), or NULL */
	size_t fd_n;
	uint64_t gofunc;	/* its vaddr (0: unknown, no inline trees) */
};

/*
 * @g's copies of the table (to its end: moduledata's, else the section's
 * or segment's) and of go:func.* (src/util/go_elf.c finds both).
 */
static int read_table(Elf *elf, struct go_symtab *g)
{
	struct go_elf_pclntab loc;
	int err = go_elf_pclntab(elf, true, &loc);

	if (err)
		return err;
	if (loc.gofunc_p) {
		g->fd = malloc(loc.gofunc_n);
		if (!g->fd)
			return -ENOMEM;
		memcpy(g->fd, loc.gofunc_p, loc.gofunc_n);
		g->fd_n = loc.gofunc_n;
		g->gofunc = loc.gofunc;
	}
	g->blob_n = loc.pt.n;
	g->blob = malloc(g->blob_n);
	if (!g->blob)
		return -ENOMEM;
	memcpy(g->blob, loc.pt.p, g->blob_n);
	return gopclntab_init(&g->pt, g->blob, g->blob_n, loc.pt.text);
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
