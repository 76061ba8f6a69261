// SPDX-License-Identifier: GPL-2.0
/*
 * elf_symtab.c - function symbol tables read with libelf (see
 * elf_symtab.h).
 *
 * Owns: reading FUNC/IFUNC symbols out of .symtab/.dynsym sections,
 * choosing one name per address (binding, then .symtab over .dynsym,
 * then fewer leading underscores), sizing symbols without a size, the
 * code labels (NOTYPE symbols of executable sections, as hand-written
 * assembly leaves them: ld.so's _start and _dl_start_user) naming only
 * code no function symbol covers, the synthetic "name@plt" symbols of
 * PLT stubs no symbol covers (plt.c names them), and the
 * enclosing-symbol links the lookup walks.
 *
 * Input is untrusted (any file a process maps, any debug file found for
 * one): every count, offset and index comes from libelf's checked
 * accessors, and every failure is an error, never a crash.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "symbol/elf_symtab.h"
#include "symbol/go_symtab.h"
#include "symbol/plt.h"

COUNTER_DEFINE(plt_stubs_unnamed, COUNTER_STAT,
	       "PLT stubs left unnamed (counted per symbol table read): "
	       "their GOT slot matched no named relocation");

#define CHAIN_MAX	256	/* enclosing symbols tried per lookup */

struct elf_sym {
	uint64_t start;		/* ELF virtual address */
	uint64_t end;		/* exclusive */
	uint64_t max_end;	/* max end of this and all earlier symbols */
	uint32_t name;		/* offset in names */
	uint32_t parent;	/* nearest earlier symbol covering start, or NONE */
};

#define NO_PARENT UINT32_MAX

/* A function symbol as read, before sorting and merging. */
struct cand {
	uint64_t value;
	uint64_t size;
	uint64_t limit;		/* end of its section (for size-0 symbols) */
	const char *name;	/* inside libelf's data; valid until elf_end */
	uint32_t name_len;	/* up to a version suffix ("@VER", "@@VER") */
	uint32_t seq;		/* read order, for a stable sort */
	uint8_t rank;		/* 2 GLOBAL, 1 WEAK, 0 LOCAL */
	uint8_t symtab;		/* 1 from .symtab, 0 from .dynsym */
	uint8_t plt;		/* 1: a PLT stub, named name + "@plt" */
	uint8_t label;		/* 1: a code label (NOTYPE) */
};

struct cands {
	struct cand *v;
	size_t n, cap;
};

struct sec_range {
	uint64_t addr, size;
	bool exec;		/* SHF_EXECINSTR: its NOTYPE symbols are code labels */
};

static int cands_push(struct cands *c, const struct cand *x)
{
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 1024;
		struct cand *nv = realloc(c->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		c->v = nv;
		c->cap = ncap;
	}
	c->v[c->n++] = *x;
	return 0;
}

static int bind_rank(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 2;
	case STB_WEAK:
		return 1;
	default:
		return 0;
	}
}

/*
 * Whether @name, a NOTYPE symbol's, names code: not an assembler's
 * mapping symbol ("$x", "$d") or local label (".L...").
 */
static bool label_name(const char *name)
{
	return name[0] && name[0] != '$' && strncmp(name, ".L", 2) != 0;
}

/*
 * Read the function symbols of one symbol table section into @c, and its
 * code labels (NOTYPE symbols inside an executable section) into @labels.
 */
static int read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		       const struct sec_range *secs, size_t nsecs,
		       struct cands *c, struct cands *labels)
{
	size_t symsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, n, len;

