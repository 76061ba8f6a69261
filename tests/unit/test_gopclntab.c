// SPDX-License-Identifier: GPL-2.0
/*
 * test_gopclntab.c - src/util/gopclntab.c on a pclntab written here by
 * hand from Go 1.18's layout (src/runtime/symtab.go: pcHeader, functab,
 * _func, the pcvalue encoding of step(); cmd/link/internal/ld/pcln.go
 * writes the same): two functions, names, a CU with two files, pcfile,
 * pcln and one pcdata table. Then every truncation of it and every
 * single-byte change of its header and _funcs: parsed or refused, never
 * read past its end (run it under ASan to see), never a function whose
 * _func names another entry. The real tables of real Go binaries are
 * tests/test_go_symbols.py's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/gopclntab.h"

#define TEXT	0x401000ULL

static uint8_t tab[512];
static size_t len;

static void put(size_t off, uint64_t v, int size)
{
	for (int i = 0; i < size; i++)
		tab[off + i] = (uint8_t)(v >> (8 * i));
}

/* A pcvalue table: (value delta, pc delta) pairs, zigzag value deltas. */
static size_t put_pcvalue(size_t off, const int32_t *vals, const uint32_t *pcs, int n)
{
	int32_t prev = -1;

	for (int i = 0; i < n; i++) {
		int32_t d = vals[i] - prev;
		uint32_t uv = d < 0 ? ((uint32_t)~d << 1) | 1 : (uint32_t)d << 1;

		/* all small: one byte each */
		tab[off++] = (uint8_t)uv;
		tab[off++] = (uint8_t)pcs[i];
		prev = vals[i];
	}
	tab[off++] = 0;	/* end */
	return off;
}

/*
 * Layout: header (72) | names @72 | cutab @104 | filetab @112 |
 * pctab @136 | functab @200: 3 entries, then the two _funcs.
 */
static void build(void)
{
	static const char names[] = "main.a\0main.(*T).b\0";
	static const char files[] = "a.go\0dir/b.go\0";
	const int32_t file_a[] = { 0 }, line_a[] = { 10, 11, 12 };
	const uint32_t pc_a[] = { 0x20 }, pcl_a[] = { 4, 8, 0x14 };
	const int32_t file_b[] = { 1, 0 }, line_b[] = { 30, 7 }, inl_b[] = { -1, 0, -1 };
	const uint32_t pcf_b[] = { 0x10, 0x10 }, pcl_b[] = { 0x10, 0x10 };
	const uint32_t pci_b[] = { 0x8, 0x8, 0x10 };
	size_t o, f0 = 224, f1 = 272;

	memset(tab, 0, sizeof(tab));
	put(0, GOPCLNTAB_MAGIC_118, 4);
	tab[6] = 1;		/* minLC */
	tab[7] = 8;		/* ptrSize */
	put(8, 2, 8);		/* nfunc */
	put(16, 2, 8);		/* nfiles */
	put(24, TEXT, 8);	/* textStart */
	put(32, 72, 8);		/* funcnameOffset */
	put(40, 104, 8);	/* cuOffset */
	put(48, 112, 8);	/* filetabOffset */
	put(56, 136, 8);	/* pctabOffset */
	put(64, 200, 8);	/* pclnOffset */
	memcpy(tab + 72, names, sizeof(names));
	put(104, 0, 4);		/* CU 0: file 0 at filetab+0, file 1 at +5 */
	put(108, 5, 4);
	memcpy(tab + 112, files, sizeof(files));
	/* pctab: offset 0 is "no table"; the tables from 1 on */
	o = 137;
	o = put_pcvalue(o, file_a, pc_a, 1);			/* a.pcfile @1 */
	o = put_pcvalue(o, line_a, pcl_a, 3);			/* a.pcln @4 */
	o = put_pcvalue(o, file_b, pcf_b, 2);			/* b.pcfile @11 */
	o = put_pcvalue(o, line_b, pcl_b, 2);			/* b.pcln @16 */
	o = put_pcvalue(o, inl_b, pci_b, 3);			/* b.pcdata[2] @21 */
	/* functab: {entryoff, funcoff} x nfunc + the end */
	put(200, 0x00, 4);
	put(204, f0 - 200, 4);
	put(208, 0x20, 4);
	put(212, f1 - 200, 4);
	put(216, 0x40, 4);
	put(220, 0, 4);
	/* _func a: entryoff, nameoff, args, deferreturn, pcsp, pcfile, pcln,
	 * npcdata, cuOffset, funcID, flag, pad, nfuncdata */
	put(f0 + 0, 0x00, 4);
	put(f0 + 4, 0, 4);
	put(f0 + 20, 1, 4);
	put(f0 + 24, 4, 4);
	put(f0 + 28, 0, 4);
	tab[f0 + 37] = GOPCLNTAB_FLAG_TOPFRAME;
	/* _func b: 3 pcdata (only [2] set), 1 funcdata (offset 0x30) */
	put(f1 + 0, 0x20, 4);
	put(f1 + 4, 7, 4);
	put(f1 + 20, 11, 4);
	put(f1 + 24, 16, 4);
	put(f1 + 28, 3, 4);
	tab[f1 + 39] = 4;
	put(f1 + 40, 0, 4);
	put(f1 + 44, 0, 4);
	put(f1 + 48, 21, 4);
	put(f1 + 52, UINT32_MAX, 4);	/* funcdata 0..2: none */
	put(f1 + 56, UINT32_MAX, 4);
	put(f1 + 60, UINT32_MAX, 4);
	put(f1 + 64, 0x30, 4);		/* funcdata 3: the inline tree */
	len = f1 + 68;
	if (o > 200)
		abort();	/* the pctab ran into the functab: fix the layout */
}

