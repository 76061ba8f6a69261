// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_lines.c - source lines and inlined call chains from DWARF (see
 * dwarf_lines.h).
 *
 * Owns: the libelf handle on the file whose DWARF is read (the debug
 * file's descriptor or the object's own, both held by the elf_file; the
 * handle reads with ELF_C_READ, pread into heap, never mmap), libdw's
 * Dwarf over it, and the byte count of both. dwarf_begin_elf() reads
 * every .debug_* section it is shown at once (and decompresses the
 * compressed ones); libelf is then told to leave the descriptor alone
 * (ELF_C_FDDONE), so everything after the open works from memory.
 *
 * Memory: only the sections a line or inline lookup reads are shown to
 * libdw (dwarf_sections.c). A unit's line table is decoded by profd
 * (dwarf_linetab.c: 12 bytes a row) at the unit's first lookup and kept
 * per unit, the least recently used dropped past half of DECODED_SHARE
 * of the sections (or twice the largest table); libdw's own table (40
 * bytes a row, LINE_ROW_BYTES counted) only where profd's decoder
 * refuses a unit. What libdw decodes is never freed by it: a unit's
 * header and abbreviation hash for every unit up to the one looked up
 * (CU_BYTES each), the abbreviations of the units whose DIEs were read
 * (UNIT_DIE_BYTES), libdw's line tables. Past DECODED_SHARE of the
 * sections that part is dropped whole (the Dwarf is ended and begun
 * again over the same sections, no file read); the chains the
 * symbolizer looked up stay cached (frames.c), so only new addresses
 * decode again. The range walk at open is followed by such a reset too.
 * The functions around an address are found through each unit's
 * function index (dwarf_scopes.c), built at the unit's first lookup and
 * kept across resets (DIE offsets, accounted in the handle's bytes), as
 * are profd's line tables.
 *
 * Input is untrusted: libdw checks every offset, size and form; a
 * failure is an error for the lookup, never a crash. The size cap is
 * checked on the section headers before anything is read, and again on
 * what was read (a compressed section's real size).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/dwarf_lines.h"
#include "symbol/dwarf_linetab.h"
#include "symbol/dwarf_scopes.h"
#include "symbol/dwarf_sections.h"
#include "symbol/dwarf_split.h"
#include "symbol/elf_file.h"

/*
 * Heap a decoded line row and a file entry take in libdw (struct
 * Dwarf_Line is 40 bytes in elfutils 0.188, a Dwarf_Fileinfo 24, plus
 * their arrays' slack): an estimate, added per compilation unit the
 * first time its line table is decoded.
 */
#define LINE_ROW_BYTES	48
#define FILE_ENTRY_BYTES 32
/*
 * Heap libdw keeps per unit it has walked past (struct Dwarf_CU and its
 * abbreviation hash, ~0.9 KB in elfutils 0.188; measured: libc's 4 126
 * units, 3.8 MB of RSS past the sections read): a lookup in a unit
 * walks every unit header before it.
 */
#define CU_BYTES	1024
/*
 * Heap libdw keeps per unit whose DIEs were read (its abbreviations,
 * parsed as DIEs use them; measured: libc's units, 1.5 KB each past
 * CU_BYTES once their function index is built).
 */
#define UNIT_DIE_BYTES	1536
/* Decoded state kept beyond the units' headers, at least (bytes)... */
#define DECODED_MIN	(1u << 20)
/* ... or this share of the sections read, whichever is more. */
#define DECODED_SHARE	4

/* A compilation unit's address range (DW_AT_low_pc/high_pc/ranges). */
struct cu_range {
	uint64_t lo, hi;	/* [lo, hi) */
	uint64_t off;		/* the CU DIE's offset */
	uint32_t unit;		/* its unit's place in .debug_info, from 0 */
	bool split;		/* a skeleton unit: its DIEs are in a .dwo/.dwp */
	uint32_t dwo;		/* split: its .dwo in splits[]; NO_DWO: not read */
};

#define NO_DWO	UINT32_MAX

/* A unit whose line table profd cannot decode: libdw's is used. */
static char tab_none, tab_big;
#define TAB_NONE	((struct unit_lines *)&tab_none)
/* ... or whose table is larger than the object's cap: no lines there. */
#define TAB_BIG		((struct unit_lines *)&tab_big)
#define TAB_BIG_T	((const struct dwarf_linetab *)&tab_big)

/* A unit's line table (dwarf_linetab.c) and when it was last used. */
struct unit_lines {
	struct dwarf_linetab *t;
	uint64_t bytes;
	uint64_t used;
};

/* A unit whose function index could not be built: lookups walk its DIEs. */
static char fn_none;
#define FN_NONE	((struct dwarf_fn_index *)&fn_none)

/* CU ranges kept at most (a hostile file cannot grow the table past it). */
#define CU_RANGES_MAX	(1u << 20)

struct dwarf_lines {
	Elf *elf;
	Dwarf *dw;
	struct cu_range *ranges;	/* sorted by lo */
	uint32_t nranges, ranges_cap;
	uint64_t section_bytes;	/* .debug_* data read (decompressed) */
	uint64_t decoded_bytes;	/* estimate: line tables decoded */
	uint32_t units;		/* units in .debug_info */
	uint32_t units_walked;	/* estimate: units libdw holds (CU_BYTES each) */
	uint32_t resets;	/* decoded state dropped (reset()) */
	uint64_t *cus;		/* CU offsets whose lines were counted (+1; 0 empty) */
	uint32_t cus_cap, cus_n;
	bool unreadable;	/* corrupt DWARF met (a unit, a line table, a DIE) */
	bool units_cut;		/* the unit walk stopped at one it could not read */
	bool unreadable_told;	/* dwarf_lines_unreadable() said so once */
	bool too_big;		/* a unit's line table over the cap met */
	bool too_big_told;	/* dwarf_lines_too_big() said so once */
	uint32_t nsplit;	/* skeleton units whose .dwo was not read */
	struct dwarf_split **splits;	/* the .dwo files read */
	uint32_t nsplits, splits_cap;
	/* per unit (by its place), its function index; FN_NONE: none builds */
	struct dwarf_fn_index **fns;
	uint64_t fns_bytes;	/* the indexes and the array */
	/* per unit (by its place), its line table; TAB_NONE: libdw's */
	struct unit_lines **tabs;
	uint64_t tabs_bytes;	/* the tables and the array */
	uint64_t tabs_clock;	/* lookups through a table so far */
	uint64_t tab_max;	/* the largest table built (bytes) */
	struct dwarf_linetab_src lsrc;	/* borrowed from elf */
	bool lsrc_ok;
	uint64_t max_bytes;	/* the cap dwarf_lines_open() was given */
	char *debugdir;		/* the skeleton file's directory, '/'-ended */
};

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int range_push(struct dwarf_lines *d, uint64_t lo, uint64_t hi,
		      uint64_t off, uint32_t unit, bool split, uint32_t dwo)
{
	if (d->nranges == d->ranges_cap) {
		uint32_t ncap = d->ranges_cap ? d->ranges_cap * 2 : 256;
		struct cu_range *n;

		if (ncap > CU_RANGES_MAX)
			return -E2BIG;
		n = realloc(d->ranges, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		d->ranges = n;
		d->ranges_cap = ncap;
	}
	d->ranges[d->nranges++] = (struct cu_range){ lo, hi, off, unit, split, dwo };
	return 0;
}

/*
 * Read the .dwo of skeleton unit @cudie within what is left of the cap;
 * *@dwo: its place in splits[], or NO_DWO when it could not be read
 * (counted in nsplit). Returns 0, -EFBIG (over the cap), -ENOMEM.
 */
static int split_read(struct dwarf_lines *d, Dwarf_Die *cudie, uint32_t *dwo)
{
	uint64_t used = d->section_bytes, left = 0;
	struct dwarf_split *s;
	int ret;

	for (uint32_t i = 0; i < d->nsplits; i++)
		used += dwarf_split_bytes(d->splits[i]);
	if (d->max_bytes) {
		if (used >= d->max_bytes)
			return -EFBIG;
		left = d->max_bytes - used;
	}
	if (d->nsplits == d->splits_cap) {
		uint32_t ncap = d->splits_cap ? d->splits_cap * 2 : 16;
		struct dwarf_split **n;

		if (ncap > CU_RANGES_MAX)
			return -EFBIG;
		n = realloc(d->splits, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		d->splits = n;
		d->splits_cap = ncap;
	}
	ret = dwarf_split_open(cudie, d->elf, d->debugdir, left, &s);
	if (ret == -ENOMEM || ret == -EFBIG)
		return ret;
	if (ret) {
		d->nsplit++;
		return 0;
	}
	*dwo = d->nsplits;
	d->splits[d->nsplits++] = s;
	return 0;
}

/*
 * Every compilation unit's address ranges, sorted: the CU of an address
 * by binary search, with or without .debug_aranges (Go writes none, and
 * libdw 0.188's dwarf_addrdie() needs it). A unit without ranges, or a
 * table past CU_RANGES_MAX, leaves its addresses without lines.
 *
 * A unit header libdw cannot read (a length past the section, a version
 * it does not know) ends the walk: the units before it are kept, the
 * handle is marked unreadable (its addresses past that point cannot be
 * told from code without DWARF). A skeleton unit (DWARF 5 split units,
 * GCC's -gsplit-dwarf, and GNU DebugFission in DWARF 4, which libdw
 * reports the same way) keeps its functions in a .dwo file, read here
 * (dwarf_split.c; libdw is never let to open it itself: subdie NULL);
 * its ranges point to it. One whose .dwo cannot be found or read (or a
 * .dwp package, not read) keeps its ranges, marked split without a
 * .dwo, so that a lookup there says so instead of giving a line without
 * the functions inlined at it. Returns 0, -EFBIG (the .dwo files are
 * over the cap), -ENOMEM.
 */
static int build_ranges(struct dwarf_lines *d)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	int ret = 0, more;

	while (!ret && !(more = dwarf_get_units(d->dw, cu, &cu, &version,
						&unit_type, &cudie, NULL))) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t o = 0;
		bool split = unit_type == DW_UT_skeleton;

		uint32_t dwo = NO_DWO;

		d->units++;
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial &&
		    !split)
			continue;
		if (split) {
			ret = split_read(d, &cudie, &dwo);
			if (ret)
				break;
		}
		while (!ret && (o = dwarf_ranges(&cudie, o, &base, &lo, &hi)) > 0)
			if (dwarf_range_live(lo, hi))
				ret = range_push(d, lo, hi, dwarf_dieoffset(&cudie),
						 d->units - 1, split, dwo);
		if (o < 0)	/* a range list it could not read */
			d->unreadable = d->units_cut = true;
	}
	if (ret == -ENOMEM || ret == -EFBIG)
		return ret;
	if (!ret && more < 0)
		d->unreadable = d->units_cut = true;
	if (d->nranges)
		qsort(d->ranges, d->nranges, sizeof(*d->ranges), range_cmp);
	return 0;
}

static bool cu_seen(struct dwarf_lines *d, uint64_t off, bool add);

/* Line tables and file entries libdw may keep decoded (bytes). */
static uint64_t decoded_cap(const struct dwarf_lines *d)
{
	uint64_t share = d->section_bytes / DECODED_SHARE;

	return share > DECODED_MIN ? share : DECODED_MIN;
}

/*
 * Drop everything libdw decoded: end the Dwarf and begin it again over
 * the same sections (in libelf's memory since the open: no file read).
 * A failure leaves @d without a Dwarf: its lookups fail (-EINVAL).
 */
static void reset(struct dwarf_lines *d)
{
	if (d->dw)
		dwarf_end(d->dw);
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	/* a .dwo libdw refuses now gives no unit: its lookups are unreadable */
	for (uint32_t i = 0; i < d->nsplits; i++)
		dwarf_split_reset(d->splits[i]);
	d->decoded_bytes = 0;
	d->units_walked = 0;
	if (d->cus)
		memset(d->cus, 0, (size_t)d->cus_cap * sizeof(*d->cus));
	d->cus_n = 0;
	d->resets++;
}

/*
 * The CU whose ranges hold @vaddr, into @mem, where that range starts
 * (*@start) and its range (*@range: a skeleton unit's is split, with its
 * .dwo); NULL if none.
 * Makes room for its line table first (reset()) when it is new and the
 * decoded state is at its cap.
 */
static Dwarf_Die *cu_of(struct dwarf_lines *d, uint64_t vaddr, Dwarf_Die *mem,
			uint64_t *start, const struct cu_range **range)
{
	uint32_t lo = 0, hi = d->nranges;

	while (lo < hi) {	/* first range with lo > vaddr */
		uint32_t mid = lo + (hi - lo) / 2;

		if (d->ranges[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges may nest or overlap (a CU's range list and another's) */
	for (uint32_t i = lo, k = 0; i-- > 0 && k < 8; k++)
		if (vaddr < d->ranges[i].hi) {
			const struct cu_range *r = &d->ranges[i];

			/* its line table is new and there is no room: drop all */
			if (d->decoded_bytes > decoded_cap(d) && !cu_seen(d, r->off, false))
				reset(d);
			/* libdw walks (and keeps) every unit up to this one */
			if (r->unit >= d->units_walked)
				d->units_walked = r->unit + 1;
			/* a range found (*@start set) but no DIE: unreadable */
			*start = r->lo;
			*range = r;
			return d->dw ? dwarf_offdie(d->dw, r->off, mem) : NULL;
		}
	return NULL;
}

/*
 * The directory of the file open on @fd, '/'-ended, where libdw looks
 * for a .dwo first (its debugdir); NULL if unknown. malloc'd.
 */
static char *fd_dir(int fd)
{
	char link[32], *path, *slash;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	path = realpath(link, NULL);
	if (!path || path[0] != '/' || !(slash = strrchr(path, '/'))) {
		free(path);
		return NULL;
	}
	slash[1] = '\0';
	return path;
}

/* Read @fd's DWARF into @d, within @max_bytes. */
static int open_fd(struct dwarf_lines *d, int fd, uint64_t max_bytes)
{
	bool has_info;
	uint64_t bytes;
	int ret;

	d->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF)
		return -ENOEXEC;
	dwarf_sections_hide_unneeded(d->elf);
	bytes = dwarf_sections_bytes(d->elf, false, &has_info);
	if (!has_info)
		return -ENODATA;
	if (max_bytes && bytes > max_bytes)
		return -EFBIG;
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw)
		return -ENOEXEC;	/* a .debug_info libdw refuses: corrupt */
	d->section_bytes = dwarf_sections_bytes(d->elf, true, &has_info);
	/* everything libdw needs is in memory: no read of @fd from here on */
	elf_cntl(d->elf, ELF_C_FDDONE);
	d->lsrc_ok = !dwarf_linetab_src_of(d->elf, &d->lsrc);
	if (max_bytes && d->section_bytes > max_bytes)
		return -EFBIG;
	d->max_bytes = max_bytes;
	d->debugdir = fd_dir(fd);
	ret = build_ranges(d);
	for (uint32_t i = 0; i < d->nsplits; i++)
		d->section_bytes += dwarf_split_bytes(d->splits[i]);
	if (!ret && d->unreadable && !d->nranges)
		ret = -ENOEXEC;	/* not one unit readable */
	/* the walk made libdw keep every unit: start lookups from none */
	if (!ret)
		reset(d);
	return ret || d->dw ? ret : -ENOEXEC;
}

static void close_handles(struct dwarf_lines *d)
{
	/* before the Elf: they borrow its .debug_addr and .debug_ranges */
	for (uint32_t i = 0; i < d->nsplits; i++)
		dwarf_split_free(d->splits[i]);
	free(d->splits);
	free(d->debugdir);
	d->splits = NULL;
	d->debugdir = NULL;
	d->nsplits = d->splits_cap = d->nsplit = 0;
	d->section_bytes = 0;
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	d->dw = NULL;
	d->elf = NULL;
}

/*
 * dwarf_lines_open - see dwarf_lines.h. The debug file is tried first:
 * an object with one attached was stripped (its own file has no DWARF).
 */
int dwarf_lines_open(const struct elf_file *f, uint64_t max_bytes,
		     struct dwarf_lines **out)
{
	int fds[2] = { elf_file_debug_fd(f), elf_file_fd(f) };
	struct dwarf_lines *d;
	int ret = -ENODATA;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		ret = open_fd(d, fds[i], max_bytes);
		if (!ret)
			break;
		close_handles(d);
		if (ret != -ENODATA)
			break;	/* there is DWARF here but not for us: stop */
	}
	if (ret) {
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* dwarf_lines_free - see dwarf_lines.h. */
void dwarf_lines_free(struct dwarf_lines *d)
{
	if (!d)
		return;
	close_handles(d);
	for (uint32_t i = 0; d->fns && i < d->units; i++)
		if (d->fns[i] != FN_NONE)
			dwarf_fn_index_free(d->fns[i]);
	free(d->fns);
	for (uint32_t i = 0; d->tabs && i < d->units; i++)
		if (d->tabs[i] && d->tabs[i] != TAB_NONE && d->tabs[i] != TAB_BIG) {
			dwarf_linetab_free(d->tabs[i]->t);
			free(d->tabs[i]);
		}
	free(d->tabs);
	free(d->cus);
	free(d->ranges);
	free(d);
}

/* dwarf_lines_bytes - see dwarf_lines.h. */
uint64_t dwarf_lines_bytes(const struct dwarf_lines *d)
{
	if (!d)
		return 0;
	return sizeof(*d) + d->section_bytes + d->decoded_bytes + d->fns_bytes +
	       d->tabs_bytes +
	       (uint64_t)d->units_walked * CU_BYTES +
	       (uint64_t)d->cus_cap * sizeof(*d->cus) +
	       (uint64_t)d->ranges_cap * sizeof(*d->ranges) +
	       (uint64_t)d->splits_cap * sizeof(*d->splits);
}

/* dwarf_lines_resets - see dwarf_lines.h. */
uint32_t dwarf_lines_resets(const struct dwarf_lines *d)
{
	return d ? d->resets : 0;
}

/* Whether CU @off was counted already; remember it if not and @add. */
static bool cu_seen(struct dwarf_lines *d, uint64_t off, bool add)
{
	uint64_t key = off + 1;
	uint32_t i, mask;

	if ((d->cus_n + 1) * 2 > d->cus_cap) {
		uint32_t ncap = d->cus_cap ? d->cus_cap * 2 : 64;
		uint64_t *n = calloc(ncap, sizeof(*n));

		if (!n)
			return true;	/* not counted: an estimate anyway */
		for (uint32_t j = 0; j < d->cus_cap; j++) {
			if (!d->cus[j])
				continue;
			for (i = (uint32_t)(d->cus[j] * 0x9e3779b97f4a7c15ULL >> 32) &
				 (ncap - 1); n[i]; i = (i + 1) & (ncap - 1))
				;
			n[i] = d->cus[j];
		}
		free(d->cus);
		d->cus = n;
		d->cus_cap = ncap;
	}
	mask = d->cus_cap - 1;
	for (i = (uint32_t)(key * 0x9e3779b97f4a7c15ULL >> 32) & mask; d->cus[i];
	     i = (i + 1) & mask)
		if (d->cus[i] == key)
			return true;
	if (add) {
		d->cus[i] = key;
		d->cus_n++;
	}
	return false;
}

/* Count the line table of @cu the first time it is decoded. */
static void count_cu_lines(struct dwarf_lines *d, Dwarf_Die *cu)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	size_t nlines = 0, nfiles = 0;

	if (cu_seen(d, dwarf_dieoffset(cu), true))
		return;
	if (!dwarf_getsrclines(cu, &lines, &nlines))
		d->decoded_bytes += (uint64_t)nlines * LINE_ROW_BYTES;
	if (!dwarf_getsrcfiles(cu, &files, &nfiles))
		d->decoded_bytes += (uint64_t)nfiles * FILE_ENTRY_BYTES;
}

/* A DIE's name: linkage name (C++, mangled) first, else DW_AT_name. */
static const char *die_name(Dwarf_Die *die)
{
	static const int attrs[] = { DW_AT_linkage_name,
				     DW_AT_MIPS_linkage_name, DW_AT_name };
	Dwarf_Attribute a;

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const char *s = dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &a));

		if (s && *s)
			return s;
	}
	return NULL;
}

