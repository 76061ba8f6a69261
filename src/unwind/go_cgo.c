// SPDX-License-Identifier: GPL-2.0
/*
 * go_cgo.c - the rows of Go's cgo callback path (see go_internal.h):
 * runtime.cgocallback, where the walk leaves the goroutine's stack for
 * the C frames on g0 (bpf/unwind_go.h), and crosscall2, the Go assembly
 * those C frames call; and the range replacement go.c's rows use too.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/profd.h"
#include "unwind/go_internal.h"

int go_set_rows(struct unwind_table *t, uint64_t start, uint64_t end,
		const struct unwind_row *r, const uint64_t *pcs, uint32_t n)
{
	struct unwind_row *rows, after;
	uint32_t s, e, k = 0, i;
	bool at_end = false;

	if (!n || pcs[0] != start || start < t->base || end <= start ||
	    end - t->base > UINT32_MAX)
		return -ERANGE;
	for (i = 1; i < n; i++)
		if (pcs[i] <= pcs[i - 1] || pcs[i] >= end)
			return -EINVAL;
	s = (uint32_t)(start - t->base);
	e = (uint32_t)(end - t->base);
	rows = malloc((t->nr_rows + n + 1) * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	after = (struct unwind_row){
		.rules = UNWIND_ROW_RULES(UNWIND_CFA_END, UNWIND_RBP_UNCHANGED),
	};
	for (i = 0; i < t->nr_rows && t->rows[i].pc <= e; i++) {
		after = t->rows[i];
		at_end = t->rows[i].pc == e;
	}
	for (i = 0; i < t->nr_rows && t->rows[i].pc < s; i++)
		rows[k++] = t->rows[i];
	for (uint32_t j = 0; j < n; j++) {
		rows[k] = r[j];
		rows[k++].pc = (uint32_t)(pcs[j] - t->base);
	}
	if (!at_end) {
		after.pc = e;
		rows[k++] = after;
	}
	for (; i < t->nr_rows; i++)
		if (t->rows[i].pc >= e)
			rows[k++] = t->rows[i];
	free(t->rows);
	t->rows = rows;
	t->nr_rows = k;
	return 0;
}

/*
 * The rows of @t in effect in [@start, @end), each with the absolute pc
 * it takes effect at (the first: @start), into malloc'd *@out, *@pcs.
 * Returns how many; 0 when none applies at @start (a gap) or on ENOMEM.
 */
static uint32_t rows_in(const struct unwind_table *t, uint64_t start, uint64_t end,
			struct unwind_row **out, uint64_t **pcs)
{
	uint32_t n = 0, k;

	*out = malloc((t->nr_rows + 1) * sizeof(**out));
	*pcs = malloc((t->nr_rows + 1) * sizeof(**pcs));
	if (!*out || !*pcs)
		goto fail;
	for (k = 0; k < t->nr_rows; k++) {
		uint64_t pc = t->base + t->rows[k].pc;

		if (pc >= end)
			break;
		if (k + 1 < t->nr_rows && t->base + t->rows[k + 1].pc <= start)
			continue;	/* superseded before @start */
		if (!n && pc > start)
			goto fail;	/* nothing in effect at @start */
		(*out)[n] = t->rows[k];
		(*pcs)[n++] = pc < start ? start : pc;
	}
	if (n && UNWIND_ROW_CFA_TYPE(&(*out)[0]) != UNWIND_CFA_END)
		return n;
fail:
	free(*out);
	free(*pcs);
	*out = NULL;
	*pcs = NULL;
	return 0;
}

