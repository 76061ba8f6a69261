// SPDX-License-Identifier: GPL-2.0
/*
 * test_go_symbols.c - a CLI over the symbolizer's Go tables (src/symbol/
 * go_symtab.c through elf_file.h), for tests/test_go_symbols.py:
 *
 *   test_go_symbols FILE VADDR...      the frames at each pc
 *
 * VADDR (hex) is the pc itself; a VADDR of "-" reads them from stdin,
 * one a line. Each prints one line "VADDR F1;F2;...": the frames
 * innermost first, the real function last, each "NAME@FILE:LINE"
 * (FILE "" and LINE 0 where unknown), or "VADDR -ERRNO". A first line
 * "# result=N" gives elf_file_load_symbols()' result.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/elf_file.h"
#include "symbol/symbolizer.h"

#define MAX_FRAMES	32

static void one(struct elf_file *f, uint64_t pc)
{
	struct sym_frame fr[MAX_FRAMES];
	int n = elf_file_go_frames(f, pc, fr, MAX_FRAMES, NULL);

	printf("%llx ", (unsigned long long)pc);
	if (n < 0) {
		printf("%d\n", n);
		return;
	}
	for (int i = 0; i < n; i++)
		printf("%s%s@%s:%u", i ? ";" : "", fr[i].name,
		       fr[i].file ? fr[i].file : "", fr[i].line);
	printf("\n");
}

int main(int argc, char **argv)
{
	struct elf_file *f;
	int err = 0, first = 1;

	if (argc < first + 1) {
		fprintf(stderr, "usage: %s FILE [VADDR...|-]\n", argv[0]);
		return 2;
	}
	f = elf_file_open(argv[first], &err);
	if (!f) {
		printf("# result %d\n", err);
		return 1;
	}
	err = elf_file_load_symbols(f);
	printf("# result=%d\n", err);
	if (argc > first + 1 && !strcmp(argv[first + 1], "-")) {
		char line[64];

		while (fgets(line, sizeof(line), stdin))
			one(f, strtoull(line, NULL, 16));
	} else {
		for (int i = first + 1; i < argc; i++)
			one(f, strtoull(argv[i], NULL, 16));
	}
	elf_file_free(f);
	return 0;
}