static void decode(void)
{
	struct gopclntab pt;
	struct gopclntab_func f;
	int32_t v;
	uint64_t fd;

	CHECK(gopclntab_init(&pt, tab, len, 0) == 0, "the table parses");
	CHECK(pt.nfunc == 2 && pt.text == TEXT, "nfunc 2, text 0x%llx",
	      (unsigned long long)pt.text);
	CHECK(gopclntab_find(&pt, TEXT - 1) == -1 && gopclntab_find(&pt, TEXT + 0x40) == -1,
	      "pcs outside the text are no function");
	CHECK(gopclntab_find(&pt, TEXT) == 0 && gopclntab_find(&pt, TEXT + 0x1f) == 0 &&
	      gopclntab_find(&pt, TEXT + 0x20) == 1 && gopclntab_find(&pt, TEXT + 0x3f) == 1,
	      "functions by pc");
	CHECK(gopclntab_func(&pt, 0, &f) == 0 && f.entry == TEXT && f.end == TEXT + 0x20 &&
	      f.flag == GOPCLNTAB_FLAG_TOPFRAME, "function 0's _func");
	CHECK(!strcmp(gopclntab_name(&pt, f.nameoff), "main.a"), "its name");
	CHECK(gopclntab_pcvalue(&pt, &f, f.pcln, TEXT + 3, &v) && v == 10, "line at +3: 10");
	CHECK(gopclntab_pcvalue(&pt, &f, f.pcln, TEXT + 4, &v) && v == 11, "line at +4: 11");
	CHECK(gopclntab_pcvalue(&pt, &f, f.pcln, TEXT + 0x1f, &v) && v == 12, "line at +0x1f: 12");
	CHECK(!gopclntab_pcvalue(&pt, &f, f.pcln, TEXT + 0x20, &v), "no line past the end");
	CHECK(gopclntab_pcvalue(&pt, &f, f.pcfile, TEXT + 8, &v) &&
	      !strcmp(gopclntab_file(&pt, &f, v), "a.go"), "file a.go");
	CHECK(!gopclntab_pcvalue(&pt, &f, gopclntab_pcdata_off(&f, 2), TEXT, &v),
	      "no pcdata: no value");
	CHECK(!gopclntab_funcdata(&pt, &f, 3, &fd), "no funcdata");
	CHECK(gopclntab_func(&pt, 1, &f) == 0 && f.entry == TEXT + 0x20 && f.npcdata == 3,
	      "function 1's _func");
	CHECK(!strcmp(gopclntab_name(&pt, f.nameoff), "main.(*T).b"), "its name");
	CHECK(gopclntab_pcvalue(&pt, &f, f.pcfile, TEXT + 0x2f, &v) &&
	      !strcmp(gopclntab_file(&pt, &f, v), "dir/b.go"), "file dir/b.go at +0xf");
	CHECK(gopclntab_pcvalue(&pt, &f, f.pcln, TEXT + 0x30, &v) && v == 7, "line 7 at +0x10");
	CHECK(gopclntab_pcvalue(&pt, &f, gopclntab_pcdata_off(&f, 2), TEXT + 0x28, &v) &&
	      v == 0, "inline index 0 at +8");
	CHECK(gopclntab_pcvalue(&pt, &f, gopclntab_pcdata_off(&f, 2), TEXT + 0x30, &v) &&
	      v == -1, "not inlined at +0x10");
	CHECK(gopclntab_funcdata(&pt, &f, 3, &fd) && fd == 0x30 &&
	      !gopclntab_funcdata(&pt, &f, 1, &fd) && !gopclntab_funcdata(&pt, &f, 4, &fd),
	      "funcdata 3 = 0x30, others none");
	CHECK(gopclntab_file(&pt, &f, 2) == NULL && gopclntab_file(&pt, &f, -1) == NULL,
	      "file numbers outside the CU: none");
}

