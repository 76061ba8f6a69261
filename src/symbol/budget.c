// SPDX-License-Identifier: GPL-2.0
/*
 * budget.c - the symbolizer's memory (see symbolizer.h, symbolizer_set_budget).
 *
 * Owns: the periodic trim (objects nobody held for SYM_IDLE_TRIMS trims
 * freed), the byte count of the cache, and shedding past the budget:
 * idle objects, then address caches, then DWARF past its share
 * (SYM_DWARF_SHARE), then DWARF (lines and inlined
 * frames, frames.c) and symbol tables of held objects, least recently
 * sampled or looked up object first (its DWARF before its table; those
 * with samples still to name only past SYM_PENDING_SLACK more, all their
 * DWARF before any of their tables), and
 * reading a shed table
 * back (symbolizer_reload(), on the object loader, rate limited, never
 * after the file changed; or, for an object whose debug file debuginfod
 * fetched, attaching it: debuginfod_attach.c). A table larger than the
 * whole budget is refused (sym_table_fits(): by its section headers
 * before it is read, else as read) and not read again while the budget
 * stays the same: it could only be read, shed and read again, each time
 * past the budget. Everything runs under the
 * caller's sym_lock except the reload's file read. Each trim also asks
 * again for debug files whose fetch was dropped or failed long ago.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "symbol/dwarf_lines.h"
#include "symbol/elf_symtab.h"
#include "symbol/jit_syms.h"
#include "symbol/symbolizer_internal.h"
#include "util/clock.h"

static void shed(struct symbolizer *s);
static bool sheddable(const struct sym_object *o);
static bool has_pending(const struct sym_object *o);
static uint64_t used_ns(const struct sym_object *o);
static void shed_lru(struct symbolizer *s, uint64_t limit, bool pending,
		     bool dwarf_only);
static uint64_t object_shed(struct sym_object *o);
static void shed_dwarf_over(struct symbolizer *s, uint64_t cap);

/* The part of @s's budget (bytes) for symbol tables: all but DWARF's own. */
static uint64_t tables_budget(const struct symbolizer *s)
{
	return s->budget - s->lines_budget;
}

/* sym_dwarf_budget - see symbolizer_internal.h. */
uint64_t sym_dwarf_budget(const struct symbolizer *s)
{
	return s->lines_budget ? s->lines_budget : s->budget / SYM_DWARF_SHARE;
}

/*
 * symbolizer_trim - see symbolizer.h. Frees cached objects nobody holds a
 * reference to, and forgets remembered open failures so they are retried
 * (a process that exited mid-open, a file fixed since).
 */
void symbolizer_trim(struct symbolizer *s)
{
	size_t b;

	s->bytes = s->vdso ? sym_object_bytes(s->vdso) : 0;
	s->bytes += jit_syms_total_bytes();	/* the objects shed for them too */
	for (b = 0; b < s->nbuckets; b++) {
		struct sym_object **pp = &s->buckets[b];

		while (*pp) {
			struct sym_object *o = *pp;

			if (o->refs)
				o->idle_trims = 0;
			sym_fetched_retry(s, o);
			if (o->refs || (!o->err && o->idle_trims++ < SYM_IDLE_TRIMS)) {
				s->bytes += sym_object_bytes(o);
				pp = &o->next;
				continue;
			}
			*pp = o->next;
			s->nnodes--;
			if (!o->err)
				s->nobjects--;
			sym_object_destroy(o);
		}
	}
	shed(s);
}

uint64_t sym_object_bytes(const struct sym_object *o)
{
	return sizeof(*o) + elf_file_bytes(o->ef) +
	       (uint64_t)o->offs_cap * sizeof(*o->offs) +
	       (uint64_t)o->names_cap * sizeof(*o->names) +
	       dwarf_lines_bytes(o->dwarf) + o->frames_bytes +
	       (uint64_t)o->frames_cap * sizeof(*o->frames);
}

/*
 * Take @n freed bytes off the cache's count: what grew since the last
 * trim (address caches) was not counted yet, so it saturates at 0.
 */
static void bytes_sub(struct symbolizer *s, uint64_t n)
{
	s->bytes = s->bytes > n ? s->bytes - n : 0;
}

/* Heap bytes of the DWARF @s's objects hold. */
static uint64_t dwarf_bytes(const struct symbolizer *s)
{
	uint64_t n = 0;

	for (size_t b = 0; b < s->nbuckets; b++)
		for (const struct sym_object *o = s->buckets[b]; o; o = o->next)
			if (o->dwarf)
				n += dwarf_lines_bytes(o->dwarf);
	return n;
}

/*
 * Over budget: free the idle objects, then empty the address caches of
 * the objects resolved least recently (they refill on use), then free
 * the symbol tables of held objects, least recently needed first.
 */