	if (!d || !d->d_buf || !symsz)
		return 0;	/* unreadable table: skip it */
	n = d->d_size / symsz;
	for (i = 1; i < n; i++) {	/* entry 0 is the null symbol */
		struct cand x;
		GElf_Sym s;
		int type;

		if (!gelf_getsym(d, (int)i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    (type != STT_NOTYPE || s.st_shndx >= nsecs ||
		     !secs[s.st_shndx].exec))
			continue;
		if (s.st_shndx == SHN_UNDEF || s.st_value == 0)
			continue;
		x.name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!x.name || (type == STT_NOTYPE && !label_name(x.name)))
			continue;
		len = strcspn(x.name, "@");
		if (!len || len > UINT32_MAX)
			continue;
		x.name_len = (uint32_t)len;
		x.value = s.st_value;
		x.size = s.st_size;
		x.limit = 0;
		if (s.st_shndx < nsecs) {
			const struct sec_range *r = &secs[s.st_shndx];

			if (x.value >= r->addr && x.value - r->addr < r->size)
				x.limit = r->addr + r->size;
		}
		if (type == STT_NOTYPE && !x.limit)
			continue;	/* a section's end marker (_etext) */
		x.rank = (uint8_t)bind_rank(GELF_ST_BIND(s.st_info));
		x.symtab = sh->sh_type == SHT_SYMTAB;
		x.plt = 0;
		x.label = type == STT_NOTYPE;
		x.seq = (uint32_t)(type == STT_NOTYPE ? labels : c)->n;
		if (cands_push(type == STT_NOTYPE ? labels : c, &x))
			return -ENOMEM;
	}
	return 0;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * By address, then best name first: a function over a code label,
 * binding, .symtab over .dynsym, fewer leading underscores (the public
 * alias over "__libc_..."), read order.
 */
static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	size_t ux, uy;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->label != y->label)
		return x->label ? 1 : -1;
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	if (x->symtab != y->symtab)
		return x->symtab > y->symtab ? -1 : 1;
	ux = leading_underscores(x->name);
	uy = leading_underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Merge sorted candidates into @t: one entry per address (the first,
 * i.e. best, name; the largest size), size-0 symbols extended to the next
 * symbol or their section's end, then the enclosing-symbol links.
 */
static int build_table(struct elf_symtab *t, struct cands *c)
{
	size_t i, j, n = 0, blob = 0, pos = 0;
	uint32_t *stack;
	size_t top = 0;

	for (i = 0; i < c->n; i = j) {
		uint64_t size = c->v[i].size, limit = c->v[i].limit;

		for (j = i + 1; j < c->n && c->v[j].value == c->v[i].value; j++) {
			if (c->v[j].size > size)
				size = c->v[j].size;
			if (c->v[j].limit > limit)
				limit = c->v[j].limit;
		}
		c->v[n] = c->v[i];
		c->v[n].size = size;
		c->v[n].limit = limit;
		blob += c->v[n].name_len + 1 + (c->v[n].plt ? 4 : 0);
		n++;
	}
	if (!n)
		return 0;
	if (blob > UINT32_MAX || n >= NO_PARENT)
		return -E2BIG;

	t->syms = calloc(n, sizeof(*t->syms));
	t->names = malloc(blob);
	stack = malloc(n * sizeof(*stack));
	if (!t->syms || !t->names || !stack) {
		free(stack);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct cand *x = &c->v[i];
		struct elf_sym *s = &t->syms[i];
		size_t len = x->name_len;

		s->start = x->value;
		if (x->size) {
			s->end = x->value + x->size;
			if (s->end < s->start)
				s->end = UINT64_MAX;
		} else {
			s->end = x->limit > x->value ? x->limit : x->value + 1;
			if (i + 1 < n && c->v[i + 1].value < s->end)
				s->end = c->v[i + 1].value;
		}
		s->max_end = i && t->syms[i - 1].max_end > s->end ?
			     t->syms[i - 1].max_end : s->end;
		s->name = (uint32_t)pos;
		memcpy(t->names + pos, x->name, len);
		if (x->plt) {
			memcpy(t->names + pos + len, "@plt", 4);
			len += 4;
		}
		t->names[pos + len] = '\0';
		pos += len + 1;

		/*
		 * Parent: the nearest earlier symbol still open at our start.
		 * Starts only grow, so one closed before it is closed for good.
		 */
		while (top && t->syms[stack[top - 1]].end <= s->start)
			top--;
		s->parent = top ? stack[top - 1] : NO_PARENT;
		stack[top++] = (uint32_t)i;
	}
	free(stack);
	t->n = n;
	t->bytes = n * sizeof(*t->syms) + pos;
	return 0;
}

/* Section address ranges by index, for bounding size-0 symbols. */
static struct sec_range *read_sections(Elf *elf, size_t *nsecs)
{
	struct sec_range *secs;
	Elf_Scn *scn = NULL;
	size_t n;