/*
 * The file @die's DW_AT_call_file names in @cu's file table (@tab's when
 * not NULL, else libdw's), and its line.
 */
static int call_site(Dwarf_Die *cu, const struct dwarf_linetab *tab,
		     Dwarf_Die *die, const char **file, uint32_t *line)
{
	Dwarf_Attribute a;
	Dwarf_Word cf, cl;
	Dwarf_Files *files;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &cf) ||
	    dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &cl) ||
	    cl > UINT32_MAX)
		return -EINVAL;
	if (tab) {
		*file = dwarf_linetab_file(tab, cf);
	} else {
		if (dwarf_getsrcfiles(cu, &files, &nfiles) || cf >= nfiles)
			return -EINVAL;
		*file = dwarf_filesrc(files, cf, NULL, NULL);
	}
	if (!*file)
		return -EINVAL;
	*line = (uint32_t)cl;
	return 0;
}

/* Free unit @i's line table. */
static void tab_drop(struct dwarf_lines *d, uint32_t i)
{
	d->tabs_bytes -= d->tabs[i]->bytes + sizeof(*d->tabs[i]);
	dwarf_linetab_free(d->tabs[i]->t);
	free(d->tabs[i]);
	d->tabs[i] = NULL;
}

/*
 * Make room for a table of unit @keep's: while the tables pass half of
 * what libdw's decoded state is let to (decoded_cap(); the other half
 * is its units' abbreviations and DIEs) or twice the largest table (a file of one big unit and a few small ones, e.g.
 * sqlite3's amalgamation, would else decode its big one again at each
 * turn), free the least recently used one (never @keep's).
 */
