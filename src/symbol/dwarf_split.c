// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_split.c - split DWARF's .dwo files (see dwarf_split.h).
 *
 * Owns: the bytes of one .dwo (read whole with pread into heap; libelf
 * sees them through elf_memory(), libdw through dwarf_begin_elf(), both
 * pointing into that copy), the offset of the split unit in it, and
 * borrowed views of the skeleton file's .debug_addr and .debug_ranges
 * (held by the skeleton's Elf, which outlives every dwarf_split made
 * from it: dwarf_lines.c frees the splits first).
 *
 * A split unit's DIEs are read with libdw (tags, names through
 * .debug_str_offsets.dwo, DW_AT_call_file through .debug_line.dwo's file
 * table); only their addresses are read here, because libdw resolves an
 * address index only for a unit it linked to its skeleton itself (by
 * opening the .dwo's path, see dwarf_split.h). Forms: DW_FORM_addr,
 * DW_FORM_addrx/addrx1-4 and DW_FORM_GNU_addr_index (an index into the
 * skeleton's .debug_addr from its DW_AT_addr_base / DW_AT_GNU_addr_base),
 * DW_AT_high_pc as an address or a length; DW_AT_ranges as
 * DW_FORM_rnglistx (DWARF 5 section 7.28: the offsets table after the
 * first .debug_rnglists.dwo header) or an offset into it, and in DWARF 4
 * an offset from DW_AT_GNU_ranges_base into the skeleton's
 * .debug_ranges. Every read is checked against its section's end: the
 * files are untrusted. Little-endian files only (the hosts profd runs on).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>

#include "symbol/dwarf_split.h"

/*
 * Heap libelf and libdw take for an Elf and a Dwarf over a .dwo and the
 * one unit a lookup decodes in it (struct Dwarf, its section table and
 * first memory block, struct Dwarf_CU, the abbreviation hash, the file
 * table): an estimate, counted once per .dwo. Measured (test_dwarf_lines
 * --cost, 151 one-function units, docs/PERFORMANCE.md): ~4.6 KB a .dwo
 * past its bytes at open, ~7.7 KB after a lookup in every unit.
 */
#define SPLIT_DWARF_BYTES	8192
/* A range list longer than this is corrupt (a loop of base entries). */
#define RANGE_ENTRIES_MAX	(1u << 16)

/* A section's bytes: [p, p + n). */
struct span {
	const unsigned char *p;
	uint64_t n;
};

struct dwarf_split {
	unsigned char *image;	/* the .dwo file's bytes */
	uint64_t size;
	Elf *elf;		/* over @image (elf_memory) */
	Dwarf *dw;		/* over @elf; NULL after a failed reset */
	uint64_t cu_off;	/* the split unit's CU DIE offset in @dw */
	uint16_t version;	/* the skeleton's DWARF version */
	uint8_t addr_size;	/* 4 or 8 */
	uint8_t offset_size;	/* 4 or 8: 32- or 64-bit DWARF */
	uint64_t addr_base;	/* the skeleton's DW_AT_[GNU_]addr_base */
	uint64_t ranges_base;	/* DWARF 4: the skeleton's DW_AT_GNU_ranges_base */
	uint64_t base;		/* the skeleton's DW_AT_low_pc (range lists' base) */
	struct span addr;	/* the skeleton's .debug_addr (borrowed) */
	struct span ranges;	/* the skeleton's .debug_ranges (borrowed, DWARF 4) */
	struct span rnglists;	/* the .dwo's .debug_rnglists.dwo (in @image) */
	struct span info;	/* the .dwo's .debug_info.dwo (in @image) */
};

/* The data of the first section of @elf named @a or @b; empty if none. */
static struct span section(Elf *elf, const char *a, const char *b)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return (struct span){ 0 };
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || (strcmp(name, a) && (!b || strcmp(name, b))))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return (struct span){ 0 };
		return (struct span){ d->d_buf, d->d_size };
	}
	return (struct span){ 0 };
}

