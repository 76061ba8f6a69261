/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_symtab.h - a function symbol table read with libelf (internal to
 * src/symbol; elf_file.h is the interface the rest of profd uses).
 *
 * Owns: the FUNC/IFUNC symbols of one or more ELF handles (an object and
 * its separate debug file describe the same addresses) merged into one
 * array sorted by address, one name per address, plus one blob of
 * names, and the address lookup. x86-64 PLT stubs no symbol covers get
 * synthetic "name@plt" symbols (plt.h), as perf names them.
 */
#ifndef PROFD_SYMBOL_ELF_SYMTAB_H
#define PROFD_SYMBOL_ELF_SYMTAB_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_sym;
struct go_symtab;

struct elf_symtab {
	struct elf_sym *syms;	/* sorted by start address */
	size_t n;
	char *names;		/* NUL-terminated names, one blob */
	size_t bytes;		/* heap bytes of syms and names */
	struct go_symtab *go;	/* a Go executable's pclntab (go_symtab.h), or
				 * NULL; set by elf_file.c, freed with @t */
};

/*
 * elf_symtab_build - fill @t from @nelves libelf handles: from each its
 * .symtab and, unless @symtab_only[i], its .dynsym and its named PLT
 * stubs ("memcpy@plt", only where no symbol covers the stub; a debug
 * file's PLT sections hold no data). Names lose a
 * "@VERSION"/"@@VERSION" suffix. Returns 0 (@t may be empty), -ENOMEM
 * or -E2BIG (names past 4 GiB); on error @t is left empty. Free with
 * elf_symtab_free().
 */
int elf_symtab_build(struct elf_symtab *t, Elf *const *elves,
		     const bool *symtab_only, size_t nelves);

/*
 * elf_symtab_estimate - an upper bound of the heap bytes (@t->bytes)
 * elf_symtab_build() would give for the same handles, from their section
 * headers only (no symbol or string is read): every .symtab entry (and
 * .dynsym entry, unless @symtab_only[i]) counted as a function with the
 * whole of its string table. PLT stubs not included (a few per .dynsym
 * entry's worth of bytes). 0 without symbol sections.
 */
uint64_t elf_symtab_estimate(Elf *const *elves, const bool *symtab_only,
			     size_t nelves);

/*
 * elf_symtab_lookup - the function containing ELF virtual address
 * @vaddr (a symbol of size 0 covers up to the next symbol or its
 * section's end): its name (owned by @t) with *@sym_vaddr set to its
 * start, or NULL when none covers @vaddr.
 */
const char *elf_symtab_lookup(const struct elf_symtab *t, uint64_t vaddr,
			      uint64_t *sym_vaddr);

/* elf_symtab_free - free @t's contents and leave it empty. */
void elf_symtab_free(struct elf_symtab *t);

#endif /* PROFD_SYMBOL_ELF_SYMTAB_H */
