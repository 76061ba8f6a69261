// SPDX-License-Identifier: GPL-2.0
/*
 * test_dwarf_linetab.c - profd's line table decoder
 * (src/symbol/dwarf_linetab.c) against libdw's, on every unit of a file.
 *
 * For each compilation unit with a DW_AT_stmt_list, decodes its line
 * program with dwarf_linetab_build() and compares with libdw's
 * dwarf_getsrclines()/dwarf_getsrcfiles(): the number of rows, every
 * row (address, line, file name as dwarf_linesrc() gives it, end of
 * sequence) in order, every file name of the file table
 * (dwarf_filesrc()), and dwarf_getsrc_die() against dwarf_linetab_find()
 * at each row's address and the byte before it. Units libdw cannot
 * decode must fail here too.
 *
 * Usage: test_dwarf_linetab FILE
 * Prints "units=N rows=M files=F mismatches=K unsupported=U" and, for
 * the first mismatches, what differed. Exit 0: no mismatch, 1: some,
 * 2: the file could not be read.
 *
 *        test_dwarf_linetab --corrupt FILE
 * Hostile input: the line programs of FILE's first 16 units cut at
 * every length and with every byte replaced (0x00, 0xff, the byte + 1,
 * a random one), each decoded and looked up in (run it built with
 * ASan/UBSan). Prints "cases=N built=B refused=R"; exit 0 when it ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "symbol/dwarf_linetab.h"

static unsigned long mismatches;

#define MISMATCH(...) do {					\
	if (mismatches++ < 20) {				\
		fprintf(stderr, "mismatch: " __VA_ARGS__);	\
		fputc('\n', stderr);				\
	}							\
} while (0)

/* The compilation directory of the unit being compared (DW_AT_comp_dir). */
static const char *unit_comp_dir;

/*
 * Whether libdw's file name @a is profd's @b: profd puts a name libdw
 * leaves relative (a relative include directory) under DW_AT_comp_dir,
 * as addr2line does; libdw's "???" and names already under a relative
 * DW_AT_comp_dir (directory 0's files) stay.
 */