/* @n little-endian bytes at @off of @s into *@v; -1 past its end. */
static int read_le(struct span s, uint64_t off, unsigned n, uint64_t *v)
{
	if (off > s.n || n > s.n - off)
		return -1;
	*v = 0;
	for (unsigned i = n; i-- > 0;)
		*v = *v << 8 | s.p[off + i];
	return 0;
}

/* An unsigned LEB128 at *@off of @s, advancing *@off; -1 if cut or too long. */
static int read_uleb(struct span s, uint64_t *off, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *off < s.n && shift < 64; shift += 7) {
		unsigned char b = s.p[(*off)++];

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* Address @idx of the skeleton's address table. */
static int addr_index(const struct dwarf_split *s, uint64_t idx, uint64_t *addr)
{
	if (idx > (UINT64_MAX - s->addr_base) / s->addr_size)
		return -1;
	return read_le(s->addr, s->addr_base + idx * s->addr_size, s->addr_size, addr);
}

/* The address attribute @a holds, its index resolved through .debug_addr. */
static int attr_addr(const struct dwarf_split *s, Dwarf_Attribute *a, uint64_t *addr)
{
	uint64_t off, idx;
	unsigned n;

	switch (a->form) {
	case DW_FORM_addr:
		return dwarf_formaddr(a, addr) ? -1 : 0;
	case DW_FORM_addrx:
	case DW_FORM_GNU_addr_index:
		if (a->valp < s->info.p || a->valp >= s->info.p + s->info.n)
			return -1;
		off = (uint64_t)(a->valp - s->info.p);
		if (read_uleb(s->info, &off, &idx))
			return -1;
		return addr_index(s, idx, addr);
	case DW_FORM_addrx1: n = 1; break;
	case DW_FORM_addrx2: n = 2; break;
	case DW_FORM_addrx3: n = 3; break;
	case DW_FORM_addrx4: n = 4; break;
	default:
		return -1;
	}
	if (a->valp < s->info.p ||
	    read_le(s->info, (uint64_t)(a->valp - s->info.p), n, &idx))
		return -1;
	return addr_index(s, idx, addr);
}

/* Whether [lo, hi) is live and holds @vaddr. */
static bool holds(uint64_t lo, uint64_t hi, uint64_t vaddr)
{
	return dwarf_range_live(lo, hi) && lo <= vaddr && vaddr < hi;
}

/*
 * Whether the DWARF 5 range list at @off of .debug_rnglists.dwo holds
 * @vaddr (section 2.17.3: DW_RLE_* entries until DW_RLE_end_of_list).
 * -1: an entry could not be read.
 */
static int rnglist_holds(const struct dwarf_split *s, uint64_t off, uint64_t vaddr)
{
	struct span r = s->rnglists;
	uint64_t base = s->base, a, b;

	for (uint32_t k = 0; k < RANGE_ENTRIES_MAX; k++) {
		uint64_t kind;

		if (read_le(r, off++, 1, &kind))
			return -1;
		switch (kind) {
		case DW_RLE_end_of_list:
			return 0;
		case DW_RLE_base_addressx:
			if (read_uleb(r, &off, &a) || addr_index(s, a, &base))
				return -1;
			continue;
		case DW_RLE_startx_endx:
			if (read_uleb(r, &off, &a) || read_uleb(r, &off, &b) ||
			    addr_index(s, a, &a) || addr_index(s, b, &b))
				return -1;
			break;
		case DW_RLE_startx_length:
			if (read_uleb(r, &off, &a) || read_uleb(r, &off, &b) ||
			    addr_index(s, a, &a))
				return -1;
			b += a;
			break;
		case DW_RLE_offset_pair:
			if (read_uleb(r, &off, &a) || read_uleb(r, &off, &b))
				return -1;
			a += base;
			b += base;
			break;
		case DW_RLE_base_address:
			if (read_le(r, off, s->addr_size, &base))
				return -1;
			off += s->addr_size;
			continue;
		case DW_RLE_start_end:
			if (read_le(r, off, s->addr_size, &a) ||
			    read_le(r, off + s->addr_size, s->addr_size, &b))
				return -1;
			off += 2u * s->addr_size;
			break;
		case DW_RLE_start_length:
			if (read_le(r, off, s->addr_size, &a))
				return -1;
			off += s->addr_size;
			if (read_uleb(r, &off, &b))
				return -1;
			b += a;
			break;
		default:
			return -1;
		}
		if (holds(a, b, vaddr))
			return 1;
	}
	return -1;
}

/*
 * Whether the DWARF 4 (GNU) range list at @off of the skeleton's
 * .debug_ranges holds @vaddr: address pairs, (0, 0) ends it, (-1, x)
 * makes x the base.
 */
static int ranges_holds(const struct dwarf_split *s, uint64_t off, uint64_t vaddr)
{
	uint64_t base = s->base, a, b;
	uint64_t all = s->addr_size == 8 ? UINT64_MAX : UINT32_MAX;

	for (uint32_t k = 0; k < RANGE_ENTRIES_MAX; k++, off += 2u * s->addr_size) {
		if (read_le(s->ranges, off, s->addr_size, &a) ||
		    read_le(s->ranges, off + s->addr_size, s->addr_size, &b))
			return -1;
		if (!a && !b)
			return 0;
		if (a == all) {
			base = b;
			continue;
		}
		if (holds(base + a, base + b, vaddr))
			return 1;
	}
	return -1;
}

/* Whether @die's DW_AT_ranges (@a) holds @vaddr; -1: unreadable. */
static int attr_ranges_hold(const struct dwarf_split *s, Dwarf_Attribute *a,
			    uint64_t vaddr)
{
	uint64_t off, idx, count, base, entry, unit_len;
	unsigned offsize = 4;

	if (a->valp < s->info.p || a->valp >= s->info.p + s->info.n)
		return -1;
	off = (uint64_t)(a->valp - s->info.p);
	/* an offset into a section the .dwo may not have: read, not checked */
	if (a->form == DW_FORM_sec_offset) {
		if (read_le(s->info, off, s->offset_size, &off))
			return -1;
		return s->version < 5 ? ranges_holds(s, s->ranges_base + off, vaddr) :
		       rnglist_holds(s, off, vaddr);
	}
	if (s->version < 5)
		return dwarf_formudata(a, &off) ? -1 :
		       ranges_holds(s, s->ranges_base + off, vaddr);
	if (a->form != DW_FORM_rnglistx || read_uleb(s->info, &off, &idx))
		return -1;
	/* the first header: unit_length, version(2), sizes(2), offset count */
	if (read_le(s->rnglists, 0, 4, &unit_len))
		return -1;
	base = 12;
	if (unit_len == 0xffffffff) {
		offsize = 8;
		base = 20;
	}
	if (read_le(s->rnglists, base - 4, 4, &count) || idx >= count ||
	    read_le(s->rnglists, base + idx * offsize, offsize, &entry))
		return -1;
	return rnglist_holds(s, base + entry, vaddr);
}

/* dwarf_split_haspc - see dwarf_split.h. */
bool dwarf_split_haspc(struct dwarf_split *s, Dwarf_Die *die, uint64_t vaddr,
		       bool *bad)
{
	Dwarf_Attribute a;
	uint64_t lo, hi;
	int ret;

	if (dwarf_attr(die, DW_AT_ranges, &a)) {
		ret = attr_ranges_hold(s, &a, vaddr);
		if (ret < 0)
			*bad = true;
		return ret > 0;
	}
	if (!dwarf_attr(die, DW_AT_low_pc, &a))
		return false;
	if (attr_addr(s, &a, &lo)) {
		*bad = true;
		return false;
	}
	if (!dwarf_attr(die, DW_AT_high_pc, &a))
		return false;	/* one address: no range */
	if (a.form == DW_FORM_addr || a.form == DW_FORM_addrx ||
	    a.form == DW_FORM_GNU_addr_index ||
	    (a.form >= DW_FORM_addrx1 && a.form <= DW_FORM_addrx4)) {
		ret = attr_addr(s, &a, &hi);
	} else {
		ret = dwarf_formudata(&a, &hi);
		if (!ret && hi > UINT64_MAX - lo)
			ret = -1;
		hi += lo;
	}
	if (ret) {
		*bad = true;
		return false;
	}
	return holds(lo, hi, vaddr);
}

/*
 * Read the regular file at @path whole into *@buf (malloc'd), at most
 * @max bytes (0: no cap).
 */
static int read_file(const char *path, uint64_t max, unsigned char **buf,
		     uint64_t *size)
{
	struct stat st;
	uint64_t got = 0;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0) {
		ret = -ENOENT;
		goto out;
	}
	if ((max && (uint64_t)st.st_size > max) || (uint64_t)st.st_size > SIZE_MAX) {
		ret = -EFBIG;
		goto out;
	}
	*buf = malloc((size_t)st.st_size);
	if (!*buf) {
		ret = -ENOMEM;
		goto out;
	}
	while (got < (uint64_t)st.st_size) {
		ssize_t n = pread(fd, *buf + got, (size_t)st.st_size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {	/* truncated while read */
			ret = n < 0 ? -errno : -EIO;
			free(*buf);
			*buf = NULL;
			goto out;
		}
		got += (uint64_t)n;
	}
	*size = got;
out:
	close(fd);
	return ret;
}

/* Begin libdw over @s's bytes and find the split unit @id in them. */
static int begin(struct dwarf_split *s, uint64_t id, bool find)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t type;

	s->dw = dwarf_begin_elf(s->elf, DWARF_C_READ, NULL);
	if (!s->dw)
		return -ENOEXEC;
	if (!find)
		return 0;
	while (!dwarf_get_units(s->dw, cu, &cu, NULL, &type, &cudie, NULL)) {
		uint64_t uid;

		if (type != DW_UT_split_compile ||
		    !dwarf_cu_die(cu, &cudie, NULL, NULL, NULL, NULL, &uid, NULL) ||
		    uid != id)
			continue;
		s->cu_off = dwarf_dieoffset(&cudie);
		/* start lookups with nothing decoded */
		dwarf_end(s->dw);
		s->dw = dwarf_begin_elf(s->elf, DWARF_C_READ, NULL);
		return s->dw ? 0 : -ENOEXEC;
	}
	return -ENOENT;
}

