// SPDX-License-Identifier: GPL-2.0
/*
 * go.c - Go binaries in the unwind tables (see go.h).
 *
 * A Go executable describes its functions twice: .debug_frame (unless
 * linked with -w), which compile.c reads like any CFI, and the pclntab
 * (always present: the runtime needs it; .gopclntab, a PIE's
 * .data.rel.ro.gopclntab, or found by its magic: src/util/go_elf.c),
 * whose pcsp table
 * gives each pc's stack-pointer delta, that is CFA = rsp + spdelta + 8.
 * Neither says where runtime.systemstack / mcall / morestack /
 * asmcgocall switch to the system stack (g0), nor where nanotime1 and
 * time.now run the vDSO on it; those functions' ranges get one
 * UNWIND_CFA_GO_SWITCH row each, whose walker (bpf/unwind_go.h)
 * continues at the goroutine's saved registers (m.curg.sched, mcall's
 * g's, asmcgocall's saved sp, or m.vdsoPC/vdsoSP); runtime.cgocallback,
 * where C calls Go back, gets switch rows with its frame's CFA offsets
 * (go_cgo.c). The row carries the two offsets that walker needs:
 * runtime.m's curg or vdsoSP (from the table of Go versions checked
 * against their DWARF, else the binary's DWARF) and g's place in TLS (-8
 * from the fs base, or runtime.tlsg's offset in PT_TLS when externally
 * linked). Go's signal restorer gets a SIGNAL row, the functions Go
 * flags TOPFRAME (goexit, mstart, rt0_go) an RA_UNDEFINED one.
 *
 * The pclntab is found by src/util/go_elf.c and read by
 * src/util/gopclntab.c (both shared with the symbolizer); only Go 1.18+ tables (magic 0xfffffff0 for 1.18-1.19,
 * 0xfffffff1 for 1.20+) are used here: older ones are left alone
 * (-ENOENT), their flags and offsets not being those known here.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/profd.h"
#include "counters/counters.h"
#include "unwind/go.h"
#include "unwind/go_internal.h"
#include "util/elf_section.h"
#include "util/go_elf.h"
#include "util/gopclntab.h"

/* The walkers' counters (bpf/unwind_go.h). */
COUNTER_DEFINE_BPF(go_stack_switches, COUNTER_STAT, PROFD_CNT_GO_STACK_SWITCHES,
		   "Go system-stack frames continued on the goroutine's stack");
COUNTER_DEFINE(go_switch_unknown, COUNTER_PARTIAL,
	       "Go binaries whose stack switches are not followed (pclntab before "
	       "Go 1.18, or m.curg's offset unknown: no DWARF, version not known)");
COUNTER_DEFINE_BPF(go_switch_read_error, COUNTER_PARTIAL, PROFD_CNT_GO_SWITCH_ERROR,
		   "Go g, m, m.curg or g0 unreadable at a stack switch: walk stopped");
COUNTER_DEFINE_BPF(go_switch_mid, COUNTER_PARTIAL, PROFD_CNT_GO_SWITCH_MID,
		   "Go sampled in asmcgocall on the system stack, mid-switch (the "
		   "goroutine's frame not known for sure): walk truncated");
COUNTER_DEFINE_BPF(go_switch_bad_sp, COUNTER_PARTIAL, PROFD_CNT_GO_SWITCH_BAD_SP,
		   "Go cgo stack switch whose saved g or sp failed its check (not "
		   "m.curg, outside its stack): walk truncated");

#define GO_TLS_G_OFF	(-8)	/* internal linking, linux/amd64 */

/* Offsets bpf/unwind_go.h takes as constant; checked against DWARF. */
#define GO_G_STACK	0	/* g.stack: stack.lo at 0, stack.hi at 8 */
#define GO_M_G0		0
#define GO_G_M		48
#define GO_G_SCHED	56
#define GO_GOBUF_SP	0
#define GO_GOBUF_PC	8
#define GO_GOBUF_BP	48

/*
 * runtime.m's curg by Go version, asked before DWARF (which a -w binary
 * lacks, and which costs an inflated .debug_info).
 * Only versions whose DWARF was read here: go1.19.8 (Debian golang-go).
 */
