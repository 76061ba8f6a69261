/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbols.h - where a CRuby process keeps its ID table, and the names of
 * operator IDs.
 *
 * Owns: finding `ruby_global_symbols` (symbol.c's rb_symbols_t, the
 * ID -> String table C frames are named through), which Debian's
 * stripped libruby does not export, from the exported
 * `rb_sym_immortal_count`, whose whole body is
 *     8b 05 <rel32>   mov eax, [rip + rel32]   ; ruby_global_symbols.last_id
 *     c3              ret
 * (checked byte for byte: any other code, e.g. another compiler's or a
 * build with assertions, is "unknown" and C frames are named
 * "[ruby C method]"); and the static table of the operator IDs
 * (id <= tLAST_OP_ID), parse.y's op_tbl and the one-character operators.
 */
#ifndef PROFD_RUBY_SYMBOLS_H
#define PROFD_RUBY_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "ruby/offsets.h"

/* Bytes of rb_sym_immortal_count's code checked. */
#define RB_SYM_COUNT_CODE_LEN	7

/*
 * rb_global_symbols_from_code - from the @len bytes @code of
 * rb_sym_immortal_count at address @fn (file or runtime: the result is in
 * the same space), the address of ruby_global_symbols into *@out.
 * Returns 1, or 0 when the code is not exactly the expected
 * instructions (*@out untouched). Pure.
 */
int rb_global_symbols_from_code(const uint8_t *code, size_t len, uint64_t fn,
				const struct rb_offsets *off, uint64_t *out);

/*
 * rb_global_symbols_find_fd - rb_global_symbols_from_code() on the code
 * at ELF virtual address @fn_vaddr (rb_sym_immortal_count's st_value) of
 * the ELF object open on @fd (read with pread through its program
 * headers; the offset is left alone). *@out is an ELF virtual address:
 * add the load bias. Returns 1 found, 0 not recognised (or @fn_vaddr in
 * no loaded segment with file data), or -errno (-EIO: not a readable ELF
 * file).
 */
int rb_global_symbols_find_fd(int fd, uint64_t fn_vaddr,
			      const struct rb_offsets *off, uint64_t *out);

/*
 * rb_op_name - the name of operator ID @id ("+", "[]", "<=>", ...) when
 * @id <= @off->last_op_id and is an operator, else NULL (a static string).
 */
const char *rb_op_name(const struct rb_offsets *off, uint64_t id);

#endif /* PROFD_RUBY_SYMBOLS_H */
