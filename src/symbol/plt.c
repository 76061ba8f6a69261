// SPDX-License-Identifier: GPL-2.0
/*
 * plt.c - x86-64 PLT stubs named from their relocations (see plt.h).
 *
 * Owns: the relocation index by GOT slot (r_offset -> .dynsym name),
 * the stub decoder and the per-section walk. The three layouts binutils
 * and lld emit, each a fixed-size entry per imported function:
 *
 *   .plt (lazy)       ff 25 disp32  68 idx32  e9 rel32       16 bytes
 *   .plt (IBT, lazy)  f3 0f 1e fa  68 idx32  [f2] e9 rel32  nop  16 bytes
 *   .plt.sec (IBT)    f3 0f 1e fa  [f2] ff 25 disp32  nop...  16 bytes
 *   .plt.got          [f3 0f 1e fa] [f2] ff 25 disp32  nop... 8/16 bytes
 *
 * The jmp's target slot (the address after the jmp plus disp32) is looked
 * up among the relocations' r_offsets, so the name never rests on the
 * entry's position. PLT0 (push GOT+8; jmp *GOT+16) matches nothing.
 */
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/plt.h"

#define ENDBR64_LEN	4
#define JMP_LEN		6	/* ff 25 disp32 */

struct reloc {
	uint64_t slot;		/* r_offset: the GOT slot's address */
	const char *name;	/* NULL: two relocations name it differently */
};

/* A section with file data, for reading GOT slots by address. */
struct data_sec {
	uint64_t addr, size;
	Elf_Scn *scn;
};

struct relocs {
	struct reloc *v;	/* by slot, after sorting */
	size_t n, cap;
	struct reloc *jmprel;	/* .rela.plt in entry order (name NULL: not
				 * a named JUMP_SLOT) */
	size_t njmprel;
	struct data_sec *secs;	/* SHT_PROGBITS sections by address */
	size_t nsecs;
	struct reloc *ifuncs;	/* .dynsym's defined STT_GNU_IFUNC symbols:
				 * slot = their address, one name each */
	size_t nifuncs;
	bool ifuncs_read;
};

static int push(struct reloc **v, size_t *n, size_t *cap, struct reloc r)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct reloc *nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = r;
	return 0;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The name of .dynsym entry @idx of the table in @sym_scn, or NULL. */
static const char *dynsym_name(Elf *elf, Elf_Scn *sym_scn, size_t idx)
{
	Elf_Data *d = elf_getdata(sym_scn, NULL);
	GElf_Shdr sh;
	GElf_Sym s;
	const char *name;

	if (!idx || !d || !gelf_getshdr(sym_scn, &sh) || idx > INT32_MAX ||
	    !gelf_getsym(d, (int)idx, &s))
		return NULL;
	name = elf_strptr(elf, sh.sh_link, s.st_name);
	return name && name[0] ? name : NULL;
}

/* How much a name is preferred among a function's aliases: lower wins. */
static unsigned int alias_rank(const char *name, unsigned char bind)
{
	unsigned int u = 0;

	while (name[u] == '_')
		u++;
	return u * 4 + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
}

/*
 * @r->ifuncs: the defined STT_GNU_IFUNC symbols of .dynsym @sym_scn by
 * address, one per address (of aliases the name with the fewest leading
 * underscores, then GLOBAL before WEAK: memcpy, mempcpy).
 */
struct ifunc {
	uint64_t addr;
	const char *name;
	unsigned int rank;	/* alias_rank() */
};