static const struct {
	const char *prefix;	/* "go1.19" matches go1.19, go1.19.x */
	uint32_t curg;		/* runtime.m.curg */
	uint32_t vdso_sp;	/* runtime.m.vdsoSP (vdsoPC follows it) */
} curg_by_version[] = {
	{ "go1.19", 192, 800 },
};

/*
 * The executable's pclntab (found by src/util/go_elf.c: by section, or
 * by its magic in a PIE's RELRO or an image without section headers),
 * Go 1.18+ only: the flags and offsets below are those versions'. Its
 * bytes are @elf's. -EPROTONOSUPPORT Go 1.16-1.17.
 */
static int pclntab_open(Elf *elf, struct go_elf_pclntab *loc)
{
	int err = go_elf_pclntab(elf, false, loc);

	if (!err && loc->pt.magic == GOPCLNTAB_MAGIC_116)
		err = -EPROTONOSUPPORT;	/* Go 1.16-1.17: not handled here */
	return err;
}

/* Function @i's entry vaddr (i == nfunc: the end of the last one). */
static uint64_t func_entry(const struct gopclntab *pt, uint64_t i)
{
	return gopclntab_entry(pt, i);
}

static const char *func_name(const struct gopclntab *pt, const struct gopclntab_func *f)
{
	const char *n = gopclntab_name(pt, f->nameoff);

	return n ? n : "";
}

static void push_row(struct unwind_row *rows, uint32_t *n, struct unwind_row r)
{
	if (*n && rows[*n - 1].rules == r.rules &&
	    rows[*n - 1].cfa_off8 == r.cfa_off8 &&
	    rows[*n - 1].rbp_off8 == r.rbp_off8)
		return;
	if (*n && rows[*n - 1].pc == r.pc) {
		rows[*n - 1] = r;
		return;
	}
	rows[(*n)++] = r;
}

/* The row of a pcsp value: CFA = rsp + spdelta + 8, rbp as it is. */
static struct unwind_row spdelta_row(uint32_t pc, int64_t val)
{
	struct unwind_row r = { .pc = pc };

	if (val < 0 || val % 8 || (val + 8) / 8 > UINT16_MAX) {
		r.rules = UNWIND_ROW_RULES(UNWIND_CFA_UNSUPPORTED, UNWIND_RBP_UNCHANGED);
	} else {
		r.rules = UNWIND_ROW_RULES(UNWIND_CFA_RSP, UNWIND_RBP_UNCHANGED);
		r.cfa_off8 = (uint16_t)((val + 8) / 8);
	}
	return r;
}

/* Room for two more rows in *@rows (freed on failure: -ENOMEM). */
static int rows_reserve(struct unwind_row **rows, uint32_t n, uint32_t *cap)
{
	struct unwind_row *nr;

	if (n + 2 < *cap)
		return 0;
	nr = realloc(*rows, 2 * (size_t)*cap * sizeof(*nr));
	if (!nr) {
		free(*rows);
		return -ENOMEM;
	}
	*rows = nr;
	*cap *= 2;
	return 0;
}

/*
 * pcsp_rows - @t from the pcsp table of every function (src/runtime/
 * symtab.go pcvalue/step: zigzag value deltas from -1, pc deltas times
 * minLC, ended by a zero value delta after the first pair).
 */
static int pcsp_rows(const struct gopclntab *pt, struct unwind_table *t,
		     struct unwind_go_info *info)
{
	const struct unwind_row end = {
		.rules = UNWIND_ROW_RULES(UNWIND_CFA_END, UNWIND_RBP_UNCHANGED),
	};
	uint64_t base = func_entry(pt, 0), last = func_entry(pt, pt->nfunc);
	uint32_t n = 0, cap = 1024;
	struct unwind_row *rows = malloc(cap * sizeof(*rows)), r;

