/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_file.h - one ELF object opened for symbolization (libelf).
 *
 * Owns: the open file descriptor of an executable or shared object (or
 * a private copy of an in-memory image such as the vDSO), its GNU build
 * ID, its .gnu_debuglink, its PT_LOAD segments (to turn file offsets into
 * ELF virtual addresses), the descriptor of its separate debug file when
 * one is attached, and its function symbols from .symtab and .dynsym
 * (plus the debug file's .symtab, and "name@plt" for x86-64 PLT stubs no
 * symbol covers), loaded on first lookup or by elf_file_load_symbols(),
 * sorted by address, and, in a Go executable, its pclntab (go_symtab.h),
 * loaded with them.
 *
 * Holding the fd keeps the file readable after the process that mapped it
 * exited or the file was deleted.
 */
#ifndef PROFD_SYMBOL_ELF_FILE_H
#define PROFD_SYMBOL_ELF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

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

/*
 * elf_file_open_mem - an ELF image of @len bytes at @image laid out as a
 * file (the vDSO is: offset 0 is its ELF header), copied into memory the
 * result owns. Returns NULL and sets *@err: -ENOEXEC when it is not an
 * ET_EXEC/ET_DYN ELF image, -ENOMEM, -ENOSYS when libelf is unusable.
 */
struct elf_file *elf_file_open_mem(const void *image, size_t len, int *err);

/*
 * elf_file_bytes - heap bytes @f holds: its symbol table once loaded, an
 * in-memory image, the segment list. NULL is 0.
 */
size_t elf_file_bytes(const struct elf_file *f);

/*
 * elf_file_read - read up to @len bytes at file offset @off of the object's
 * own file (or in-memory image) into @buf, from the descriptor it holds
 * (a deleted or replaced file still reads as it was mapped), without
 * waiting for storage (preadv2 RWF_NOWAIT): bytes not in the page cache
 * are -EAGAIN, never a blocked thread (a hung mount). Returns the bytes
 * read (fewer at the end of the file), or -errno (-EOPNOTSUPP: a file
 * system that cannot read without waiting).
 */
ssize_t elf_file_read(const struct elf_file *f, uint64_t off, void *buf, size_t len);

/* elf_file_free - close and free. NULL is fine. */
void elf_file_free(struct elf_file *f);

/* elf_file_build_id - lowercase hex GNU build ID, "" if none. Owned by @f. */
const char *elf_file_build_id(const struct elf_file *f);

/*
 * elf_file_has_symtab - true when the object's own file has a non-empty
 * .symtab: its names need no separate debug file (its lines may).
 */
bool elf_file_has_symtab(const struct elf_file *f);

/*
 * elf_file_has_dwarf - true when the object's own file has a non-empty
 * .debug_info (or GNU .zdebug_info): its source lines need no debug file.
 * A binary stripped with `strip -g` has a .symtab but no DWARF.
 */
bool elf_file_has_dwarf(const struct elf_file *f);

/*
 * elf_file_debuglink - the file name in the object's .gnu_debuglink
 * (owned by @f; never contains '/') and, in *@crc if non-NULL, the CRC32
 * of the debug file it names. NULL when there is none or it is malformed.
 */
const char *elf_file_debuglink(const struct elf_file *f, uint32_t *crc);

/*
 * elf_file_stat - fstat() of the object's own file descriptor: the file
 * as it is now (size, times), not a path that may name another file.
 * Returns 0, or -errno; -EBADF for an in-memory image.
 */
int elf_file_stat(const struct elf_file *f, struct stat *st);

/*
 * elf_file_check_debug - whether the file open on @fd (not taken over)
 * may serve as @f's separate debug file: a regular ELF file with a
 * non-empty .symtab, of the same class and machine, whose GNU build ID
 * equals @f's ("" on both sides counts as equal: the caller then relies
 * on the debuglink CRC). Returns 0, -ENOEXEC (not such a file), -ESTALE
 * (build IDs differ) or -EEXIST (a debug file is already set, or the
 * symbols were loaded already).
 */
int elf_file_check_debug(const struct elf_file *f, int fd);

/*
 * elf_file_set_debug - elf_file_check_debug(), then use the file on @fd
 * (taken over; closed on error) for extra symbols: its .symtab is read
 * together with @f's own tables on the first lookup. Same returns.
 */
int elf_file_set_debug(struct elf_file *f, int fd);

/*
 * elf_debug_file_check - whether the file on @fd (not taken over) is a
 * debug file for the object whose GNU build ID is @build_id (lowercase
 * hex): a regular ELF file with a non-empty .symtab and that build ID,
 * read with pread only. For a file from an untrusted source (a
 * debuginfod server) before any object is at hand; elf_file_check_debug()
 * checks class and machine too. Returns 0, -EINVAL (empty @build_id),
 * -ENOEXEC (not such a file: corrupt, truncated, no .symtab) or -ESTALE
 * (another build ID).
 */
int elf_debug_file_check(int fd, const char *build_id);

/* elf_file_has_debug - true once elf_file_set_debug() accepted a file. */
bool elf_file_has_debug(const struct elf_file *f);

/*
 * elf_file_fd, elf_file_debug_fd - the descriptor of the object's own
 * file, of its attached debug file; -1 for none (an in-memory image, no
 * debug file). Owned by @f: read them (pread), never close them.
 */
