/* SPDX-License-Identifier: GPL-2.0 */
/*
 * linetable.h - source line of a bytecode offset, from a code object's
 * line table, for the three formats CPython 3.9 - 3.13 use.
 *
 * Formats: 3.9 co_lnotab (Objects/lnotab_notes.txt of 3.9), 3.10
 * co_linetable (Objects/lnotab_notes.txt of 3.10), 3.11+ co_linetable
 * location table (PEP 657; Objects/locations.md). The result equals what
 * CPython itself reports: PyCode_Addr2Line(code, byte_offset).
 */
#ifndef PROFD_PYTHON_LINETABLE_H
#define PROFD_PYTHON_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

#include "python/offsets.h"

/*
 * py_linetable_line - the line of the instruction at @byte_offset (bytes
 * from the start of the bytecode; code units are 2 bytes) in a code
 * object whose co_firstlineno is @firstlineno and whose table of @format
 * is @table[0..@len) (read only; NULL is taken as empty). Returns the
 * line (>= 0), or -1 when the table gives none: an instruction without
 * a location (3.10+), an offset past the table's end (3.10+; a 3.9
 * co_lnotab does not know the code's length, so there such an offset
 * gets the last line, as in CPython), a computed line outside
 * 0..INT_MAX, or a truncated/corrupt table that the answer depends on.
 * Never reads past @len and takes at most @len steps, whatever the
 * bytes; allocates nothing; thread-safe.
 */
int py_linetable_line(enum py_linetable_format format, const uint8_t *table,
		      size_t len, int firstlineno, uint32_t byte_offset);

#endif /* PROFD_PYTHON_LINETABLE_H */