	if (!rows)
		return -ENOMEM;
	if (last < base || last - base > UINT32_MAX) {
		free(rows);
		return -EINVAL;
	}
	for (uint64_t i = 0; i < pt->nfunc; i++) {
		struct gopclntab_func f;
		struct gopclntab_iter it;
		uint64_t pc;

		/* sorted by entry: a malformed one must not unsort the rows */
		if (gopclntab_func(pt, i, &f) || f.entry < base || f.end > last ||
		    (n && f.entry - base < rows[n - 1].pc))
			continue;
		pc = f.entry;
		gopclntab_iter_start(&it, pt, &f, f.pcsp);
		while (gopclntab_iter_next(&it) && it.pc < f.end) {
			if (rows_reserve(&rows, n, &cap))
				return -ENOMEM;
			push_row(rows, &n, spdelta_row((uint32_t)(it.pc - base), it.val));
			pc = it.next_pc;
		}
		if (pc < f.end) {
			if (rows_reserve(&rows, n, &cap))
				return -ENOMEM;
			r = end;
			r.pc = (uint32_t)(pc - base);
			push_row(rows, &n, r);
		}
	}
	r = end;
	r.pc = (uint32_t)(last - base);
	push_row(rows, &n, r);
	t->base = base;
	t->nr_rows = n;
	t->rows = rows;
	info->pcsp_rows = n;
	return 0;
}

/* The row of @t in effect at absolute @pc (END outside @t), index in *@i. */
static struct unwind_row row_at(const struct unwind_table *t, uint64_t pc, uint32_t *i)
{
	static const struct unwind_row end = {
		.rules = UNWIND_ROW_RULES(UNWIND_CFA_END, UNWIND_RBP_UNCHANGED),
	};

	while (*i < t->nr_rows && t->base + t->rows[*i].pc <= pc)
		(*i)++;
	return *i && pc >= t->base ? t->rows[*i - 1] : end;
}

/*
 * fill_gaps - @t (CFI) with @p's rows (pcsp) wherever @t has none: a cgo
 * binary's .eh_frame covers its C code only. One pass over both; @p is
 * freed. -ERANGE when the two do not fit one 4 GiB table.
 */
static int fill_gaps(struct unwind_table *t, struct unwind_table *p)
{
	uint64_t base = t->base < p->base ? t->base : p->base;
	uint32_t it = 0, ip = 0, jt = 0, jp = 0, n = 0;
	struct unwind_row *rows;
	int err = 0;

	rows = malloc((t->nr_rows + p->nr_rows + 1) * sizeof(*rows));
	if (!rows) {
		err = -ENOMEM;
		goto out;
	}
	while (jt < t->nr_rows || jp < p->nr_rows) {
		/* the next breakpoint of either table */
		uint64_t a = jt < t->nr_rows ? t->base + t->rows[jt].pc : UINT64_MAX;
		uint64_t b = jp < p->nr_rows ? p->base + p->rows[jp].pc : UINT64_MAX;
		uint64_t pc = a < b ? a : b;
		struct unwind_row r = row_at(t, pc, &it);

		if (pc - base > UINT32_MAX) {
			err = -ERANGE;
			free(rows);
			goto out;
		}
		if (UNWIND_ROW_CFA_TYPE(&r) == UNWIND_CFA_END)
			r = row_at(p, pc, &ip);
		r.pc = (uint32_t)(pc - base);
		push_row(rows, &n, r);
		jt += a == pc;
		jp += b == pc;
	}
	free(t->rows);
	t->rows = rows;
	t->nr_rows = n;
	t->base = base;
out:
	unwind_table_free(p);
	return err;
}

/* Has @t no row at some function's entry? */
static bool has_gaps(const struct gopclntab *pt, const struct unwind_table *t)
{
	for (uint64_t i = 0; i < pt->nfunc; i++)
		if (!unwind_table_find(t, func_entry(pt, i)))
			return true;
	return false;
}

/* @t's rows for [@start, @end) replaced by the one row @r (go_set_rows). */
static int set_range(struct unwind_table *t, uint64_t start, uint64_t end,
		     struct unwind_row r)
{
	return go_set_rows(t, start, end, &r, &start, 1);
}

