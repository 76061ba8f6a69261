// SPDX-License-Identifier: GPL-2.0
/*
 * elf_section.c - finding an ELF section by name (see elf_section.h).
 */
#include <string.h>

#include "util/elf_section.h"

/* elf_section_by_type - see elf_section.h. */
Elf_Scn *elf_section_by_type(Elf *elf, const char *name, GElf_Word type,
			     GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh) ||
		    (type != ELF_SECTION_ANY_TYPE && sh->sh_type != type))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* elf_section_by_name - see elf_section.h. */
Elf_Scn *elf_section_by_name(Elf *elf, const char *name, GElf_Shdr *sh)
{
	return elf_section_by_type(elf, name, ELF_SECTION_ANY_TYPE, sh);
}