static void shed(struct symbolizer *s)
{
	uint64_t dwarf = s->budget && s->bytes > s->budget ? dwarf_bytes(s) : 0;

	/*
	 * First the objects kept idle, least recently used first. One
	 * holding DWARF while DWARF is over its part: its file's DWARF is
	 * not read again at its next start for a while (sym_dwarf_backoff(),
	 * frames.c), or a program exec'd in turn with others would read it
	 * at every start.
	 */
	while (s->budget && s->bytes > s->budget) {
		struct sym_object *lru = NULL;

		for (size_t b = 0; b < s->nbuckets; b++)
			for (struct sym_object *o = s->buckets[b]; o; o = o->next)
				if (!o->refs && (!lru || o->last_use < lru->last_use))
					lru = o;
		if (!lru)
			break;
		if (lru->dwarf) {
			if (dwarf > sym_dwarf_budget(s))
				sym_dwarf_backoff(s, lru);
			dwarf -= dwarf_lines_bytes(lru->dwarf);
		}
		bytes_sub(s, sym_object_bytes(lru));
		sym_drop_node(s, lru);
		s->sheds++;
	}
	while (s->budget && s->bytes > s->budget) {
		struct sym_object *lru = NULL;

		for (size_t b = 0; b < s->nbuckets; b++)
			for (struct sym_object *o = s->buckets[b]; o; o = o->next)
				if (o->offs_cap && (!lru || o->last_use < lru->last_use))
					lru = o;
		if (!lru)
			break;
		bytes_sub(s, (uint64_t)lru->offs_cap * sizeof(*lru->offs));
		free(lru->offs);
		lru->offs = NULL;
		lru->offs_cap = lru->offs_n = 0;
		s->sheds++;
	}
	/*
	 * Then DWARF (lines and inlined frames; never read back: counted as
	 * lines_shed, the symbols still name its frames) and the symbol
	 * tables of objects live processes still map, least recently
	 * sampled or looked up first, an object's DWARF before its table:
	 * the lines of libc, sampled all the time, outlast the table of a
	 * program asleep for a minute (read back when it wakes). First
	 * objects whose samples were all named already; those with samples
	 * waiting for the interval's write-out (libc's, nearly always) only
	 * past SYM_PENDING_SLACK more, and among those every DWARF before
	 * any table (a frame keeps its name and loses its line before
	 * another loses its name; their frames are then counted as
	 * partial.lines_shed or symbols_shed: the ceiling holds). Names
	 * handed out are copied by their users under the lock
	 * (profile_intern()), so none outlives this. The reader asks for a
	 * table again when its code is sampled.
	 */
	shed_dwarf_over(s, sym_dwarf_budget(s));
	shed_lru(s, s->budget, false, false);
	shed_lru(s, s->budget + tables_budget(s) / SYM_PENDING_SLACK, true, true);
	shed_lru(s, s->budget + tables_budget(s) / SYM_PENDING_SLACK, true, false);
}

/*
 * While DWARF holds more than @cap, free DWARF, least recently needed
 * object first, pending or not: with a part of its own (lines_budget:
 * --memory-limit's lines part) always, so that what lines cost is that
 * part at most however little the symbol tables take; else while the
 * cache is over the budget: lines never push symbol tables out of the
 * budget's other part (an active program's table shed for libc's lines
 * is read back at its next sample, again and again).
 */
static void shed_dwarf_over(struct symbolizer *s, uint64_t cap)
{
	while (s->budget && (s->lines_budget || s->bytes > s->budget)) {
		struct sym_object *lru = NULL;
		uint64_t dwarf = 0;

		for (size_t b = 0; b < s->nbuckets; b++)
			for (struct sym_object *o = s->buckets[b]; o; o = o->next) {
				if (!o->dwarf)
					continue;
				dwarf += dwarf_lines_bytes(o->dwarf);
				if (!lru || used_ns(o) < used_ns(lru))
					lru = o;
			}
		if (!lru || dwarf <= cap)
			return;
		bytes_sub(s, sym_dwarf_shed(lru));
	}
}

/*
 * Free DWARF and held symbol tables, least recently needed object first
 * (its DWARF, then its table; only DWARF if @dwarf_only), while the
 * cache is over @limit; those of objects with samples not looked up yet
 * only if @pending too.
 */
