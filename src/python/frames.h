/* SPDX-License-Identifier: GPL-2.0 */
/*
 * frames.h - the interned table of Python frames (function, file, line).
 *
 * Owns: one id per distinct (function, file, line, first line) a sample
 * showed, so aggregated stacks carry a Python frame as one 64-bit word
 * (PY_IP_FRAME | id) beside native addresses, and the profile writer can
 * name it after the process and its code objects are gone. Entries are
 * never removed while the table lives; the table is bounded by count
 * (PY_FRAMES_MAX) and by heap bytes (its strings with malloc's overhead,
 * entries and hash slots): new frames past either map to one
 * "[python: frame table full]" entry, counted. Thread-safe: the reader
 * thread adds, the writer reads.
 */
#ifndef PROFD_PYTHON_FRAMES_H
#define PROFD_PYTHON_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* Tag of a user "IP" that is a Python frame id, not an address (a
 * runtime frame token of CPython, see src/runtime/runtime.h). */
#define PY_IP_FRAME	(RUNTIME_IP_FRAME | \
			 (uint64_t)PROFD_RUNTIME_CPYTHON << RUNTIME_IP_ID_SHIFT)
/* With PY_IP_FRAME: the id is of the second table generation (python.c);
 * one of the bits a runtime's tokens keep for themselves. */
#define PY_IP_GEN	(1ULL << 61)
_Static_assert((PY_IP_GEN & RUNTIME_IP_OWN_MASK) == PY_IP_GEN, "PY_IP_GEN is CPython's own bit");
#ifndef PY_FRAMES_MAX	/* a build may set it lower, to test the rotation */
#define PY_FRAMES_MAX	(1u << 18)
#endif
#define PY_FRAMES_MAX_BYTES	(64ULL << 20)	/* per table, when given none */

/* Ids of the fixed frames every table has. */
enum py_fixed_frame {
	PY_FRAME_UNREADABLE = 1,	/* "[python: unreadable frame]" */
	PY_FRAME_BAD_CODE = 2,		/* "[python: unknown code object]" */
	PY_FRAME_TRUNCATED = 3,		/* "[python: truncated]" */
	PY_FRAME_TABLE_FULL = 4,	/* "[python: frame table full]" */
	PY_FRAME_FIRST_FREE = 5,
};

struct py_frame {
	const char *function;	/* co_qualname (co_name before 3.11) */
	const char *file;	/* co_filename */
	int line;		/* executing line, 0 if unknown */
	int first_line;		/* co_firstlineno */
};

struct py_frames;

/*
 * py_frames_new - an empty table holding the fixed frames, that holds at
 * most @max_bytes of heap (0: PY_FRAMES_MAX_BYTES). NULL on OOM.
 */
struct py_frames *py_frames_new(uint64_t max_bytes);

/* py_frames_free - free the table and its strings. NULL is fine. */
void py_frames_free(struct py_frames *t);

/*
 * py_frames_intern - the id of (@function, @file, @line, @first_line),
 * added (strings copied) if new. Returns PY_FRAME_TABLE_FULL when the
 * table is full or memory ran out (counted: py_frames_stats()).
 */
uint32_t py_frames_intern(struct py_frames *t, const char *function,
			  const char *file, int line, int first_line);

/*
 * py_frames_get - copy frame @id into *@out (strings stay owned by the
 * table, valid while it lives). Returns 0, or -ENOENT for an unknown id.
 */
int py_frames_get(struct py_frames *t, uint32_t id, struct py_frame *out);

/* py_frames_stats - frames interned, and interns refused (table full). */
void py_frames_stats(struct py_frames *t, uint64_t *frames, uint64_t *full);

/* py_frames_bytes - heap bytes @t holds: its entries, slots and strings. */
uint64_t py_frames_bytes(struct py_frames *t);

/* py_frames_half_full - the table holds half of its count or byte bound. */
bool py_frames_half_full(struct py_frames *t);

/* py_frames_empty - the table holds its fixed frames only. */
bool py_frames_empty(struct py_frames *t);

#endif /* PROFD_PYTHON_FRAMES_H */
