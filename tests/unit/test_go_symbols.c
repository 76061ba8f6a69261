// SPDX-License-Identifier: GPL-2.0
/*
 * test_go_symbols.c - a CLI over the symbolizer's Go tables (src/symbol/
 * go_symtab.c through elf_file.h), for tests/test_go_symbols.py:
 *
 *   test_go_symbols FILE VADDR...      the frames at each pc
 *
 * VADDR (hex) is the pc itself; a VADDR of "-" reads them from stdin,
 * one a line. Each prints one line per frame, innermost first, the
 * real function last: "VADDR<tab>I<tab>NAME<tab>FILE<tab>LINE" (I from
 * 0; FILE "" and LINE 0 where unknown; Go names may hold spaces and
 * semicolons, never tabs), or one line "VADDR<tab>-ERRNO". A first line
 * "# result=N bytes=N" gives elf_file_load_symbols()' result and the
 * heap bytes the object then holds (symbols, the Go table's copies).
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

	if (n < 0) {
		printf("%llx\t%d\n", (unsigned long long)pc, n);
		return;
	}
	for (int i = 0; i < n; i++)
		printf("%llx\t%d\t%s\t%s\t%u\n", (unsigned long long)pc, i, fr[i].name,
		       fr[i].file ? fr[i].file : "", fr[i].line);
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
	printf("# result=%d bytes=%zu\n", err, elf_file_bytes(f));
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
