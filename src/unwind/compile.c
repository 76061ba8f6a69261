// SPDX-License-Identifier: GPL-2.0
/*
 * compile.c - the unwind-table compiler (see compile.h).
 *
 * Owns: finding an object's CFI sections with libelf (and those of its
 * separate debug file), the code ranges an FDE must lie in, inflating
 * compressed .debug_frame, the last step from per-FDE rows to the table
 * (sort, overlaps, merging, END rows), and the lookup. dwarf_cfi.c does
 * the parsing.
 *
 * Overlapping FDEs (duplicated FDEs, .eh_frame and .debug_frame both
 * describing a function, hand-written CFI) are resolved "first start
 * wins": FDEs are taken in order of start address, ties in order of
 * discovery (the object's .eh_frame, its .debug_frame, then the debug
 * file's, each in section order). An FDE that starts inside the range
 * already covered only contributes from the end of that range on (the
 * row in force there is repeated at that address), and nothing when it
 * ends inside it. The result depends on the input bytes only.
 *
 * Code ranges are the SHF_ALLOC|SHF_EXECINSTR sections of the object
 * (touching ones merged), or its PF_X PT_LOAD segments when it has no
 * section headers. An FDE must lie inside one range: FDEs of functions a
 * linker discarded (.debug_frame keeps them at address 0 or -1) fail it.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "unwind/compile.h"
#include "unwind/dwarf_cfi.h"
#include "unwind/go.h"
#include "util/build_lane.h"

#define MAX_SECTIONS	16		/* CFI sections read per build */
#define INFLATE_MAX	(1ull << 30)	/* bytes: bound on a decompressed section */

#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND	0x70000001	/* .eh_frame as some linkers type it */
#endif

/* One CFI section to parse, with its priority for the tie-break. */
struct src {
	struct cfi_section sec;
	int prio;		/* 0 .eh_frame, 1 .debug_frame, +2 debug file */
	void *owned;		/* inflated copy, or NULL */
};

/* What the builds of one object gather before parsing. */
struct srcs {
	struct src src[MAX_SECTIONS];
	size_t nr;
	struct cfi_range *code;
	size_t nr_code, cap_code;
	bool has_got;
	uint64_t got;
	Elf *main;		/* for DW_EH_PE_indirect reads */
};

static const char *const err_names[UNWIND_ERR__COUNT] = {
	[UNWIND_ERR_TRUNCATED] = "truncated",
	[UNWIND_ERR_CIE] = "bad_cie",
	[UNWIND_ERR_POINTER] = "bad_pointer",
	[UNWIND_ERR_OPCODE] = "bad_opcode",
	[UNWIND_ERR_ADVANCE] = "bad_advance",
	[UNWIND_ERR_RANGE] = "bad_range",
	[UNWIND_ERR_STATE] = "state_stack",
};

const char *unwind_err_name(enum unwind_err e)
{
	return (unsigned int)e < UNWIND_ERR__COUNT ? err_names[e] : "?";
}