/* Every truncation and every byte changed: refused or bounded, never wrong entries. */
static void hostile(void)
{
	uint8_t saved[sizeof(tab)];
	int parsed = 0, refused = 0, wrong = 0;

	for (size_t n = 0; n < len; n++) {
		struct gopclntab pt;
		struct gopclntab_func f;
		uint8_t *copy = malloc(n ? n : 1);	/* exact size: ASan sees overreads */

		memcpy(copy, tab, n);
		if (gopclntab_init(&pt, copy, n, 0)) {
			refused++;
		} else {
			parsed++;
			for (uint64_t i = 0; i < pt.nfunc; i++)
				if (!gopclntab_func(&pt, i, &f))
					(void)gopclntab_name(&pt, f.nameoff);
		}
		free(copy);
	}
	CHECK(refused > 0, "truncations: %d refused, %d parsed (function reads bounded)",
	      refused, parsed);
	memcpy(saved, tab, sizeof(tab));
	for (size_t at = 0; at < len; at++) {
		for (int bit = 0; bit < 8; bit++) {
			struct gopclntab pt;
			struct gopclntab_func f;
			uint8_t *copy = malloc(len);
			int32_t v;

			memcpy(tab, saved, sizeof(tab));
			tab[at] ^= (uint8_t)(1 << bit);
			memcpy(copy, tab, len);
			if (!gopclntab_init(&pt, copy, len, 0)) {
				for (uint64_t i = 0; i < pt.nfunc && i < 4; i++) {
					if (gopclntab_func(&pt, i, &f))
						continue;
					/* a _func's own entryoff changed: not its function's */
					wrong += (i == 0 && at >= 224 && at < 228) ||
						 (i == 1 && at >= 272 && at < 276);
					(void)gopclntab_name(&pt, f.nameoff);
					(void)gopclntab_pcvalue(&pt, &f, f.pcln, f.entry, &v);
					if (gopclntab_pcvalue(&pt, &f, f.pcfile, f.entry, &v))
						(void)gopclntab_file(&pt, &f, v);
				}
			}
			free(copy);
		}
	}
	memcpy(tab, saved, sizeof(tab));
	CHECK(!wrong, "bit flips: no _func whose entryoff changed accepted (%d)", wrong);
}

int main(void)
{
	build();
	decode();
	hostile();
	return failures ? 1 : 0;
}
