// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_unwind.c - libFuzzer target for the unwind-table compiler.
 *
 * The first input byte picks the entry point:
 *   'E'  the rest is an ELF image: unwind_table_build_mem()
 *   'e'  8 bytes of section vaddr (little-endian), then .eh_frame bytes:
 *        unwind_table_build_section()
 *   'd'  the same for .debug_frame
 *   else byte % 3 picks one of the three (the rest as above).
 * Every table built must hold the invariants the BPF unwinder relies on
 * (first row at pc 0, pcs strictly increasing, no two equal neighbours,
 * an END row last, unwind_table_find() returning each row at its own
 * pc); a violation aborts, which libFuzzer reports as a crash.
 *
 * Build (tests/test_unwind_table.py does):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -I. \
 *     tests/fuzz/fuzz_unwind.c src/unwind/compile.c \
 *     src/unwind/dwarf_cfi.c src/unwind/cfa_interp.c src/unwind/go.c \
 *     -ldw -lelf -lz
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/compile.h"

static void check(const struct unwind_table *t)
{
	uint32_t i;

	if (!t->nr_rows) {
		if (t->rows)
			abort();
		return;
	}
	if (t->rows[0].pc != 0 ||
	    UNWIND_ROW_CFA_TYPE(&t->rows[t->nr_rows - 1]) != UNWIND_CFA_END)
		abort();
	for (i = 0; i < t->nr_rows; i++) {
		const struct unwind_row *r = &t->rows[i];
		const struct unwind_row *f = unwind_table_find(t, t->base + r->pc);

		if (UNWIND_ROW_CFA_TYPE(r) > UNWIND_CFA_PLT3 ||
		    UNWIND_ROW_RBP_TYPE(r) > UNWIND_RBP_UNSUPPORTED)
			abort();
		if (f != (UNWIND_ROW_CFA_TYPE(r) == UNWIND_CFA_END ? NULL : r))
			abort();
		if (i && (r->pc <= r[-1].pc ||
			  (r->rules == r[-1].rules && r->cfa_off8 == r[-1].cfa_off8 &&
			   r->rbp_off8 == r[-1].rbp_off8)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_build_stats st;
	struct unwind_table t;
	uint64_t vaddr = 0;
	int mode, ret;

	if (size < 1)
		return 0;
	mode = data[0] == 'E' ? 0 : data[0] == 'e' ? 1 : data[0] == 'd' ? 2 :
	       data[0] % 3;
	data++;
	size--;
	if (mode == 0) {
		ret = unwind_table_build_mem(data, size, &t, &st);
	} else {
		if (size < 8)
			return 0;
		memcpy(&vaddr, data, 8);
		ret = unwind_table_build_section(data + 8, size - 8, vaddr,
						 mode == 2, &t, &st);
	}
	if (ret && (t.rows || t.nr_rows))
		abort();
	if (!ret && !st.fdes)
		abort();
	check(&t);
	unwind_table_free(&t);
	return 0;
}
