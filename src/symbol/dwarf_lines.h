/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_lines.h - source lines and inlined call chains from DWARF (libdw).
 *
 * Owns: one object's DWARF, read whole into memory when the object is
 * loaded (on the object loader thread, where file reads are allowed):
 * the .debug_* sections of its separate debug file when one is attached,
 * else of its own file, and the .dwo files of its split units
 * (-gsplit-dwarf, dwarf_split.h); compressed sections (SHF_COMPRESSED,
 * .zdebug_*) are decompressed by libdw. After the read libelf is told it is done
 * with the descriptor (ELF_C_FDDONE): a lookup never reads a file, so
 * the interval's write-out never waits on storage and a file truncated
 * later cannot fault it. Lookups follow DWARF 5 section 6.2 (the line
 * number program, through dwarf_getsrc_die) and 3.3.8 (inlined
 * subroutines: DW_AT_call_file / DW_AT_call_line, through
 * dwarf_scopes.c's walk, what eu-addr2line -i finds with dwarf_getscopes).
 * Not thread safe: the symbolizer's lock serializes every use.
 */
#ifndef PROFD_SYMBOL_DWARF_LINES_H
#define PROFD_SYMBOL_DWARF_LINES_H

#include <stdbool.h>
#include <stdint.h>

struct elf_file;
struct dwarf_lines;

/* Levels of a chain dwarf_lines_lookup() returns at most. */
#define DWARF_LINES_MAX_DEPTH	64

/* One level of an inlined call chain. Strings owned by the dwarf_lines. */
struct dwarf_frame {
	const char *name;	/* DW_AT_linkage_name, else DW_AT_name; NULL if none */
	const char *file;	/* source file as the line table names it; NULL if none */
	uint32_t line;		/* 1-based; 0: unknown */
};

/*
 * dwarf_lines_open - read the DWARF of @f (its attached debug file's
 * first, else its own) into a new handle (*@out, owned by the caller;
 * free with dwarf_lines_free()). @max_bytes caps the memory it may take
 * (the debug sections' sizes, uncompressed); 0: no cap. Reads files:
 * call it where a blocked read is allowed. Returns 0, -ENODATA (no
 * .debug_info / .debug_line with data: no lines to give), -EFBIG (larger
 * than @max_bytes; nothing read), -ENOEXEC (libelf/libdw could not read
 * it, or not one of its units: corrupt or truncated DWARF), -ENOMEM.
 * Units after one whose header libdw cannot read are not used; the
 * handle is then unreadable (dwarf_lines_unreadable()) but opens.
 */
int dwarf_lines_open(const struct elf_file *f, uint64_t max_bytes,
		     struct dwarf_lines **out);

/* dwarf_lines_free - free @d and every string it handed out. NULL is fine. */
void dwarf_lines_free(struct dwarf_lines *d);

/*
 * dwarf_lines_bytes - heap bytes @d holds: the sections read (and their
 * decompressed copies; only those a lookup reads) plus an estimate of
 * what libdw decoded since (the units walked to and the line tables
 * decoded; they grow with lookups in new compilation units, up to
 * dwarf_lines_resets()' cap).
 */
uint64_t dwarf_lines_bytes(const struct dwarf_lines *d);

/*
 * dwarf_lines_resets - how many times @d dropped what libdw had decoded
 * (units walked, line tables) to stay within its share: the sections
 * read, then a quarter of them (at least 1 MiB) of line tables, plus
 * the units' headers.
 */
uint32_t dwarf_lines_resets(const struct dwarf_lines *d);

/*
 * dwarf_lines_lookup - the call chain at ELF virtual address @vaddr,
 * innermost first: out[0..n-2] the functions inlined there (name, and
 * the file:line executing in each), out[n-1] the subprogram that
 * contains them (its DWARF name; the line where it calls the outermost
 * inlined function, or executes @vaddr itself). Up to @max levels.
 * Returns n >= 1, -ENOENT (no compilation unit or line row covers
 * @vaddr), -E2BIG (a deeper chain than @max), -EILSEQ (corrupt DWARF met
 * on the way: a line table, a DIE or a call site libdw could not read,
 * or an address past a unit it could not read; @d is then unreadable),
 * -EOPNOTSUPP (@vaddr's unit is a skeleton of split DWARF whose .dwo was
 * not found or not readable, or is in a .dwp, not read), -EFBIG (@vaddr's
 * unit's line table would keep more than the cap @d was opened with),
 * -EINVAL (bad arguments). A skeleton unit whose .dwo was read (dwarf_split.h) gives
 * its chain like any other: its line rows are the skeleton's, its
 * functions and inlined calls the .dwo's.
 */
int dwarf_lines_lookup(struct dwarf_lines *d, uint64_t vaddr,
		       struct dwarf_frame *out, int max);

/*
 * dwarf_lines_unreadable - true the first time it is asked after @d met
 * corrupt DWARF (at its open, or in a lookup since), false before and
 * after: one count per object (lines_unreadable). NULL: false.
 */
bool dwarf_lines_unreadable(struct dwarf_lines *d);

/*
 * dwarf_lines_too_big - true once, the first time after a lookup met a
 * unit whose line table is over @d's cap (-EFBIG): the caller counts
 * the object once, as for DWARF over the cap at open.
 */
bool dwarf_lines_too_big(struct dwarf_lines *d);

/*
 * dwarf_lines_split_units - how many of @d's units are skeletons of
 * split DWARF (-gsplit-dwarf) whose .dwo was not found or not readable
 * (or is in a .dwp): their addresses get no lines. NULL: 0.
 */
uint32_t dwarf_lines_split_units(const struct dwarf_lines *d);

#endif /* PROFD_SYMBOL_DWARF_LINES_H */