static bool libelf_ready(void)
{
	static int state;	/* 0 untried, 1 ok, -1 failed */

	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

/* elf_check - 0 for an ELFCLASS64 little-endian x86-64 object. */
static int elf_check(Elf *elf)
{
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
		return -ENOEXEC;
	return 0;
}

static int add_code(struct srcs *s, uint64_t start, uint64_t size)
{
	if (!size || start + size < start)
		return 0;
	if (s->nr_code == s->cap_code) {
		size_t n = s->cap_code ? 2 * s->cap_code : 16;
		void *p = realloc(s->code, n * sizeof(*s->code));

		if (!p)
			return -ENOMEM;
		s->code = p;
		s->cap_code = n;
	}
	s->code[s->nr_code++] = (struct cfi_range){ start, start + size };
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct cfi_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* sort_code - sort the code ranges and merge overlapping/touching ones. */
static void sort_code(struct srcs *s)
{
	size_t i, n = 0;

	if (!s->nr_code)
		return;
	qsort(s->code, s->nr_code, sizeof(*s->code), cmp_range);
	for (i = 0; i < s->nr_code; i++) {
		if (n && s->code[i].start <= s->code[n - 1].end) {
			if (s->code[i].end > s->code[n - 1].end)
				s->code[n - 1].end = s->code[i].end;
		} else {
			s->code[n++] = s->code[i];
		}
	}
	s->nr_code = n;
}

/* inflate_to - zlib @n bytes at @src into a new buffer of exactly @size. */
static void *inflate_to(const uint8_t *src, size_t n, uint64_t size)
{
	uLongf got = (uLongf)size;
	void *buf;

	/* zlib cannot expand more than ~1032:1 */
	if (!size || size > INFLATE_MAX || size > (uint64_t)n * 1032 + 1024)
		return NULL;
	buf = malloc((size_t)size);
	if (!buf)
		return NULL;
	if (uncompress(buf, &got, src, (uLong)n) != Z_OK || got != size) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * add_section - queue the CFI section @scn for parsing. SHF_COMPRESSED
 * (ELFCOMPRESS_ZLIB) and ".zdebug" ("ZLIB" + big-endian size) sections
 * are inflated; zstd ones and unreadable ones are skipped.
 */
static int add_section(struct srcs *s, Elf_Scn *scn, const GElf_Shdr *sh,
		       bool debug_frame, bool zdebug, int prio)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	struct src *src;
	const uint8_t *data;
	size_t size;
	void *owned = NULL;

	if (!d || !d->d_buf || !d->d_size || s->nr == MAX_SECTIONS)
		return 0;
	data = d->d_buf;
	size = d->d_size;
	if (sh->sh_flags & SHF_COMPRESSED) {
		Elf64_Chdr ch;

		if (size < sizeof(ch))
			return 0;
		memcpy(&ch, data, sizeof(ch));
		if (ch.ch_type != ELFCOMPRESS_ZLIB)
			return 0;
		owned = inflate_to(data + sizeof(ch), size - sizeof(ch),
				   ch.ch_size);
		size = (size_t)ch.ch_size;
	} else if (zdebug) {
		uint64_t n = 0;
		int i;

		if (size < 12 || memcmp(data, "ZLIB", 4))
			return 0;
		for (i = 4; i < 12; i++)
			n = n << 8 | data[i];
		owned = inflate_to(data + 12, size - 12, n);
		size = (size_t)n;
	}
	if ((sh->sh_flags & SHF_COMPRESSED || zdebug) && !owned)
		return 0;
	src = &s->src[s->nr++];
	src->sec = (struct cfi_section){
		.data = owned ? owned : data,
		.size = size,
		.vaddr = sh->sh_addr,
		.debug_frame = debug_frame,
	};
	src->prio = prio;
	src->owned = owned;
	return 0;
}

/*
 * eh_frame_from_phdrs - without section headers, find .eh_frame through
 * PT_GNU_EH_FRAME: .eh_frame_hdr's eh_frame_ptr, read up to the end of
 * the PT_LOAD segment holding it (the walk stops at the terminator).
 */
static int eh_frame_from_phdrs(struct srcs *s, Elf *elf, int prio)
{
	GElf_Phdr hdr_ph, ph;
	size_t i, n;
	Elf_Data *d;
	const uint8_t *h;
	uint64_t ptr = 0;
	bool found = false;

	if (elf_getphdrnum(elf, &n))
		return 0;
	for (i = 0; i < n && !found; i++)
		found = gelf_getphdr(elf, (int)i, &hdr_ph) &&
			hdr_ph.p_type == PT_GNU_EH_FRAME;
	if (!found || hdr_ph.p_filesz < 8)
		return 0;
	d = elf_getdata_rawchunk(elf, (int64_t)hdr_ph.p_offset, 8, ELF_T_BYTE);
	if (!d || d->d_size < 8)
		return 0;
	h = d->d_buf;
	if (h[0] != 1)
		return 0;
	/* GCC and binutils: pcrel|sdata4; also accept udata4/sdata4/udata8 */
	switch (h[1]) {
	case 0x1b:
		ptr = hdr_ph.p_vaddr + 4 + (uint64_t)(int64_t)(int32_t)
		      (h[4] | h[5] << 8 | h[6] << 16 | (uint32_t)h[7] << 24);
		break;
	case 0x03:
	case 0x0b:
		ptr = (uint64_t)(h[4] | h[5] << 8 | h[6] << 16 |
				 (uint32_t)h[7] << 24);
		if (h[1] == 0x0b)
			ptr = (uint64_t)(int64_t)(int32_t)ptr;
		break;
	default:
		return 0;
	}
	for (i = 0; i < n; i++) {
		uint64_t off, size;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    ptr < ph.p_vaddr || ptr - ph.p_vaddr >= ph.p_filesz)
			continue;
		off = ph.p_offset + (ptr - ph.p_vaddr);
		size = ph.p_filesz - (ptr - ph.p_vaddr);
		d = elf_getdata_rawchunk(elf, (int64_t)off, (size_t)size,
					 ELF_T_BYTE);
		if (!d || !d->d_size || s->nr == MAX_SECTIONS)
			return 0;
		s->src[s->nr++] = (struct src){
			.sec = {
				.data = d->d_buf,
				.size = d->d_size,
				.vaddr = ptr,
				.stop_at_zero = true,
			},
			.prio = prio,
		};
		return 0;
	}
	return 0;
}

/* collect - queue @elf's CFI sections; with @is_main its code and .got. */
static int collect(struct srcs *s, Elf *elf, bool is_main)
{
	const int prio = is_main ? 0 : 2;
	size_t shnum = 0, shstrndx = 0;
	Elf_Scn *scn = NULL;
	bool have_eh = false;
	int err;

	if (elf_getshdrnum(elf, &shnum) || elf_getshdrstrndx(elf, &shstrndx))
		shnum = 0;
	while (shnum && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (is_main && (sh.sh_flags & SHF_ALLOC) &&
		    (sh.sh_flags & SHF_EXECINSTR) &&
		    (err = add_code(s, sh.sh_addr, sh.sh_size)))
			return err;
		if (sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (is_main && !strcmp(name, ".got")) {
			s->has_got = true;
			s->got = sh.sh_addr;
		} else if (!strcmp(name, ".eh_frame") &&
			   (sh.sh_type == SHT_PROGBITS ||
			    sh.sh_type == SHT_X86_64_UNWIND)) {
			have_eh = true;
			err = add_section(s, scn, &sh, false, false, prio);
		} else if (!strcmp(name, ".debug_frame")) {
			err = add_section(s, scn, &sh, true, false, prio + 1);
		} else if (!strcmp(name, ".zdebug_frame")) {
			err = add_section(s, scn, &sh, true, true, prio + 1);
		} else {
			continue;
		}
		if (err)
			return err;
	}
	if (is_main && !shnum && !have_eh)
		eh_frame_from_phdrs(s, elf, prio);
	if (is_main && !s->nr_code) {
		size_t i, n;
		GElf_Phdr ph;

		if (elf_getphdrnum(elf, &n))
			n = 0;
		for (i = 0; i < n; i++) {
			if (gelf_getphdr(elf, (int)i, &ph) &&
			    ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
			    (err = add_code(s, ph.p_vaddr, ph.p_memsz)))
				return err;
		}
	}
	return 0;
}

/* read_u64 - DW_EH_PE_indirect: 8 bytes at @vaddr of the object's file. */
static bool read_u64(void *ctx, uint64_t vaddr, uint64_t *val)
{
	Elf *elf = ctx;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		uint64_t off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || sh.sh_size < 8 ||
		    vaddr < sh.sh_addr || vaddr - sh.sh_addr > sh.sh_size - 8)
			continue;
		off = vaddr - sh.sh_addr;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < off + 8)
			return false;
		memcpy(val, (const uint8_t *)d->d_buf + off, 8);	/* LE host */
		return true;
	}
	return false;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct cfi_fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static inline bool same_rules(const struct unwind_row *a,
			      const struct unwind_row *b)
{
	return a->rules == b->rules && a->cfa_off8 == b->cfa_off8 &&
	       a->rbp_off8 == b->rbp_off8;
}