	*nsecs = 0;
	if (elf_getshdrnum(elf, &n) || !n)
		return NULL;
	secs = calloc(n, sizeof(*secs));
	if (!secs)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		size_t idx = elf_ndxscn(scn);
		GElf_Shdr sh;

		if (idx >= n || !gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_flags & SHF_ALLOC) {
			secs[idx].addr = sh.sh_addr;
			secs[idx].size = sh.sh_size;
			secs[idx].exec = sh.sh_flags & SHF_EXECINSTR;
		}
	}
	*nsecs = n;
	return secs;
}

/*
 * Collect the function symbols of @elf into @c and its code labels into
 * @labels: its .symtab, and its .dynsym too unless @symtab_only (a debug
 * file's .dynsym has no data).
 */
static int collect(Elf *elf, bool symtab_only, struct cands *c,
		   struct cands *labels)
{
	struct sec_range *secs;
	Elf_Scn *scn = NULL;
	size_t nsecs;
	int ret = 0;

	secs = read_sections(elf, &nsecs);
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type != SHT_SYMTAB &&
		    (symtab_only || sh.sh_type != SHT_DYNSYM))
			continue;
		ret = read_symtab(elf, scn, &sh, secs, nsecs, c, labels);
		if (ret)
			break;
	}
	free(secs);
	return ret;
}

/*
 * For the sorted candidates @c, @reach[i]: the highest end among c[0..i]
 * (the ends build_table() will give them; with @sized_only, a size-0
 * symbol's extent counts as empty), so an address a is covered by a
 * symbol when reach[last i with value <= a] > a.
 */
static uint64_t *cand_reach(const struct cands *c, bool sized_only)
{
	uint64_t *reach = malloc(c->n * sizeof(*reach));
	size_t i, next = 0;

	if (!reach)
		return NULL;
	for (i = 0; i < c->n; i++) {
		const struct cand *x = &c->v[i];
		uint64_t end;

		if (next <= i)		/* first candidate of the next address */
			for (next = i + 1; next < c->n &&
			     c->v[next].value == x->value; next++)
				;
		if (x->size) {
			end = x->value + x->size;
			if (end < x->value)
				end = UINT64_MAX;
		} else if (sized_only) {
			end = x->value;
		} else {
			end = x->limit > x->value ? x->limit : x->value + 1;
			if (next < c->n && c->v[next].value < end)
				end = c->v[next].value;
		}
		reach[i] = i && reach[i - 1] > end ? reach[i - 1] : end;
	}
	return reach;
}

/* Whether one of the first @n (sorted) candidates of @c covers @addr. */
static bool covered(const struct cands *c, size_t n, const uint64_t *reach,
		    uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->v[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && reach[lo - 1] > addr;
}

/*
 * Add @elf's named PLT stubs that no candidate of the sorted @c covers
 * (the symbol table's own name wins), as "name@plt" candidates, and sort
 * again. Names stay in @elf's data, like the other candidates'.
 */
static int add_plt(Elf *elf, struct cands *c)
{
	struct plt_stubs stubs;
	uint64_t *reach = NULL;
	size_t i, before = c->n;
	int ret;

	ret = plt_stubs_read(elf, &stubs);
	if (ret || !stubs.n)
		goto out;
	if (c->n && !(reach = cand_reach(c, false))) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < stubs.n && !ret; i++) {
		const struct plt_stub *p = &stubs.v[i];
		struct cand x = { 0 };
		size_t len = strcspn(p->name, "@");

		if (!len || len > UINT32_MAX - 5 ||
		    (before && covered(c, before, reach, p->addr)))
			continue;
		x.value = p->addr;
		x.size = p->size;
		x.name = p->name;
		x.name_len = (uint32_t)len;
		x.seq = (uint32_t)c->n;
		x.plt = 1;
		ret = cands_push(c, &x);
	}
	if (!ret && c->n > before)
		qsort(c->v, c->n, sizeof(*c->v), cmp_cand);
out:
	if (stubs.unmatched)
		counter_add(&counter_plt_stubs_unnamed, stubs.unmatched);
	free(reach);
	plt_stubs_free(&stubs);
	return ret;
}

/*
 * Add the code labels of @labels that no sized function of the sorted
 * @c covers (a label inside a function never renames it), and sort
 * again. A label then names the code from it up to the next symbol or
 * its section's end, as a size-0 function symbol does, and ends a size-0
 * function's guessed extent there (crtstuff's frame_dummy, size 0, used
 * to name the labelled code after it).
 */
