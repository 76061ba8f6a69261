// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_sections.c - which .debug_* sections profd's DWARF reader reads
 * and what they take (see dwarf_sections.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <gelf.h>
#include <libelf.h>

#include "symbol/dwarf_sections.h"

static bool is_debug_section(const char *name)
{
	return name && (!strncmp(name, ".debug_", 7) ||
			!strncmp(name, ".zdebug_", 8));
}

/*
 * Whether debug section @name is read by a lookup: the units and their
 * DIEs' attributes (strings, addresses, range lists) and the line
 * tables. The rest (.debug_loc/loclists, macros, frame, aranges,
 * pubnames, types, names) is hidden from libdw, never read.
 */
static bool is_needed_section(const char *name)
{
	static const char *const needed[] = {
		"info", "abbrev", "line", "line_str", "str", "str_offsets",
		"addr", "ranges", "rnglists",
	};

	name += name[1] == 'z' ? 8 : 7;
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!strcmp(name, needed[i]))
			return true;
	return false;
}

/*
 * The uncompressed size a GNU .zdebug_* section announces: "ZLIB", then
 * the size as 8 big-endian bytes (the compressed bytes are read for it:
 * they count within the cap anyway). UINT64_MAX when it cannot be read,
 * so that an unreadable header is over any cap.
 */
static uint64_t zdebug_size(Elf_Scn *scn)
{
	Elf_Data *d = elf_rawdata(scn, NULL);
	const unsigned char *p;
	uint64_t size = 0;

	if (!d || !d->d_buf || d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4))
		return UINT64_MAX / 4;
	p = (const unsigned char *)d->d_buf + 4;
	for (int i = 0; i < 8; i++)
		size = size << 8 | p[i];
	return size < UINT64_MAX / 4 ? size : UINT64_MAX / 4;
}

/* dwarf_sections_bytes - see dwarf_sections.h. */
uint64_t dwarf_sections_bytes(Elf *elf, bool loaded, bool *has_info)
{
	Elf_Scn *scn = NULL;
	uint64_t sum = 0;
	size_t shstrndx;

	*has_info = false;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *name;
		GElf_Shdr sh;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!is_debug_section(name))
			continue;
		if (!is_needed_section(name))
			continue;
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))
			*has_info = true;
		if (loaded) {
			Elf_Data *d = elf_getdata(scn, NULL);

			sum += d ? d->d_size : sh.sh_size;
		} else if (sh.sh_flags & SHF_COMPRESSED) {
			sum += gelf_getchdr(scn, &ch) ? ch.ch_size : UINT64_MAX / 4;
		} else if (name[1] == 'z') {
			sum += zdebug_size(scn);
		} else {
			sum += sh.sh_size;
		}
	}
	return sum;
}

/* dwarf_sections_hide_unneeded - see dwarf_sections.h. */
void dwarf_sections_hide_unneeded(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (is_debug_section(name) && !is_needed_section(name)) {
			sh.sh_type = SHT_NOBITS;
			gelf_update_shdr(scn, &sh);
		}
	}
}
