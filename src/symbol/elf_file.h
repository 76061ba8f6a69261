/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_file.h - one ELF object opened for symbolization (libelf).
 *
 * Owns: the open file descriptor of an executable or shared object, its
 * GNU build ID, its PT_LOAD segments (to turn file offsets into ELF
 * virtual addresses) and its function symbols from .symtab and .dynsym,
 * loaded lazily and sorted by address.
 *
 * Holding the fd keeps the file readable after the process that mapped it
 * exited or the file was deleted.
 */
#ifndef PROFD_SYMBOL_ELF_FILE_H
#define PROFD_SYMBOL_ELF_FILE_H

#include <stdbool.h>
#include <stdint.h>

struct elf_file;

/*
 * elf_file_open_fd - take ownership of @fd (closed on error too) and read
 * the ELF header, program headers and build ID. Symbols load on first
 * lookup. Returns NULL and sets *@err (negative errno; -ENOEXEC for a file
 * that is not a valid ELF) on failure.
 */
struct elf_file *elf_file_open_fd(int fd, int *err);

/* elf_file_open - elf_file_open_fd() on open(@path, O_RDONLY|O_CLOEXEC). */
struct elf_file *elf_file_open(const char *path, int *err);

/* elf_file_free - close and free. NULL is fine. */
void elf_file_free(struct elf_file *f);

/* elf_file_build_id - lowercase hex GNU build ID, "" if none. Owned by @f. */
const char *elf_file_build_id(const struct elf_file *f);

/* elf_file_is_dyn - true for ET_DYN (PIE executables, libraries). */
bool elf_file_is_dyn(const struct elf_file *f);

/*
 * elf_file_offset_to_vaddr - ELF virtual address of file offset @off,
 * through the PT_LOAD segment containing it. Returns 0 or -ENOENT.
 */
int elf_file_offset_to_vaddr(const struct elf_file *f, uint64_t off,
			     uint64_t *vaddr);

/*
 * elf_file_lookup - the function symbol containing ELF virtual address
 * @vaddr (.symtab preferred, .dynsym otherwise; a symbol of size 0 covers
 * up to the next symbol). On success returns the symbol name as in the
 * table (mangled; owned by @f) and sets *@sym_vaddr to its start. Returns
 * NULL when no symbol covers @vaddr or the tables are unreadable.
 */
const char *elf_file_lookup(struct elf_file *f, uint64_t vaddr,
			    uint64_t *sym_vaddr);

/* elf_file_nsymbols - number of function symbols loaded (loads them). */
uint64_t elf_file_nsymbols(struct elf_file *f);

#endif /* PROFD_SYMBOL_ELF_FILE_H */
