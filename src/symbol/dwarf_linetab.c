// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_linetab.c - a unit's line table, decoded by profd (see
 * dwarf_linetab.h). DWARF 5 section 6.2 (and DWARF 2-4's forms of the
 * header); libdw's dwarf_getsrclines() and dwarf_getsrc_die() are the
 * reference for the order of rows and the joined file names, a relative
 * directory put under the compilation directory as libdw does not
 * (tests/unit/test_dwarf_linetab.c compares every row and file).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <gelf.h>
#include <libelf.h>

#include "symbol/dwarf_linetab.h"

/* A row as kept: 12 bytes. */
struct row {
	uint32_t off;		/* address - the table's base */
	uint32_t line;
	uint32_t file_end;	/* file index << 1 | end of sequence */
};

/* A row while the program runs: its place in the program breaks ties. */
struct raw_row {
	uint64_t addr;
	uint32_t line;
	uint32_t file_end;
	uint32_t seq;		/* the row's place in the program */
};

struct dwarf_linetab {
	uint64_t base;		/* lowest address of a row */
	struct row *rows;	/* sorted */
	size_t nrows;
	char **files;		/* joined names, into names */
	uint32_t nfiles;
	char *names;		/* every file name, NUL-separated */
	uint64_t bytes;
};

/* Files (and directories) a table keeps at most. */
#define NAMES_MAX	(1u << 20)
/* Rows a table keeps at most (a 4 GiB address span has fewer). */
#define ROWS_MAX	(1u << 28)

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd_n(struct reader *r, unsigned int n)
{
	uint64_t v = 0;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return 0;
	}
	for (unsigned int i = 0; i < n; i++)	/* little endian (x86-64) */
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (!r->bad) {
		uint8_t b;

		if (r->p >= r->end) {
			r->bad = true;
			break;
		}
		b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	return 0;
}