static void shed_lru(struct symbolizer *s, uint64_t limit, bool pending,
		     bool dwarf_only)
{
	while (s->budget && s->bytes > limit) {
		struct sym_object *lru = NULL;

		for (size_t b = 0; b < s->nbuckets; b++)
			for (struct sym_object *o = s->buckets[b]; o; o = o->next)
				if ((o->dwarf || (!dwarf_only && sheddable(o))) &&
				    (pending || !has_pending(o)) &&
				    (!lru || used_ns(o) < used_ns(lru)))
					lru = o;
		if (!lru)
			return;
		if (lru->dwarf) {
			bytes_sub(s, sym_dwarf_shed(lru));
			continue;
		}
		bytes_sub(s, object_shed(lru));
		s->tables_shed++;
	}
}

/* Whether @o holds a symbol table shed() may free. */
static bool sheddable(const struct sym_object *o)
{
	return o->ef && !o->err && !o->same && !o->vdso && !o->reloading &&
	       !__atomic_load_n(&o->shed, __ATOMIC_RELAXED) &&
	       elf_file_bytes(o->ef) > sizeof(struct sym_object) + 4096;
}

/* Whether @o was sampled after its last lookup (frames still to name). */
static bool has_pending(const struct sym_object *o)
{
	return __atomic_load_n(&o->sampled_ns, __ATOMIC_RELAXED) > o->resolved_ns;
}

/* When @o's table was last needed: sampled (reader) or looked up. */
static uint64_t used_ns(const struct sym_object *o)
{
	uint64_t sampled = __atomic_load_n(&o->sampled_ns, __ATOMIC_RELAXED);

	return sampled > o->resolved_ns ? sampled : o->resolved_ns;
}

/* Free @o's symbols and its caches of them; returns the bytes freed. */
static uint64_t object_shed(struct sym_object *o)
{
	uint64_t bytes = elf_file_unload_symbols(o->ef);

	bytes += sym_object_forget(o);
	bytes += o->frames_bytes + (uint64_t)o->frames_cap * sizeof(*o->frames);
	sym_frames_free(o);
	__atomic_store_n(&o->shed, true, __ATOMIC_RELEASE);
	return bytes;
}

/* symbolizer_set_budget - see symbolizer.h. */
void symbolizer_set_budget(struct symbolizer *s, uint64_t bytes,
			   uint64_t lines_bytes)
{
	s->lines_budget = lines_bytes < bytes ? lines_bytes : 0;
	__atomic_store_n(&s->budget, bytes, __ATOMIC_RELAXED);
	/* JIT symbols: a quarter of the tables' part at most */
	jit_syms_set_budget(tables_budget(s) / 4);
}

/* symbolizer_memory - see symbolizer.h. */
void symbolizer_memory(const struct symbolizer *s, uint64_t *bytes,
		       uint64_t *sheds)
{
	*bytes = s->bytes;
	*sheds = s->sheds;
}

/* symbolizer_table_stats - see symbolizer.h. */
void symbolizer_table_stats(const struct symbolizer *s,
			    struct symbolizer_table_stats *out)
{
	out->shed = s->tables_shed;
	out->reloaded = s->tables_reloaded;
	out->reloads_refused = s->reloads_refused;
	out->too_big = __atomic_load_n(&s->too_big, __ATOMIC_RELAXED);
}

/* sym_table_fits - see symbolizer_internal.h. */
bool sym_table_fits(struct symbolizer *s, struct sym_object *o, uint64_t bytes)
{
	if (!bytes && o->ef)
		bytes = elf_file_symbols_estimate(o->ef);
	if (!s->budget || bytes <= tables_budget(s))
		return true;
	__atomic_store_n(&o->too_big, s->budget, __ATOMIC_RELAXED);
	return false;
}

/* sym_too_big_count - see symbolizer_internal.h. */
void sym_too_big_count(struct symbolizer *s, const struct sym_object *o)
{
	struct sym_too_big v = { .key = o->key, .size = o->stamp.size,
				 .budget = o->too_big };

	for (uint32_t i = 0; i < SYM_TOO_BIG_KEPT; i++) {
		const struct sym_too_big *e = &s->too_big_seen[i];

		if (e->budget == v.budget && e->size == v.size &&
		    !memcmp(&e->key, &v.key, sizeof(v.key)))
			return;
	}
	s->too_big_seen[s->too_big_next++ % SYM_TOO_BIG_KEPT] = v;
	__atomic_add_fetch(&s->too_big, 1, __ATOMIC_RELAXED);
}

/*
 * Whether @o's table was refused under a budget other than @o's
 * symbolizer's now (atomic reads: any thread): then it may fit.
 */
static bool too_big_retry(const struct sym_object *o)
{
	uint64_t refused = __atomic_load_n(&o->too_big, __ATOMIC_RELAXED);

	return refused && o->owner &&
	       refused != __atomic_load_n(&o->owner->budget, __ATOMIC_RELAXED);
}