static void tabs_trim(struct dwarf_lines *d, uint32_t keep)
{
	uint64_t cap = decoded_cap(d) / 2 > 2 * d->tab_max ? decoded_cap(d) / 2 :
		       2 * d->tab_max;

	while (d->tabs_bytes > cap) {
		uint32_t lru = UINT32_MAX;

		for (uint32_t i = 0; i < d->units; i++)
			if (i != keep && d->tabs[i] && d->tabs[i] != TAB_NONE &&
			    d->tabs[i] != TAB_BIG &&
			    (lru == UINT32_MAX || d->tabs[i]->used < d->tabs[lru]->used))
				lru = i;
		if (lru == UINT32_MAX)
			return;
		tab_drop(d, lru);
	}
}

/*
 * Unit @unit's line table (CU DIE @cu), decoded by dwarf_linetab.c on
 * its first lookup; NULL when it cannot be (a form or layout it does not
 * read, no memory): the caller uses libdw's; TAB_BIG_T when it would
 * keep more than the object's cap (12 bytes a row; 24 while it is
 * decoded): no lines in that unit.
 */
static const struct dwarf_linetab *line_table(struct dwarf_lines *d,
					      uint32_t unit, Dwarf_Die *cu)
{
	struct unit_lines *u;
	Dwarf_Attribute a;
	Dwarf_Word stmt;
	uint64_t bytes;
	int ret;

	if (!d->lsrc_ok || unit >= d->units)
		return NULL;
	if (!d->tabs) {
		d->tabs = calloc(d->units, sizeof(*d->tabs));
		if (!d->tabs)
			return NULL;
		d->tabs_bytes += (uint64_t)d->units * sizeof(*d->tabs);
	}
	u = d->tabs[unit];
	if (u == TAB_NONE)
		return NULL;
	if (u == TAB_BIG)
		return TAB_BIG_T;
	if (!u) {
		if (dwarf_formudata(dwarf_attr(cu, DW_AT_stmt_list, &a), &stmt) ||
		    !(u = calloc(1, sizeof(*u))))
			return NULL;
		ret = dwarf_linetab_build(&d->lsrc, stmt,
					  dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a)),
					  2 * d->max_bytes, &u->t, &bytes);
		if (ret) {
			free(u);
			/* over the object's cap: libdw's would take more */
			d->tabs[unit] = ret == -EFBIG ? TAB_BIG : TAB_NONE;
			return ret == -EFBIG ? TAB_BIG_T : NULL;
		}
		u->bytes = bytes;
		if (bytes > d->tab_max)
			d->tab_max = bytes;
		d->tabs[unit] = u;
		d->tabs_bytes += bytes + sizeof(*u);
		tabs_trim(d, unit);
	}
	u->used = ++d->tabs_clock;
	return u->t;
}

