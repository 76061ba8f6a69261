// SPDX-License-Identifier: GPL-2.0
/*
 * test_unwind_cfi.c - the unwind-table compiler on hand-assembled CFI:
 * every DW_CFA_* opcode, the pointer encodings and augmentations,
 * .debug_frame versions 1/3/4 and 64-bit DWARF, the PLT expressions,
 * signal frames, overlap resolution, END rows, and each counted error.
 * Real compilers never emit most of these, so tests/test_unwind_table.py
 * (readelf on real files) cannot reach them.
 *
 * Sections are built in a byte buffer and fed to
 * unwind_table_build_section(). Prints one line per check; exits 1 if
 * any failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/compile.h"

#include "check.h"

#define VA	0x10000ull	/* where the test sections "are mapped" */
#define TEXT	0x400000ull	/* where the functions they describe are */

/* ---- a tiny assembler ------------------------------------------------ */

struct buf {
	uint8_t b[8192];
	size_t n;
};

static void u8(struct buf *b, uint8_t v)
{
	b->b[b->n++] = v;
}

static void un(struct buf *b, uint64_t v, int n)
{
	while (n--) {
		u8(b, (uint8_t)v);
		v >>= 8;
	}
}

static void uleb(struct buf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		u8(b, c | (v ? 0x80 : 0));
	} while (v);
}

static void sleb(struct buf *b, int64_t v)
{
	bool more = true;

	while (more) {
		uint8_t c = v & 0x7f;

		v >>= 7;
		more = !((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40)));
		u8(b, c | (more ? 0x80 : 0));
	}
}

