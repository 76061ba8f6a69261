/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_section.h - finding an ELF section by name (libelf), for readers
 * of one section (Go's .gopclntab, .go.buildinfo) on both sides of
 * src/unwind/ and src/symbol/.
 */
#ifndef PROFD_UTIL_ELF_SECTION_H
#define PROFD_UTIL_ELF_SECTION_H

#include <gelf.h>

/*
 * elf_section_by_name - the first section of @elf named @name (by the
 * section header string table), its header in *@sh; NULL when there is
 * none or no section headers. Borrowed from @elf.
 */
Elf_Scn *elf_section_by_name(Elf *elf, const char *name, GElf_Shdr *sh);

#endif /* PROFD_UTIL_ELF_SECTION_H */