static int64_t rd_sleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b = 0;

	do {
		if (r->bad || r->p >= r->end) {
			r->bad = true;
			return 0;
		}
		b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* A NUL-terminated string at @r (moved past it); NULL if unterminated. */
static const char *rd_cstr(struct reader *r)
{
	const uint8_t *nul;
	const char *s;

	if (r->bad || r->p >= r->end ||
	    !(nul = memchr(r->p, 0, (size_t)(r->end - r->p)))) {
		r->bad = true;
		return NULL;
	}
	s = (const char *)r->p;
	r->p = nul + 1;
	return s;
}

/* The string at @off of a string section; NULL if past it. */
static const char *str_at(const uint8_t *sec, size_t size, uint64_t off)
{
	if (!sec || off >= size || !memchr(sec + off, 0, size - off))
		return NULL;
	return (const char *)sec + off;
}

/*
 * One attribute of a DWARF 5 directory or file entry in form @form:
 * *@s its string (path forms) or *@u its number (constant forms).
 * Returns 0, -EINVAL (unreadable), -EOPNOTSUPP (a form not read here).
 */
static int rd_form(struct reader *r, const struct dwarf_linetab_src *src,
		   uint64_t form, unsigned int offsz, const char **s, uint64_t *u)
{
	*s = NULL;
	*u = 0;
	switch (form) {
	case DW_FORM_string:
		*s = rd_cstr(r);
		break;
	case DW_FORM_line_strp:
		*s = str_at(src->line_str, src->line_str_size, rd_n(r, offsz));
		if (!*s)
			return -EINVAL;
		break;
	case DW_FORM_strp:
		*s = str_at(src->str, src->str_size, rd_n(r, offsz));
		if (!*s)
			return -EINVAL;
		break;
	case DW_FORM_data1: *u = rd_n(r, 1); break;
	case DW_FORM_data2: *u = rd_n(r, 2); break;
	case DW_FORM_data4: *u = rd_n(r, 4); break;
	case DW_FORM_data8: *u = rd_n(r, 8); break;
	case DW_FORM_udata: *u = rd_uleb(r); break;
	case DW_FORM_sdata: *u = (uint64_t)rd_sleb(r); break;
	case DW_FORM_data16: rd_n(r, 8); rd_n(r, 8); break;
	case DW_FORM_block: {
		uint64_t n = rd_uleb(r);

		if (r->bad || n > (uint64_t)(r->end - r->p))
			return -EINVAL;
		r->p += n;
		break;
	}
	default:
		return -EOPNOTSUPP;
	}
	return r->bad ? -EINVAL : 0;
}

/* Names while the header is read: borrowed pointers into the sections. */
struct name_list {
	const char **v;
	uint32_t *dir;		/* files: their directory index */
	uint32_t n, cap;
};

static int names_push(struct name_list *l, const char *s, uint32_t dir)
{
	if (l->n == l->cap) {
		uint32_t ncap = l->cap ? l->cap * 2 : 32;
		const char **v;
		uint32_t *d;

		if (ncap > NAMES_MAX)
			return -EINVAL;
		v = realloc(l->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		d = realloc(l->dir, ncap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		l->dir = d;
		l->cap = ncap;
	}
	l->v[l->n] = s;
	l->dir[l->n++] = dir;
	return 0;
}

/*
 * A DWARF 5 directory or file table: its entry formats, then its
 * entries; each entry's DW_LNCT_path (and for files its
 * DW_LNCT_directory_index) into @l.
 */
static int rd_table5(struct reader *r, const struct dwarf_linetab_src *src,
		     unsigned int offsz, struct name_list *l)
{
	uint64_t fmt[2 * 16];
	unsigned int nfmt = (unsigned int)rd_n(r, 1);
	uint64_t count;
	int ret;

	if (nfmt > 16)
		return -EOPNOTSUPP;
	for (unsigned int i = 0; i < nfmt; i++) {
		fmt[2 * i] = rd_uleb(r);
		fmt[2 * i + 1] = rd_uleb(r);
	}
	count = rd_uleb(r);
	if (r->bad || count > NAMES_MAX)
		return -EINVAL;
	for (uint64_t e = 0; e < count; e++) {
		const char *path = NULL, *s;
		uint64_t dir = 0, u;

		for (unsigned int i = 0; i < nfmt; i++) {
			ret = rd_form(r, src, fmt[2 * i + 1], offsz, &s, &u);
			if (ret)
				return ret;
			if (fmt[2 * i] == DW_LNCT_path)
				path = s;
			else if (fmt[2 * i] == DW_LNCT_directory_index)
				dir = u;
		}
		if (!path || dir > UINT32_MAX)
			return -EINVAL;
		ret = names_push(l, path, (uint32_t)dir);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The prefix of file @f in directory @d (index @di of the directory
 * table), 0 to 2 parts (@part): @f absolute: none; else @d; and before a
 * relative @d other than entry 0 (the compilation directory itself), the
 * unit's compilation directory @comp when it has one (DWARF 5 6.2.4: a
 * relative include directory is relative to DW_AT_comp_dir; libdw
 * leaves it relative, addr2line and llvm-symbolizer join it, a relative
 * DW_AT_comp_dir too, e.g. -fdebug-prefix-map=$PWD=rel).
 */
static unsigned int prefix(const char *f, const char *d, uint64_t di,
			   const char *comp, const char *part[2])
{
	unsigned int n = 0;

	if (f[0] == '/' || !d)
		return 0;
	if (di && d[0] != '/' && comp && comp[0])
		part[n++] = comp;
	part[n++] = d;
	return n;
}

/*
 * The joined file names of @files (directories @dirs) into @t: an
 * absolute name as it is, else its directory (if known), '/', the name,
 * a relative directory under @comp_dir (prefix()).
 */
static int join_files(struct dwarf_linetab *t, const struct name_list *dirs,
		      const struct name_list *files, bool dummy0, const char *comp_dir)
{
	size_t total = 0, at = 0;
	uint32_t n = files->n + (dummy0 ? 1 : 0);
	const char *part[2];

	for (uint32_t i = 0; i < files->n; i++) {
		unsigned int np;

		if (files->dir[i] >= dirs->n)
			return -EINVAL;
		np = prefix(files->v[i], dirs->v[files->dir[i]], files->dir[i], comp_dir,
			    part);
		total += strlen(files->v[i]) + 1;
		for (unsigned int k = 0; k < np; k++)
			total += strlen(part[k]) + 1;
	}
	total += 4;	/* "???" */
	t->files = malloc((size_t)n * sizeof(*t->files));
	t->names = malloc(total);
	if (!t->files || !t->names)
		return -ENOMEM;
	t->nfiles = n;
	t->bytes += (uint64_t)n * sizeof(*t->files) + total;
	memcpy(t->names, "???", 4);
	at = 4;
	if (dummy0)
		t->files[0] = t->names;
	for (uint32_t i = 0; i < files->n; i++) {
		const char *f = files->v[i];
		unsigned int np = prefix(f, dirs->v[files->dir[i]], files->dir[i],
					 comp_dir, part);

		t->files[i + (dummy0 ? 1 : 0)] = t->names + at;
		for (unsigned int k = 0; k < np; k++) {
			size_t dl = strlen(part[k]);

			memcpy(t->names + at, part[k], dl);
			t->names[at + dl] = '/';
			at += dl + 1;
		}
		memcpy(t->names + at, f, strlen(f) + 1);
		at += strlen(f) + 1;
	}
	return 0;
}

/* The program's header: what the state machine needs. */
struct header {
	unsigned int version, offsz;
	uint8_t min_inst, max_ops, default_is_stmt, line_range, opcode_base;
	int8_t line_base;
	uint8_t std_len[256];
	const uint8_t *prog, *end;
};

static int rd_header(struct reader *r, const struct dwarf_linetab_src *src,
		     const char *comp_dir, struct header *h,
		     struct name_list *dirs, struct name_list *files)
{
	uint64_t len = rd_n(r, 4), hlen;
	int ret;

	h->offsz = 4;
	if (len == 0xffffffff) {
		h->offsz = 8;
		len = rd_n(r, 8);
	} else if (len >= 0xfffffff0) {
		return -EINVAL;
	}
	if (r->bad || len > (uint64_t)(r->end - r->p))
		return -EINVAL;
	r->end = r->p + len;
	h->end = r->end;
	h->version = (unsigned int)rd_n(r, 2);
	if (h->version < 2 || h->version > 5)
		return -EINVAL;
	if (h->version >= 5) {
		rd_n(r, 1);	/* address_size: DW_LNE_set_address says it */
		if (rd_n(r, 1))	/* segment selectors: not on x86-64 */
			return -EOPNOTSUPP;
	}
	hlen = rd_n(r, h->offsz);
	if (r->bad || hlen > (uint64_t)(r->end - r->p))
		return -EINVAL;
	h->prog = r->p + hlen;
	h->min_inst = (uint8_t)rd_n(r, 1);
	h->max_ops = h->version >= 4 ? (uint8_t)rd_n(r, 1) : 1;
	h->default_is_stmt = (uint8_t)rd_n(r, 1);
	h->line_base = (int8_t)rd_n(r, 1);
	h->line_range = (uint8_t)rd_n(r, 1);
	h->opcode_base = (uint8_t)rd_n(r, 1);
	if (r->bad || !h->max_ops || !h->line_range || !h->opcode_base)
		return -EINVAL;
	memset(h->std_len, 0, sizeof(h->std_len));
	for (unsigned int i = 1; i < h->opcode_base; i++)
		h->std_len[i] = (uint8_t)rd_n(r, 1);
	if (h->version >= 5) {
		ret = rd_table5(r, src, h->offsz, dirs);
		if (!ret)
			ret = rd_table5(r, src, h->offsz, files);
		if (ret)
			return ret;
	} else {
		const char *s;

		ret = names_push(dirs, comp_dir, 0);
		while (!ret && !r->bad && r->p < r->end && *r->p)
			if ((s = rd_cstr(r)))
				ret = names_push(dirs, s, 0);
		rd_n(r, 1);
		while (!ret && !r->bad && r->p < r->end && *r->p) {
			uint64_t dir;

			s = rd_cstr(r);
			dir = rd_uleb(r);
			rd_uleb(r);	/* mtime */
			rd_uleb(r);	/* length */
			if (!r->bad)
				ret = dir > UINT32_MAX ? -EINVAL :
				      names_push(files, s, (uint32_t)dir);
		}
		rd_n(r, 1);
		if (ret)
			return ret;
	}
	if (r->bad || r->p > h->prog)
		return -EINVAL;
	return 0;
}

struct rows {
	struct raw_row *v;
	size_t n, cap;
	size_t max;		/* rows at most (-EFBIG past it) */
	uint64_t lo, hi;
};

static int row_push(struct rows *rs, uint64_t addr, uint64_t file,
		    uint64_t line, bool end)
{
	if (rs->n == rs->cap) {
		size_t ncap = rs->cap ? rs->cap * 2 : 256;
		struct raw_row *v;

		if (rs->n >= rs->max)
			return -EFBIG;
		if (ncap > rs->max)
			ncap = rs->max;
		v = realloc(rs->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		rs->v = v;
		rs->cap = ncap;
	}
	if (file > UINT32_MAX >> 1 || line > UINT32_MAX)
		return -EINVAL;
	if (!rs->n || addr < rs->lo)
		rs->lo = addr;
	if (!rs->n || addr > rs->hi)
		rs->hi = addr;
	rs->v[rs->n] = (struct raw_row){ .addr = addr, .line = (uint32_t)line,
					 .file_end = (uint32_t)file << 1 | end,
					 .seq = (uint32_t)rs->n };
	rs->n++;
	return 0;
}

/*
 * Run the line number program (DWARF 5 section 6.2.5) into @rs.
 * define_file (DWARF < 5) appends to @files.
 */
static int run_program(const struct header *h, struct rows *rs,
		       struct name_list *files)
{
	struct reader r = { h->prog, h->end, false };
	uint64_t addr = 0, file = 1, op_index = 0;
	int64_t line = 1;
	int ret = 0;

	while (!ret && r.p < r.end && !r.bad) {
		uint8_t op = (uint8_t)rd_n(&r, 1);
		bool emit = false, end = false;
		uint64_t adv = 0;

		if (op >= h->opcode_base) {
			unsigned int adj = op - h->opcode_base;

			adv = adj / h->line_range;
			line += h->line_base + (int)(adj % h->line_range);
			emit = true;
		} else if (op == 0) {
			uint64_t len = rd_uleb(&r);
			const uint8_t *next;
			uint8_t sub;

			if (r.bad || !len || len > (uint64_t)(r.end - r.p))
				return -EINVAL;
			next = r.p + len;
			sub = (uint8_t)rd_n(&r, 1);
			if (sub == DW_LNE_end_sequence) {
				emit = end = true;
			} else if (sub == DW_LNE_set_address) {
				if (len - 1 > 8)
					return -EINVAL;
				addr = rd_n(&r, (unsigned int)(len - 1));
				op_index = 0;
			} else if (sub == DW_LNE_define_file && h->version < 5) {
				struct reader f = { r.p, next, false };
				const char *s = rd_cstr(&f);
				uint64_t dir = rd_uleb(&f);

				if (f.bad || dir > UINT32_MAX)
					return -EINVAL;
				ret = names_push(files, s, (uint32_t)dir);
			}
			r.p = next;
		} else {
			switch (op) {
			case DW_LNS_copy:
				emit = true;
				break;
			case DW_LNS_advance_pc:
				adv = rd_uleb(&r);
				break;
			case DW_LNS_advance_line:
				line += rd_sleb(&r);
				break;
			case DW_LNS_set_file:
				file = rd_uleb(&r);
				break;
			case DW_LNS_const_add_pc:
				adv = (255u - h->opcode_base) / h->line_range;
				break;
			case DW_LNS_fixed_advance_pc:
				addr += rd_n(&r, 2);
				op_index = 0;
				break;
			default:	/* known or not: skip its operands */
				for (unsigned int i = 0; i < h->std_len[op]; i++)
					rd_uleb(&r);
			}
		}
		if (adv) {
			uint64_t ops = op_index + adv;

			addr += (uint64_t)h->min_inst * (ops / h->max_ops);
			op_index = ops % h->max_ops;
		}
		if (!emit || r.bad)
			continue;
		if (line < 0 || line > UINT32_MAX)
			return -EINVAL;
		ret = row_push(rs, addr, file, (uint64_t)line, end);
		if (end) {
			addr = 0;
			file = 1;
			line = 1;
			op_index = 0;
		}
	}
	if (!ret && r.bad)
		ret = -EINVAL;
	return ret;
}

/*
 * libdw's order: address, then an end of sequence before other rows,
 * then program order.
 */
static int raw_cmp(const void *a, const void *b)
{
	const struct raw_row *x = a, *y = b;
	int xe = x->file_end & 1, ye = y->file_end & 1;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (xe != ye)
		return ye - xe;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* dwarf_linetab_src_of - see dwarf_linetab.h. */
int dwarf_linetab_src_of(struct Elf *elf, struct dwarf_linetab_src *src)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	memset(src, 0, sizeof(*src));
	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENODATA;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strncmp(name, ".zdebug_", 8))
			name += 2;	/* ".z" -> "." */
		else if (strncmp(name, ".debug_", 7))
			continue;
		else
			name += 1;
		/* name is now "debug_..." */
		if (strcmp(name, "debug_line") && strcmp(name, "debug_line_str") &&
		    strcmp(name, "debug_str"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		if (!strcmp(name, "debug_line")) {
			src->line = d->d_buf;
			src->line_size = d->d_size;
		} else if (!strcmp(name, "debug_line_str")) {
			src->line_str = d->d_buf;
			src->line_str_size = d->d_size;
		} else {
			src->str = d->d_buf;
			src->str_size = d->d_size;
		}
	}
	return src->line ? 0 : -ENODATA;
}

/* dwarf_linetab_build - see dwarf_linetab.h. */
int dwarf_linetab_build(const struct dwarf_linetab_src *src, uint64_t off,
			const char *comp_dir, uint64_t max_bytes,
			struct dwarf_linetab **out, uint64_t *bytes)
{
	struct name_list dirs = { 0 }, files = { 0 };
	struct rows rs = { 0 };
	struct dwarf_linetab *t = NULL;
	struct header h;
	struct reader r;
	int ret;

	*out = NULL;
	*bytes = 0;
	if (!src->line || off >= src->line_size)
		return -EINVAL;
	rs.max = ROWS_MAX;
	if (max_bytes && max_bytes / sizeof(struct raw_row) < rs.max)
		rs.max = max_bytes / sizeof(struct raw_row);
	r = (struct reader){ src->line + off, src->line + src->line_size, false };
	ret = rd_header(&r, src, comp_dir, &h, &dirs, &files);
	if (!ret)
		ret = run_program(&h, &rs, &files);
	if (!ret && rs.n && rs.hi - rs.lo > UINT32_MAX)
		ret = -EOPNOTSUPP;
	if (!ret && !(t = calloc(1, sizeof(*t))))
		ret = -ENOMEM;
	if (!ret) {
		t->bytes = sizeof(*t);
		ret = join_files(t, &dirs, &files, h.version < 5, comp_dir);
	}
	if (!ret) {
		t->base = rs.lo;
		qsort(rs.v, rs.n, sizeof(*rs.v), raw_cmp);
		/* libdw: the highest row ends a sequence, whatever it says */
		if (rs.n)
			rs.v[rs.n - 1].file_end |= 1;
		/* 24 bytes a row to 12, in place (row i is read before
		 * the bytes of rows[i] are written: 12 i <= 24 i) */
		t->rows = (struct row *)rs.v;
		for (size_t i = 0; i < rs.n; i++) {
			struct raw_row raw = rs.v[i];

			t->rows[i] = (struct row){ (uint32_t)(raw.addr - rs.lo),
						   raw.line, raw.file_end };
		}
		t->nrows = rs.n;
		rs.v = NULL;
		if (t->nrows) {
			struct row *shrunk = realloc(t->rows, t->nrows * sizeof(*t->rows));

			if (shrunk)
				t->rows = shrunk;
		} else {
			free(t->rows);
			t->rows = NULL;
		}
		t->bytes += t->nrows * sizeof(*t->rows);
	}
	free(rs.v);
	free(dirs.v);
	free(dirs.dir);
	free(files.v);
	free(files.dir);
	if (ret) {
		dwarf_linetab_free(t);
		return ret;
	}
	*out = t;
	*bytes = t->bytes;
	return 0;
}

/* dwarf_linetab_find - see dwarf_linetab.h. */
int dwarf_linetab_find(const struct dwarf_linetab *t, uint64_t addr,
		       uint64_t *row_addr, const char **file, uint32_t *line)
{
	size_t lo = 0, hi;
	const struct row *row;
	uint32_t f;

	if (!t || !t->nrows || addr < t->base || addr - t->base > UINT32_MAX)
		return -ENOENT;
	hi = t->nrows;
	while (lo < hi) {	/* first row past @addr */
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].off <= addr - t->base)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	row = &t->rows[lo - 1];
	if (row->file_end & 1)
		return -ENOENT;
	f = row->file_end >> 1;
	if (f >= t->nfiles)
		return -ENOENT;	/* libdw: no source for an unknown file */
	*row_addr = t->base + row->off;
	*file = t->files[f];
	*line = row->line;
	return 0;
}

/* dwarf_linetab_file - see dwarf_linetab.h. */
const char *dwarf_linetab_file(const struct dwarf_linetab *t, uint64_t idx)
{
	return t && idx < t->nfiles ? t->files[idx] : NULL;
}

/* dwarf_linetab_rows - see dwarf_linetab.h. */
size_t dwarf_linetab_rows(const struct dwarf_linetab *t)
{
	return t ? t->nrows : 0;
}

/* dwarf_linetab_row - see dwarf_linetab.h. */
int dwarf_linetab_row(const struct dwarf_linetab *t, size_t i, uint64_t *addr,
		      uint32_t *file, uint32_t *line, int *end_sequence)
{
	if (!t || i >= t->nrows)
		return -ERANGE;
	*addr = t->base + t->rows[i].off;
	*file = t->rows[i].file_end >> 1;
	*line = t->rows[i].line;
	*end_sequence = t->rows[i].file_end & 1;
	return 0;
}

/* dwarf_linetab_free - see dwarf_linetab.h. */
void dwarf_linetab_free(struct dwarf_linetab *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->files);
	free(t->names);
	free(t);
}
