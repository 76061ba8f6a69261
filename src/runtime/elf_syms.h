/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_syms.h - a runtime detector's lookup of a few named symbols of an
 * ELF object (libelf), whatever their type (data or code).
 *
 * Owns: nothing past one call. The FUNC-only table of src/symbol/ is for
 * naming pcs; a detector needs the defined symbols it names (data tables
 * such as HotSpot's gHotSpotVMStructs), .dynsym first, .symtab for what
 * .dynsym lacks. A file whose symbol strings do not hold @needle costs
 * its section headers and string tables only.
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
 * runtime_elf_find_syms - for each of the @n names in @names, its
 * defined symbol (st_shndx != SHN_UNDEF) into @out[i] (zeroed first;
 * .dynsym's wins over .symtab's). A table is searched only if its string
 * table contains @needle (a NUL-terminated name, with its NUL: a cheap
 * reject of files that are not the runtime), or always when @needle is
 * NULL. Untrusted file: libelf's checked accessors, names bounded by the
 * string table. Returns how many names were found (0..@n).
 */
size_t runtime_elf_find_syms(Elf *elf, const char *const *names, size_t n,
			     struct runtime_elf_sym *out, const char *needle);

#endif /* PROFD_RUNTIME_ELF_SYMS_H */