int elf_file_fd(const struct elf_file *f);
int elf_file_debug_fd(const struct elf_file *f);

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
 * up to the next symbol; a PLT stub is "name@plt"). On success returns
 * the symbol name as in the table (mangled, without a "@VERSION" suffix;
 * owned by @f) and sets
 * *@sym_vaddr to its start. Returns
 * NULL when no symbol covers @vaddr or the tables are unreadable.
 */
const char *elf_file_lookup(struct elf_file *f, uint64_t vaddr,
			    uint64_t *sym_vaddr);

/*
 * elf_file_cfi_range - the code range [*@start, *@end) of the FDE in the
 * object's own .eh_frame (read with libdw's dwarf_getcfi_elf) that covers
 * ELF virtual address @vaddr: where no symbol names a function, its CFI
 * still says where the function begins and ends (the vDSO's static
 * functions). Specs: DWARF 5 section 6.4, LSB 5.0 "Exception Frames".
 * Returns 0, -ENOENT when no FDE covers @vaddr, -ENODATA when the object
 * has no usable .eh_frame, -ENOEXEC when libelf cannot read it.
 */
int elf_file_cfi_range(const struct elf_file *f, uint64_t vaddr,
		       uint64_t *start, uint64_t *end);

/*
 * elf_file_load_symbols - read the function symbols now (the object's
 * tables and an attached debug file's .symtab), so later lookups do no
 * file I/O: a file truncated or rewritten after this still resolves from
 * what was read. Idempotent (a second call returns the first's result).
 * Returns 0 (possibly with no symbols: a stripped file without .dynsym),
 * -ENOEXEC when libelf cannot read the file (truncated, corrupt), or
 * another negative errno.
 */
int elf_file_load_symbols(struct elf_file *f);

/*
 * elf_file_symbols_estimate - an upper bound of the heap bytes
 * elf_file_load_symbols() would add to elf_file_bytes(@f), from section
 * headers alone (elf_symtab_estimate(), plus a Go executable's
 * .gopclntab): a table too big for a budget is refused without being
 * read. 0 when the file cannot be read as ELF (the load says why).
 */
uint64_t elf_file_symbols_estimate(const struct elf_file *f);

/*
 * elf_file_is_go - whether @f's loaded symbols hold a Go pclntab (a Go
 * executable: Go's own names, lines and inlining; go_symtab.h).
 */
bool elf_file_is_go(const struct elf_file *f);

/*
 * elf_file_unload_symbols - free the symbols read (to be read again by
 * the next lookup, or elf_file_read_symbols() + elf_file_set_symbols()),
 * a Go executable's pclntab copies with them. Names handed out before
 * are invalid after it. Returns the heap bytes freed.
 */
size_t elf_file_unload_symbols(struct elf_file *f);

struct elf_symtab;

/*
 * elf_file_read_symbols - read @f's function symbols into a new table
 * (*@out, owned by the caller) without touching @f: it may run on another
 * thread than @f's lookups (the caller keeps @f alive). Returns 0, or
 * what elf_file_load_symbols() returns.
 */
int elf_file_read_symbols(const struct elf_file *f, struct elf_symtab **out);

/*
 * elf_file_read_debug_symbols - for an object whose symbols are loaded
 * already (elf_file_check_debug() would say -EEXIST): check the file on
 * @fd (not taken) as elf_file_check_debug() does, then read @f's tables
 * plus its .symtab into a new table (*@out, owned by the caller) without
 * touching @f, like elf_file_read_symbols(). Returns 0, -EEXIST (@f has
 * a debug file), what elf_file_check_debug() returns, or a read error.
 */
int elf_file_read_debug_symbols(const struct elf_file *f, int fd,
				struct elf_symtab **out);

/*
 * elf_file_adopt_debug - make the file on @fd (taken over; checked by
 * elf_file_read_debug_symbols()) @f's debug file and @t (taken: that
 * call's table) its symbols, freeing the old ones: names handed out from
 * them are invalid after it. Later reloads read the debug file too.
 */
void elf_file_adopt_debug(struct elf_file *f, int fd, struct elf_symtab *t);

/* elf_file_set_symbols - make @t (taken) @f's symbols, freeing the old. */
void elf_file_set_symbols(struct elf_file *f, struct elf_symtab *t);

/* elf_file_free_symbols - free a table from elf_file_read_symbols(). */
void elf_file_free_symbols(struct elf_symtab *t);

struct sym_frame;

/*
 * elf_file_go_frames - a Go executable's frames at ELF virtual address
 * @vaddr from its pclntab (go_symtab_frames(): innermost first, the real
 * function last; at most @max), loading the symbols first, and the real
 * function's entry in *@entry (may be NULL). Strings owned by @f's
 * symbol table. Returns the number of frames, -ENOENT (not a Go
 * executable, or no Go function there) or -EINVAL (its entry is corrupt;
 * counted).
 */
int elf_file_go_frames(struct elf_file *f, uint64_t vaddr, struct sym_frame *out,
		       int max, uint64_t *entry);

/* elf_file_nsymbols - number of function symbols loaded (loads them). */
uint64_t elf_file_nsymbols(struct elf_file *f);

#endif /* PROFD_SYMBOL_ELF_FILE_H */
