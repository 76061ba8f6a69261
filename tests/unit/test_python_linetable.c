// SPDX-License-Identifier: GPL-2.0
/*
 * test_python_linetable.c - py_linetable_line (src/python/linetable.c).
 *
 * Without arguments: hand-encoded tables of each format with the lines
 * their specs give, every prefix of them (a torn read answers the full
 * table's line or -1), tables written by encoders that follow CPython's
 * writers (compile.c of 3.9 and 3.10, assemble.c of 3.12) for random
 * programs, and random bytes. Every table sits flush against a
 * PROT_NONE page, so a read past its end kills the program. Prints one
 * line per check; exits 1 if any failed.
 *
 * With "-": a driver for tests/test_python_linetable.py, which compares
 * with CPython itself. Each line of stdin is
 *	FORMAT FIRSTLINENO HEXTABLE OFFSET...
 * with FORMAT one of lnotab, 310, locations, HEXTABLE the table's bytes
 * in hex ("-" when empty) and OFFSETs in bytes; each line of stdout is
 * the lines of those offsets, separated by spaces.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "python/linetable.h"

#include "check.h"
#include "util/hex.h"

/* --- tables flush against an unmapped page ----------------------------- */

struct guarded {
	void *map;
	size_t map_len;
	uint8_t *table;		/* the copy: table + len is the guard page */
};

static void guarded_free(struct guarded *g)
{
	if (g->map)
		munmap(g->map, g->map_len);
	g->map = NULL;
}

/* Copy @src[0..@len) (zeros when @src is NULL) so that its last byte is the last byte before a
 * PROT_NONE page. Exits on failure (a test environment problem). */
static void guarded_copy(struct guarded *g, const uint8_t *src, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t data = (len + page - 1) / page * page;

	g->map_len = data + page;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	if (mprotect((uint8_t *)g->map + data, page, PROT_NONE) < 0) {
		perror("mprotect");
		exit(2);
	}
	g->table = (uint8_t *)g->map + data - len;
	if (len && src)
		memcpy(g->table, src, len);
}

/* Reuse @g, made by guarded_copy() of at least @len bytes: copy
 * @src[0..@len) flush against its guard page and return the copy. */
static uint8_t *guarded_refill(struct guarded *g, size_t cap,
			       const uint8_t *src, size_t len)
{
	uint8_t *table = g->table + cap - len;

	if (len)
		memcpy(table, src, len);
	return table;
}

/* py_linetable_line on a guarded copy of @table[0..@len). */
static int line_of(enum py_linetable_format format, const uint8_t *table,
		   size_t len, int firstlineno, uint32_t byte_offset)
{
	struct guarded g;
	int line;

	guarded_copy(&g, table, len);
	line = py_linetable_line(format, g.table, len, firstlineno,
				 byte_offset);
	guarded_free(&g);
	return line;
}

/* --- hand-encoded tables ------------------------------------------------ */

struct range_want {
	uint32_t start, end;	/* byte offsets [start, end) */
	int line;
};

struct hand_case {
	const char *name;
	enum py_linetable_format format;
	int firstlineno;
	const uint8_t *table;
	size_t len;
	const struct range_want *want;
	size_t nwant;
	int past_end;		/* the line of offsets past the last range */
};

/* The example of CPython 3.9's Objects/lnotab_notes.txt: offsets 0, 6,
 * 50, 350, 361 start lines 1, 2, 7, 207, 208; 300 bytes split into
 * (255, 0) (45, 127), a line jump of 200 into (45, 127) (0, 73). */
static const uint8_t lnotab_table[] = {
	6, 1, 44, 5, 255, 0, 45, 127, 0, 73, 11, 1,
};
static const struct range_want lnotab_want[] = {
	{ 0, 6, 1 }, { 6, 50, 2 }, { 50, 350, 7 }, { 350, 361, 207 },
	{ 361, 400, 208 },
};

/* 3.10 co_linetable, firstlineno 10: a range of 300 bytes split at 254,
 * a line jump of 200 split into (0, 127) (2, 73), a range without a
 * line (-128), a negative delta after it. */