static int cmp_ifunc(const void *a, const void *b)
{
	const struct ifunc *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int read_ifuncs(Elf *elf, Elf_Scn *sym_scn, struct relocs *r)
{
	Elf_Data *d = elf_getdata(sym_scn, NULL);
	struct ifunc *f = NULL;
	size_t i, n, nf = 0, cap = 0, rcap = 0;
	GElf_Shdr sh;
	int ret = 0;

	r->ifuncs_read = true;
	if (!d || !gelf_getshdr(sym_scn, &sh) || !sh.sh_entsize)
		return 0;
	n = d->d_size / sh.sh_entsize;
	for (i = 1; i < n && i <= INT32_MAX; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(d, (int)i, &sym) ||
		    GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		if (nf == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct ifunc *nv = realloc(f, ncap * sizeof(*nv));

			if (!nv) {
				free(f);
				return -ENOMEM;
			}
			f = nv;
			cap = ncap;
		}
		f[nf++] = (struct ifunc){ sym.st_value, name,
			alias_rank(name, GELF_ST_BIND(sym.st_info)) };
	}
	if (nf)
		qsort(f, nf, sizeof(*f), cmp_ifunc);
	for (i = 0; i < nf && !ret; i++)
		if (!i || f[i].addr != f[i - 1].addr)
			ret = push(&r->ifuncs, &r->nifuncs, &rcap,
				   (struct reloc){ f[i].addr, f[i].name });
	free(f);
	return ret;
}

static const char *reloc_name(const struct relocs *r, uint64_t slot);

/*
 * The name of the IFUNC an R_X86_64_IRELATIVE relocation of addend
 * @addend (its resolver's address) selects: the exported IFUNC symbol
 * at that address, or NULL.
 */
static const char *irelative_name(Elf *elf, Elf_Scn *sym_scn,
				  struct relocs *r, int64_t addend)
{
	struct relocs view;

	if (!r->ifuncs_read && read_ifuncs(elf, sym_scn, r))
		return NULL;
	view = (struct relocs){ .v = r->ifuncs, .n = r->nifuncs };
	return reloc_name(&view, (uint64_t)addend);
}

/*
 * Read one SHT_RELA section linked to a .dynsym: its named JUMP_SLOT,
 * GLOB_DAT and IRELATIVE relocations into @r, and when @is_jmprel every
 * entry in order.
 */
static int read_rela(Elf *elf, Elf_Scn *scn, Elf_Scn *sym_scn, bool is_jmprel,
		     struct relocs *r)
{
	size_t entsz = gelf_fsize(elf, ELF_T_RELA, 1, EV_CURRENT);
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, n, jcap = 0;

	if (!d || !d->d_buf || !entsz)
		return 0;
	n = d->d_size / entsz;
	for (i = 0; i < n && i <= INT32_MAX; i++) {
		struct reloc x = { 0 };
		unsigned long type;
		GElf_Rela rela;

		if (!gelf_getrela(d, (int)i, &rela))
			break;
		type = GELF_R_TYPE(rela.r_info);
		x.slot = rela.r_offset;
		if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT)
			x.name = dynsym_name(elf, sym_scn, GELF_R_SYM(rela.r_info));
		else if (type == R_X86_64_IRELATIVE)
			x.name = irelative_name(elf, sym_scn, r, rela.r_addend);
		if (x.name && push(&r->v, &r->n, &r->cap, x))
			return -ENOMEM;
		if (is_jmprel) {
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_IRELATIVE)
				x.name = NULL;
			if (push(&r->jmprel, &r->njmprel, &jcap, x))
				return -ENOMEM;
		}
	}
	return 0;
}

static const char *section_name(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *s = elf_strptr(elf, shstrndx, sh->sh_name);

	return s ? s : "";
}

/*
 * Every named relocation of @elf, sorted by slot, one name per slot:
 * those of .rela.plt (or any SHF_INFO_LINK table: the PLT's), and only
 * when @all (a .plt.got is there, whose slots R_X86_64_GLOB_DAT fills)
 * the rest: .rela.dyn is megabytes in a large library.
 */
static int read_relocs(Elf *elf, size_t shstrndx, bool all, struct relocs *r)
{
	Elf_Scn *scn = NULL;
	size_t i, j;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Scn *sym_scn;
		GElf_Shdr sh, ssh;
		bool jmprel;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA)
			continue;
		sym_scn = elf_getscn(elf, sh.sh_link);
		if (!sym_scn || !gelf_getshdr(sym_scn, &ssh) ||
		    ssh.sh_type != SHT_DYNSYM)
			continue;
		jmprel = !strcmp(section_name(elf, shstrndx, &sh), ".rela.plt");
		if (!all && !jmprel && !(sh.sh_flags & SHF_INFO_LINK))
			continue;
		if (read_rela(elf, scn, sym_scn, jmprel && !r->jmprel, r))
			return -ENOMEM;
	}
	if (!r->n)
		return 0;
	qsort(r->v, r->n, sizeof(*r->v), cmp_slot);
	/* One entry per slot; a slot named two ways names nothing. */
	for (i = 0, j = 0; i < r->n; i++) {
		if (j && r->v[j - 1].slot == r->v[i].slot) {
			const char *a = r->v[j - 1].name, *b = r->v[i].name;

			if (a && (!b || strcmp(a, b)))
				r->v[j - 1].name = NULL;
			continue;
		}
		r->v[j++] = r->v[i];
	}
	r->n = j;
	return 0;
}

