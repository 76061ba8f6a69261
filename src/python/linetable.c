// SPDX-License-Identifier: GPL-2.0
/*
 * linetable.c - the source line of a bytecode offset, decoded from a
 * code object's line table the way CPython's PyCode_Addr2Line does.
 *
 * Owns: the three decoders (3.9 co_lnotab, 3.10 co_linetable, 3.11+
 * location table). Each is one forward scan from the table's start, as
 * in CPython, with every read checked against the table's length: the
 * tables come from another process's memory and may be torn or hostile.
 * Each step of a scan consumes at least one byte, so a scan ends after
 * at most @len steps whatever the bytes are.
 *
 * Where CPython itself would read past the end of a malformed table (a
 * varint or a pair cut short), the answer is -1. Tables CPython writes
 * give exactly CPython's answer (tests/test_python_linetable.py compares
 * with PyCode_Addr2Line of every interpreter 3.9 - 3.13 it finds).
 */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/linetable.h"

/* A computed line as the caller sees it: lines outside 0..INT_MAX (only
 * a corrupt table or a hostile co_firstlineno gives them) are "none". */
static int as_line(int64_t line)
{
	if (line < 0 || line > INT_MAX)
		return -1;
	return (int)line;
}

/*
 * 3.9 co_lnotab (Objects/lnotab_notes.txt of 3.9): pairs (address
 * increment: unsigned byte, line increment: signed byte) from (0,
 * co_firstlineno). PyCode_Addr2Line of 3.9 adds each address increment
 * and stops before the pair whose address passes the offset, so an
 * offset past the last pair gets the last line: the table does not know
 * the code's length. A table of odd length (a torn read) ends in half a
 * pair; CPython ignores that byte, here an offset that reaches it is
 * -1, since the line increment it would carry is missing.
 */
static int lnotab_line(const uint8_t *table, size_t len, int firstlineno,
		       uint32_t byte_offset)
{
	uint64_t addr = 0;
	int64_t line = firstlineno;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		addr += table[i];
		if (addr > byte_offset)
			return as_line(line);
		line += (int8_t)table[i + 1];
	}
	if (i < len && addr + table[i] <= byte_offset)
		return -1;
	return as_line(line);
}

/*
 * 3.10 co_linetable (Objects/lnotab_notes.txt of 3.10): pairs (start
 * delta: unsigned byte, bytes of code; line delta: signed byte, -128 =
 * this range has no line and the running line is left unchanged). Each
 * pair covers [start, start + delta) with the running line after its
 * line delta; zero-length pairs only carry line deltas (CPython's
 * _PyLineTable_NextAddressRange steps over them). Offsets past the last
 * range are -1, as _PyCode_CheckLineNumber returns.
 */
static int linetable310_line(const uint8_t *table, size_t len,
			     int firstlineno, uint32_t byte_offset)
{
	uint64_t start = 0;
	int64_t line = firstlineno;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		uint8_t sdelta = table[i];
		int8_t ldelta = (int8_t)table[i + 1];

		if (ldelta != -128)
			line += ldelta;
		if (byte_offset < start + sdelta)
			return ldelta == -128 ? -1 : as_line(line);
		start += sdelta;
	}
	return -1;
}

/* Location table entry kinds (Objects/locations.md; the
 * PY_CODE_LOCATION_INFO_* of CPython's pycore_code.h). 0-9 are the short
 * forms (same line, column group 0-9). */
enum {
	LOC_ONE_LINE0 = 10,	/* 10-12: one-line forms, line delta 0-2 */
	LOC_ONE_LINE2 = 12,
	LOC_NO_COLUMNS = 13,	/* signed varint line delta */
	LOC_LONG = 14,		/* signed varint line delta, then 3 varints */
	LOC_NONE = 15,		/* no location: line -1, running line kept */
};

/* The most 6-bit chunks a varint may have: 6 fill CPython's 32-bit
 * unsigned int (its read_varint keeps the low 32 bits of the sixth);
 * a seventh would shift by 36, undefined in CPython, corrupt here. */
#define LOC_VARINT_MAX_CHUNKS 6

/*
 * Read the signed varint at @table[@pos..@len) (CPython's
 * scan_signed_varint): little-endian 6-bit chunks, bit 6 = another
 * chunk follows; the value v is v >> 1, negated when v & 1. Stores it
 * in *@out and returns 0, or returns -1 when the varint runs past @len,
 * has too many chunks, or meets a byte with bit 7 set (the start of the
 * next entry: varint bytes never have it).
 */
static int read_signed_varint(const uint8_t *table, size_t len, size_t pos,
			      int *out)
{
	uint32_t val = 0;
	unsigned int chunk;

	for (chunk = 0; chunk < LOC_VARINT_MAX_CHUNKS; chunk++, pos++) {
		uint8_t b;

		if (pos >= len)
			return -1;
		b = table[pos];
		if (b & 0x80)
			return -1;
		val |= (uint32_t)(b & 63) << (6 * chunk);
		if (!(b & 64)) {
			*out = (val & 1) ? -(int)(val >> 1) : (int)(val >> 1);
			return 0;
		}
	}
	return -1;
}

/*
 * 3.11 - 3.13 location table (PEP 657, Objects/locations.md): entries
 * that each start with a byte with bit 7 set; bits 3-6 are the kind,
 * bits 0-2 the length - 1 in code units (2 bytes). The line deltas add
 * up from co_firstlineno. As CPython's advance() does, only the first
 * byte and the line delta are decoded; the next entry starts at the
 * next byte with bit 7 set (no column byte or varint byte has it).
 * Offsets past the last entry are -1.
 */
static int locations_line(const uint8_t *table, size_t len, int firstlineno,
			  uint32_t byte_offset)
{
	uint64_t start = 0;
	int64_t line = firstlineno;
	size_t i = 0;

	while (i < len) {
		uint8_t first = table[i];
		unsigned int kind = (first >> 3) & 15;
		uint64_t end = start + ((first & 7) + 1) * 2;
		int delta = 0;

		/* Only the very first byte can fail this (the skip below
		 * stops on bit 7): CPython asserts it. */
		if (!(first & 0x80))
			return -1;
		if (kind == LOC_NO_COLUMNS || kind == LOC_LONG) {
			if (read_signed_varint(table, len, i + 1, &delta) < 0)
				return -1;
		} else if (kind >= LOC_ONE_LINE0 && kind <= LOC_ONE_LINE2) {
			delta = kind - LOC_ONE_LINE0;
		}
		line += delta;
		if (byte_offset < end)
			return kind == LOC_NONE ? -1 : as_line(line);
		start = end;
		do
			i++;
		while (i < len && !(table[i] & 0x80));
	}
	return -1;
}

int py_linetable_line(enum py_linetable_format format, const uint8_t *table,
		      size_t len, int firstlineno, uint32_t byte_offset)
{
	if (!table)
		len = 0;
	switch (format) {
	case PY_LINETABLE_LNOTAB:
		return lnotab_line(table, len, firstlineno, byte_offset);
	case PY_LINETABLE_310:
		return linetable310_line(table, len, firstlineno, byte_offset);
	case PY_LINETABLE_LOCATIONS:
		return locations_line(table, len, firstlineno, byte_offset);
	}
	return -1;
}
