/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_sections.h - the .debug_* sections profd's DWARF reader
 * (dwarf_lines.c) shows libdw, and the bytes they take.
 *
 * Owns: the list of sections a line or inline lookup reads (info,
 * abbrev, line, line_str, str, str_offsets, addr, ranges, rnglists;
 * .debug_ and GNU .zdebug_ names), hiding the others from libdw (loc
 * lists, macros, frame, aranges, names, types: never read; libc 2.36's
 * sections are 15 % less), and their sizes before they are read (from
 * the section headers and compression headers, for the cap) and after
 * (what libelf holds, decompressed).
 */
#ifndef PROFD_SYMBOL_DWARF_SECTIONS_H
#define PROFD_SYMBOL_DWARF_SECTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <libelf.h>

/*
 * dwarf_sections_bytes - bytes the read .debug_* sections of @elf take:
 * before they are read (@loaded false), from the headers (a compressed
 * section's uncompressed size: SHF_COMPRESSED's header, a .zdebug_'s
 * "ZLIB" size; an unreadable one counts as past any cap), else what
 * libelf holds now (libdw replaced compressed data with decompressed).
 * *@has_info: a .debug_info with data. 0 when the section headers
 * cannot be read.
 */
uint64_t dwarf_sections_bytes(Elf *elf, bool loaded, bool *has_info);

/*
 * dwarf_sections_hide_unneeded - mark the .debug_* sections no lookup
 * reads SHT_NOBITS in libelf's copy of the headers (ELF_C_READ: heap;
 * the file is never written), so that dwarf_begin_elf() skips them
 * without reading them.
 */
void dwarf_sections_hide_unneeded(Elf *elf);

#endif