static const uint8_t l310_table[] = {
	4, 0,			/* [0, 4) line 10 */
	254, 2, 46, 0,		/* [4, 304) line 12 */
	0, 127, 2, 73,		/* [304, 306) line 212 */
	4, 0x80,		/* [306, 310) none */
	2, 0xfb,		/* [310, 312) line 207 */
	0, 1,			/* a zero-length pair: its delta carries on */
	6, 0,			/* [312, 318) line 208 */
};
static const struct range_want l310_want[] = {
	{ 0, 4, 10 }, { 4, 304, 12 }, { 304, 306, 212 }, { 306, 310, -1 },
	{ 310, 312, 207 }, { 312, 318, 208 },
};

/* 3.11+ location table, firstlineno 100: every kind of entry. */
static const uint8_t loc_table[] = {
	0x80, 0x05,			/* short 0, 1 unit: [0, 2) 100 */
	0xd9, 0x03, 0x10,		/* one-line +1, 2 units: [2, 6) 101 */
	0xea, 0x58, 0x09,		/* no columns, +300, 3 units: [6, 12) 401 */
	0xf7, 0x75, 0x07, 0x02, 0x05, 0x3f, /* long, -250, 8 units: [12, 28) 151 */
	0xf8,				/* none, 1 unit: [28, 30) -1 */
	0xc8, 0x12,			/* short 9, 1 unit: [30, 32) 151 */
	0xe0, 0x01, 0x02,		/* one-line +2, 1 unit: [32, 34) 153 */
	0xd0, 0x01, 0x02,		/* one-line +0, 1 unit: [34, 36) 153 */
	0xf1, 0x00, 0x00, 0x01, 0x01,	/* long, +0, 2 units: [36, 40) 153 */
	0xe8, 0x41, 0x01,		/* no columns, varint 65 = -32: [40, 42) 121 */
};
static const struct range_want loc_want[] = {
	{ 0, 2, 100 }, { 2, 6, 101 }, { 6, 12, 401 }, { 12, 28, 151 },
	{ 28, 30, -1 }, { 30, 32, 151 }, { 32, 34, 153 }, { 34, 36, 153 },
	{ 36, 40, 153 }, { 40, 42, 121 },
};

#define HAND(n, f, first, t, w, past)					\
	{ n, f, first, t, sizeof(t), w, sizeof(w) / sizeof(w[0]), past }

static const struct hand_case hand_cases[] = {
	HAND("lnotab", PY_LINETABLE_LNOTAB, 1, lnotab_table, lnotab_want, 208),
	HAND("310", PY_LINETABLE_310, 10, l310_table, l310_want, -1),
	HAND("locations", PY_LINETABLE_LOCATIONS, 100, loc_table, loc_want, -1),
};

static void check_hand_case(const struct hand_case *c)
{
	uint32_t last = c->want[c->nwant - 1].end;
	int bad = 0, n = 0;
	size_t i;
	uint32_t off;

	for (i = 0; i < c->nwant; i++) {
		for (off = c->want[i].start; off < c->want[i].end; off++, n++) {
			int got = line_of(c->format, c->table, c->len,
					  c->firstlineno, off);

			if (got != c->want[i].line && bad++ < 5)
				printf("  %s: offset %u: line %d, want %d\n",
				       c->name, off, got, c->want[i].line);
		}
	}
	CHECK(!bad, "%s: hand-encoded table, %d offsets (odd ones too)",
	      c->name, n);
	CHECK(line_of(c->format, c->table, c->len, c->firstlineno, last) ==
	      c->past_end &&
	      line_of(c->format, c->table, c->len, c->firstlineno,
		      UINT32_MAX) == c->past_end,
	      "%s: offsets past the table: %d", c->name, c->past_end);
}

/*
 * Every prefix of @table, as a torn read leaves it. 3.10+: each offset
 * gets the full table's line or -1. 3.9: offsets before the address the
 * complete pairs reach get the full table's line; a table of odd length
 * answers -1 from the address its half pair reaches.
 */