/*
 * The function index of unit @unit (CU DIE @cu), built on its first
 * lookup; NULL when it cannot be (a DIE libdw could not read, too many
 * ranges, no memory: lookups there walk the unit's DIEs instead).
 */
static struct dwarf_fn_index *fn_index(struct dwarf_lines *d, uint32_t unit,
				       Dwarf_Die *cu)
{
	struct dwarf_fn_index *x;
	uint64_t bytes;

	if (unit >= d->units)
		return NULL;
	if (!d->fns) {
		d->fns = calloc(d->units, sizeof(*d->fns));
		if (!d->fns)
			return NULL;
		d->fns_bytes += (uint64_t)d->units * sizeof(*d->fns);
	}
	if (!d->fns[unit]) {
		if (dwarf_fn_index_build(cu, &x, &bytes)) {
			d->fns[unit] = FN_NONE;
			return NULL;
		}
		d->fns[unit] = x;
		d->fns_bytes += bytes;
	}
	return d->fns[unit] == FN_NONE ? NULL : d->fns[unit];
}

/*
 * The chain around @vaddr in unit @unit (CU DIE @cu, not split) through
 * its function index: the function holding it, then its scopes
 * (dwarf_scope_walk() inside it). Returns as dwarf_scope_walk(), and
 * -ERANGE when the index cannot answer (walk the unit instead).
 */