static int add_labels(struct cands *c, const struct cands *labels)
{
	uint64_t *reach = NULL;
	size_t i, before = c->n;
	int ret = 0;

	if (!labels->n)
		return 0;
	if (c->n && !(reach = cand_reach(c, true)))
		return -ENOMEM;
	for (i = 0; i < labels->n && !ret; i++) {
		struct cand x = labels->v[i];

		if (before && covered(c, before, reach, x.value))
			continue;
		x.seq = (uint32_t)c->n;
		ret = cands_push(c, &x);
	}
	if (!ret && c->n > before)
		qsort(c->v, c->n, sizeof(*c->v), cmp_cand);
	free(reach);
	return ret;
}

/*
 * elf_symtab_build - see elf_symtab.h. Names are copied out of libelf's
 * data into one blob, so the handles may be closed afterwards.
 */
int elf_symtab_build(struct elf_symtab *t, Elf *const *elves,
		     const bool *symtab_only, size_t nelves)
{
	struct cands c = { 0 }, labels = { 0 };
	size_t i;
	int ret = 0;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < nelves && !ret; i++)
		ret = collect(elves[i], symtab_only[i], &c, &labels);
	if (!ret && c.n)
		qsort(c.v, c.n, sizeof(*c.v), cmp_cand);
	if (!ret)
		ret = add_labels(&c, &labels);
	/* PLT stubs live in the object's own sections, never a debug file's. */
	for (i = 0; i < nelves && !ret; i++)
		if (!symtab_only[i])
			ret = add_plt(elves[i], &c);
	if (!ret && c.n)
		ret = build_table(t, &c);
	if (ret)
		elf_symtab_free(t);
	free(c.v);
	free(labels.v);
	return ret;
}

/*
 * elf_symtab_estimate - see elf_symtab.h. Every entry of the symbol
 * sections counts as a function and every byte of their string tables
 * as a name: what build_table() could keep at most, read from the
 * section headers alone.
 */
uint64_t elf_symtab_estimate(Elf *const *elves, const bool *symtab_only,
			     size_t nelves)
{
	uint64_t syms = 0, names = 0;

	for (size_t i = 0; i < nelves; i++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elves[i], scn)) != NULL) {
			GElf_Shdr sh, str;
			Elf_Scn *link;
			size_t ent;

			if (!gelf_getshdr(scn, &sh) ||
			    (sh.sh_type != SHT_SYMTAB &&
			     (sh.sh_type != SHT_DYNSYM || symtab_only[i])))
				continue;
			ent = gelf_fsize(elves[i], ELF_T_SYM, 1, EV_CURRENT);
			if (!ent)
				continue;
			syms += sh.sh_size / ent;
			link = elf_getscn(elves[i], sh.sh_link);
			if (link && gelf_getshdr(link, &str) &&
			    str.sh_type != SHT_NOBITS)
				names += str.sh_size;
		}
	}
	return syms * sizeof(struct elf_sym) + names;
}

/*
 * elf_symtab_lookup - see elf_symtab.h. The candidate is the last symbol
 * starting at or below @vaddr; when it ends before @vaddr, the symbols
 * enclosing it are tried (a function with a local label symbol inside).
 */
const char *elf_symtab_lookup(const struct elf_symtab *t, uint64_t vaddr,
			      uint64_t *sym_vaddr)
{
	size_t lo = 0, hi = t->n, steps;
	uint32_t i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	i = (uint32_t)(lo - 1);
	for (steps = 0; i != NO_PARENT && steps < CHAIN_MAX; steps++) {
		const struct elf_sym *s = &t->syms[i];

		if (s->max_end <= vaddr)
			return NULL;	/* nothing at or before i reaches it */
		if (vaddr < s->end) {
			*sym_vaddr = s->start;
			return t->names + s->name;
		}
		i = s->parent;
	}
	return NULL;
}

/* elf_symtab_free - see elf_symtab.h. */
void elf_symtab_free(struct elf_symtab *t)
{
	go_symtab_free(t->go);
	free(t->syms);
	free(t->names);
	memset(t, 0, sizeof(*t));
}
