// SPDX-License-Identifier: GPL-2.0
/*
 * frames.c - source lines and inlined frames of one symbolizer object
 * (see symbolizer.h: sym_object_resolve_frames()).
 *
 * Owns: reading an object's DWARF at load (dwarf_lines.c; capped per
 * object, counted when it cannot be read), the per-object cache of call
 * chains (file offset -> a block holding the frames and copies of their
 * strings, so a chain outlives the DWARF it came from; open addressing,
 * emptied wholesale past FRAME_CACHE_MAX entries), freeing the DWARF
 * for the budget (budget.c decides when), and the files whose DWARF was
 * freed so, not read again before their backoff (SYM_DWARF_BACKOFF_S,
 * doubling: no read-shed-read loop when DWARF's working set is larger
 * than its part of the budget). The last frame of a chain is
 * always the symbol table's function (resolve.c): DWARF adds the
 * functions inlined into it and the file:line of each level, never
 * renames it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "symbol/demangle.h"
#include "symbol/dwarf_lines.h"
#include "symbol/elf_file.h"
#include "symbol/symbolizer_internal.h"
#include "util/clock.h"

COUNTER_DEFINE(lines_unreadable, COUNTER_PARTIAL,
	       "objects whose DWARF libdw could not read, whole or in part (corrupt "
	       "or truncated units, line tables, DIEs; once per object): the frames "
	       "there have no source lines or inlined frames");
COUNTER_DEFINE(lines_split_dwarf, COUNTER_PARTIAL,
	       "objects built with split DWARF (-gsplit-dwarf) with a .dwo file not "
	       "found, not readable or from another build, or in a .dwp (not read; "
	       "once per object): their frames there have no source lines or inlined "
	       "frames");
COUNTER_DEFINE(lines_too_big, COUNTER_PARTIAL,
	       "objects whose DWARF is larger than the symbol cache budget's part "
	       "for DWARF (--memory-limit's lines part, or half the budget), or "
	       "with a unit whose line table alone takes more (once per object): "
	       "their frames (there) have no source lines or inlined frames");
COUNTER_DEFINE(lines_shed, COUNTER_PARTIAL,
	       "objects whose DWARF was freed for the symbol cache budget: "
	       "their frames have no source lines from then on");
COUNTER_DEFINE(lines_shed_locations, COUNTER_PARTIAL,
	       "locations named without source lines or inlined frames because "
	       "their object's DWARF had been freed for the symbol cache budget "
	       "(lines_shed counts the objects, once)");
COUNTER_DEFINE(lines_backoff, COUNTER_PARTIAL,
	       "objects opened without reading their DWARF: the same file's DWARF "
	       "was freed for the symbol cache budget less than 30 s ago (doubling "
	       "each time it is freed again): their frames have no source lines "
	       "(counted as lines_shed_locations)");
COUNTER_DEFINE(lines_inline_too_deep, COUNTER_PARTIAL,
	       "locations whose chain of inlined functions is deeper than a location "
	       "keeps (31 and the function; the levels between are left out) or than "
	       "the DWARF lookup follows (64: no lines at all)");
COUNTER_DEFINE(lines_go_pclntab, COUNTER_STAT,
	       "Go executables whose DWARF is not read: their pclntab names Go's "
	       "code with lines and inlined calls (C code cgo linked in keeps its "
	       "symbol names, without lines)");
COUNTER_DEFINE(lines_read, COUNTER_STAT,
	       "objects whose DWARF was read (lines and inlined frames), the first "
	       "time or again (lines_reread)");
COUNTER_DEFINE(lines_reread, COUNTER_STAT,
	       "objects whose DWARF was read again after it had been freed for the "
	       "symbol cache budget (a file opened anew: the object was dropped, "
	       "its process gone, or the file exec'd again)");
COUNTER_DEFINE(lines_unknown, COUNTER_STAT,
	       "addresses in objects with DWARF that no line row covers "
	       "(named by the symbol table alone)");

/* Without a budget, DWARF above this is not read. */
#define DWARF_MAX_UNBUDGETED	(1ULL << 30)