/* Read the .dwo at @path into @s and find unit @id there. */
static int open_path(struct dwarf_split *s, const char *path, uint64_t id,
		     uint64_t max_bytes)
{
	int ret = read_file(path, max_bytes, &s->image, &s->size);

	if (ret)
		return ret;
	s->elf = elf_memory((char *)s->image, (size_t)s->size);
	if (!s->elf || elf_kind(s->elf) != ELF_K_ELF)
		return -ENOEXEC;
	s->info = section(s->elf, ".debug_info.dwo", NULL);
	s->rnglists = section(s->elf, ".debug_rnglists.dwo", NULL);
	return begin(s, id, true);
}

static void close_image(struct dwarf_split *s)
{
	if (s->dw)
		dwarf_end(s->dw);
	if (s->elf)
		elf_end(s->elf);
	free(s->image);
	s->dw = NULL;
	s->elf = NULL;
	s->image = NULL;
	s->size = 0;
}

/* The string attribute @name of @die, or NULL. */
static const char *die_string(Dwarf_Die *die, int name)
{
	Dwarf_Attribute a;

	return dwarf_formstring(dwarf_attr(die, name, &a));
}

/* The unsigned attribute @name of @die, or 0. */
static uint64_t die_udata(Dwarf_Die *die, int name)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	return dwarf_attr(die, name, &a) && !dwarf_formudata(&a, &v) ? v : 0;
}