/* The DWARF member offset of @member in @type, or -1. */
static int64_t member_off(Dwarf_Die *type, const char *member)
{
	Dwarf_Die c;
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (dwarf_child(type, &c))
		return -1;
	do {
		const char *n = dwarf_diename(&c);

		if (dwarf_tag(&c) == DW_TAG_member && n && !strcmp(n, member) &&
		    dwarf_attr(&c, DW_AT_data_member_location, &a) &&
		    !dwarf_formudata(&a, &v))
			return (int64_t)v;
	} while (!dwarf_siblingof(&c, &c));
	return -1;
}

int unwind_go_dwarf_offsets(struct Elf *elf, uint32_t *curg, uint32_t *vdso_sp)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	Dwarf_Off off = 0, next;
	size_t hsize;
	int found = 0;
	bool bad = false;

	*curg = *vdso_sp = 0;
	if (!dw)
		return -ENOENT;
	while (found != 15 &&
	       !dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cu, d;

		if (dwarf_offdie(dw, off + hsize, &cu) && !dwarf_child(&cu, &d)) {
			do {
				const char *n;

				if (dwarf_tag(&d) != DW_TAG_structure_type)
					continue;
				n = dwarf_diename(&d);
				if (!n)
					continue;
				if (!strcmp(n, "runtime.m") && !(found & 1)) {
					int64_t v = member_off(&d, "curg");
					int64_t sp = member_off(&d, "vdsoSP");

					found |= 1;
					bad |= member_off(&d, "g0") != GO_M_G0;
					if (v > 0 && v % 8 == 0 && v / 8 <= UINT16_MAX)
						*curg = (uint32_t)v;
					if (sp > 0 && sp % 8 == 0 && sp / 8 <= UINT16_MAX &&
					    member_off(&d, "vdsoPC") == sp + 8)
						*vdso_sp = (uint32_t)sp;
				} else if (!strcmp(n, "runtime.g") && !(found & 2)) {
					found |= 2;
					bad |= member_off(&d, "m") != GO_G_M ||
					       member_off(&d, "sched") != GO_G_SCHED ||
					       member_off(&d, "stack") != GO_G_STACK;
				} else if (!strcmp(n, "runtime.gobuf") && !(found & 4)) {
					found |= 4;
					bad |= member_off(&d, "sp") != GO_GOBUF_SP ||
					       member_off(&d, "pc") != GO_GOBUF_PC ||
					       member_off(&d, "bp") != GO_GOBUF_BP;
				} else if (!strcmp(n, "runtime.stack") && !(found & 8)) {
					found |= 8;
					bad |= member_off(&d, "lo") != 0 ||
					       member_off(&d, "hi") != 8;
				}
			} while (found != 15 && !dwarf_siblingof(&d, &d));
		}
		off = next;
	}
	dwarf_end(dw);
	if (bad || (*curg && found != 15)) {
		*curg = *vdso_sp = 0;
		return -ENOTSUP;
	}
	return *curg ? 0 : -ENOENT;
}

/*
 * tls_g_offset - g's offset from the fs base: runtime.tlsg's place in
 * the executable's TLS block (variant II: the block ends at the thread
 * pointer) when the binary has both, else Go's internal-linking -8.
 */
static int32_t tls_g_offset(Elf *elf)
{
	GElf_Shdr sh;
	GElf_Phdr ph;
	GElf_Sym sym;
	Elf_Scn *scn = elf_section_by_name(elf, ".symtab", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	uint64_t memsz = 0, align = 1;
	size_t nph, i;
	bool tls = false;

	if (!d || elf_getphdrnum(elf, &nph))
		return GO_TLS_G_OFF;
	for (i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_TLS) {
			memsz = ph.p_memsz;
			align = ph.p_align ? ph.p_align : 1;
			tls = true;
		}
	if (!tls || !sh.sh_entsize)
		return GO_TLS_G_OFF;
	for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
		const char *n;

		if (!gelf_getsym(d, (int)i, &sym) ||
		    GELF_ST_TYPE(sym.st_info) != STT_TLS)
			continue;
		n = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (n && !strcmp(n, "runtime.tlsg"))
			return (int32_t)((int64_t)sym.st_value -
					 (int64_t)((memsz + align - 1) / align * align));
	}
	return GO_TLS_G_OFF;
}