static void check_prefixes(const struct hand_case *c, const uint8_t *table,
			   size_t len, uint32_t max_offset)
{
	int *full = calloc(max_offset + 1, sizeof(*full));
	struct guarded g;
	int bad = 0;
	size_t p;

	if (!full)
		exit(2);
	guarded_copy(&g, table, len);
	for (uint32_t off = 0; off <= max_offset; off++)
		full[off] = py_linetable_line(c->format, g.table, len,
					      c->firstlineno, off);
	guarded_free(&g);
	for (p = 0; p <= len; p++) {
		uint64_t reach = 0, half = 0;
		size_t i;

		for (i = 0; i + 1 < p; i += 2)
			reach += table[i];
		if (p % 2)
			half = reach + table[p - 1];
		guarded_copy(&g, table, p);
		for (uint32_t off = 0; off <= max_offset; off++) {
			int got = py_linetable_line(c->format, g.table, p,
						    c->firstlineno, off);
			bool ok;

			if (p == len)
				ok = got == full[off];
			else if (c->format != PY_LINETABLE_LNOTAB)
				ok = got == -1 || got == full[off];
			else if (off < reach || (p % 2 && off < half))
				ok = got == full[off];
			else if (p % 2)
				ok = got == -1;
			else
				ok = got >= -1;
			if (!ok && bad++ < 5)
				printf("  %s: prefix %zu, offset %u: line %d "
				       "(full table: %d)\n", c->name, p, off,
				       got, full[off]);
		}
		guarded_free(&g);
	}
	free(full);
	CHECK(!bad, "%s: all %zu prefixes of a %zu-byte table", c->name,
	      len + 1, len);
}

/* --- varints ------------------------------------------------------------- */

static void check_varints(void)
{
	/* no-columns entries, 1 unit, firstlineno 0 */
	static const uint8_t six[] = { 0xe8, 0x40, 0x40, 0x40, 0x40, 0x40, 0x02 };
	static const uint8_t seven[] = { 0xe8, 0x40, 0x40, 0x40, 0x40, 0x40,
					 0x40, 0x00 };
	static const uint8_t cut[] = { 0xe8, 0x42 };
	static const uint8_t into_next[] = { 0xe8, 0x42, 0x80, 0x00 };
	static const uint8_t not_start[] = { 0x10, 0x80, 0x00 };
	static const uint8_t zero_then_long[] = {
		/* +1000000: 2000000 = 0x1e8480: chunks 0, 18, 40, 7 */
		0xe8, 0x40, 0x52, 0x68, 0x07,
		0xf0, 0x00, 0x00, 0x01, 0x01,	/* long, +0, col 0 */
	};
	/* 2 << 30 = bit 31 of a 6-chunk varint: 2^31 >> 1 = 2^30 */
	CHECK(line_of(PY_LINETABLE_LOCATIONS, six, sizeof(six), 0, 0) ==
	      (1 << 30), "six-chunk varint: line %d",
	      line_of(PY_LINETABLE_LOCATIONS, six, sizeof(six), 0, 0));
	CHECK(line_of(PY_LINETABLE_LOCATIONS, seven, sizeof(seven), 0, 0) == -1,
	      "seven-chunk varint is corrupt");
	CHECK(line_of(PY_LINETABLE_LOCATIONS, cut, sizeof(cut), 5, 0) == -1,
	      "varint cut by the table's end");
	CHECK(line_of(PY_LINETABLE_LOCATIONS, into_next, sizeof(into_next), 5,
		      0) == -1, "varint running into the next entry");
	CHECK(line_of(PY_LINETABLE_LOCATIONS, not_start, sizeof(not_start), 5,
		      0) == -1 &&
	      line_of(PY_LINETABLE_LOCATIONS, not_start, sizeof(not_start), 5,
		      2) == -1, "first byte without bit 7");
	CHECK(line_of(PY_LINETABLE_LOCATIONS, zero_then_long,
		      sizeof(zero_then_long), 7, 0) == 1000007 &&
	      line_of(PY_LINETABLE_LOCATIONS, zero_then_long,
		      sizeof(zero_then_long), 7, 2) == 1000007,
	      "four-chunk varint (+1000000), then a long entry of +0");
	CHECK(py_linetable_line(PY_LINETABLE_LOCATIONS, NULL, 0, 1, 0) == -1 &&
	      py_linetable_line(PY_LINETABLE_310, NULL, 0, 1, 0) == -1 &&
	      py_linetable_line(PY_LINETABLE_LNOTAB, NULL, 0, 1, 0) == 1,
	      "empty tables: -1, -1, co_firstlineno for 3.9");
	CHECK(py_linetable_line(0, loc_table, sizeof(loc_table), 1, 0) == -1 &&
	      py_linetable_line(7, loc_table, sizeof(loc_table), 1, 0) == -1,
	      "unknown formats: -1");
}

/* --- tables from encoders that follow CPython's writers ------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

#define PROG_MAX 64
#define TABLE_MAX 65536

/* A program: runs of code units, each with a line or none (-1). */
struct program {
	int firstlineno;
	int n;
	uint32_t units[PROG_MAX];
	int line[PROG_MAX];
};