/* Whether @e remembers @o's file (as it is now: the same stamp). */
static bool seen_is(const struct sym_dwarf_seen *e, const struct sym_object *o)
{
	return e->last_ns && e->key.dev_major == o->key.dev_major &&
	       e->key.dev_minor == o->key.dev_minor &&
	       e->key.inode == o->key.inode && e->size == o->stamp.size &&
	       e->mtime.tv_sec == o->stamp.mtime.tv_sec &&
	       e->mtime.tv_nsec == o->stamp.mtime.tv_nsec;
}

/* sym_dwarf_backoff - see symbolizer_internal.h. */
void sym_dwarf_backoff(struct symbolizer *s, const struct sym_object *o)
{
	uint64_t now = clock_mono_ns();
	struct sym_dwarf_seen *e = NULL;
	uint32_t shift;

	if (!s || !o)
		return;
	pthread_mutex_lock(&s->seen_lock);
	for (uint32_t i = 0; i < SYM_DWARF_SEEN; i++) {
		struct sym_dwarf_seen *c = &s->dwarf_seen[i];

		if (seen_is(c, o)) {
			e = c;
			break;
		}
		if (!e || c->last_ns < e->last_ns)	/* the oldest goes */
			e = c;
	}
	if (!seen_is(e, o))
		*e = (struct sym_dwarf_seen){ .key = o->key, .size = o->stamp.size,
					      .mtime = o->stamp.mtime };
	shift = e->sheds < SYM_DWARF_BACKOFF_MAX_SHIFT ? e->sheds
						       : SYM_DWARF_BACKOFF_MAX_SHIFT;
	e->sheds++;
	e->last_ns = now;
	e->until_ns = now + (SYM_DWARF_BACKOFF_S * 1000000000ULL << shift);
	pthread_mutex_unlock(&s->seen_lock);
}

/*
 * Whether @o's file's DWARF was freed for the budget before: *@wait
 * whether its backoff still runs (not to be read now).
 */
static bool dwarf_was_shed(struct symbolizer *s, const struct sym_object *o,
			   bool *wait)
{
	uint64_t now = clock_mono_ns();
	bool seen = false;

	*wait = false;
	pthread_mutex_lock(&s->seen_lock);
	for (uint32_t i = 0; i < SYM_DWARF_SEEN; i++) {
		const struct sym_dwarf_seen *e = &s->dwarf_seen[i];

		if (seen_is(e, o)) {
			seen = true;
			*wait = now < e->until_ns;
			break;
		}
	}
	pthread_mutex_unlock(&s->seen_lock);
	return seen;
}

/* symbolizer_set_lines - see symbolizer.h. */
void symbolizer_set_lines(struct symbolizer *s, bool on)
{
	s->lines = on;
}

/* sym_dwarf_load - see symbolizer_internal.h. */
void sym_dwarf_load(struct symbolizer *s, struct sym_object *o)
{
	uint64_t cap = s->budget ? sym_dwarf_budget(s) : DWARF_MAX_UNBUDGETED;
	bool reread, wait;
	int ret;

	if (!s->lines || !o || !o->ef || o->same || o->vdso || o->dwarf)
		return;
	/*
	 * A Go executable's pclntab (read with its symbols) already gives
	 * Go's frames their lines and inlined calls (sym_object_resolve_frames()
	 * asks it first); its DWARF says the same again at several times
	 * the size (10.9 MB for pprof).
	 */
	if (elf_file_is_go(o->ef)) {
		counter_inc(&counter_lines_go_pclntab);
		return;
	}
	/* freed for the budget a moment ago: not read in a loop */
	reread = dwarf_was_shed(s, o, &wait);
	if (wait) {
		o->dwarf_shed = true;	/* its locations: lines_shed_locations */
		counter_inc(&counter_lines_backoff);
		return;
	}
	ret = dwarf_lines_open(o->ef, cap, &o->dwarf);
	if (o->dwarf) {
		counter_inc(&counter_lines_read);
		if (reread)
			counter_inc(&counter_lines_reread);
	}
	if (ret == -EFBIG)
		counter_inc(&counter_lines_too_big);
	else if (ret && ret != -ENODATA)
		counter_inc(&counter_lines_unreadable);
	/* opened, but some of it could not be read: counted now, once */
	if (dwarf_lines_unreadable(o->dwarf))
		counter_inc(&counter_lines_unreadable);
	if (dwarf_lines_split_units(o->dwarf))
		counter_inc(&counter_lines_split_dwarf);
}