uint32_t unwind_go_curg_offset(const char *version, uint32_t *vdso_sp)
{
	for (size_t i = 0; i < sizeof(curg_by_version) / sizeof(curg_by_version[0]); i++) {
		size_t l = strlen(curg_by_version[i].prefix);

		/* "go1.19" matches "go1.19" and "go1.19.8", not "go1.190" */
		if (!strncmp(version, curg_by_version[i].prefix, l) &&
		    (version[l] == 0 || version[l] == '.' || version[l] == ' ')) {
			*vdso_sp = curg_by_version[i].vdso_sp;
			return curg_by_version[i].curg;
		}
	}
	*vdso_sp = 0;
	return 0;
}

/*
 * func_row - the one row a whole function gets, or false: Go's stack
 * switches (GO_SWITCH with the offsets in @info); the restorer Go puts
 * in its sigactions (the kernel's signal frame is at its sp: SIGNAL);
 * functions flagged TOPFRAME (goexit, mstart, rt0_go: nothing called
 * them, Go's traceback ends there: RA_UNDEFINED) but the signal
 * handlers' entries (sigtramp: the signal frame follows).
 */
static bool func_row(const struct gopclntab *pt, const struct gopclntab_func *f,
		     const struct unwind_go_info *info, struct unwind_row *r)
{
	const char *name = func_name(pt, f);
	uint8_t flag = f->flag;
	int kind = -1;

	memset(r, 0, sizeof(*r));
	if (!strcmp(name, "runtime.systemstack"))
		kind = UNWIND_GO_SYSTEMSTACK;
	else if (!strcmp(name, "runtime.asmcgocall"))
		kind = UNWIND_GO_ASMCGOCALL;	/* runs C on g0 */
	else if (!strcmp(name, "runtime.morestack"))
		kind = UNWIND_GO_MORESTACK;
	else if (!strcmp(name, "runtime.mcall"))
		kind = UNWIND_GO_MCALL;
	else if (!strcmp(name, "runtime.nanotime1") || !strcmp(name, "time.now") ||
		 !strcmp(name, "runtime.walltime"))
		kind = UNWIND_GO_VDSO;	/* asm that calls the vDSO on g0 (1.17+) */
	/*
	 * The assembly function writes sp (funcFlag_SPWRITE, 1.17+; ASM,
	 * 1.19+), not the ABI wrapper of the same name that calls it.
	 */
	if (!(flag & (GOPCLNTAB_FLAG_SPWRITE | GOPCLNTAB_FLAG_ASM)))
		kind = -1;
	if (kind >= 0 && info->m_curg_off &&
	    (kind != UNWIND_GO_VDSO || info->m_vdso_sp_off)) {
		r->rules = UNWIND_ROW_RULES(UNWIND_CFA_GO_SWITCH, kind);
		r->cfa_off8 = (uint16_t)((kind == UNWIND_GO_VDSO ? info->m_vdso_sp_off :
					  info->m_curg_off) / 8);
		r->rbp_off8 = (int8_t)(info->tls_g_off / 8);
		return true;
	}
	if (!strcmp(name, "runtime.sigreturn") ||
	    !strcmp(name, "runtime.sigreturn__sigaction")) {
		r->rules = UNWIND_ROW_RULES(UNWIND_CFA_SIGNAL, UNWIND_RBP_UNCHANGED);
		return true;
	}
	/* a signal handler's entry is TOPFRAME too: walk on to its frame */
	if ((flag & GOPCLNTAB_FLAG_TOPFRAME) && !strstr(name, "igtramp") &&
	    !strstr(name, "sigprofNonGo")) {
		r->rules = UNWIND_ROW_RULES(UNWIND_CFA_RA_UNDEFINED, UNWIND_RBP_UNCHANGED);
		return true;
	}
	return false;
}

/*
 * cgo_rows - the rows of @f ([@start, @end) of @t) when it is one of the
 * cgo callback path's functions (go_cgo.c): runtime.cgocallback's switch
 * rows, crosscall2's saved rbp. 0 when changed; -ENOENT another
 * function; -ENOTSUP not as expected (@t unchanged); -ENOMEM.
 */
static int cgo_rows(Elf *elf, const struct gopclntab *pt, const struct gopclntab_func *f,
		    struct unwind_table *t, uint64_t start, uint64_t end,
		    struct unwind_go_info *info)
{
	const char *name = func_name(pt, f);
	uint8_t flag = f->flag;
	int err;