/* A line delta; @big: up to +-100000 (long varints, many 3.9/3.10
 * pairs), else up to +-300. */
static int rand_delta(bool big)
{
	switch (rnd() % (big ? 6 : 5)) {
	case 0:
		return 0;
	case 1:
		return 1 + rnd() % 2;
	case 2:
		return (int)(rnd() % 255) - 127;
	case 3:
		return (int)(rnd() % 601) - 300;
	case 4:
		return (int)(rnd() % 9) - 4;
	default:
		return (int)(rnd() % 200001) - 100000;
	}
}

static void rand_program(struct program *p, bool with_none, bool big)
{
	int line;

	p->firstlineno = (int)(rnd() % 100000);
	p->n = 1 + rnd() % PROG_MAX;
	line = p->firstlineno;
	for (int i = 0; i < p->n; i++) {
		line += rand_delta(big);
		if (line < 0)
			line = -line;
		p->units[i] = 1 + (rnd() % 4 ? rnd() % 12 : rnd() % 160);
		p->line[i] = with_none && rnd() % 8 == 0 ? -1 : line;
	}
}

struct writer {
	uint8_t buf[TABLE_MAX];
	size_t len;
};

static void put(struct writer *w, int byte)
{
	if (w->len >= TABLE_MAX) {
		fprintf(stderr, "encoded table too long\n");
		exit(2);
	}
	w->buf[w->len++] = (uint8_t)byte;
}

/* 3.9 compile.c assemble_lnotab: address steps over 255 as (255, 0),
 * line steps beyond a signed byte as (bytes, +-127/-128) (0, ...). The
 * 3.9 table has no "no line": runs of -1 keep the previous line. */
static void encode_lnotab(const struct program *p, struct writer *w)
{
	int64_t addr = 0, last_addr = 0;
	int last_line = p->firstlineno;

	w->len = 0;
	for (int i = 0; i < p->n; addr += 2 * p->units[i], i++) {
		int64_t bd = addr - last_addr;
		int ld = p->line[i] - last_line;

		if (p->line[i] < 0 || !ld)
			continue;
		for (; bd > 255; bd -= 255) {
			put(w, 255);
			put(w, 0);
		}
		for (; ld > 127; ld -= 127, bd = 0) {
			put(w, (int)bd);
			put(w, 127);
		}
		for (; ld < -128; ld += 128, bd = 0) {
			put(w, (int)bd);
			put(w, -128);
		}
		put(w, (int)bd);
		put(w, ld);
		last_addr = addr;
		last_line = p->line[i];
	}
}

/* 3.10 compile.c assemble_line_range. */
static void encode_310(const struct program *p, struct writer *w)
{
	int prev = p->firstlineno;

	w->len = 0;
	for (int i = 0; i < p->n; i++) {
		int64_t bd = 2 * p->units[i];
		int ld;

		if (p->line[i] < 0) {
			ld = -128;
		} else {
			ld = p->line[i] - prev;
			prev = p->line[i];
			for (; ld > 127; ld -= 127) {
				put(w, 0);
				put(w, 127);
			}
			for (; ld < -127; ld += 127) {
				put(w, 0);
				put(w, -127);
			}
		}
		for (; bd > 254; bd -= 254) {
			put(w, 254);
			put(w, ld);
			ld = p->line[i] < 0 ? -128 : 0;
		}
		put(w, (int)bd);
		put(w, ld);
	}
}

static void put_varint(struct writer *w, uint32_t val)
{
	while (val >= 64) {
		put(w, 64 | (val & 63));
		val >>= 6;
	}
	put(w, (int)val);
}

static void put_signed_varint(struct writer *w, int val)
{
	put_varint(w, val < 0 ? ((uint32_t)-val << 1) | 1 : (uint32_t)val << 1);
}

/* 3.11+ assemble.c write_location_info_entry, with the form of each
 * entry chosen at random among those that can carry its line delta. */