static const char *reloc_name(const struct relocs *r, uint64_t slot)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].slot == slot)
			return r->v[mid].name;
		if (r->v[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int cmp_sec(const void *a, const void *b)
{
	const struct data_sec *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* @r->secs: @elf's allocated SHT_PROGBITS sections, sorted by address. */
static int read_data_secs(Elf *elf, struct relocs *r)
{
	Elf_Scn *scn = NULL;
	size_t n = 0, cap = 0;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			struct data_sec *nv = realloc(r->secs, ncap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			r->secs = nv;
			cap = ncap;
		}
		r->secs[n++] = (struct data_sec){ sh.sh_addr, sh.sh_size, scn };
	}
	r->nsecs = n;
	if (n)
		qsort(r->secs, n, sizeof(*r->secs), cmp_sec);
	return 0;
}

/*
 * The 8 bytes the file holds at virtual address @addr (a GOT slot): in
 * the last section starting at or below it (overlapping sections, which
 * no linker makes, may miss: the stub then stays unnamed).
 */
static int read_u64_at(const struct relocs *r, uint64_t addr, uint64_t *val)
{
	size_t lo = 0, hi = r->nsecs;
	const struct data_sec *sec;
	const unsigned char *p;
	Elf_Data *d;
	uint64_t off;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->secs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	sec = &r->secs[lo - 1];
	off = addr - sec->addr;
	if (off >= sec->size)
		return -ENOENT;
	d = elf_getdata(sec->scn, NULL);
	if (!d || !d->d_buf || off > d->d_size || d->d_size - off < 8)
		return -ENOENT;
	p = (const unsigned char *)d->d_buf + off;
	*val = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
	return 0;
}

/*
 * Name the stub of @len bytes at @p (virtual address @addr): its jmp's
 * GOT slot, or for an IBT lazy entry its push's .rela.plt index checked
 * against the slot's lazy-binding target. NULL: not a stub, or unnamed
 * (*@decoded says which).
 */
static const char *stub_name(const struct relocs *r,
			     const unsigned char *p, size_t len, uint64_t addr,
			     bool *decoded)
{
	static const unsigned char endbr64[ENDBR64_LEN] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t i = 0;

	*decoded = false;
	if (len >= ENDBR64_LEN && !memcmp(p, endbr64, ENDBR64_LEN)) {
		i = ENDBR64_LEN;
		if (len >= i + 5 && p[i] == 0x68) {	/* push $index */
			uint32_t idx = le32(p + i + 1);
			uint64_t target;

			*decoded = true;
			if (idx >= r->njmprel || !r->jmprel[idx].name ||
			    read_u64_at(r, r->jmprel[idx].slot, &target) ||
			    target != addr)
				return NULL;
			return r->jmprel[idx].name;
		}
	}
	if (i < len && p[i] == 0xf2)		/* bnd prefix */
		i++;
	if (len < i + JMP_LEN || p[i] != 0xff || p[i + 1] != 0x25)
		return NULL;
	*decoded = true;
	/* rip-relative: from the end of the jmp, wrapping as the CPU does */
	return reloc_name(r, addr + i + JMP_LEN +
			     (uint64_t)(int64_t)(int32_t)le32(p + i + 2));
}

static bool is_plt_section(const char *name)
{
	return !strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
	       !strcmp(name, ".plt.got");
}

/* Walk one PLT section's entries into @out. */
static int read_plt(Elf_Scn *scn, const GElf_Shdr *sh,
		    const struct relocs *r, struct plt_stubs *out, size_t *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	uint64_t stride = sh->sh_entsize == 8 || sh->sh_entsize == 16 ?
			  sh->sh_entsize : 16;
	size_t off;

	if (!d || !d->d_buf)
		return 0;
	for (off = 0; off + stride <= d->d_size; off += stride) {
		uint64_t addr = sh->sh_addr + off;
		const char *name;
		bool decoded;

		name = stub_name(r, (const unsigned char *)d->d_buf + off,
				 stride, addr, &decoded);
		if (!name) {
			out->unmatched += decoded;
			continue;
		}
		if (out->n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 64;
			struct plt_stub *nv = realloc(out->v, ncap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			out->v = nv;
			*cap = ncap;
		}
		out->v[out->n++] = (struct plt_stub){ addr, stride, name };
	}
	return 0;
}

/* plt_stubs_read - see plt.h. */
int plt_stubs_read(Elf *elf, struct plt_stubs *out)
{
	struct relocs r = { 0 };
	Elf_Scn *scn = NULL;
	size_t shstrndx, cap = 0, nplt = 0;
	bool got_plt = false;
	GElf_Ehdr eh;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	/* Which PLT sections there are, before reading any relocation. */
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		name = section_name(elf, shstrndx, &sh);
		nplt += is_plt_section(name);
		got_plt |= !strcmp(name, ".plt.got");
	}
	if (!nplt)
		return 0;
	ret = read_relocs(elf, shstrndx, got_plt, &r);
	if (!ret && r.njmprel)
		ret = read_data_secs(elf, &r);
	while (!ret && (r.n || r.njmprel) &&
	       (scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) ||
		    !is_plt_section(section_name(elf, shstrndx, &sh)))
			continue;
		ret = read_plt(scn, &sh, &r, out, &cap);
	}
	free(r.v);
	free(r.jmprel);
	free(r.secs);
	free(r.ifuncs);
	if (ret)
		plt_stubs_free(out);
	return ret;
}

/* plt_stubs_free - see plt.h. */
void plt_stubs_free(struct plt_stubs *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