int go_cgocallback_rows(struct unwind_table *t, uint64_t start, uint64_t end,
			const struct unwind_go_info *info)
{
	struct unwind_row *r;
	uint64_t *pcs;
	uint32_t n = rows_in(t, start, end, &r, &pcs), curg8 = info->m_curg_off / 8;
	int err = 0;

	if (!n)
		return -ENOTSUP;
	if (!curg8 || curg8 > 0xff || info->tls_g_off % 8 ||
	    info->tls_g_off / 8 < INT8_MIN || info->tls_g_off / 8 > INT8_MAX)
		err = -ENOTSUP;
	for (uint32_t i = 0; i < n && !err; i++) {
		uint32_t cfa8 = r[i].cfa_off8;

		if (i && UNWIND_ROW_CFA_TYPE(&r[i]) == UNWIND_CFA_END)
			continue;	/* the padding after its last instruction */
		if (UNWIND_ROW_CFA_TYPE(&r[i]) != UNWIND_CFA_RSP || !cfa8 || cfa8 > 0xff) {
			err = -ENOTSUP;	/* not the frame Go's asm gives it */
			break;
		}
		r[i].rules = UNWIND_ROW_RULES(UNWIND_CFA_GO_SWITCH, UNWIND_GO_CGOCALLBACK);
		r[i].cfa_off8 = UNWIND_GO_CB_PACK(curg8, cfa8);
		r[i].rbp_off8 = (int8_t)(info->tls_g_off / 8);
	}
	if (!err)
		err = go_set_rows(t, start, end, r, pcs, n);
	free(r);
	free(pcs);
	return err == -ENOMEM ? err : err ? -ENOTSUP : 0;
}

/*
 * The @len bytes of @elf's code at @vaddr (in an executable PT_LOAD's
 * file data: no section headers needed), or NULL. libelf's copy.
 */
static const uint8_t *code_at(Elf *elf, uint64_t vaddr, size_t len)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph))
		return NULL;
	for (size_t i = 0; i < nph; i++) {
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) || vaddr < ph.p_vaddr ||
		    vaddr - ph.p_vaddr > ph.p_filesz || len > ph.p_filesz - (vaddr - ph.p_vaddr))
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)(ph.p_offset + (vaddr - ph.p_vaddr)),
					 len, ELF_T_BYTE);
		return d && d->d_buf ? d->d_buf : NULL;
	}
	return NULL;
}

int go_crosscall2_rows(struct Elf *elf, struct unwind_table *t, uint64_t start,
		       uint64_t end)
{
	struct unwind_row *r, *nr = NULL;
	uint64_t *pcs, *npcs = NULL, saved = 0;
	uint32_t n = rows_in(t, start, end, &r, &pcs), k = 0;
	int err = -ENOTSUP;

	if (!n)
		return -ENOTSUP;
	nr = malloc((n + 1) * sizeof(*nr));
	npcs = malloc((n + 1) * sizeof(*npcs));
	if (!nr || !npcs) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		bool framed = UNWIND_ROW_CFA_TYPE(&r[i]) == UNWIND_CFA_RSP && r[i].cfa_off8 > 1;
		uint64_t next = i + 1 < n ? pcs[i + 1] : end;

		nr[k] = r[i];
		npcs[k++] = pcs[i];
		if (!saved && framed) {
			/* the prologue's mov %rbp, disp8(%rsp), at CFA - 16 */
			uint64_t disp = (uint64_t)r[i].cfa_off8 * 8 - 16;
			const uint8_t *c = code_at(elf, pcs[i], 5);

			if (!c || disp > 0x7f || c[0] != 0x48 || c[1] != 0x89 ||
			    c[2] != 0x6c || c[3] != 0x24 || c[4] != disp || pcs[i] + 5 >= next)
				goto out;
			saved = pcs[i] + 5;
			nr[k] = r[i];
			npcs[k++] = saved;
		}
		if (saved && framed) {
			nr[k - 1].rules = UNWIND_ROW_RULES(UNWIND_CFA_RSP, UNWIND_RBP_CFA_OFFSET);
			nr[k - 1].rbp_off8 = -2;
		}
	}
	err = saved ? go_set_rows(t, start, end, nr, npcs, k) : -ENOTSUP;
out:
	free(r);
	free(pcs);
	free(nr);
	free(npcs);
	return err;
}