static void encode_locations(const struct program *p, struct writer *w)
{
	int prev = p->firstlineno;

	w->len = 0;
	for (int i = 0; i < p->n; i++) {
		uint32_t left = p->units[i];

		while (left) {
			uint32_t n = left > 8 ? 8 : left;
			int len_bits = (int)n - 1;
			int delta = p->line[i] - prev;
			unsigned int form = rnd() % 4;

			left -= n;
			if (p->line[i] < 0) {
				put(w, 0x80 | 15 << 3 | len_bits);
				continue;
			}
			prev = p->line[i];
			if (form == 0 && delta == 0) {
				put(w, 0x80 | (rnd() % 10) << 3 | len_bits);
				put(w, rnd() % 128);
			} else if (form == 1 && delta >= 0 && delta < 3) {
				put(w, 0x80 | (10 + delta) << 3 | len_bits);
				put(w, rnd() % 128);
				put(w, rnd() % 128);
			} else if (form == 2) {
				put(w, 0x80 | 13 << 3 | len_bits);
				put_signed_varint(w, delta);
			} else {
				put(w, 0x80 | 14 << 3 | len_bits);
				put_signed_varint(w, delta);
				put_varint(w, rnd() % 3);
				put_varint(w, rnd() % 300);
				put_varint(w, rnd() % 300);
			}
		}
	}
}

/* The line @p gives @off under @format, from the program itself. */
static int program_line(const struct program *p,
			enum py_linetable_format format, uint32_t off)
{
	uint64_t start = 0;
	int last = p->firstlineno;

	for (int i = 0; i < p->n; i++) {
		if (p->line[i] >= 0)
			last = p->line[i];
		start += 2 * p->units[i];
		if (off < start) {
			if (format == PY_LINETABLE_LNOTAB)
				return last;
			return p->line[i];
		}
	}
	return format == PY_LINETABLE_LNOTAB ? last : -1;
}

static void check_encoded(enum py_linetable_format format, const char *name,
			  int programs)
{
	struct program p;
	struct writer w;
	long offsets = 0;
	struct guarded g;
	int bad = 0;

	guarded_copy(&g, NULL, TABLE_MAX);
	for (int k = 0; k < programs; k++) {
		uint32_t total = 0;
		uint8_t *table;

		rand_program(&p, format != PY_LINETABLE_LNOTAB || k % 2, true);
		for (int i = 0; i < p.n; i++)
			total += 2 * p.units[i];
		if (format == PY_LINETABLE_LNOTAB)
			encode_lnotab(&p, &w);
		else if (format == PY_LINETABLE_310)
			encode_310(&p, &w);
		else
			encode_locations(&p, &w);
		table = guarded_refill(&g, TABLE_MAX, w.buf, w.len);
		for (uint32_t off = 0; off <= total + 3; off++, offsets++) {
			int want = program_line(&p, format, off);
			int got = py_linetable_line(format, table, w.len,
						    p.firstlineno, off);

			if (got != want && bad++ < 5)
				printf("  %s: program %d, offset %u: line %d, "
				       "want %d\n", name, k, off, got, want);
		}
	}
	guarded_free(&g);
	CHECK(!bad, "%s: %d encoded random programs, %ld offsets", name,
	      programs, offsets);
}

/* Random bytes: any answer >= -1, no read past the end (the guard page),
 * no endless scan (alarm). */
static void check_random_bytes(enum py_linetable_format format,
			       const char *name, int tables)
{
	uint8_t buf[96], *table;
	struct guarded g;
	int bad = 0;

	guarded_copy(&g, NULL, sizeof(buf));
	for (int k = 0; k < tables; k++) {
		size_t len = rnd() % sizeof(buf);
		int first = (int)(rnd() % 2000000) - 1000000;

		for (size_t i = 0; i < len; i++) {
			buf[i] = (uint8_t)rnd();
			/* mostly entry starts and varint bytes */
			if (format == PY_LINETABLE_LOCATIONS && rnd() % 3)
				buf[i] = (buf[i] & 0x7f) |
					 (rnd() % 2 ? 0x80 : 0);
		}
		if (k % 7 == 0)
			first = INT32_MAX - (int)(rnd() % 1000);
		else if (k % 7 == 1)
			first = INT32_MIN + (int)(rnd() % 1000);
		table = guarded_refill(&g, sizeof(buf), buf, len);
		for (int q = 0; q < 16; q++) {
			uint32_t off = q < 8 ? rnd() % 512 : rnd();

			if (py_linetable_line(format, table, len, first,
					      off) < -1)
				bad++;
		}
	}
	guarded_free(&g);
	CHECK(!bad, "%s: %d tables of random bytes, no read past the end",
	      name, tables);
}

