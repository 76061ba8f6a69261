/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_read.h - bounds-checked reads of CFI bytes (internal to
 * src/unwind/).
 *
 * Owns: the byte cursor every read of .eh_frame/.debug_frame goes
 * through (little-endian fixed sizes, ULEB128/SLEB128, length-prefixed
 * blocks; DWARF 5 §7.5.5, §7.6) and the DW_EH_PE_* encodings of the LSB.
 * A read past the cursor's end latches "bad" and returns 0: callers test
 * it once per opcode or entry instead of after every read.
 */
#ifndef PROFD_UNWIND_DWARF_READ_H
#define PROFD_UNWIND_DWARF_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* DW_EH_PE_*: pointer encodings of .eh_frame (LSB 5.0, 10.5). */
enum {
	DW_EH_PE_absptr = 0x00,
	DW_EH_PE_uleb128 = 0x01,
	DW_EH_PE_udata2 = 0x02,
	DW_EH_PE_udata4 = 0x03,
	DW_EH_PE_udata8 = 0x04,
	DW_EH_PE_signed = 0x08,
	DW_EH_PE_sleb128 = 0x09,
	DW_EH_PE_sdata2 = 0x0a,
	DW_EH_PE_sdata4 = 0x0b,
	DW_EH_PE_sdata8 = 0x0c,
	DW_EH_PE_pcrel = 0x10,
	DW_EH_PE_textrel = 0x20,
	DW_EH_PE_datarel = 0x30,
	DW_EH_PE_funcrel = 0x40,
	DW_EH_PE_aligned = 0x50,
	DW_EH_PE_indirect = 0x80,
	DW_EH_PE_omit = 0xff,
};

struct cur {
	const uint8_t *p, *end;
	bool bad;		/* a read ran past end; reads then return 0 */
};

static inline uint8_t rd_u8(struct cur *c)
{
	if (c->p >= c->end) {
		c->bad = true;
		return 0;
	}
	return *c->p++;
}

/* rd_le - @n (0..8) bytes, little-endian. */
static inline uint64_t rd_le(struct cur *c, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

/* rd_uleb - ULEB128; bits beyond 64 are dropped. */
static inline uint64_t rd_uleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

static inline int64_t rd_sleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return (int64_t)v;
		}
	}
	c->bad = true;
	return 0;
}

/* skip_block - step over a ULEB128 length and that many bytes. */
static inline void skip_block(struct cur *c)
{
	uint64_t len = rd_uleb(c);

	if (len > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		c->p = c->end;
		return;
	}
	c->p += len;
}

#endif /* PROFD_UNWIND_DWARF_READ_H */
