/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_section.h - finding an ELF section by name (libelf), for readers
 * of one section (Go's .gopclntab, .go.buildinfo; CPython's .rodata) in
 * src/unwind/, src/symbol/, src/util/ and src/python/.
 */
#ifndef PROFD_UTIL_ELF_SECTION_H
#define PROFD_UTIL_ELF_SECTION_H

#include <gelf.h>

/* elf_section_by_type()'s @type for a section of any type. */
#define ELF_SECTION_ANY_TYPE	((GElf_Word)-1)

/*
 * elf_section_by_name - the first section of @elf named @name (by the
 * section header string table), its header in *@sh; NULL when there is
 * none or no section headers. Borrowed from @elf.
 */
Elf_Scn *elf_section_by_name(Elf *elf, const char *name, GElf_Shdr *sh);

/*
 * elf_section_by_type - elf_section_by_name() for the first section
 * named @name whose sh_type is @type (SHT_PROGBITS, ...; any:
 * ELF_SECTION_ANY_TYPE), sections of other types skipped.
 */
Elf_Scn *elf_section_by_type(Elf *elf, const char *name, GElf_Word type,
			     GElf_Shdr *sh);

#endif /* PROFD_UTIL_ELF_SECTION_H */
