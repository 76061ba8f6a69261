// SPDX-License-Identifier: GPL-2.0
/*
 * debuginfod_attach.c - the symbolizer's side of debuginfod: which
 * objects want a debug file fetched, and attaching it once it came (see
 * symbolizer_internal.h: sym_fetched_*; the fetcher is debuginfod.c).
 *
 * An object wants one when, at its open, it has no .symtab (or, with
 * lines on, no DWARF: `strip -g` keeps the names and drops the lines),
 * debuginfo.c found no local debug file, and it has a build ID (the only
 * key a server knows). Its request is queued then (never on the sample
 * path); symbolizer_trim() asks again for a request that was dropped or
 * failed long ago. When the fetch is done, the reader sees it
 * (sym_object_wants_reload()) on the object's next sample and queues a
 * reload on the object loader, which attaches the file here: checked
 * against the object (elf_file_read_debug_symbols(): build ID, class,
 * machine, a .symtab) and read without the lock, then swapped in under
 * it with the object's caches emptied (a miss cached before must not
 * stay a miss). Until then its lookups miss with -EINPROGRESS: the
 * writer counts those frames (symbols_pending_debuginfod) and keeps
 * their addresses; an object with names of its own names its frames
 * meanwhile, without lines.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbol/debuginfod.h"
#include "symbol/dwarf_lines.h"
#include "symbol/elf_file.h"
#include "symbol/elf_symtab.h"
#include "symbol/symbolizer_internal.h"

/* symbolizer_set_debuginfod - see symbolizer.h. */
void symbolizer_set_debuginfod(struct symbolizer *s, struct dbgd_fetcher *d)
{
	s->dbgd = d;
}

static struct dbgd_entry *entry_of(const struct sym_object *o)
{
	return __atomic_load_n(&o->dbgd_entry, __ATOMIC_ACQUIRE);
}

static bool attached(const struct sym_object *o)
{
	return __atomic_load_n(&o->dbgd_attached, __ATOMIC_ACQUIRE);
}

/* sym_fetched_wanted - see symbolizer_internal.h. */
void sym_fetched_wanted(struct symbolizer *s, struct sym_object *o)
{
	struct dbgd_entry *e;
	int fd, ret;

	if (!s->dbgd || !o->ef || o->same || elf_file_has_debug(o->ef) ||
	    (elf_file_has_symtab(o->ef) &&
	     (!s->lines || elf_file_has_dwarf(o->ef))) ||
	    !elf_file_build_id(o->ef)[0])
		return;
	o->dbgd_wanted = true;
	e = dbgd_request(s->dbgd, elf_file_build_id(o->ef));
	__atomic_store_n(&o->dbgd_entry, e, __ATOMIC_RELEASE);
	if (!e || dbgd_entry_state(e) != DBGD_READY)
		return;
	/* fetched already: attached before the symbols are read at all */
	fd = dbgd_entry_open(s->dbgd, e);
	if (fd < 0)
		return;
	ret = elf_file_set_debug(o->ef, fd);	/* takes @fd */
	if (!ret)
		__atomic_store_n(&o->dbgd_attached, true, __ATOMIC_RELEASE);
	else if (ret != -ENOMEM && ret != -EEXIST)
		dbgd_entry_reject(s->dbgd, e, ret);
}

/* sym_fetched_ready - see symbolizer_internal.h. */
bool sym_fetched_ready(const struct sym_object *o)
{
	struct dbgd_entry *e = entry_of(o);

	return e && !attached(o) && dbgd_entry_state(e) == DBGD_READY;
}

/* sym_fetched_pending - see symbolizer_internal.h. */
bool sym_fetched_pending(const struct sym_object *o)
{
	struct dbgd_entry *e = entry_of(o);

	/* names of its own (strip -g): only its lines wait */
	return e && !attached(o) && dbgd_entry_state(e) != DBGD_FAILED &&
	       !(o->ef && elf_file_has_symtab(o->ef));
}

/* sym_fetched_failed - see symbolizer_internal.h. */
bool sym_fetched_failed(const struct sym_object *o)
{
	struct dbgd_entry *e = entry_of(o);

	return e && !attached(o) && dbgd_entry_state(e) == DBGD_FAILED &&
	       !(o->ef && elf_file_has_symtab(o->ef));
}

/* sym_fetched_retry - see symbolizer_internal.h. */
void sym_fetched_retry(struct symbolizer *s, struct sym_object *o)
{
	struct dbgd_entry *e = entry_of(o);

	if (!o->dbgd_wanted || attached(o) || !s->dbgd || !o->ef ||
	    (e && dbgd_entry_state(e) != DBGD_FAILED))
		return;
	e = dbgd_request(s->dbgd, elf_file_build_id(o->ef));
	if (e)
		__atomic_store_n(&o->dbgd_entry, e, __ATOMIC_RELEASE);
}

/* sym_fetched_attach - see symbolizer_internal.h. */
int sym_fetched_attach(struct symbolizer *s, pthread_mutex_t *lock,
		       struct sym_object *o)
{
	struct elf_symtab *t = NULL;
	struct dbgd_entry *e;
	uint64_t before, after, freed;
	bool stale = false;
	struct stat st;
	int fd, ret;

	pthread_mutex_lock(lock);
	e = entry_of(o);
	if (!s->dbgd || !e || attached(o) || o->reloading || o->changed || !o->ef) {
		pthread_mutex_unlock(lock);
		return 0;
	}
	o->reloading = true;	/* not shed, not reloaded meanwhile */
	pthread_mutex_unlock(lock);

	fd = dbgd_entry_open(s->dbgd, e);
	ret = fd < 0 ? fd : 0;
	/* the object's own tables are read again: from the file first read */
	if (!ret && o->stamp.valid && !elf_file_stat(o->ef, &st) &&
	    sym_stamp_differs(&o->stamp, &st)) {
		ret = -ESTALE;
		stale = true;
	}
	if (!ret)
		ret = elf_file_read_debug_symbols(o->ef, fd, &t);

	pthread_mutex_lock(lock);
	o->reloading = false;
	if (!ret) {
		before = elf_file_bytes(o->ef) + dwarf_lines_bytes(o->dwarf);
		freed = sym_object_forget(o);	/* misses cached before it */
		s->bytes = s->bytes > freed ? s->bytes - freed : 0;
		elf_file_adopt_debug(o->ef, fd, t);
		/* its source lines too, from the debug file's DWARF (frames.c) */
		sym_dwarf_load(s, o);
		__atomic_store_n(&o->shed, false, __ATOMIC_RELEASE);
		__atomic_store_n(&o->dbgd_attached, true, __ATOMIC_RELEASE);
		after = elf_file_bytes(o->ef) + dwarf_lines_bytes(o->dwarf);
		sym_admit(s, o, after > before ? after - before : 0);
	} else if (stale) {
		/* its own names would be wrong: never named, never reloaded */
		__atomic_store_n(&o->changed, true, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(lock);
	if (ret && fd >= 0) {
		close(fd);
		if (ret != -ENOMEM && ret != -EEXIST && !stale)
			dbgd_entry_reject(s->dbgd, e, ret);
	}
	return ret;
}
