/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_split.h - split DWARF's .dwo files for dwarf_lines.c (internal
 * to src/symbol/).
 *
 * Owns: one split unit's .dwo file (GCC/Clang -gsplit-dwarf; DWARF 5
 * section 3.1.3 split full compilation units, and GNU DebugFission in
 * DWARF 4), read whole into memory when its object's DWARF is read
 * (a lookup never reads a file), libdw's Dwarf over that copy, and the
 * addresses of its DIEs. The skeleton unit in the binary keeps the line
 * table; the .dwo keeps the subprograms and inlined subroutines, whose
 * addresses are indexes into the skeleton's .debug_addr (DW_FORM_addrx,
 * DW_FORM_GNU_addr_index) and whose range lists are in the .dwo's
 * .debug_rnglists.dwo (DWARF 5) or the skeleton's .debug_ranges (DWARF
 * 4, from DW_AT_GNU_ranges_base). libdw 0.188 follows a skeleton to its
 * .dwo only by opening the path itself (blocking on a FIFO, mmap of a
 * file a rebuild may truncate, again after every reset of its Dwarf), so
 * the file is read here and the DIEs' addresses resolved here.
 * .dwp package files are not read.
 * Not thread safe: the symbolizer's lock serializes every use.
 */
#ifndef PROFD_SYMBOL_DWARF_SPLIT_H
#define PROFD_SYMBOL_DWARF_SPLIT_H

#include <stdbool.h>
#include <stdint.h>
#include <elfutils/libdw.h>
#include <libelf.h>

struct dwarf_split;

/*
 * dwarf_range_live - whether [@lo, @hi) is code that was linked: a
 * linker that drops a function (--gc-sections, a discarded COMDAT)
 * leaves its DWARF with a "tombstone" start, 0 (GNU ld; then
 * DW_AT_high_pc, a length, makes it [0, size)), 1, or -1/-2 (lld), which
 * would claim addresses of real code near the image's start. No ELF has
 * code at address 0 or 1.
 */
static inline bool dwarf_range_live(uint64_t lo, uint64_t hi)
{
	return lo > 1 && lo < hi && hi <= UINT64_MAX - 2;
}

/*
 * dwarf_split_open - read the .dwo file of skeleton unit @skel (a CU
 * DIE of a Dwarf over @skel_elf, whose sections libdw has read) into a
 * new handle (*@out, owned by the caller; dwarf_split_free()). The file
 * is looked for where libdw and binutils look: DW_AT_dwo_name (or
 * DW_AT_GNU_dwo_name) when absolute, else in @debugdir (the directory of
 * the file holding the skeleton; NULL: not tried), then in
 * DW_AT_comp_dir, then (as gdb does) the name's last component in
 * @debugdir. A regular file only (opened O_NONBLOCK: a FIFO never
 * blocks), read whole, at most @max_bytes (0: no cap); it must hold the
 * split unit whose id (DW_AT_GNU_dwo_id / the DWARF 5 header's) is the
 * skeleton's: a .dwo a rebuild replaced names nothing. Returns 0,
 * -ENOENT (no such file, or none with that unit), -EFBIG (larger than
 * @max_bytes), -ENOEXEC (not ELF, or libdw could not read it),
 * -EINVAL (@skel is not a skeleton with a dwo name), -ENOMEM, or the
 * errno of a failed read.
 */
int dwarf_split_open(Dwarf_Die *skel, Elf *skel_elf, const char *debugdir,
		     uint64_t max_bytes, struct dwarf_split **out);

/* dwarf_split_free - free @s and every string it handed out. NULL is fine. */
void dwarf_split_free(struct dwarf_split *s);

/*
 * dwarf_split_bytes - heap bytes @s holds: the .dwo's bytes plus an
 * estimate of libdw's Dwarf over them and one decoded unit.
 */
uint64_t dwarf_split_bytes(const struct dwarf_split *s);

/*
 * dwarf_split_reset - drop what libdw decoded for @s (end its Dwarf and
 * begin it again over the bytes in memory; no file read). Returns 0 or
 * -ENOEXEC (libdw refused it again: @s gives no unit from then on).
 */
int dwarf_split_reset(struct dwarf_split *s);

/*
 * dwarf_split_cu - the split unit's CU DIE, into @mem; NULL if libdw
 * cannot give it (then the skeleton's addresses are unreadable). Its
 * file table (dwarf_getsrcfiles(), for DW_AT_call_file) is the .dwo's
 * .debug_line.dwo; its line rows are the skeleton's.
 */
Dwarf_Die *dwarf_split_cu(struct dwarf_split *s, Dwarf_Die *mem);

/*
 * dwarf_split_haspc - whether @die (a DIE of @s's unit) covers ELF
 * virtual address @vaddr by its live ranges (dwarf_range_live()):
 * DW_AT_low_pc/DW_AT_high_pc or DW_AT_ranges, their address indexes read
 * in the skeleton's .debug_addr. *@bad set when an attribute or list
 * could not be read (corrupt DWARF); false then.
 */
bool dwarf_split_haspc(struct dwarf_split *s, Dwarf_Die *die, uint64_t vaddr,
		       bool *bad);

#endif /* PROFD_SYMBOL_DWARF_SPLIT_H */