static int same(const char *a, const char *b)
{
	const char *c = unit_comp_dir;
	char joined[8192];

	if (a && a[0] != '/' && strcmp(a, "???") && c && c[0] &&
	    !(c[0] != '/' && !strncmp(a, c, strlen(c)) && a[strlen(c)] == '/') &&
	    (size_t)snprintf(joined, sizeof(joined), "%s/%s", c, a) < sizeof(joined))
		a = joined;
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Compare lookups at @addr. */
static void check_find(Dwarf_Die *cu, const struct dwarf_linetab *t,
		       uint64_t addr)
{
	Dwarf_Line *l = dwarf_getsrc_die(cu, addr);
	uint64_t row_addr = 0;
	const char *file = NULL;
	uint32_t line = 0;
	int ret = dwarf_linetab_find(t, addr, &row_addr, &file, &line);
	Dwarf_Addr la;
	int lno;

	if (!l) {
		if (!ret)
			MISMATCH("find 0x%" PRIx64 ": libdw none, ours %s:%u", addr,
				 file, line);
		return;
	}
	if (dwarf_lineaddr(l, &la) || dwarf_lineno(l, &lno))
		return;
	if (ret || la != row_addr || (uint32_t)lno != line ||
	    !same(dwarf_linesrc(l, NULL, NULL), file))
		MISMATCH("find 0x%" PRIx64 ": libdw 0x%" PRIx64 " %s:%d, ours %d 0x%"
			 PRIx64 " %s:%u", addr, (uint64_t)la,
			 dwarf_linesrc(l, NULL, NULL), lno, ret, row_addr,
			 file ? file : "-", line);
}

/* One corrupt copy of @src decoded at @off, and looked up in. */
static void corrupt_case(const struct dwarf_linetab_src *src, uint64_t off,
			 unsigned long *built, unsigned long *refused)
{
	struct dwarf_linetab *t;
	uint64_t bytes, a, ra;
	const char *f;
	uint32_t line, fi, ln;
	int end;

	if (dwarf_linetab_build(src, off, "/comp", 1 << 20, &t, &bytes)) {
		(*refused)++;
		return;
	}
	(*built)++;
	for (size_t i = 0; i < dwarf_linetab_rows(t); i += 7) {
		dwarf_linetab_row(t, i, &a, &fi, &ln, &end);
		if (!dwarf_linetab_find(t, a, &ra, &f, &line) && (!f || ra > a))
			abort();
		dwarf_linetab_file(t, fi);
	}
	dwarf_linetab_free(t);
}

static int corrupt(const char *path)
{
	unsigned long cases = 0, built = 0, refused = 0;
	struct dwarf_linetab_src src, bad;
	uint64_t offs[16];
	unsigned int noffs = 0, seed = 1;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	Dwarf_Half version;
	uint8_t unit_type;
	uint8_t *copy;
	Dwarf *dw;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || !(dw = dwarf_begin(fd, DWARF_C_READ)) ||
	    dwarf_linetab_src_of(dwarf_getelf(dw), &src)) {
		fprintf(stderr, "%s: cannot read its DWARF\n", path);
		return 2;
	}
	while (noffs < 16 &&
	       !dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL)) {
		Dwarf_Attribute a;
		Dwarf_Word stmt;

		if (!dwarf_formudata(dwarf_attr(&cudie, DW_AT_stmt_list, &a), &stmt))
			offs[noffs++] = stmt;
	}
	copy = malloc(src.line_size);
	if (!copy)
		return 2;
	for (unsigned int u = 0; u < noffs; u++) {
		uint64_t off = offs[u];
		/* the program's own length, at most 4 KiB of it mutated */
		uint64_t len = src.line_size - off < 4096 ? src.line_size - off : 4096;

		bad = src;
		bad.line = copy;
		for (uint64_t cut = 0; cut < len; cut++) {	/* every length */
			memcpy(copy, src.line, off + cut);
			bad.line_size = off + cut;
			corrupt_case(&bad, off, &built, &refused);
			cases++;
		}
		bad.line_size = src.line_size;
		memcpy(copy, src.line, src.line_size);
		for (uint64_t i = 0; i < len; i++) {	/* every byte */
			uint8_t was = copy[off + i];
			uint8_t vals[4] = { 0, 0xff, (uint8_t)(was + 1),
					    (uint8_t)rand_r(&seed) };

			for (int v = 0; v < 4; v++) {
				copy[off + i] = vals[v];
				corrupt_case(&bad, off, &built, &refused);
				cases++;
			}
			copy[off + i] = was;
		}
	}
	printf("cases=%lu built=%lu refused=%lu\n", cases, built, refused);
	free(copy);
	dwarf_end(dw);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long units = 0, rows = 0, files = 0, unsupported = 0;
	struct dwarf_linetab_src src;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf *dw;
	int fd;

	if (argc == 3 && !strcmp(argv[1], "--corrupt"))
		return corrupt(argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: test_dwarf_linetab FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || !(dw = dwarf_begin(fd, DWARF_C_READ))) {
		fprintf(stderr, "%s: cannot read its DWARF\n", argv[1]);
		return 2;
	}
	if (dwarf_linetab_src_of(dwarf_getelf(dw), &src)) {
		fprintf(stderr, "%s: no .debug_line\n", argv[1]);
		return 2;
	}
	while (!dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL)) {
		Dwarf_Attribute a;
		Dwarf_Word stmt;
		Dwarf_Lines *lines;
		Dwarf_Files *dfiles;
		size_t nlines, nfiles;
		struct dwarf_linetab *t;
		uint64_t bytes;
		int ret, lret;

		if (dwarf_formudata(dwarf_attr(&cudie, DW_AT_stmt_list, &a), &stmt))
			continue;
		units++;
		unit_comp_dir = dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &a));
		ret = dwarf_linetab_build(&src, stmt, unit_comp_dir, 0, &t, &bytes);
		lret = dwarf_getsrclines(&cudie, &lines, &nlines);
		if (ret == -EOPNOTSUPP) {
			unsupported++;
			continue;
		}
		if (ret || lret) {
			if (!ret != !lret)
				MISMATCH("unit 0x%" PRIx64 ": ours %d, libdw %d",
					 (uint64_t)dwarf_dieoffset(&cudie), ret, lret);
			dwarf_linetab_free(t);
			continue;
		}
		if (nlines != dwarf_linetab_rows(t))
			MISMATCH("unit 0x%" PRIx64 ": %zu rows, libdw %zu",
				 (uint64_t)dwarf_dieoffset(&cudie),
				 dwarf_linetab_rows(t), nlines);
		for (size_t i = 0; i < nlines && i < dwarf_linetab_rows(t); i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			uint64_t addr;
			uint32_t file, line;
			int end, lno;
			bool lend;
			Dwarf_Addr la;

			dwarf_linetab_row(t, i, &addr, &file, &line, &end);
			if (dwarf_lineaddr(l, &la) || dwarf_lineno(l, &lno) ||
			    dwarf_lineendsequence(l, &lend))
				continue;
			if (la != addr || (uint32_t)lno != line || lend != !!end ||
			    !same(dwarf_linesrc(l, NULL, NULL), dwarf_linetab_file(t, file)))
				MISMATCH("unit 0x%" PRIx64 " row %zu: libdw 0x%" PRIx64
					 " %s:%d end %d, ours 0x%" PRIx64 " %s:%u end %d",
					 (uint64_t)dwarf_dieoffset(&cudie), i, (uint64_t)la,
					 dwarf_linesrc(l, NULL, NULL), lno, lend, addr,
					 dwarf_linetab_file(t, file), line, end);
			check_find(&cudie, t, addr);
			if (addr)
				check_find(&cudie, t, addr - 1);
		}
		rows += nlines;
		if (!dwarf_getsrcfiles(&cudie, &dfiles, &nfiles)) {
			for (size_t i = 0; i < nfiles; i++)
				if (!same(dwarf_filesrc(dfiles, i, NULL, NULL),
					  dwarf_linetab_file(t, i)))
					MISMATCH("unit 0x%" PRIx64 " file %zu: libdw %s, ours %s",
						 (uint64_t)dwarf_dieoffset(&cudie), i,
						 dwarf_filesrc(dfiles, i, NULL, NULL),
						 dwarf_linetab_file(t, i));
			if (dwarf_linetab_file(t, nfiles))
				MISMATCH("unit 0x%" PRIx64 ": more files than libdw's %zu",
					 (uint64_t)dwarf_dieoffset(&cudie), nfiles);
			files += nfiles;
		}
		dwarf_linetab_free(t);
	}
	printf("units=%lu rows=%lu files=%lu mismatches=%lu unsupported=%lu\n",
	       units, rows, files, mismatches, unsupported);
	dwarf_end(dw);
	close(fd);
	return mismatches ? 1 : 0;
}