/*
 * Count @bytes just read for @o (a new object, or its reloaded table) in
 * the cache's bytes and shed for them now, not at the next trim: twenty
 * big binaries opened within a second must not hold twenty tables until
 * then. @o counts as just needed, so it is the last to go. Lock held.
 */
void sym_admit(struct symbolizer *s, struct sym_object *o, uint64_t bytes)
{
	/* read because a sample asked for it: the most recently needed */
	__atomic_store_n(&o->sampled_ns, clock_mono_ns(), __ATOMIC_RELAXED);
	o->last_use = ++s->clock;
	s->bytes += bytes;
	shed(s);
}

/* sym_object_sampled - see symbolizer.h. */
void sym_object_sampled(struct sym_object *o, uint64_t now_ns)
{
	if (o && o->same)
		o = o->same;
	if (o && __atomic_load_n(&o->sampled_ns, __ATOMIC_RELAXED) < now_ns)
		__atomic_store_n(&o->sampled_ns, now_ns, __ATOMIC_RELAXED);
}

/* sym_object_wants_reload - see symbolizer.h. */
bool sym_object_wants_reload(const struct sym_object *o)
{
	if (o && o->same)
		o = o->same;
	return o && !__atomic_load_n(&o->changed, __ATOMIC_RELAXED) &&
	       (__atomic_load_n(&o->shed, __ATOMIC_ACQUIRE) || too_big_retry(o) ||
		sym_fetched_ready(o));
}

/* A reload allowed now by SYM_RELOADS_PER_S (lock held). */
static bool reload_allowed(struct symbolizer *s, uint64_t now)
{
	if (now - s->reload_window_ns >= 1000000000ULL) {
		s->reload_window_ns = now;
		s->reloads_in_window = 0;
	}
	if (s->reloads_in_window >= SYM_RELOADS_PER_S) {
		s->reloads_refused++;
		return false;
	}
	s->reloads_in_window++;
	return true;
}

/*
 * symbolizer_reload - see symbolizer.h. The table is read without the
 * lock from the descriptors @o holds (the object is held by the caller,
 * and a shed object is not touched by lookups), then swapped in.
 */
int symbolizer_reload(struct symbolizer *s, pthread_mutex_t *lock,
		      struct sym_object *o)
{
	struct elf_symtab *t = NULL;
	uint64_t table_bytes;
	struct stat st;
	int ret;

	if (o && o->same)
		o = o->same;
	if (!o)
		return 0;
	if (sym_fetched_ready(o))	/* fetched: attached, its table with it */
		return sym_fetched_attach(s, lock, o);
	pthread_mutex_lock(lock);
	if ((!o->shed && !too_big_retry(o)) || o->reloading || o->changed || !o->ef) {
		pthread_mutex_unlock(lock);
		return 0;
	}
	if (!reload_allowed(s, clock_mono_ns())) {
		pthread_mutex_unlock(lock);
		return -EAGAIN;
	}
	o->reloading = true;
	pthread_mutex_unlock(lock);
	/*
	 * The file as it is now must be the file first read: a library
	 * rewritten or truncated since would give wrong names.
	 */
	ret = elf_file_stat(o->ef, &st);
	if (!ret && sym_stamp_differs(&o->stamp, &st))
		ret = -ESTALE;
	/* a table that cannot fit the budget is not read (its headers say) */
	table_bytes = ret ? 0 : elf_file_symbols_estimate(o->ef);
	if (!ret && s->budget && table_bytes > tables_budget(s))
		ret = -EFBIG;
	if (!ret)
		ret = elf_file_read_symbols(o->ef, &t);
	pthread_mutex_lock(lock);
	o->reloading = false;
	if (!ret) {
		table_bytes = elf_file_bytes(o->ef);
		elf_file_set_symbols(o->ef, t);
		table_bytes = elf_file_bytes(o->ef) - table_bytes;
		if (!sym_table_fits(s, o, table_bytes)) {	/* as read */
			elf_file_unload_symbols(o->ef);
			ret = -EFBIG;
		}
	} else if (ret == -EFBIG) {
		sym_table_fits(s, o, table_bytes);	/* marks it, counted */
	}
	if (!ret) {
		__atomic_store_n(&o->too_big, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&o->shed, false, __ATOMIC_RELEASE);
		s->tables_reloaded++;
		sym_admit(s, o, table_bytes);
	} else if (ret == -EFBIG) {
		/* refused under this budget: not asked for again (too_big) */
		__atomic_store_n(&o->shed, false, __ATOMIC_RELEASE);
		sym_too_big_count(s, o);
	} else {
		__atomic_store_n(&o->changed, ret == -ESTALE || ret == -ENOEXEC,
				 __ATOMIC_RELAXED);
		s->reloads_refused++;
	}
	pthread_mutex_unlock(lock);
	return ret;
}
