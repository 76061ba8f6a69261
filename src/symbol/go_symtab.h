/* SPDX-License-Identifier: GPL-2.0 */
/*
 * go_symtab.h - a Go executable's own names, files, lines and inlined
 * frames, from its pclntab (internal to src/symbol; the symbolizer's
 * lookups use it through elf_file.h).
 *
 * Owns: a copy of the executable's pclntab and, when
 * runtime.firstmoduledata is found, of the go:func.* data from
 * moduledata.gofunc up to the pclntab, where Go 1.18+ keeps the inline
 * trees (FUNCDATA_InlTree). Finding and checking them (by section, by
 * magic without one, a PIE's through its relocations) is
 * src/util/go_elf.c; decoding is src/util/gopclntab.c.
 *
 * Names are Go's own (runtime.FuncForPC().Name(), runtime.Frame.Function):
 * package path, receiver, closure suffixes as Go prints them, nothing
 * demangled. Verified on Go 1.19 (Debian's golang-go); the 1.16-1.17
 * and 1.20+ layouts follow Go's sources, without inline trees for
 * 1.16-1.17 (absolute funcdata pointers) or where moduledata is not
 * found.
 */
#ifndef PROFD_SYMBOL_GO_SYMTAB_H
#define PROFD_SYMBOL_GO_SYMTAB_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "symbol/symbolizer.h"

struct go_symtab;

/* Inlined levels followed at most per pc (Go's trees are shallow). */
#define GO_SYMTAB_MAX_DEPTH	64

/*
 * go_symtab_read - read @elf's pclntab (and go:func.* when moduledata is
 * found) into a new table (*@out, caller frees with go_symtab_free()).
 * Returns 0; -ENOENT not a Go binary (no pclntab: nothing counted);
 * -EPROTONOSUPPORT a pclntab of an unknown Go version, -EINVAL one that
 * fails its checks (both counted: go_pclntab_unreadable); -ENOMEM.
 */
int go_symtab_read(Elf *elf, struct go_symtab **out);

/* go_symtab_free - free @g. NULL is fine. */
void go_symtab_free(struct go_symtab *g);

/* go_symtab_bytes - heap bytes @g holds (the copies). NULL is 0. */
size_t go_symtab_bytes(const struct go_symtab *g);

/* go_symtab_has_inline - whether inline trees can be read (gofunc found). */
bool go_symtab_has_inline(const struct go_symtab *g);

/*
 * go_symtab_frames - the frames at ELF virtual address @vaddr (the pc
 * itself: the caller subtracts 1 from a return address), as Go's
 * runtime.CallersFrames gives them: innermost first, each inlined call
 * then the real function (the last), each with its name, file and line
 * (NULL/0 where the table has none; every level's from the pcfile/pcln
 * tables at the pc, the outer levels' at the parentPc of the inline
 * entry below them). When the pc is inlined but the tree cannot be read,
 * only the real function is given, without a line (its line would be
 * the inlined code's). At most @max frames (@max >= 1): past it the
 * outermost inlined levels are left out, never the real function.
 * Strings point into @g. Returns the number of frames, -ENOENT when no
 * function of the table holds @vaddr, -EINVAL when its entry fails the
 * checks (counted: go_pclntab_bad_func).
 */
int go_symtab_frames(const struct go_symtab *g, uint64_t vaddr,
		     struct sym_frame *out, int max);

/* go_symtab_entry - entry vaddr of the function holding @vaddr, or 0. */
uint64_t go_symtab_entry(const struct go_symtab *g, uint64_t vaddr);

#endif /* PROFD_SYMBOL_GO_SYMTAB_H */