/* push - append @r, merged with an equal predecessor. */
static void push(struct unwind_row *rows, uint32_t *n, struct unwind_row r)
{
	if (*n && rows[*n - 1].pc == r.pc) {
		rows[*n - 1] = r;	/* the later rule wins at one pc */
		if (*n > 1 && same_rules(&rows[*n - 2], &r))
			(*n)--;
		return;
	}
	if (*n && same_rules(&rows[*n - 1], &r))
		return;
	rows[(*n)++] = r;
}

static bool fdes_sorted(const struct cfi_builder *b)
{
	size_t i;

	for (i = 1; i < b->nr_fdes; i++)
		if (cmp_fde(&b->fdes[i - 1], &b->fdes[i]) > 0)
			return false;
	return true;
}

/* finish - sort the FDEs of @b, resolve overlaps, write @out. */
static int finish(struct cfi_builder *b, struct unwind_table *out,
		  struct unwind_build_stats *st)
{
	const struct unwind_row end_row = {
		.rules = UNWIND_ROW_RULES(UNWIND_CFA_END, UNWIND_RBP_UNCHANGED),
	};
	struct unwind_row *rows, r;
	uint64_t base, covered;
	uint32_t n = 0, i, j;
	bool any = false;

	if (!fdes_sorted(b))
		qsort(b->fdes, b->nr_fdes, sizeof(*b->fdes), cmp_fde);
	/* the parsed rows' doubling slack (up to half: 4 MiB of node's 8)
	 * goes back before the table is written beside them */
	if (b->nr_rows && b->nr_rows < b->cap_rows &&
	    (rows = realloc(b->rows, b->nr_rows * sizeof(*rows)))) {
		b->rows = rows;
		b->cap_rows = b->nr_rows;
	}
	rows = malloc((b->nr_rows + b->nr_fdes + 1) * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	base = covered = b->fdes[0].start;
	for (i = 0; i < b->nr_fdes; i++) {
		const struct cfi_fde *f = &b->fdes[i];
		const struct unwind_row *fr = &b->rows[f->first_row];
		uint64_t from = f->start;

		if (f->end - base > UINT32_MAX) {
			cfi_count_error(st, UNWIND_ERR_RANGE);
			continue;
		}
		if (any && from < covered) {
			st->fdes_overlap++;
			if (f->end <= covered)
				continue;
			from = covered;
		} else if (any && from > covered) {
			r = end_row;
			r.pc = (uint32_t)(covered - base);
			push(rows, &n, r);
		}
		for (j = 0; j < f->nr_rows; j++) {
			uint64_t pc = f->start + fr[j].pc;
			uint64_t next = j + 1 < f->nr_rows ?
					f->start + fr[j + 1].pc : f->end;

			if (next <= from)
				continue;
			r = fr[j];
			r.pc = (uint32_t)((pc < from ? from : pc) - base);
			push(rows, &n, r);
		}
		covered = f->end;
		any = true;
		st->fdes++;
	}
	r = end_row;
	r.pc = (uint32_t)(covered - base);
	push(rows, &n, r);

	for (i = 0; i < n; i++) {
		uint8_t cfa = UNWIND_ROW_CFA_TYPE(&rows[i]);

		if (cfa == UNWIND_CFA_UNSUPPORTED ||
		    UNWIND_ROW_RBP_TYPE(&rows[i]) == UNWIND_RBP_UNSUPPORTED)
			st->rows_unsupported++;
		if (cfa == UNWIND_CFA_PLT1 || cfa == UNWIND_CFA_PLT2 ||
		    cfa == UNWIND_CFA_PLT3)
			st->rows_plt++;
		if (cfa == UNWIND_CFA_SIGNAL)
			st->rows_signal++;
	}
	st->rows = n;
	out->base = base;
	out->nr_rows = n;
	out->rows = realloc(rows, n * sizeof(*rows));
	if (!out->rows)
		out->rows = rows;	/* shrinking failed: keep the bigger block */
	return 0;
}

/* build - parse the queued sections of @s into @out. */
static int build(struct srcs *s, struct unwind_table *out,
		 struct unwind_build_stats *st)
{
	struct cfi_builder b = { .st = st };
	struct cfi_env env = { 0 };
	size_t i, j;
	int err = 0;