static int fn_chain(struct dwarf_lines *d, uint32_t unit, Dwarf_Die *cu,
		    uint64_t vaddr, Dwarf_Die *chain, int *n)
{
	struct dwarf_fn_index *x = fn_index(d, unit, cu);
	Dwarf_Die fn;
	uint64_t off;
	int ret;

	if (!x)
		return -ERANGE;
	ret = dwarf_fn_index_find(x, vaddr, &off);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	if (!dwarf_offdie(d->dw, off, &fn))
		return -EINVAL;
	if (dwarf_tag(&fn) != DW_TAG_lexical_block)
		chain[(*n)++] = fn;
	return dwarf_scope_walk(&fn, vaddr, chain, n, DWARF_LINES_MAX_DEPTH, 1,
				NULL);
}

/* dwarf_lines_lookup - see dwarf_lines.h. */
int dwarf_lines_lookup(struct dwarf_lines *d, uint64_t vaddr,
		       struct dwarf_frame *out, int max)
{
	Dwarf_Die cu_mem, *cu, dwo_mem, *dies, chain[DWARF_LINES_MAX_DEPTH];
	const struct cu_range *range = NULL;
	const struct dwarf_linetab *tab;
	struct dwarf_split *split = NULL;
	uint64_t row_addr;
	uint64_t start = 0;
	const char *file;
	Dwarf_Lines *rows;
	Dwarf_Line *row;
	uint32_t line;
	size_t nrows;
	int lineno, n = 0, nchain = 0, ret;
	bool sub = false;