static int self_test(void)
{
	size_t i;

	alarm(120);
	for (i = 0; i < sizeof(hand_cases) / sizeof(hand_cases[0]); i++) {
		const struct hand_case *c = &hand_cases[i];

		check_hand_case(c);
		check_prefixes(c, c->table, c->len,
			       c->want[c->nwant - 1].end + 4);
	}
	check_varints();
	check_encoded(PY_LINETABLE_LNOTAB, "lnotab", 300);
	check_encoded(PY_LINETABLE_310, "310", 300);
	check_encoded(PY_LINETABLE_LOCATIONS, "locations", 300);

	/* prefixes of encoded tables too, with their long varints */
	for (int k = 0; k < 20; k++) {
		static const char *const names[] = { "lnotab", "310",
						     "locations" };
		enum py_linetable_format f = 1 + k % 3;
		struct hand_case c = { .name = names[k % 3], .format = f };
		struct program p;
		struct writer w;

		rand_program(&p, f != PY_LINETABLE_LNOTAB, false);
		p.n = p.n > 12 ? 12 : p.n;
		for (int j = 0; j < p.n; j++)
			p.units[j] = p.units[j] > 40 ? 40 : p.units[j];
		c.firstlineno = p.firstlineno;
		if (f == PY_LINETABLE_LNOTAB)
			encode_lnotab(&p, &w);
		else if (f == PY_LINETABLE_310)
			encode_310(&p, &w);
		else
			encode_locations(&p, &w);
		check_prefixes(&c, w.buf, w.len, 12 * 80 + 4);
	}

	check_random_bytes(PY_LINETABLE_LNOTAB, "lnotab", 200000);
	check_random_bytes(PY_LINETABLE_310, "310", 200000);
	check_random_bytes(PY_LINETABLE_LOCATIONS, "locations", 200000);
	return failures ? 1 : 0;
}

/* --- the driver ------------------------------------------------------------ */


static int drive_line(char *text, unsigned long lineno)
{
	char *save = NULL, *fmt, *first, *hex, *tok;
	enum py_linetable_format format;
	uint8_t *table = NULL;
	size_t len = 0, hexlen;
	struct guarded g;
	bool sep = false;

	fmt = strtok_r(text, " \t\n", &save);
	first = strtok_r(NULL, " \t\n", &save);
	hex = strtok_r(NULL, " \t\n", &save);
	if (!fmt)
		return 0;	/* blank line */
	if (!first || !hex)
		goto bad;
	if (!strcmp(fmt, "lnotab"))
		format = PY_LINETABLE_LNOTAB;
	else if (!strcmp(fmt, "310"))
		format = PY_LINETABLE_310;
	else if (!strcmp(fmt, "locations"))
		format = PY_LINETABLE_LOCATIONS;
	else
		goto bad;
	hexlen = strcmp(hex, "-") ? strlen(hex) : 0;
	if (hexlen % 2)
		goto bad;
	table = malloc(hexlen / 2 + 1);
	if (!table)
		return -ENOMEM;
	for (len = 0; len < hexlen / 2; len++) {
		int hi = hex_digit(hex[2 * len]), lo = hex_digit(hex[2 * len + 1]);

		if (hi < 0 || lo < 0)
			goto bad;
		table[len] = (uint8_t)(hi << 4 | lo);
	}
	guarded_copy(&g, table, len);
	while ((tok = strtok_r(NULL, " \t\n", &save))) {
		unsigned long off = strtoul(tok, NULL, 10);

		printf("%s%d", sep ? " " : "",
		       py_linetable_line(format, g.table, len,
					 (int)strtol(first, NULL, 10),
					 (uint32_t)off));
		sep = true;
	}
	printf("\n");
	guarded_free(&g);
	free(table);
	return 0;
bad:
	free(table);
	fprintf(stderr, "stdin:%lu: want FORMAT FIRSTLINENO HEXTABLE OFFSET...\n",
		lineno);
	return -EINVAL;
}

static int drive(void)
{
	char *text = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	int err = 0;

	while (!err && getline(&text, &cap, stdin) > 0)
		err = drive_line(text, ++lineno);
	free(text);
	if (fflush(stdout) || ferror(stdin))
		err = -EIO;
	return err ? 2 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "-"))
		return drive();
	if (argc != 1) {
		fprintf(stderr, "usage: %s [-]\n", argv[0]);
		return 2;
	}
	return self_test();
}