	/* insertion sort by priority, stable: section order within one */
	for (i = 1; i < s->nr; i++) {
		struct src t = s->src[i];

		for (j = i; j && s->src[j - 1].prio > t.prio; j--)
			s->src[j] = s->src[j - 1];
		s->src[j] = t;
	}
	sort_code(s);
	env.code = s->nr_code ? s->code : NULL;
	env.nr_code = s->nr_code;
	env.has_got = s->has_got;
	env.got = s->got;
	env.read_u64 = s->main ? read_u64 : NULL;
	env.ctx = s->main;
	for (i = 0; i < s->nr && !err; i++) {
		st->sections++;
		st->section_bytes += s->src[i].sec.size;
		err = cfi_parse_section(&b, &s->src[i].sec, &env);
	}
	if (!err && !b.nr_fdes)
		err = !s->nr ? -ENODATA : st->errors ? -EINVAL : -ENODATA;
	if (!err)
		err = finish(&b, out, st);
	cfi_builder_free(&b);
	return err;
}

static void srcs_free(struct srcs *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		free(s->src[i].owned);
	free(s->code);
}

int unwind_table_build_elf(struct Elf *elf, struct Elf *debug,
			   struct unwind_table *out,
			   struct unwind_build_stats *st)
{
	struct unwind_build_stats local;
	struct srcs s;
	int err;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if (!elf || elf_check(elf) || (debug && elf_check(debug)))
		return -ENOEXEC;
	s.main = elf;
	err = collect(&s, elf, true);
	if (!err && debug)
		err = collect(&s, debug, false);
	if (!err)
		err = build(&s, out, st);
	/* Go: stack switches, and pcsp rows where there was no CFI (go.c) */
	if ((!err || err == -ENODATA) && !unwind_go_apply(elf, out, NULL)) {
		err = 0;
		st->rows = out->nr_rows;
	}
	srcs_free(&s);
	return err;
}

int unwind_table_build_fds(int fd, int debug_fd, struct unwind_table *out,
			   struct unwind_build_stats *st)
{
	Elf *elf, *dbg = NULL;
	bool lane;
	int err;