	/* the assembly function, not an ABI wrapper of the same name */
	if (!(flag & (GOPCLNTAB_FLAG_SPWRITE | GOPCLNTAB_FLAG_ASM)) && strcmp(name, "crosscall2"))
		return -ENOENT;
	if (!strcmp(name, "runtime.cgocallback"))
		err = go_cgocallback_rows(t, start, end, info);
	else if (!strcmp(name, "crosscall2"))
		err = go_crosscall2_rows(elf, t, start, end);
	else
		return -ENOENT;
	if (!err) {
		info->special_funcs++;
		info->switch_funcs += !strcmp(name, "runtime.cgocallback");
	}
	return err;
}

int unwind_go_apply(struct Elf *elf, struct unwind_table *t,
		    struct unwind_go_info *info)
{
	struct unwind_go_info local;
	struct go_elf_pclntab loc;
	struct gopclntab pt;
	bool changed = false;
	int err;

	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	err = pclntab_open(elf, &loc);
	if (err == -EPROTONOSUPPORT)
		counter_inc(&counter_go_switch_unknown);
	if (err)
		return err == -EPROTONOSUPPORT ? -ENOENT : err;
	pt = loc.pt;
	info->nfuncs = (uint32_t)pt.nfunc;
	info->pclntab_by_magic = loc.by_magic;
	go_elf_version(elf, info->version, sizeof(info->version));
	info->tls_g_off = tls_g_offset(elf);
	/*
	 * A verified version first: reading DWARF means inflating all of
	 * .debug_info, hundreds of MB in a big Go binary.
	 */
	info->m_curg_off = unwind_go_curg_offset(info->version, &info->m_vdso_sp_off);
	if (!info->m_curg_off &&
	    !unwind_go_dwarf_offsets(elf, &info->m_curg_off, &info->m_vdso_sp_off))
		info->curg_from_dwarf = 1;
	if (!t->nr_rows) {
		err = pcsp_rows(&pt, t, info);
		if (err)
			return err;
		changed = true;
	} else if (has_gaps(&pt, t)) {
		struct unwind_table p = { 0 };

		err = pcsp_rows(&pt, &p, info);
		if (!err)
			err = fill_gaps(t, &p);
		if (err == -ENOMEM)
			return err;
		changed |= !err;
	}
	if (info->tls_g_off % 8 || info->tls_g_off / 8 < INT8_MIN ||
	    info->tls_g_off / 8 > INT8_MAX)
		info->m_curg_off = 0;	/* not expressible: no switch rows */
	if (!info->m_curg_off)
		counter_inc(&counter_go_switch_unknown);
	for (uint64_t i = 0; i < pt.nfunc; i++) {
		struct gopclntab_func fs;
		const struct gopclntab_func *f = gopclntab_func(&pt, i, &fs) ? NULL : &fs;
		struct unwind_row r;
		uint64_t start;

		if (f && info->m_curg_off) {
			err = cgo_rows(elf, &pt, f, t, func_entry(&pt, i),
				       func_entry(&pt, i + 1), info);
			if (err == -ENOMEM)
				return changed ? 0 : err;
			changed |= !err;
		}
		if (!f || !func_row(&pt, f, info, &r))
			continue;
		start = func_entry(&pt, i);
		/*
		 * The kernel "returns" to the restorer's first byte: the
		 * walker looks up return address - 1 (as glibc's
		 * __restore_rt FDE starts a byte early, for the same reason).
		 */
		if (UNWIND_ROW_CFA_TYPE(&r) == UNWIND_CFA_SIGNAL && start > pt.text)
			start--;
		err = set_range(t, start, func_entry(&pt, i + 1), r);
		if (err == -ENOMEM)
			return changed ? 0 : err;	/* @t stays usable */
		if (!err) {
			info->special_funcs++;
			info->switch_funcs += UNWIND_ROW_CFA_TYPE(&r) == UNWIND_CFA_GO_SWITCH;
			changed = true;
		}
	}
	return changed ? 0 : -ENOTSUP;
}
