/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_linetab.h - one compilation unit's line table, decoded from
 * .debug_line by profd itself into compact rows, for dwarf_lines.c.
 *
 * Owns: the decoder of a DWARF 2-5 line number program (DWARF 5 section
 * 6.2: the header, its directory and file tables, the standard, extended
 * and special opcodes of the state machine) and the table it yields: the
 * rows sorted by address as libdw sorts them (address, then an
 * end-of-sequence row before others at the same address, then program
 * order), 12 bytes a row, and the unit's file names joined with their
 * directories as libdw joins them (an absolute name as it is, else its
 * directory, "/", the name; for DWARF < 5, directory 0 is the unit's
 * DW_AT_comp_dir and file 0 is libdw's "???"), except that a relative
 * include directory (not entry 0) is put under DW_AT_comp_dir, as DWARF
 * 5 6.2.4 says and addr2line and llvm-symbolizer do (libdw leaves
 * "inc/hot.h" relative: pprof -list could not find it).
 *
 * Why not libdw's dwarf_getsrclines(): it keeps 40 bytes a row plus
 * its file table until the whole Dwarf is ended, and builds the table
 * through a list of 56-byte nodes: sqlite3's amalgamation (one unit,
 * 232 000 rows) cost 11 MB held and ~24 MB at its peak. These tables
 * take 12 bytes a row, freed one by one.
 *
 * Input is untrusted: every read is bounds-checked against the section;
 * a header, form or opcode that cannot be read is an error for the
 * unit (the caller falls back to libdw), never a crash or a loop past
 * the unit's end. Not thread safe (the symbolizer's lock).
 */
#ifndef PROFD_SYMBOL_DWARF_LINETAB_H
#define PROFD_SYMBOL_DWARF_LINETAB_H

#include <stddef.h>
#include <stdint.h>

struct dwarf_linetab;

/* The sections a line program reads (decompressed; NULL/0 if absent). */
struct dwarf_linetab_src {
	const uint8_t *line;		/* .debug_line */
	size_t line_size;
	const uint8_t *line_str;	/* .debug_line_str (DW_FORM_line_strp) */
	size_t line_str_size;
	const uint8_t *str;		/* .debug_str (DW_FORM_strp) */
	size_t str_size;
};

/*
 * dwarf_linetab_src_of - the sections of @elf a line program reads, as
 * libelf holds them now (after dwarf_begin_elf(), decompressed): the
 * pointers borrow @elf's data and live as long as it does.
 * Returns 0, -ENODATA (no .debug_line).
 */
struct Elf;
int dwarf_linetab_src_of(struct Elf *elf, struct dwarf_linetab_src *src);

/*
 * dwarf_linetab_build - decode the line program at offset @off of
 * @src->line (a unit's DW_AT_stmt_list), its directory 0 being
 * @comp_dir (the unit's DW_AT_comp_dir, or NULL) before DWARF 5, its
 * working memory (24 bytes a row while decoding) within @max_bytes
 * (0: no cap).
 * *@out: the table (owned by the caller: dwarf_linetab_free()), *@bytes:
 * its heap size.
 * Returns 0, -EINVAL (a header, form or opcode past the unit or the
 * section, a directory or file index out of range, a zero line range),
 * -EOPNOTSUPP (what libdw reads and this does not: a string form other
 * than string/strp/line_strp, a unit whose addresses span 4 GiB or
 * more), -EFBIG (more rows than @max_bytes holds), -ENOMEM.
 */
int dwarf_linetab_build(const struct dwarf_linetab_src *src, uint64_t off,
			const char *comp_dir, uint64_t max_bytes,
			struct dwarf_linetab **out, uint64_t *bytes);

/*
 * dwarf_linetab_find - the row for @addr: the last row at or below it
 * (libdw's dwarf_getsrc_die()), unless that is the end of a sequence.
 * *@row_addr: the row's address, *@file: its file name (owned by the
 * table), *@line: its line.
 * Returns 0, -ENOENT (no row, or past a sequence's end).
 */
int dwarf_linetab_find(const struct dwarf_linetab *t, uint64_t addr,
		       uint64_t *row_addr, const char **file, uint32_t *line);

/*
 * dwarf_linetab_file - file @idx of the unit's file table (a
 * DW_AT_call_file value, numbered as libdw's dwarf_filesrc()), owned by
 * the table; NULL when out of range.
 */
const char *dwarf_linetab_file(const struct dwarf_linetab *t, uint64_t idx);

/* dwarf_linetab_rows - the rows of @t (a test's comparison with libdw). */
size_t dwarf_linetab_rows(const struct dwarf_linetab *t);

/*
 * dwarf_linetab_row - row @i of @t in sorted order: address, file index,
 * line, end of sequence. Returns 0, -ERANGE past the last row.
 */
int dwarf_linetab_row(const struct dwarf_linetab *t, size_t i, uint64_t *addr,
		      uint32_t *file, uint32_t *line, int *end_sequence);

/* dwarf_linetab_free - free @t (NULL: nothing). */
void dwarf_linetab_free(struct dwarf_linetab *t);

#endif
