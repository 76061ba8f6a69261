// SPDX-License-Identifier: GPL-2.0
/*
 * elf_file.c - one ELF object opened for symbolization (see elf_file.h).
 *
 * Owns: the file descriptor, a copy of the PT_LOAD segments and the GNU
 * build ID (read at open), and the function symbol table (read on first
 * lookup) as one array sorted by address plus one blob of names.
 *
 * libelf's handle is only held while reading: the open reads the headers
 * and closes it, the symbol load opens it again and closes it when done.
 * A mapped file that shrinks under us can only hurt inside those windows.
 *
 * Input is untrusted (any file a process maps): every count, offset and
 * index comes from libelf's checked accessors (gelf_get*, elf_strptr,
 * elf_getdata, gelf_getnote), and every failure is an error, never a
 * crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbol/elf_file.h"

#define BUILD_ID_MAX	64	/* bytes; SHA-1 ones are 20 */
#define CHAIN_MAX	256	/* enclosing symbols tried per lookup */

struct load_seg {
	uint64_t offset;	/* p_offset */
	uint64_t filesz;	/* p_filesz */
	uint64_t vaddr;		/* p_vaddr */
	uint64_t memsz;		/* p_memsz */
};

struct elf_sym {
	uint64_t start;		/* ELF virtual address */
	uint64_t end;		/* exclusive */
	uint64_t max_end;	/* max end of this and all earlier symbols */
	uint32_t name;		/* offset in names */
	uint32_t parent;	/* nearest earlier symbol covering start, or NONE */
};

#define NO_PARENT UINT32_MAX

struct elf_file {
	int fd;
	bool is_dyn;
	char build_id[2 * BUILD_ID_MAX + 1];
	struct load_seg *segs;
	size_t nsegs;

	bool syms_loaded;	/* tried; syms may still be empty */
	struct elf_sym *syms;
	size_t nsyms;
	char *names;
};

static bool libelf_ready(void)
{
	static int state;	/* 0 untried, 1 ok, -1 failed */

	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

static void hex_encode(char *dst, const unsigned char *src, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		dst[2 * i] = digits[src[i] >> 4];
		dst[2 * i + 1] = digits[src[i] & 15];
	}
	dst[2 * n] = '\0';
}

/* Look for NT_GNU_BUILD_ID in note data @d. Returns true when found. */
static bool scan_notes(struct elf_file *f, Elf_Data *d)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d || !d->d_buf)
		return false;
	while (off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *base = d->d_buf;

		/* gelf_getnote checked name and desc lie inside d. */
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(base + name_off, "GNU", 4) && nh.n_descsz > 0 &&
		    nh.n_descsz <= BUILD_ID_MAX) {
			hex_encode(f->build_id,
				   (const unsigned char *)base + desc_off,
				   nh.n_descsz);
			return true;
		}
		if (next <= off)
			break;
		off = next;
	}
	return false;
}

/* Build ID from PT_NOTE segments, else from SHT_NOTE sections. */
static void read_build_id(struct elf_file *f, Elf *elf, size_t phnum)
{
	Elf_Scn *scn = NULL;
	size_t i;

	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
					 ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 :
							   ELF_T_NHDR);
		if (scan_notes(f, d))
			return;
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (scan_notes(f, elf_getdata(scn, NULL)))
			return;
	}
}

static int read_segments(struct elf_file *f, Elf *elf, size_t phnum)
{
	size_t i;

	if (!phnum)
		return 0;
	f->segs = calloc(phnum, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD)
			continue;
		f->segs[f->nsegs++] = (struct load_seg){
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
		};
	}
	return 0;
}

/*
 * elf_file_open_fd - see elf_file.h. Only regular files are read (a
 * mapped device must never be read); ET_EXEC and ET_DYN are accepted,
 * anything else is -ENOEXEC.
 */
struct elf_file *elf_file_open_fd(int fd, int *err)
{
	struct elf_file *f;
	GElf_Ehdr eh;
	struct stat st;
	size_t phnum;
	Elf *elf;
	int ret;

	if (fd < 0) {
		*err = -EBADF;
		return NULL;
	}
	if (!libelf_ready()) {
		close(fd);
		*err = -ENOSYS;
		return NULL;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		*err = ret;
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		*err = -ENOEXEC;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		*err = -ENOMEM;
		return NULL;
	}
	f->fd = fd;

	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    elf_getphdrnum(elf, &phnum)) {
		ret = -ENOEXEC;
		goto fail;
	}
	f->is_dyn = eh.e_type == ET_DYN;
	ret = read_segments(f, elf, phnum);
	if (ret)
		goto fail;
	read_build_id(f, elf, phnum);
	elf_end(elf);
	return f;

fail:
	elf_end(elf);
	elf_file_free(f);
	*err = ret;
	return NULL;
}

/* elf_file_open - see elf_file.h. Errors from open(2) come back as -errno. */
struct elf_file *elf_file_open(const char *path, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	return elf_file_open_fd(fd, err);
}

/* elf_file_free - see elf_file.h. */
void elf_file_free(struct elf_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f->segs);
	free(f->syms);
	free(f->names);
	free(f);
}

/* elf_file_build_id - see elf_file.h. */
const char *elf_file_build_id(const struct elf_file *f)
{
	return f->build_id;
}

/* elf_file_is_dyn - see elf_file.h. */
bool elf_file_is_dyn(const struct elf_file *f)
{
	return f->is_dyn;
}

/*
 * elf_file_offset_to_vaddr - see elf_file.h. The file-backed part of a
 * PT_LOAD segment (p_filesz) is tried first, then its in-memory size.
 */