/* sym_frames_free - see symbolizer_internal.h. */
void sym_frames_free(struct sym_object *o)
{
	for (uint32_t i = 0; i < o->frames_cap; i++)
		free(o->frames[i].e);
	free(o->frames);
	o->frames = NULL;
	o->frames_cap = o->frames_n = 0;
	o->frames_bytes = 0;
}

/* sym_dwarf_shed - see symbolizer_internal.h. */
uint64_t sym_dwarf_shed(struct sym_object *o)
{
	uint64_t bytes = dwarf_lines_bytes(o->dwarf) + o->frames_bytes +
			 (uint64_t)o->frames_cap * sizeof(*o->frames);

	dwarf_lines_free(o->dwarf);
	o->dwarf = NULL;
	o->dwarf_shed = true;
	sym_frames_free(o);
	counter_inc(&counter_lines_shed);
	sym_dwarf_backoff(o->owner, o);
	return bytes;
}

static struct frame_slot *frame_find(struct sym_object *o, uint64_t off)
{
	uint32_t mask = o->frames_cap - 1, i;

	if (!o->frames_cap)
		return NULL;
	for (i = (uint32_t)sym_mix64(off) & mask;; i = (i + 1) & mask) {
		struct frame_slot *sl = &o->frames[i];

		if (sl->state == SLOT_EMPTY)
			return NULL;
		if (sl->offset == off)
			return sl;
	}
}

static void frame_put_slot(struct frame_slot *tab, uint32_t cap,
			   const struct frame_slot *v)
{
	uint32_t mask = cap - 1, i;

	for (i = (uint32_t)sym_mix64(v->offset) & mask;
	     tab[i].state != SLOT_EMPTY; i = (i + 1) & mask)
		;
	tab[i] = *v;
}

/* Remember @v (not present yet; its entry is then owned by the cache). */
static void frame_insert(struct sym_object *o, const struct frame_slot *v)
{
	if (o->frames_n >= FRAME_CACHE_MAX)
		sym_frames_free(o);
	if ((o->frames_n + 1) * 2 > o->frames_cap) {
		uint32_t ncap = o->frames_cap ? o->frames_cap * 2 : 64;
		struct frame_slot *nt = calloc(ncap, sizeof(*nt));

		if (!nt) {
			free(v->e);
			return;
		}
		for (uint32_t i = 0; i < o->frames_cap; i++)
			if (o->frames[i].state != SLOT_EMPTY)
				frame_put_slot(nt, ncap, &o->frames[i]);
		free(o->frames);
		o->frames = nt;
		o->frames_cap = ncap;
	}
	frame_put_slot(o->frames, o->frames_cap, v);
	o->frames_n++;
	if (v->e)
		o->frames_bytes += v->e->bytes;
}

/* Append @s to the block's string area at *@p; returns the copy. */
static const char *put_str(char **p, const char *s)
{
	char *dst = *p;
	size_t len = strlen(s) + 1;

	memcpy(dst, s, len);
	*p += len;
	return dst;
}

/*
 * A block for the chain @df[0..n-1] from DWARF, its last level named by
 * the symbol @sym: inlined levels are named by DWARF (demangled; a level
 * without a name is left out rather than guessed). NULL on OOM.
 */
static struct frames_entry *entry_build(const struct dwarf_frame *df, int n,
					const struct sym_result *sym)
{
	char *dem[DWARF_LINES_MAX_DEPTH] = { 0 };
	struct frames_entry *e;
	size_t bytes;
	uint32_t k = 0;
	char *p;

	bytes = sizeof(*e) + (size_t)n * sizeof(e->f[0]);
	for (int i = 0; i < n; i++) {
		bytes += strlen(df[i].file ? df[i].file : "") + 1;
		if (i == n - 1) {
			bytes += strlen(sym->name) + strlen(sym->system_name) + 2;
		} else if (df[i].name) {
			dem[i] = demangle(df[i].name);
			bytes += strlen(df[i].name) + 1 +
				 (dem[i] ? strlen(dem[i]) + 1 : 0);
		}
	}
	e = malloc(bytes);
	if (e) {
		p = (char *)&e->f[n];
		for (int i = 0; i < n; i++) {
			struct sym_frame *f = &e->f[k];

			if (i < n - 1 && !df[i].name)
				continue;
			f->file = put_str(&p, df[i].file ? df[i].file : "");
			f->line = df[i].line;
			if (i == n - 1) {
				f->system_name = put_str(&p, sym->system_name);
				f->name = put_str(&p, sym->name);
			} else {
				f->system_name = put_str(&p, df[i].name);
				f->name = dem[i] ? put_str(&p, dem[i]) : f->system_name;
			}
			k++;
		}
		e->n = k;
		e->bytes = (uint32_t)bytes;
	}
	for (int i = 0; i < n; i++)
		free(dem[i]);
	return e;
}