static void bytes(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

/* open/close: a 32-bit length patched at close. */
static size_t open_entry(struct buf *b)
{
	size_t at = b->n;

	un(b, 0, 4);
	return at;
}

static void close_entry(struct buf *b, size_t at)
{
	uint32_t len = (uint32_t)(b->n - at - 4);

	memcpy(b->b + at, &len, 4);
}

#define INS(...)	(const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })

/* the usual x86-64 CIE body: def_cfa rsp+8, ra at cfa-8 */
#define CIE_STD		0x0c, 7, 8, 0x90, 1

/* eh_cie - an .eh_frame CIE "zR" (pcrel|sdata4) unless @aug says else. */
static size_t eh_cie_aug(struct buf *b, const char *aug, const uint8_t *ad,
			 size_t adn, const uint8_t *ins, size_t n)
{
	size_t at = open_entry(b);

	un(b, 0, 4);
	u8(b, 1);
	bytes(b, aug, strlen(aug) + 1);
	uleb(b, 1);
	sleb(b, -8);
	u8(b, 16);
	if (aug[0] == 'z') {
		uleb(b, adn);
		bytes(b, ad, adn);
	}
	bytes(b, ins, n);
	close_entry(b, at);
	return at;
}

static size_t eh_cie(struct buf *b, const uint8_t *ins, size_t n)
{
	return eh_cie_aug(b, "zR", (const uint8_t[]){ 0x1b }, 1, ins, n);
}

/* eh_fde - an FDE for [@start, @start + @len) with pcrel|sdata4 pointers. */
static void eh_fde(struct buf *b, size_t cie, uint64_t start, uint32_t len,
		   const uint8_t *ins, size_t n)
{
	size_t at = open_entry(b);
	size_t field;

	un(b, b->n - cie, 4);
	field = b->n;
	un(b, (uint32_t)(start - (VA + field)), 4);
	un(b, len, 4);
	uleb(b, 0);	/* "z": no augmentation data */
	bytes(b, ins, n);
	close_entry(b, at);
}

/* eh_fde_abs - the same under a CIE "zR" with udata8 (absolute) pointers. */
static void eh_fde_abs(struct buf *b, size_t cie, uint64_t start, uint64_t len,
		       const uint8_t *ins, size_t n)
{
	size_t at = open_entry(b);

	un(b, b->n - cie, 4);
	un(b, start, 8);
	un(b, len, 8);
	uleb(b, 0);
	bytes(b, ins, n);
	close_entry(b, at);
}

#define ABS_CIE(b)	eh_cie_aug(b, "zR", INS(0x04), INS(CIE_STD))

/* ---- checking --------------------------------------------------------- */

static void fmt(const struct unwind_row *r, char *s)
{
	static const char *const cfa[] = { "end", "rsp", "rbp", "plt1", "plt2",
					   "u", "sig", "outer", "plt3" };
	int n;

	if (!r) {
		strcpy(s, "-");
		return;
	}
	n = UNWIND_ROW_CFA_TYPE(r) <= 8 ?
		sprintf(s, "%s", cfa[UNWIND_ROW_CFA_TYPE(r)]) :
		sprintf(s, "?");
	if (UNWIND_ROW_CFA_TYPE(r) == UNWIND_CFA_RSP ||
	    UNWIND_ROW_CFA_TYPE(r) == UNWIND_CFA_RBP)
		n += sprintf(s + n, "+%u", r->cfa_off8 * 8u);
	if (UNWIND_ROW_RBP_TYPE(r) == UNWIND_RBP_CFA_OFFSET)
		sprintf(s + n, " c%+d", r->rbp_off8 * 8);
	else if (UNWIND_ROW_RBP_TYPE(r) == UNWIND_RBP_UNSUPPORTED)
		sprintf(s + n, " x");
}

static void expect(const struct unwind_table *t, uint64_t va, const char *want,
		   const char *what)
{
	char got[64];

	fmt(unwind_table_find(t, va), got);
	CHECK(!strcmp(got, want), "%s: at %#" PRIx64 " got \"%s\" want \"%s\"",
	      what, va, got, want);
}

static int build(const struct buf *b, bool debug, struct unwind_table *t,
		 struct unwind_build_stats *st)
{
	return unwind_table_build_section(b->b, b->n, VA, debug, t, st);
}

/* ---- tests ------------------------------------------------------------ */

static void test_basic_rules(void)
{
	struct buf b = { .n = 0 };
	struct unwind_table t;
	struct unwind_build_stats st;
	size_t cie = eh_cie(&b, INS(CIE_STD));
	int ret;

	/* push rbp; mov rsp,rbp; ...; leave; ret */
	eh_fde(&b, cie, TEXT, 0x40, INS(
		0x41,			/* advance 1 */
		0x0e, 16,		/* def_cfa_offset 16 */
		0x86, 2,		/* rbp at cfa-16 */
		0x43,			/* advance 3 */
		0x0d, 6,		/* def_cfa_register rbp */
		0x02, 0x30,		/* advance_loc1 0x30 */
		0x0c, 7, 8,		/* def_cfa rsp+8 */
		0xc6));			/* restore rbp */
	ret = build(&b, false, &t, &st);
	CHECK(ret == 0 && st.cies == 1 && st.fdes == 1 && !st.errors,
	      "basic: built (ret %d cies %u fdes %u errors %u)", ret, st.cies,
	      st.fdes, st.errors);
	CHECK(t.base == TEXT, "basic: base %#" PRIx64, t.base);
	expect(&t, TEXT - 1, "-", "below base");
	expect(&t, TEXT, "rsp+8", "entry");
	expect(&t, TEXT + 1, "rsp+16 c-16", "after push");
	expect(&t, TEXT + 3, "rsp+16 c-16", "before mov");
	expect(&t, TEXT + 4, "rbp+16 c-16", "frame");
	expect(&t, TEXT + 0x33, "rbp+16 c-16", "frame end");
	expect(&t, TEXT + 0x34, "rsp+8", "after leave (restore)");
	expect(&t, TEXT + 0x3f, "rsp+8", "last byte");
	expect(&t, TEXT + 0x40, "-", "END");
	CHECK(t.nr_rows == 5 && UNWIND_ROW_CFA_TYPE(&t.rows[4]) == UNWIND_CFA_END,
	      "basic: 4 rows + END (%u)", t.nr_rows);
	unwind_table_free(&t);
}

static void test_opcodes(void)
{
	struct buf b = { .n = 0 };
	struct unwind_table t;
	struct unwind_build_stats st;
	size_t cie = ABS_CIE(&b);
	int ret;

	eh_fde_abs(&b, cie, TEXT, 0x1000, INS(
		0x00,				/* nop */
		0x0a,				/* remember_state */
		0x12, 7, 0x7e,			/* def_cfa_sf rsp, -2*-8 = 16 */
		0x05, 6, 3,			/* offset_extended rbp 3*-8 */
		0x41,
		0x13, 0x7c,			/* def_cfa_offset_sf -4*-8 = 32 */
		0x11, 6, 0x7c,			/* offset_extended_sf rbp 32 */
		0x03, 0x02, 0x00,		/* advance_loc2 2 */
		0x2f, 6, 5,			/* GNU_negative_offset_ext 5*8 */
		0x2e, 0x40,			/* GNU_args_size 64 */
		0x04, 1, 0, 0, 0,		/* advance_loc4 1 */
		0x14, 6, 1,			/* val_offset rbp */
		0x41,
		0x08, 6,			/* same_value rbp */
		0x41,
		0x09, 6, 3,			/* register rbp in rbx */
		0x41,
		0x07, 6,			/* undefined rbp */
		0x41,
		0x10, 6, 2, 0x76, 0x00,		/* expression rbp */
		0x41,
		0x0b,				/* restore_state */
		0x41,
		0x16, 6, 1, 0x9c,		/* val_expression rbp */
		0x15, 3, 0x7f,			/* val_offset_sf rbx */
		0x06, 6,			/* restore_extended rbp */
		0x41,
		0x0e, 0x80, 0x80, 0x04,		/* def_cfa_offset 65536 */
		0x41,
		0x0e, 12,			/* def_cfa_offset 12: not /8 */
		0x41,
		0x0e, 0xf8, 0xff, 0x1f,		/* 65535*8: the largest */
		0x41,
		0x0e, 0x80, 0x80, 0x20,		/* 65536*8: too large */
		0x41,
		0x0c, 3, 8,			/* def_cfa rbx+8 */
		0x41,
		0x0c, 7, 8, 0x86, 0x7f,		/* rbp at cfa-1016 (s8 -127) */
		0x41,
		0x86, 0x81, 0x01,		/* rbp at cfa-1032: too far */
		0x41,
		0x81, 0x7f,			/* offset r1: ignored */
		0xc1,				/* restore r1: ignored */
		0x90, 2,			/* ra at cfa-16: unusable */
		0x41,
		0x07, 16,			/* undefined ra (_start) */
		0x41,
		0x1d, 1, 0, 0, 0, 0, 0, 0, 0,	/* MIPS_advance_loc8 1 */
		0xd0,				/* restore ra */
		0x01, 0x20, 0, 0x40, 0, 0, 0, 0, 0)); /* set_loc TEXT+0x20 */
	ret = build(&b, false, &t, &st);
	CHECK(ret == 0 && !st.errors, "opcodes: built (ret %d, errors %u)",
	      ret, st.errors);
	expect(&t, TEXT, "rsp+16 c-24", "def_cfa_sf, offset_extended");
	expect(&t, TEXT + 1, "rsp+32 c+32", "def_cfa_offset_sf, offset_extended_sf");
	expect(&t, TEXT + 3, "rsp+32 c+40", "GNU_negative_offset_extended");
	expect(&t, TEXT + 4, "rsp+32 x", "val_offset");
	expect(&t, TEXT + 5, "rsp+32", "same_value");
	expect(&t, TEXT + 6, "rsp+32 x", "register");
	expect(&t, TEXT + 7, "rsp+32", "undefined");
	expect(&t, TEXT + 8, "rsp+32 x", "expression");
	expect(&t, TEXT + 9, "rsp+8", "restore_state (CFA too)");
	expect(&t, TEXT + 10, "rsp+8", "restore_extended after val_expression");
	expect(&t, TEXT + 11, "rsp+65536", "def_cfa_offset 64 KiB");
	expect(&t, TEXT + 12, "u", "CFA offset not a multiple of 8");
	expect(&t, TEXT + 13, "rsp+524280", "CFA offset 65535*8");
	expect(&t, TEXT + 14, "u", "CFA offset 65536*8");
	expect(&t, TEXT + 15, "u", "CFA on rbx");
	expect(&t, TEXT + 16, "rsp+8 c-1016", "rbp at s8 limit");
	expect(&t, TEXT + 17, "rsp+8 x", "rbp beyond s8");
	expect(&t, TEXT + 18, "u x", "ra not at CFA-8");
	expect(&t, TEXT + 19, "outer", "ra undefined: outermost frame");
	expect(&t, TEXT + 20, "outer", "MIPS_advance_loc8");
	expect(&t, TEXT + 21, "rsp+8 x", "restore ra");
	expect(&t, TEXT + 0x20, "rsp+8 x", "set_loc");
	expect(&t, TEXT + 0xfff, "rsp+8 x", "last byte");
	CHECK(st.rows_unsupported >= 8, "opcodes: unsupported rows %u",
	      st.rows_unsupported);
	unwind_table_free(&t);
}

static void test_plt_and_signal(void)
{
	struct buf b = { .n = 0 };
	struct unwind_table t;
	struct unwind_build_stats st;
	size_t cie = eh_cie(&b, INS(CIE_STD));
	size_t sig;
	int ret;

	/* .plt as binutils writes it */
	eh_fde(&b, cie, TEXT, 0x40, INS(0x0e, 16, 0x46, 0x0e, 24, 0x4a,
		0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22));
	/* .plt.sec */
	eh_fde(&b, cie, TEXT + 0x40, 0x20, INS(
		0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22));
	/* lit12: not a PLT expression; then def_cfa_offset keeps it */
	eh_fde(&b, cie, TEXT + 0x60, 0x20, INS(
		0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3c, 0x2a, 0x33, 0x24, 0x22,
		0x41, 0x0e, 16, 0x41, 0x0d, 7));
	/* a sigreturn trampoline: CIE "zRS" */
	sig = eh_cie_aug(&b, "zRS", (const uint8_t[]){ 0x1b }, 1,
			 INS(0x0f, 4, 0x77, 0xa0, 0x01, 0x06));
	eh_fde(&b, sig, TEXT + 0x81, 0x9, INS(0x00));
	ret = build(&b, false, &t, &st);
	CHECK(ret == 0 && !st.errors && st.cies == 2 && st.fdes == 4,
	      "plt: built (ret %d errors %u fdes %u)", ret, st.errors, st.fdes);
	expect(&t, TEXT, "rsp+16", "plt0");
	expect(&t, TEXT + 6, "rsp+24", "plt0 after push");
	expect(&t, TEXT + 0x10, "plt1", "plt entries");
	expect(&t, TEXT + 0x3f, "plt1", "plt last byte");
	expect(&t, TEXT + 0x40, "plt2", ".plt.sec");
	expect(&t, TEXT + 0x60, "u", "other expression");
	expect(&t, TEXT + 0x61, "u", "def_cfa_offset after expression");
	expect(&t, TEXT + 0x62, "rsp+16", "def_cfa_register ends the expression");
	expect(&t, TEXT + 0x80, "-", "gap before the trampoline");
	expect(&t, TEXT + 0x81, "sig", "signal frame");
	expect(&t, TEXT + 0x8a, "-", "after");
	CHECK(st.rows_plt == 2 && st.rows_signal == 1, "plt rows %u signal rows %u",
	      st.rows_plt, st.rows_signal);
	unwind_table_free(&t);
}

/* augmentations and pointer encodings of .eh_frame */
static void test_encodings(void)
{
	struct buf b = { .n = 0 };
	struct unwind_table t;
	struct unwind_build_stats st;
	size_t c1, c2, c3, c4, at;
	int ret;

	/* "zPLR": personality indirect|pcrel|sdata4, LSDA pcrel|sdata4 */
	c1 = eh_cie_aug(&b, "zPLR", INS(0x9b, 0x10, 0, 0, 0, 0x1b, 0x1b), INS(CIE_STD));
	at = open_entry(&b);
	un(&b, b.n - c1, 4);
	un(&b, (uint32_t)(TEXT - (VA + b.n)), 4);
	un(&b, 0x10, 4);
	uleb(&b, 4);		/* augmentation data: the LSDA pointer */
	un(&b, 0x1234, 4);
	bytes(&b, INS(0x41, 0x0e, 16));
	close_entry(&b, at);

	/* "zR" udata8 absolute */
	c2 = eh_cie_aug(&b, "zR", INS(0x04), INS(CIE_STD));
	at = open_entry(&b);
	un(&b, b.n - c2, 4);
	un(&b, TEXT + 0x10, 8);
	un(&b, 0x10, 8);
	uleb(&b, 0);
	bytes(&b, INS(0x42, 0x0e, 24));
	close_entry(&b, at);

	/* "zR" uleb128, and "zR" sleb128|pcrel */
	c3 = eh_cie_aug(&b, "zR", INS(0x01), INS(CIE_STD));
	at = open_entry(&b);
	un(&b, b.n - c3, 4);
	uleb(&b, TEXT + 0x20);
	uleb(&b, 0x10);
	uleb(&b, 0);
	bytes(&b, INS(0x43, 0x0e, 32));
	close_entry(&b, at);
	c4 = eh_cie_aug(&b, "zR", INS(0x19), INS(CIE_STD));
	at = open_entry(&b);
	un(&b, b.n - c4, 4);
	sleb(&b, (int64_t)(TEXT + 0x30 - (VA + b.n)));
	uleb(&b, 0x10);
	uleb(&b, 0);
	bytes(&b, INS(0x44, 0x0e, 40));
	close_entry(&b, at);

	/* legacy "eh": an 8-byte EH data pointer, no augmentation data;
	 * FDE addresses absptr */
	at = open_entry(&b);
	c1 = at;
	un(&b, 0, 4);
	u8(&b, 1);
	bytes(&b, "eh", 3);
	un(&b, 0xdeadbeef, 8);
	uleb(&b, 1);
	sleb(&b, -8);
	u8(&b, 16);
	bytes(&b, INS(CIE_STD));
	close_entry(&b, at);
	at = open_entry(&b);
	un(&b, b.n - c1, 4);
	un(&b, TEXT + 0x40, 8);
	un(&b, 0x10, 8);
	bytes(&b, INS(0x45, 0x0e, 48));
	close_entry(&b, at);

	/* a zero terminator in the middle: the walk goes on */
	un(&b, 0, 4);

	/* unknown augmentation letter after 'z': skipped by length */
	c1 = eh_cie_aug(&b, "zRX", INS(0x1b, 0xee, 0xee), INS(CIE_STD));
	eh_fde(&b, c1, TEXT + 0x50, 0x10, INS(0x46, 0x0e, 56));

	ret = build(&b, false, &t, &st);
	CHECK(ret == 0 && !st.errors && st.fdes == 6,
	      "encodings: built (ret %d errors %u fdes %u)", ret, st.errors, st.fdes);
	expect(&t, TEXT + 1, "rsp+16", "zPLR");
	expect(&t, TEXT + 0x12, "rsp+24", "udata8");
	expect(&t, TEXT + 0x23, "rsp+32", "uleb128");
	expect(&t, TEXT + 0x34, "rsp+40", "sleb128|pcrel");
	expect(&t, TEXT + 0x45, "rsp+48", "legacy eh");
	expect(&t, TEXT + 0x56, "rsp+56", "after a zero terminator, unknown aug");
	CHECK(t.nr_rows == 13, "encodings: contiguous FDEs, one END (%u rows)",
	      t.nr_rows);
	unwind_table_free(&t);
}

/* .debug_frame: versions 1, 3, 4 and 64-bit DWARF */
static void test_debug_frame(void)
{
	struct buf b = { .n = 0 };
	struct unwind_table t;
	struct unwind_build_stats st;
	size_t c1, c3, c4, c64, at;
	int ret;

	c1 = open_entry(&b);			/* version 1, ra as a byte */
	un(&b, 0xffffffff, 4);
	u8(&b, 1);
	u8(&b, 0);
	uleb(&b, 1);
	sleb(&b, -8);
	u8(&b, 16);
	bytes(&b, INS(CIE_STD));
	close_entry(&b, c1);
	c3 = open_entry(&b);			/* version 3, ra uleb */
	un(&b, 0xffffffff, 4);
	u8(&b, 3);
	u8(&b, 0);
	uleb(&b, 1);
	sleb(&b, -8);
	uleb(&b, 16);
	bytes(&b, INS(CIE_STD));
	close_entry(&b, c3);
	c4 = open_entry(&b);			/* version 4: addr 8, seg 0 */
	un(&b, 0xffffffff, 4);
	u8(&b, 4);
	u8(&b, 0);
	u8(&b, 8);
	u8(&b, 0);
	uleb(&b, 1);
	sleb(&b, -8);
	uleb(&b, 16);
	bytes(&b, INS(CIE_STD));
	close_entry(&b, c4);
	/* FDEs: CIE pointer is a section offset */
	at = open_entry(&b);
	un(&b, c1, 4);
	un(&b, TEXT, 8);
	un(&b, 0x10, 8);
	bytes(&b, INS(0x41, 0x0e, 16));
	close_entry(&b, at);
	at = open_entry(&b);
	un(&b, c3, 4);
	un(&b, TEXT + 0x10, 8);
	un(&b, 0x10, 8);
	bytes(&b, INS(0x41, 0x0e, 24));
	close_entry(&b, at);
	at = open_entry(&b);
	un(&b, c4, 4);
	un(&b, TEXT + 0x20, 8);
	un(&b, 0x10, 8);
	bytes(&b, INS(0x41, 0x0e, 32));
	close_entry(&b, at);
	/* 64-bit DWARF: 0xffffffff + 8-byte length, 8-byte ids */
	c64 = b.n;
	un(&b, 0xffffffff, 4);
	at = b.n;
	un(&b, 0, 8);
	un(&b, UINT64_MAX, 8);
	u8(&b, 3);
	u8(&b, 0);
	uleb(&b, 1);
	sleb(&b, -8);
	uleb(&b, 16);
	bytes(&b, INS(CIE_STD));
	{
		uint64_t len = b.n - at - 8;

		memcpy(b.b + at, &len, 8);
	}
	un(&b, 0xffffffff, 4);
	at = b.n;
	un(&b, 0, 8);
	un(&b, c64, 8);
	un(&b, TEXT + 0x30, 8);
	un(&b, 0x10, 8);
	bytes(&b, INS(0x41, 0x0e, 40));
	{
		uint64_t len = b.n - at - 8;

		memcpy(b.b + at, &len, 8);
	}
	ret = build(&b, true, &t, &st);
	CHECK(ret == 0 && !st.errors && st.cies == 4 && st.fdes == 4,
	      "debug_frame: built (ret %d errors %u cies %u fdes %u)", ret,
	      st.errors, st.cies, st.fdes);
	expect(&t, TEXT + 1, "rsp+16", "version 1");
	expect(&t, TEXT + 0x11, "rsp+24", "version 3");
	expect(&t, TEXT + 0x21, "rsp+32", "version 4");
	expect(&t, TEXT + 0x31, "rsp+40", "64-bit DWARF");
	expect(&t, TEXT + 0x40, "-", "END");
	unwind_table_free(&t);

	/* the same bytes as .eh_frame: ids are not CIE ids there */
	ret = build(&b, false, &t, &st);
	CHECK(ret == -EINVAL && st.errors > 0, "debug_frame read as eh_frame: "
	      "ret %d errors %u", ret, st.errors);
	unwind_table_free(&t);
}

/* overlaps, gaps, merging, the 4 GiB span */
static void test_layout(void)
{
	struct buf b = { .n = 0 };
	struct unwind_table t;
	struct unwind_build_stats st;
	size_t cie = eh_cie(&b, INS(CIE_STD));
	int ret;

	eh_fde(&b, cie, TEXT + 0x100, 0x20, INS(0x48, 0x0e, 16));  /* later in .text */
	eh_fde(&b, cie, TEXT, 0x40, INS(0x48, 0x0e, 16));	     /* A */
	eh_fde(&b, cie, TEXT + 0x20, 0x40, INS(0x0e, 24, 0x68, 0x0e, 32)); /* B: overlaps A */
	eh_fde(&b, cie, TEXT, 0x10, INS(0x0e, 40));		     /* inside A: hidden */
	eh_fde(&b, cie, TEXT + 0x60, 0x10, INS(0x00));	     /* contiguous, rsp+8 */
	eh_fde(&b, cie, TEXT + 0x70, 0x10, INS(0x00));	     /* same rules: merged */
	eh_fde(&b, cie, TEXT + 0x200, 0, INS(0x00));		     /* empty */
	eh_fde_abs(&b, ABS_CIE(&b), TEXT + 0x100000000ull, 0x10, INS(0x00)); /* > 4 GiB */
	ret = build(&b, false, &t, &st);
	CHECK(ret == 0 && st.fdes == 5 && st.fdes_overlap == 2 &&
	      st.fdes_empty == 1 && st.err[UNWIND_ERR_RANGE] == 1,
	      "layout: ret %d fdes %u overlap %u empty %u range %u", ret,
	      st.fdes, st.fdes_overlap, st.fdes_empty, st.err[UNWIND_ERR_RANGE]);
	expect(&t, TEXT, "rsp+8", "A first row (not the hidden FDE)");
	expect(&t, TEXT + 8, "rsp+16", "A");
	expect(&t, TEXT + 0x3f, "rsp+16", "A wins over B");
	expect(&t, TEXT + 0x40, "rsp+24", "B from A's end, its row in force there");
	expect(&t, TEXT + 0x47, "rsp+24", "B");
	expect(&t, TEXT + 0x48, "rsp+32", "B");
	expect(&t, TEXT + 0x60, "rsp+8", "contiguous");
	expect(&t, TEXT + 0x7f, "rsp+8", "merged");
	expect(&t, TEXT + 0x80, "-", "gap");
	expect(&t, TEXT + 0x100, "rsp+8", "after the gap");
	expect(&t, TEXT + 0x108, "rsp+16", "after the gap");
	expect(&t, TEXT + 0x120, "-", "end");
	expect(&t, TEXT + 0x100000000ull, "-", "beyond 4 GiB");
	/* rows: A0 A8 B40 B48 C60 END80 D100 D108 END120 */
	CHECK(t.nr_rows == 9, "layout: %u rows", t.nr_rows);
	unwind_table_free(&t);
}

/* every counted error; the good FDE around the bad ones survives */
static void test_errors(void)
{
	struct buf b = { .n = 0 };
	struct unwind_table t;
	struct unwind_build_stats st;
	size_t cie = eh_cie(&b, INS(CIE_STD));
	size_t bad, at;
	uint8_t deep[40];
	int ret, i;

	eh_fde(&b, cie, TEXT, 0x10, INS(0x41, 0x0e, 16));		/* good */
	eh_fde(&b, cie, TEXT + 0x10, 0x10, INS(0x3f));			/* opcode */
	eh_fde(&b, cie, TEXT + 0x20, 0x10, INS(0x02, 0x11));		/* past end */
	eh_fde(&b, cie, TEXT + 0x30, 0x10, INS(0x0b));			/* underflow */
	for (i = 0; i < 33; i++)
		deep[i] = 0x0a;
	eh_fde(&b, cie, TEXT + 0x40, 0x10, deep, 33);			/* overflow */
	eh_fde(&b, cie, TEXT + 0x50, 0x10, INS(0x0e));			/* operand cut */
	eh_fde(&b, cie, TEXT + 0x60, 0x10, INS(0x0f, 0x20, 1));	/* block cut */
	eh_fde(&b, cie, TEXT + 0x70, 0x10, INS(0x42, 0x01, 0xf0, 0xff, 0xff, 0xff)); /* set_loc back */
	at = open_entry(&b);						/* CIE ptr */
	un(&b, 0x7fffffff, 4);
	un(&b, 0, 8);
	close_entry(&b, at);
	at = open_entry(&b);						/* ptr to FDE */
	un(&b, b.n - 0x16, 4);	/* the first FDE */
	un(&b, 0, 8);
	close_entry(&b, at);
	bad = eh_cie_aug(&b, "zR", INS(0x1b), INS(0x41));		/* advance in CIE */
	eh_fde(&b, bad, TEXT + 0x80, 0x10, INS(0x00));
	bad = eh_cie_aug(&b, "zR", INS(0x2b), INS(CIE_STD));		/* textrel */
	eh_fde(&b, bad, TEXT + 0x90, 0x10, INS(0x00));
	bad = eh_cie_aug(&b, "zR", INS(0x3b), INS(CIE_STD));		/* datarel, no .got */
	eh_fde(&b, bad, TEXT + 0xa0, 0x10, INS(0x00));
	bad = eh_cie_aug(&b, "zR", INS(0x0e), INS(CIE_STD));		/* bad format */
	eh_fde(&b, bad, TEXT + 0xb0, 0x10, INS(0x00));
	at = open_entry(&b);						/* version 2 */
	un(&b, 0, 4);
	u8(&b, 2);
	close_entry(&b, at);
	bad = eh_cie_aug(&b, "R", NULL, 0, INS(CIE_STD));		/* no 'z' */
	eh_fde(&b, bad, TEXT + 0xc0, 0x10, INS(0x00));
	at = open_entry(&b);						/* too short */
	un(&b, 0, 2);
	close_entry(&b, at);
	eh_fde(&b, cie, TEXT + 0xd0, 0x10, INS(0x41, 0x0e, 24));	/* good */
	bad = ABS_CIE(&b);
	eh_fde_abs(&b, bad, UINT64_MAX - 4, 0x10, INS(0x00));		/* wraps */
	un(&b, 0x100, 4);					/* length past the end */
	un(&b, 0, 4);

	ret = build(&b, false, &t, &st);
	CHECK(ret == 0 && st.fdes == 2, "errors: table kept (ret %d fdes %u)",
	      ret, st.fdes);
	CHECK(st.err[UNWIND_ERR_OPCODE] == 1, "unknown opcode counted (%u)",
	      st.err[UNWIND_ERR_OPCODE]);
	CHECK(st.err[UNWIND_ERR_ADVANCE] == 3, "advances counted: past end, "
	      "set_loc backward, in CIE (%u)", st.err[UNWIND_ERR_ADVANCE]);
	CHECK(st.err[UNWIND_ERR_STATE] == 2, "state stack counted (%u)",
	      st.err[UNWIND_ERR_STATE]);
	CHECK(st.err[UNWIND_ERR_TRUNCATED] == 4, "truncations counted (%u)",
	      st.err[UNWIND_ERR_TRUNCATED]);
	CHECK(st.err[UNWIND_ERR_POINTER] == 3, "pointers counted (%u)",
	      st.err[UNWIND_ERR_POINTER]);
	CHECK(st.err[UNWIND_ERR_RANGE] == 1, "range counted (%u)",
	      st.err[UNWIND_ERR_RANGE]);
	/* bad CIE pointers: 1 (out of range) + 2 (to an FDE: the "CIE" and
	 * the FDE); the FDE of the CIE with an advance: 1; version 2: 1;
	 * no 'z': 2 */
	CHECK(st.err[UNWIND_ERR_CIE] == 7, "bad CIEs counted (%u)",
	      st.err[UNWIND_ERR_CIE]);
	CHECK(st.errors == st.err[0] + st.err[1] + st.err[2] + st.err[3] +
	      st.err[4] + st.err[5] + st.err[6], "errors is the sum (%u)",
	      st.errors);
	expect(&t, TEXT + 1, "rsp+16", "good FDE before");
	expect(&t, TEXT + 0x11, "-", "bad FDE skipped");
	expect(&t, TEXT + 0xd1, "rsp+24", "good FDE after");
	unwind_table_free(&t);

	/* only bad entries: -EINVAL; only a terminator: -ENODATA */
	b.n = 0;
	cie = eh_cie(&b, INS(CIE_STD));
	eh_fde(&b, cie, TEXT, 0x10, INS(0x3f));
	ret = build(&b, false, &t, &st);
	CHECK(ret == -EINVAL && t.nr_rows == 0 && !t.rows, "all bad: %d", ret);
	b.n = 0;
	un(&b, 0, 4);
	ret = build(&b, false, &t, &st);
	CHECK(ret == -ENODATA && !st.errors, "terminator only: %d", ret);
	ret = unwind_table_build_section(b.b, 0, VA, false, &t, &st);
	CHECK(ret == -ENODATA, "empty: %d", ret);
	ret = unwind_table_build_mem("junk", 4, &t, &st);
	CHECK(ret == -ENOEXEC, "not ELF: %d", ret);
	CHECK(unwind_table_find(&t, TEXT) == NULL && unwind_table_find(NULL, 0) == NULL,
	      "lookup in an empty table");
	unwind_table_free(NULL);
}

int main(void)
{
	test_basic_rules();
	test_opcodes();
	test_plt_and_signal();
	test_encodings();
	test_debug_frame();
	test_layout();
	test_errors();
	printf("%s (%d failed)\n", failures ? "FAILED" : "PASSED", failures);
	return failures ? 1 : 0;
}