	memset(out, 0, sizeof(*out));
	if (st)
		memset(st, 0, sizeof(*st));
	if (!libelf_ready())
		return -EIO;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -EIO;
	if (debug_fd >= 0) {
		dbg = elf_begin(debug_fd, ELF_C_READ, NULL);
		if (!dbg) {
			elf_end(elf);
			return -EIO;
		}
	}
	/* a big file's CFI, rows and table in the lane */
	lane = build_lane_enter_fd(fd);
	err = unwind_table_build_elf(elf, dbg, out, st);
	elf_end(dbg);
	elf_end(elf);
	build_lane_leave(lane);
	return err;
}

int unwind_table_build(int fd, struct unwind_table *out,
		       struct unwind_build_stats *st)
{
	return unwind_table_build_fds(fd, -1, out, st);
}

int unwind_table_build_mem(const void *image, size_t size,
			   struct unwind_table *out,
			   struct unwind_build_stats *st)
{
	char *copy;
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	if (st)
		memset(st, 0, sizeof(*st));
	if (!libelf_ready())
		return -EIO;
	copy = malloc(size ? size : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, size);
	elf = elf_memory(copy, size);
	if (!elf) {
		free(copy);
		return -ENOEXEC;
	}
	err = unwind_table_build_elf(elf, NULL, out, st);
	elf_end(elf);
	free(copy);
	return err;
}

int unwind_table_build_section(const void *data, size_t size, uint64_t vaddr,
			       bool debug_frame, struct unwind_table *out,
			       struct unwind_build_stats *st)
{
	struct unwind_build_stats local;
	struct srcs s;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if (!size)
		return -ENODATA;
	s.src[0].sec = (struct cfi_section){
		.data = data,
		.size = size,
		.vaddr = vaddr,
		.debug_frame = debug_frame,
	};
	s.nr = 1;
	return build(&s, out, st);
}

void unwind_table_free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

const struct unwind_row *unwind_table_find(const struct unwind_table *t,
					   uint64_t vaddr)
{
	uint32_t lo = 0, hi, pc;

	if (!t || !t->nr_rows || vaddr < t->base ||
	    vaddr - t->base > UINT32_MAX)
		return NULL;
	pc = (uint32_t)(vaddr - t->base);
	hi = t->nr_rows;
	while (lo < hi) {	/* first row with row.pc > pc */
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || UNWIND_ROW_CFA_TYPE(&t->rows[lo - 1]) == UNWIND_CFA_END)
		return NULL;
	return &t->rows[lo - 1];
}
