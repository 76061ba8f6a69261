// SPDX-License-Identifier: GPL-2.0
/*
 * test_dwarf_lines.c - src/symbol/dwarf_lines.c behind a small CLI, for
 * docs/PERFORMANCE.md's cost of lines and inlined frames and for poking
 * at one file by hand.
 *
 *   test_dwarf_lines FILE VADDR...   the chain at each address (hex):
 *                                    "VADDR n=N" then "  NAME FILE:LINE"
 *   test_dwarf_lines --cost FILE STEP  look up every STEP-th byte of the
 *                                    file's executable PT_LOAD segments;
 *                                    print the bytes the symbolizer
 *                                    accounts, the process's RSS growth
 *                                    (kB, VmRSS after malloc_trim()), how
 *                                    often the decoded state was dropped
 *                                    and the time per lookup
 */
#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symbol/dwarf_lines.h"
#include "symbol/elf_file.h"

/* VmRSS after freed heap went back to the kernel (profd trims every 10 s). */
static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f;

	malloc_trim(0);
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cost(const char *path, uint64_t step)
{
	struct dwarf_frame df[DWARF_LINES_MAX_DEPTH];
	long rss0 = rss_kb(), rss1, rss2;
	uint64_t lookups = 0, found = 0, inlined = 0;
	struct dwarf_lines *d;
	struct elf_file *f;
	double t0, t1;
	size_t phnum;
	int err, fd;
	Elf *elf;

	f = elf_file_open(path, &err);
	if (!f || (err = dwarf_lines_open(f, 0, &d))) {
		fprintf(stderr, "%s: %s\n", path, strerror(-err));
		return 1;
	}
	rss1 = rss_kb();
	printf("open: accounted=%llu bytes rss_growth=%ld kB\n",
	       (unsigned long long)dwarf_lines_bytes(d), rss1 - rss0);
	fd = open(path, O_RDONLY);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	t0 = now_s();
	for (size_t i = 0; elf && !elf_getphdrnum(elf, &phnum) && i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		for (uint64_t a = ph.p_vaddr; a < ph.p_vaddr + ph.p_memsz; a += step) {
			int n = dwarf_lines_lookup(d, a, df, DWARF_LINES_MAX_DEPTH);

			lookups++;
			found += n > 0;
			inlined += n > 1;
		}
	}
	t1 = now_s();
	rss2 = rss_kb();
	printf("lookups=%llu with_lines=%llu with_inlined=%llu us_per_lookup=%.2f\n",
	       (unsigned long long)lookups, (unsigned long long)found,
	       (unsigned long long)inlined,
	       lookups ? (t1 - t0) * 1e6 / lookups : 0.0);
	printf("after: accounted=%llu bytes rss_growth=%ld kB resets=%u\n",
	       (unsigned long long)dwarf_lines_bytes(d), rss2 - rss0,
	       dwarf_lines_resets(d));
	elf_end(elf);
	close(fd);
	dwarf_lines_free(d);
	elf_file_free(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct dwarf_frame df[DWARF_LINES_MAX_DEPTH];
	struct dwarf_lines *d;
	struct elf_file *f;
	int err;

	if (argc == 4 && !strcmp(argv[1], "--cost"))
		return cost(argv[2], strtoull(argv[3], NULL, 0));
	if (argc < 3) {
		fprintf(stderr, "usage: test_dwarf_lines FILE VADDR... | --cost FILE STEP\n");
		return 2;
	}
	f = elf_file_open(argv[1], &err);
	if (!f || (err = dwarf_lines_open(f, 0, &d))) {
		printf("open: %s\n", strerror(-err));
		elf_file_free(f);
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		int n = dwarf_lines_lookup(d, strtoull(argv[i], NULL, 16), df,
					   DWARF_LINES_MAX_DEPTH);

		printf("%s n=%d\n", argv[i], n);
		for (int j = 0; j < n; j++)
			printf("  %s %s:%u\n", df[j].name ? df[j].name : "?",
			       df[j].file ? df[j].file : "?", df[j].line);
	}
	dwarf_lines_free(d);
	elf_file_free(f);
	return 0;
}