/* dwarf_split_open - see dwarf_split.h. */
int dwarf_split_open(Dwarf_Die *skel, Elf *skel_elf, const char *debugdir,
		     uint64_t max_bytes, struct dwarf_split **out)
{
	const char *name, *base, *dirs[3] = { NULL, NULL, NULL };
	struct dwarf_split *s;
	Dwarf_Die die;
	Dwarf_Addr low;
	Dwarf_Half version;
	uint8_t asize, osize;
	uint64_t id;
	int ret = -ENOENT;

	*out = NULL;
	name = die_string(skel, DW_AT_dwo_name);
	if (!name)
		name = die_string(skel, DW_AT_GNU_dwo_name);
	if (!name || !*name ||
	    !dwarf_cu_die(skel->cu, &die, &version, NULL, &asize, &osize, &id, NULL) ||
	    (asize != 4 && asize != 8) || (osize != 4 && osize != 8))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->version = version;
	s->addr_size = asize;
	s->offset_size = osize;
	s->addr_base = die_udata(skel, version >= 5 ? DW_AT_addr_base : DW_AT_GNU_addr_base);
	s->ranges_base = die_udata(skel, DW_AT_GNU_ranges_base);
	s->base = dwarf_lowpc(skel, &low) ? 0 : low;
	s->addr = section(skel_elf, ".debug_addr", ".zdebug_addr");
	s->ranges = section(skel_elf, ".debug_ranges", ".zdebug_ranges");
	/*
	 * Where libdw looks (libdw_find_split_unit.c), in its order, then
	 * the name's last part next to the binary (a tree moved whole, or a
	 * .dwo named by an absolute path that is gone).
	 */
	base = strrchr(name, '/');
	if (base && base[1] && debugdir)
		dirs[2] = debugdir;
	if (name[0] == '/') {
		dirs[0] = "";
	} else {
		const char *comp = die_string(skel, DW_AT_comp_dir);

		dirs[0] = debugdir;
		dirs[1] = comp && comp[0] == '/' ? comp : NULL;
	}
	for (int i = 0; i < 3; i++) {
		const char *file = i == 2 ? base + 1 : name;
		char path[PATH_MAX];
		size_t len;
		int n, r;

		if (!dirs[i])
			continue;
		len = strlen(dirs[i]);
		n = snprintf(path, sizeof(path), "%s%s%s", dirs[i],
			     len && dirs[i][len - 1] != '/' ? "/" : "", file);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		r = open_path(s, path, id, max_bytes);
		if (!r) {
			ret = 0;
			break;
		}
		close_image(s);
		if (r == -EFBIG || r == -ENOMEM || r == -ENOEXEC)
			ret = r;
		if (r == -EFBIG || r == -ENOMEM)
			break;
	}
	if (ret) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

/* dwarf_split_free - see dwarf_split.h. */
void dwarf_split_free(struct dwarf_split *s)
{
	if (!s)
		return;
	close_image(s);
	free(s);
}

/* dwarf_split_bytes - see dwarf_split.h. */
uint64_t dwarf_split_bytes(const struct dwarf_split *s)
{
	return s ? sizeof(*s) + s->size + SPLIT_DWARF_BYTES : 0;
}

/* dwarf_split_reset - see dwarf_split.h. */
int dwarf_split_reset(struct dwarf_split *s)
{
	if (s->dw)
		dwarf_end(s->dw);
	s->dw = NULL;
	return s->elf ? begin(s, 0, false) : -ENOEXEC;
}

/* dwarf_split_cu - see dwarf_split.h. */
Dwarf_Die *dwarf_split_cu(struct dwarf_split *s, Dwarf_Die *mem)
{
	return s && s->dw ? dwarf_offdie(s->dw, s->cu_off, mem) : NULL;
}
