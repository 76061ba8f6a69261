/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_syms.h - a runtime detector's lookup of a few named symbols of an
 * ELF object (libelf), whatever their type (data or code).
 *
 * Owns: nothing past one call. The FUNC-only table of src/symbol/ is for
 * naming pcs; a detector needs the defined symbols it names (data tables
 * such as HotSpot's gHotSpotVMStructs), .dynsym first, .symtab for what
 * .dynsym lacks. A file whose symbol strings do not hold @needle costs
 * its section headers and a pass of pread()s over its string tables, in
 * 64 KiB pieces: its tables are not read into memory (node's .dynstr and
 * .strtab are 12.5 MiB, libjvm's 3 MiB; read whole by each detector that
 * is not its runtime, they went past --memory-limit's base at start-up).
 */
#ifndef PROFD_RUNTIME_ELF_SYMS_H
#define PROFD_RUNTIME_ELF_SYMS_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct runtime_elf_sym {
	uint64_t value;		/* st_value: ELF virtual address */
	uint64_t size;		/* st_size, bytes */
	bool found;
};

/*
 * runtime_elf_sym_strings - the string table (SHT_STRTAB, with data) of
 * the symbol table whose section header is @sh, or NULL. The data is
 * libelf's, valid until elf_end(@elf).
 */
Elf_Data *runtime_elf_sym_strings(Elf *elf, const GElf_Shdr *sh);

/*
 * runtime_elf_strings_hold - whether the string table of the symbol table
 * whose section header is @sh holds @needle (with its NUL), read from @fd
 * (the file @elf was begun on) by pread() in 64 KiB pieces into a
 * buffer of its own: nothing of the table stays in memory. Returns 1
 * (holds), 0 (does not), -EINVAL (no such string table, a compressed
 * one, a needle over 255 bytes: the caller reads the table instead) or a
 * negative errno of the read (-EIO: the file is shorter than the header).
 */
int runtime_elf_strings_hold(Elf *elf, int fd, const GElf_Shdr *sh, const char *needle);

/*
 * runtime_elf_find_syms - for each of the @n names in @names, its
 * defined symbol (st_shndx != SHN_UNDEF) into @out[i] (zeroed first;
 * .dynsym's wins over .symtab's). A table is searched only if its string
 * table contains @needle (a NUL-terminated name, with its NUL: a cheap
 * reject of files that are not the runtime), or always when @needle is
 * NULL. Untrusted file: libelf's checked accessors, names bounded by the
 * string table. @fd (the file @elf was begun on; -1: none) lets the
 * needle be looked for without reading the string table into memory
 * (runtime_elf_strings_hold()). Returns how many names were found (0..@n).
 */
size_t runtime_elf_find_syms(Elf *elf, int fd, const char *const *names, size_t n,
			     struct runtime_elf_sym *out, const char *needle);

#endif /* PROFD_RUNTIME_ELF_SYMS_H */