int elf_file_offset_to_vaddr(const struct elf_file *f, uint64_t off,
			     uint64_t *vaddr)
{
	size_t i;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < f->nsegs; i++) {
			const struct load_seg *s = &f->segs[i];
			uint64_t sz = pass ? s->memsz : s->filesz;

			if (off >= s->offset && off - s->offset < sz) {
				*vaddr = s->vaddr + (off - s->offset);
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* ---- symbol table ---- */

/* A function symbol as read, before sorting and merging. */
struct cand {
	uint64_t value;
	uint64_t size;
	uint64_t limit;		/* end of its section (for size-0 symbols) */
	const char *name;	/* inside libelf's data; valid until elf_end */
	uint32_t seq;		/* read order, for a stable sort */
	uint8_t rank;		/* 2 GLOBAL, 1 WEAK, 0 LOCAL */
	uint8_t symtab;		/* 1 from .symtab, 0 from .dynsym */
};

struct cands {
	struct cand *v;
	size_t n, cap;
};

struct sec_range {
	uint64_t addr, size;
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

/* Read the function symbols of one symbol table section into @c. */
static int read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		       const struct sec_range *secs, size_t nsecs,
		       struct cands *c)
{
	size_t symsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, n;

	if (!d || !symsz)
		return 0;	/* unreadable table: skip it */
	n = d->d_size / symsz;
	for (i = 1; i < n; i++) {	/* entry 0 is the null symbol */
		struct cand x;
		GElf_Sym s;
		int type;

		if (!gelf_getsym(d, (int)i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (s.st_shndx == SHN_UNDEF || s.st_value == 0)
			continue;
		x.name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!x.name || !*x.name)
			continue;
		x.value = s.st_value;
		x.size = s.st_size;
		x.limit = 0;
		if (s.st_shndx < nsecs) {
			const struct sec_range *r = &secs[s.st_shndx];

			if (x.value >= r->addr && x.value - r->addr < r->size)
				x.limit = r->addr + r->size;
		}
		x.seq = (uint32_t)c->n;
		x.rank = (uint8_t)bind_rank(GELF_ST_BIND(s.st_info));
		x.symtab = sh->sh_type == SHT_SYMTAB;
		if (cands_push(c, &x))
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
 * By address, then best name first: binding, .symtab over .dynsym, fewer
 * leading underscores (the public alias over "__libc_..."), read order.
 */
static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	size_t ux, uy;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
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
 * Merge sorted candidates into f->syms: one entry per address (the first,
 * i.e. best, name; the largest size), size-0 symbols extended to the next
 * symbol or their section's end, then the enclosing-symbol links.
 */
static int build_table(struct elf_file *f, struct cands *c)
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
		blob += strlen(c->v[n].name) + 1;
		n++;
	}
	if (!n)
		return 0;
	if (blob > UINT32_MAX || n >= NO_PARENT)
		return -E2BIG;

	f->syms = calloc(n, sizeof(*f->syms));
	f->names = malloc(blob);
	stack = malloc(n * sizeof(*stack));
	if (!f->syms || !f->names || !stack) {
		free(stack);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct cand *x = &c->v[i];
		struct elf_sym *s = &f->syms[i];
		size_t len = strlen(x->name) + 1;

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
		s->max_end = i && f->syms[i - 1].max_end > s->end ?
			     f->syms[i - 1].max_end : s->end;
		s->name = (uint32_t)pos;
		memcpy(f->names + pos, x->name, len);
		pos += len;

		/*
		 * Parent: the nearest earlier symbol still open at our start.
		 * Starts only grow, so one closed before it is closed for good.
		 */
		while (top && f->syms[stack[top - 1]].end <= s->start)
			top--;
		s->parent = top ? stack[top - 1] : NO_PARENT;
		stack[top++] = (uint32_t)i;
	}
	free(stack);
	f->nsyms = n;
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
		}
	}
	*nsecs = n;
	return secs;
}

static int load_symbols(struct elf_file *f)
{
	struct cands c = { 0 };
	struct sec_range *secs;
	Elf_Scn *scn = NULL;
	size_t nsecs;
	Elf *elf;
	int ret = 0;

	f->syms_loaded = true;
	elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -ENOEXEC;
	}
	secs = read_sections(elf, &nsecs);
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		ret = read_symtab(elf, scn, &sh, secs, nsecs, &c);
		if (ret)
			goto out;
	}
	qsort(c.v, c.n, sizeof(*c.v), cmp_cand);
	ret = build_table(f, &c);
out:
	if (ret) {
		free(f->syms);
		free(f->names);
		f->syms = NULL;
		f->names = NULL;
		f->nsyms = 0;
	}
	free(secs);
	free(c.v);
	elf_end(elf);
	return ret;
}

/*
 * elf_file_lookup - see elf_file.h. The candidate is the last symbol
 * starting at or below @vaddr; when it ends before @vaddr, the symbols
 * enclosing it are tried (a function with a local label symbol inside).
 */
const char *elf_file_lookup(struct elf_file *f, uint64_t vaddr,
			    uint64_t *sym_vaddr)
{
	size_t lo = 0, hi, steps;
	uint32_t i;

	if (!f->syms_loaded)
		load_symbols(f);
	hi = f->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	i = (uint32_t)(lo - 1);
	for (steps = 0; i != NO_PARENT && steps < CHAIN_MAX; steps++) {
		const struct elf_sym *s = &f->syms[i];

		if (s->max_end <= vaddr)
			return NULL;	/* nothing at or before i reaches it */
		if (vaddr < s->end) {
			*sym_vaddr = s->start;
			return f->names + s->name;
		}
		i = s->parent;
	}
	return NULL;
}

/* elf_file_nsymbols - see elf_file.h. */
uint64_t elf_file_nsymbols(struct elf_file *f)
{
	if (!f->syms_loaded)
		load_symbols(f);
	return f->nsyms;
}
