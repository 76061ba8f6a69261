// SPDX-License-Identifier: GPL-2.0
/*
 * test_v8_baseline.c - v8_baseline_offset() (src/v8/code.c): the
 * bytecode offset of a baseline code offset, from a hand-made bytecode
 * offset table and bytecodes (a layout of six bytecodes: the four
 * prefixes of V8 11.3, a one-byte one and one with two one-byte
 * operands), against the offsets V8's BytecodeOffsetIterator gives for
 * them (worked out by hand below). Every prefix of the table and of the
 * bytecodes (a torn read) answers the full answer or -EPROTO, never
 * another offset; both sit flush against a PROT_NONE page, so a read
 * past their end kills the program. Prints one line per check; exits 1
 * if any failed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "v8/code.h"

#include "check.h"

enum { WIDE, EXTRA_WIDE, DBG_WIDE, DBG_EXTRA_WIDE, NOP, ADD, NBYTECODES };

/*
 * Bytecodes: offset 0 Add r a (3 bytes), 3 Nop (1), 4 Wide Add r a
 * (1 + 5), 10 ExtraWide Add r a (1 + 9), 20 Nop.
 */
static const uint8_t bc[] = {
	ADD, 1, 2, NOP, WIDE, ADD, 1, 0, 2, 0, EXTRA_WIDE, ADD, 1, 0, 0, 0, 2, 0, 0, 0, NOP,
};
/*
 * Code ends: the prologue at 10; offset 0 at 15, 3 at 15 (no code), 4
 * at 22, 10 at 222 (a two-byte VLQ: 200 = 0xc8 0x01), 20 at 225.
 */
static const uint8_t tab[] = { 10, 5, 0, 7, 0xc8, 0x01, 3 };

static const struct {
	uint64_t target;
	int64_t offset;		/* -1: the prologue; -100: -EPROTO */
} cases[] = {
	{ 0, -1 }, { 1, -1 }, { 10, -1 }, { 11, 0 }, { 15, 0 }, { 16, 4 }, { 22, 4 },
	{ 23, 10 }, { 222, 10 }, { 223, 20 }, { 225, 20 }, { 226, -100 }, { 100000, -100 },
};

/* @n bytes of @src copied flush against a PROT_NONE page. */
static uint8_t *flush(uint8_t *area, long page, const uint8_t *src, size_t n)
{
	uint8_t *p = area + page - n;

	memcpy(p, src, n);
	return p;
}

static int at(const struct v8_layout *l, const uint8_t *t, uint32_t nt, const uint8_t *b,
	      uint32_t nb, uint64_t target)
{
	int64_t off = -7;
	int err = v8_baseline_offset(l, t, nt, b, nb, target, &off);

	return err ? (err == -EPROTO ? -100 : -200) : (int)off;
}

int main(void)
{
	static struct v8_layout l;
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *area = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
	uint8_t *ta, *ba;

	if (area == MAP_FAILED || mprotect(area + page, page, PROT_NONE) ||
	    mprotect(area + 3 * page, page, PROT_NONE)) {
		perror("mmap");
		return 2;
	}
	l.nbytecodes = NBYTECODES;
	l.nprefixes = 4;
	for (int i = 0; i < NBYTECODES; i++)
		for (int s = 0; s < 3; s++)
			l.bytecode_sizes[s][i] = 1;
	l.bytecode_sizes[0][ADD] = 3;
	l.bytecode_sizes[1][ADD] = 5;
	l.bytecode_sizes[2][ADD] = 9;

	ta = flush(area, page, tab, sizeof(tab));
	ba = flush(area + 2 * page, page, bc, sizeof(bc));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = at(&l, ta, sizeof(tab), ba, sizeof(bc), cases[i].target);

		CHECK(got == cases[i].offset, "target %llu: bytecode offset %d (want %lld)",
		      (unsigned long long)cases[i].target, got, (long long)cases[i].offset);
	}
	/* torn reads: every prefix of the table, of the bytecodes */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int bad = 0;

		for (uint32_t n = 0; n < sizeof(tab); n++) {
			int got = at(&l, flush(area, page, tab, n), n, ba, sizeof(bc),
				     cases[i].target);

			bad += got != cases[i].offset && got != -100;
		}
		for (uint32_t n = 0; n < sizeof(bc); n++) {
			int got = at(&l, ta = flush(area, page, tab, sizeof(tab)), sizeof(tab),
				     flush(area + 2 * page, page, bc, n), n, cases[i].target);

			bad += got != cases[i].offset && got != -100;
		}
		ba = flush(area + 2 * page, page, bc, sizeof(bc));
		CHECK(!bad, "target %llu: torn table or bytecodes: the offset or -EPROTO (%d other)",
		      (unsigned long long)cases[i].target, bad);
	}
	/* malformed bytecodes: unknown, a prefix before a prefix, a prefix last */
	{
		static const uint8_t unknown[] = { NBYTECODES, 1, 2, NOP };
		static const uint8_t twice[] = { WIDE, EXTRA_WIDE, ADD, 1, 2 };
		static const uint8_t last[] = { NOP, WIDE };

		CHECK(at(&l, ta, sizeof(tab), flush(area + 2 * page, page, unknown, sizeof(unknown)),
			 sizeof(unknown), 16) == -100, "an unknown bytecode: -EPROTO");
		CHECK(at(&l, ta, sizeof(tab), flush(area + 2 * page, page, twice, sizeof(twice)),
			 sizeof(twice), 11) == -100, "a prefix before a prefix: -EPROTO");
		CHECK(at(&l, ta, sizeof(tab), flush(area + 2 * page, page, last, sizeof(last)),
			 sizeof(last), 16) == -100, "a prefix as the last byte: -EPROTO");
	}
	/* a VLQ whose continuation runs past the table */
	{
		static const uint8_t cont[] = { 10, 0x85 };

		CHECK(at(&l, flush(area, page, cont, sizeof(cont)), sizeof(cont), ba, sizeof(bc),
			 11) == -100, "a VLQ cut at the table's end: -EPROTO");
	}
	return failures ? 1 : 0;
}