	if (!d || !d->dw || max < 1)
		return -EINVAL;
	cu = cu_of(d, vaddr, &cu_mem, &start, &range);
	/* past a unit it could not read: maybe code with DWARF, maybe not */
	if (!cu && !d->units_cut && !start)
		return -ENOENT;
	if (!cu) {
		d->unreadable = true;
		return -EILSEQ;
	}
	/* a skeleton: the line rows here, the DIEs in its .dwo */
	dies = cu;
	if (range->split) {
		if (range->dwo == NO_DWO)
			return -EOPNOTSUPP;
		split = d->splits[range->dwo];
		dies = dwarf_split_cu(split, &dwo_mem);
		if (!dies) {
			d->unreadable = true;
			return -EILSEQ;
		}
	}
	tab = line_table(d, range->unit, cu);
	if (tab == TAB_BIG_T) {
		d->too_big = true;
		return -EFBIG;
	}
	if (tab && !cu_seen(d, dwarf_dieoffset(cu), true))
		d->decoded_bytes += UNIT_DIE_BYTES;
	if (tab) {
		if (dwarf_linetab_find(tab, vaddr, &row_addr, &file, &line) ||
		    row_addr < start)
			return -ENOENT;
	} else {
		count_cu_lines(d, cu);
		/* a line table libdw cannot decode: corrupt, not "no row here" */
		if (dwarf_getsrclines(cu, &rows, &nrows)) {
			d->unreadable = true;
			return -EILSEQ;
		}
		row = dwarf_getsrc_die(cu, vaddr);
		/* a row below the unit's range: a dropped function's sequence */
		if (!row || dwarf_lineaddr(row, &row_addr) || row_addr < start ||
		    dwarf_lineno(row, &lineno) || lineno < 0 ||
		    !(file = dwarf_linesrc(row, NULL, NULL)))
			return -ENOENT;
		line = (uint32_t)lineno;
	}
	ret = split ? -ERANGE : fn_chain(d, range->unit, cu, vaddr, chain, &nchain);
	if (ret == -ERANGE)
		ret = dwarf_scope_walk(dies, vaddr, chain, &nchain,
				       DWARF_LINES_MAX_DEPTH, 0, split);
	if (ret == -EINVAL) {
		d->unreadable = true;
		return -EILSEQ;
	}
	if (ret)
		return ret;
	/* innermost first, from the subprogram's inlined calls outwards */
	for (int i = nchain - 1; i >= 0; i--) {
		int tag = dwarf_tag(&chain[i]);

		if (n == max)
			return -E2BIG;
		out[n++] = (struct dwarf_frame){ .name = die_name(&chain[i]),
						 .file = file, .line = line };
		if (tag == DW_TAG_subprogram) {
			sub = true;
			break;
		}
		/*
		 * a .dwo's call files are in its own line table (gcc's
		 * .debug_line.dwo: libdw's), else in the skeleton's (DWARF 5
		 * 3.1.3: clang's .dwo has none)
		 */
		if (call_site(dies, split ? NULL : tab, &chain[i], &file, &line) &&
		    (!split || call_site(cu, tab, &chain[i], &file, &line))) {
			d->unreadable = true;
			return -EILSEQ;
		}
	}
	/*
	 * No subprogram DIE around @vaddr (none at all, or the chain of
	 * inlined subroutines ended without one): the row's line, or the
	 * last call site, for the function the symbol table names.
	 */
	if (!sub) {
		if (n == max)
			return -E2BIG;
		out[n++] = (struct dwarf_frame){ .file = file, .line = line };
	}
	return n;
}

/* dwarf_lines_too_big - see dwarf_lines.h. */
bool dwarf_lines_too_big(struct dwarf_lines *d)
{
	if (!d || !d->too_big || d->too_big_told)
		return false;
	d->too_big_told = true;
	return true;
}

/* dwarf_lines_unreadable - see dwarf_lines.h. */
bool dwarf_lines_unreadable(struct dwarf_lines *d)
{
	if (!d || !d->unreadable || d->unreadable_told)
		return false;
	d->unreadable_told = true;
	return true;
}

/* dwarf_lines_split_units - see dwarf_lines.h. */
uint32_t dwarf_lines_split_units(const struct dwarf_lines *d)
{
	return d ? d->nsplit : 0;
}