/* The chain at @off of @o (not a copy, has DWARF): cached, or looked up. */
static const struct frames_entry *chain_at(struct sym_object *o, uint64_t off,
					   const struct sym_result *sym)
{
	struct dwarf_frame df[DWARF_LINES_MAX_DEPTH];
	struct frame_slot *sl = frame_find(o, off), v = { .offset = off };
	uint64_t vaddr;
	int n = -ENOENT;

	if (sl)
		return sl->e;
	v.state = SLOT_MISS;
	if (!elf_file_offset_to_vaddr(o->ef, off, &vaddr)) {
		n = dwarf_lines_lookup(o->dwarf, vaddr, df, DWARF_LINES_MAX_DEPTH);
		if (n > 0)
			v.e = entry_build(df, n, sym);
		else if (n == -E2BIG)
			counter_inc(&counter_lines_inline_too_deep);
		/* a unit's line table over the cap: the object counts once */
		else if (n == -EFBIG && dwarf_lines_too_big(o->dwarf))
			counter_inc(&counter_lines_too_big);
		/* corrupt DWARF met first here: the object counts once */
		else if (n == -EILSEQ && dwarf_lines_unreadable(o->dwarf))
			counter_inc(&counter_lines_unreadable);
	}
	if (v.e)
		v.state = SLOT_HIT;
	else if (n == -ENOENT)	/* not -EILSEQ / -EOPNOTSUPP: counted per object */
		counter_inc(&counter_lines_unknown);
	frame_insert(o, &v);
	/* frame_insert() may have dropped it (OOM): the copy we made is gone */
	sl = frame_find(o, off);
	return sl ? sl->e : NULL;
}

/*
 * sym_object_resolve_frames - see symbolizer.h. A Go executable's pc is
 * expanded from its pclntab (go_symtab.c: Go's own names and inlining,
 * the same stripped or not), uncached: a lookup there is a table walk;
 * any other's from the object's DWARF, cached per offset.
 */
int sym_object_resolve_frames(struct sym_object *o, uint64_t file_offset,
			      struct sym_frame *out, int max)
{
	const struct frames_entry *e = NULL;
	struct sym_object *t;
	struct sym_result r;
	uint64_t vaddr;
	int ret;

	if (max < 1)
		return -EINVAL;
	ret = sym_object_resolve(o, file_offset, &r);
	if (ret)
		return ret;
	t = o->same ? o->same : o;
	if (!t->vdso && t->ef && !elf_file_offset_to_vaddr(t->ef, file_offset, &vaddr)) {
		ret = elf_file_go_frames(t->ef, vaddr, out, max, NULL);
		if (ret > 0)
			return ret;
	}
	if (t->dwarf)
		e = chain_at(t, file_offset, &r);
	else if (t->dwarf_shed)
		counter_inc(&counter_lines_shed_locations);	/* every interval it shows */
	if (!e || !e->n) {
		out[0] = (struct sym_frame){ .name = r.name,
					     .system_name = r.system_name,
					     .file = r.file ? r.file : "",
					     .line = r.file ? r.line : 0 };
		return 1;
	}
	if (e->n <= (uint32_t)max) {
		memcpy(out, e->f, e->n * sizeof(*out));
		return (int)e->n;
	}
	/* the innermost levels and the function: the leaf stays true */
	counter_inc(&counter_lines_inline_too_deep);
	memcpy(out, e->f, (size_t)(max - 1) * sizeof(*out));
	out[max - 1] = e->f[e->n - 1];
	return max;
}
