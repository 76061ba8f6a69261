// SPDX-License-Identifier: GPL-2.0
/*
 * symbolizer.c - cached user-space symbolization (see symbolizer.h).
 *
 * Owns: a chained hash of nodes keyed by file identity (device major,
 * minor, inode), and opening the file behind a mapping. A node is either
 * an open object (an elf_file plus its caches: resolve.c) or a
 * remembered open failure.
 *
 * Every node also records the size, mtime and ctime of the file it was
 * opened from. (dev, inode) names a file only while it exists: once a
 * file is deleted (or rewritten in place) its inode may hold different
 * bytes. A cache hit therefore stats the file again (an fstat() of the
 * descriptor the object holds when that is the mapped inode) and, when
 * the stamp differs, takes the node out of the hash (holders keep their
 * reference; the object is freed by its last put) and opens afresh.
 *
 * Objects without a .symtab get their separate debug file attached at
 * open (debuginfo.c), searched under the process's root, then the host's;
 * without one there, it is fetched from debuginfod servers in the
 * background and attached later (debuginfod_attach.c). Their DWARF (the
 * debug file's, else their own) is read at open too, for source lines and
 * inlined frames (frames.c, dwarf_lines.c).
 *
 * Copies: a file with the build ID and size of an object already cached
 * (the same binary copied, installed twice, or in two containers' layers)
 * is opened but its symbols are not read: its node refers to that object
 * (`same`, referenced) and resolves through it, so N copies cost one
 * symbol table. Each node still has its own identity and stamp.
 *
 * The vDSO is one more object outside the hash (vdso_object.c).
 *
 * Lifetime: the hash does not hold a reference. An object whose count
 * drops to 0 stays cached for reuse until symbolizer_trim() (budget.c,
 * which owns the cache's memory); after
 * symbolizer_free() (or once it is dropped as stale) the last
 * sym_object_put() frees it. The symbolizer holds one reference on the
 * vDSO object until symbolizer_free().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "counters/counters.h"
#include "symbol/debuginfo.h"
#include "symbol/dwarf_lines.h"
#include "symbol/elf_file.h"
#include "symbol/elf_symtab.h"
#include "symbol/symbolizer_internal.h"
#include "util/clock.h"

COUNTER_DEFINE(symbols_unreadable, COUNTER_PARTIAL,
	       "objects whose symbol tables could not be read");


static uint64_t key_hash(const struct id_key *k)
{
	return sym_mix64(k->inode ^ sym_mix64(((uint64_t)k->dev_major << 32) |
				      k->dev_minor));
}

static bool key_eq(const struct id_key *a, const struct id_key *b)
{
	return a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->inode == b->inode;
}

/* symbolizer_new - see symbolizer.h. */
struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->buckets = calloc(BUCKETS_MIN, sizeof(*s->buckets));
	if (!s->buckets) {
		free(s);
		return NULL;
	}
	s->nbuckets = BUCKETS_MIN;
	pthread_mutex_init(&s->seen_lock, NULL);
	return s;
}

void sym_object_destroy(struct sym_object *o)
{
	uint32_t i;

	for (i = 0; i < o->names_cap; i++)
		free(o->names[i].name);
	free(o->names);
	for (i = 0; i < o->fde_names_n; i++)
		free(o->fde_names[i]);
	free(o->fde_names);
	free(o->offs);
	sym_frames_free(o);
	dwarf_lines_free(o->dwarf);
	elf_file_free(o->ef);
	sym_object_put(o->same);	/* after: it may free the copy's object */
	free(o);
}

/*
 * symbolizer_free - see symbolizer.h. Failure records and unreferenced
 * objects go now; referenced ones are detached and freed by their last
 * sym_object_put().
 */
void symbolizer_free(struct symbolizer *s)
{
	size_t b;

	if (!s)
		return;
	for (b = 0; b < s->nbuckets; b++) {
		struct sym_object *o = s->buckets[b], *next;

		for (; o; o = next) {
			next = o->next;
			o->next = NULL;
			o->owner = NULL;
			if (!o->refs)
				sym_object_destroy(o);
		}
	}
	if (s->vdso) {
		s->vdso->owner = NULL;
		sym_object_put(s->vdso);
	}
	free(s->buckets);
	pthread_mutex_destroy(&s->seen_lock);
	free(s);
}


static struct sym_object *find_node(struct symbolizer *s,
				    const struct id_key *k)
{
	struct sym_object *o = s->buckets[key_hash(k) & (s->nbuckets - 1)];

	for (; o; o = o->next)
		if (key_eq(&o->key, k))
			return o;
	return NULL;
}

/* Take @o out of the hash; free it now if unreferenced, else at last put. */
void sym_drop_node(struct symbolizer *s, struct sym_object *o)
{
	struct sym_object **pp = &s->buckets[key_hash(&o->key) &
					     (s->nbuckets - 1)];

	while (*pp && *pp != o)
		pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = o->next;
	o->next = NULL;
	o->owner = NULL;
	s->nnodes--;
	if (!o->err)
		s->nobjects--;
	if (!o->refs)
		sym_object_destroy(o);
}

static void grow_buckets(struct symbolizer *s)
{
	size_t n = s->nbuckets * 2, b;
	struct sym_object **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return;		/* longer chains, still correct */
	for (b = 0; b < s->nbuckets; b++) {
		struct sym_object *o = s->buckets[b], *next;

		for (; o; o = next) {
			size_t i = key_hash(&o->key) & (n - 1);

			next = o->next;
			o->next = nb[i];
			nb[i] = o;
		}
	}
	free(s->buckets);
	s->buckets = nb;
	s->nbuckets = n;
}

static void insert_node(struct symbolizer *s, struct sym_object *o)
{
	size_t i;

	if (s->nnodes >= s->nbuckets)
		grow_buckets(s);
	i = key_hash(&o->key) & (s->nbuckets - 1);
	o->next = s->buckets[i];
	s->buckets[i] = o;
	s->nnodes++;
	if (!o->err)
		s->nobjects++;
}

static bool same_file(const struct stat *st, const struct proc_mapping *m)
{
	return S_ISREG(st->st_mode) && st->st_ino == m->inode &&
	       major(st->st_dev) == m->dev_major &&
	       minor(st->st_dev) == m->dev_minor;
}

/*
 * Open the file behind @m for reading. First the kernel's own link to the
 * mapped file, /proc/PID/map_files/START-END (needs CAP_SYS_ADMIN; works
 * for deleted files and other mount namespaces), then the path inside
 * the process's root, accepted only if it is still the same inode; once
 * the process is gone, the path in profd's own root, on the same check.
 * Non-regular files (mapped devices) are refused before any open().
 * Returns an fd or -errno.
 */
static int open_mapping(pid_t pid, const struct proc_mapping *m)
{
	struct stat st;
	char *path;
	int fd, err;

	if (asprintf(&path, "/proc/%d/map_files/%llx-%llx", (int)pid,
		     (unsigned long long)m->start,
		     (unsigned long long)m->end) < 0)
		return -ENOMEM;
	if (!stat(path, &st)) {
		if (!S_ISREG(st.st_mode)) {
			free(path);
			return -ENOEXEC;
		}
		fd = open(path, O_RDONLY | O_CLOEXEC);
		free(path);
		if (fd >= 0)
			return fd;
	} else {
		free(path);
	}
	err = -errno;
	if (m->path[0] != '/')
		return err;

	if (asprintf(&path, "/proc/%d/root%s", (int)pid, m->path) < 0)
		return -ENOMEM;
	if (stat(path, &st)) {
		err = -errno;
		free(path);
		/*
		 * The process is gone (it lived milliseconds): the same path
		 * in profd's own root, if it is the very inode that was mapped.
		 */
		if (!stat(m->path, &st) && same_file(&st, m)) {
			path = strdup(m->path);
			if (!path)
				return -ENOMEM;
		} else {
			return err;
		}
	}
	if (!same_file(&st, m)) {
		free(path);
		return S_ISREG(st.st_mode) ? -ESTALE : -ENOEXEC;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	err = -errno;
	free(path);
	if (fd < 0)
		return err;
	/* Replaced between stat and open? */
	if (fstat(fd, &st) || !same_file(&st, m)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static void stamp_set(struct file_stamp *fs, const struct stat *st)
{
	fs->valid = true;
	fs->size = st->st_size;
	fs->mtime = st->st_mtim;
	fs->ctime = st->st_ctim;
}

static bool ts_eq(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* sym_stamp_differs - see symbolizer_internal.h. */
bool sym_stamp_differs(const struct file_stamp *fs, const struct stat *st)
{
	return st->st_size != fs->size || !ts_eq(&st->st_mtim, &fs->mtime) ||
	       !ts_eq(&st->st_ctim, &fs->ctime);
}

/*
 * Whether the file now behind @m differs from the one @o was opened
 * from: an fstat() of the object's own descriptor when that is the
 * mapped inode, else one stat of map_files (the mapped inode itself),
 * or, where that is denied, of the path in the process's root if it is
 * still that inode. When neither can be stat'ed, nothing is known: not
 * stale.
 */
static bool node_is_stale(const struct sym_object *o, pid_t pid,
			  const struct proc_mapping *m)
{
	struct stat st;
	char *path;
	int ret;

	if (!o->stamp.valid)
		return false;
	/*
	 * The descriptor the object holds is that inode: its fstat() sees a
	 * rewrite in place without a path walk through /proc per mapping.
	 */
	if (o->ef && !elf_file_stat(o->ef, &st) && same_file(&st, m))
		goto compare;
	if (asprintf(&path, "/proc/%d/map_files/%llx-%llx", (int)pid,
		     (unsigned long long)m->start,
		     (unsigned long long)m->end) < 0)
		return false;
	ret = stat(path, &st);
	free(path);
	if (ret) {
		if (m->path[0] != '/' ||
		    asprintf(&path, "/proc/%d/root%s", (int)pid, m->path) < 0)
			return false;
		ret = stat(path, &st);
		free(path);
		if (ret || !same_file(&st, m))
			return false;
	}
compare:
	return sym_stamp_differs(&o->stamp, &st);
}

/*
 * The cached object for @m (a new reference), or NULL: *@err < 0 when
 * its identity is remembered as failed, 0 when it is not cached (or was
 * stale and is dropped now). Called with the cache's lock held.
 */
static struct sym_object *cache_get(struct symbolizer *s, pid_t pid,
				    const struct proc_mapping *m,
				    const struct id_key *k, int *err)
{
	struct sym_object *o = find_node(s, k);

	*err = 0;
	if (o && node_is_stale(o, pid, m)) {
		sym_drop_node(s, o);
		o = NULL;
	}
	if (!o)
		return NULL;
	if (o->err) {
		*err = o->err;
		return NULL;
	}
	o->refs++;
	return o;
}

/*
 * A new object for @m, its file opened and its ELF headers read (not its
 * symbols: object_load()): touches nothing shared, so it runs without
 * the cache's lock. *@fd_err: the open failed (< 0); *@ret: the ELF
 * parse's error.
 */
static struct sym_object *object_open(struct symbolizer *s, pid_t pid,
				      const struct proc_mapping *m,
				      const struct id_key *k, int *fd_err,
				      int *ret)
{
	struct sym_object *o = calloc(1, sizeof(*o));
	struct stat st;
	int fd;

	*ret = 0;
	*fd_err = 0;
	if (!o)
		return NULL;
	o->key = *k;
	o->owner = s;
	fd = open_mapping(pid, m);
	if (fd < 0) {
		*fd_err = fd;
		*ret = fd;
	} else {
		if (!fstat(fd, &st))
			stamp_set(&o->stamp, &st);
		o->ef = elf_file_open_fd(fd, ret);
	}
	return o;
}

/*
 * A cached object with @o's build ID and file size (not a copy itself,
 * not a failure), or NULL. Called with the cache's lock held.
 */
static struct sym_object *find_copy_of(struct symbolizer *s,
				       const struct sym_object *o)
{
	const char *id = o && o->ef ? elf_file_build_id(o->ef) : NULL;

	if (!id || !id[0] || !o->stamp.valid)
		return NULL;
	for (size_t b = 0; b < s->nbuckets; b++)
		for (struct sym_object *c = s->buckets[b]; c; c = c->next)
			if (!c->err && !c->same && c->ef && c->stamp.valid &&
			    c->stamp.size == o->stamp.size &&
			    !strcmp(elf_file_build_id(c->ef), id))
				return c;
	return NULL;
}

/*
 * Read @o's symbols (and attach its debug file when it has no .symtab),
 * unless it is a copy (o->same). Without the cache's lock. *@unreadable:
 * the symbols could not be read.
 */
static void object_load(struct symbolizer *s, struct sym_object *o, pid_t pid,
			const struct proc_mapping *m, bool *unreadable)
{
	uint64_t before;
	char *root;

	*unreadable = false;
	if (!o || o->same)
		return;
	/* no names, or (strip -g) names but no lines: a debug file has them */
	if (o->ef && (!elf_file_has_symtab(o->ef) ||
		      (s->lines && !elf_file_has_dwarf(o->ef))) &&
	    asprintf(&root, "/proc/%d/root", (int)pid) >= 0) {
		debuginfo_attach(o->ef, root, m->path, NULL, 0);
		free(root);
	}
	/* none here: asked of debuginfod (in the background) */
	if (o->ef)
		sym_fetched_wanted(o->owner, o);
	/*
	 * Symbols are read now, not at the first lookup (the interval's
	 * write-out): a library truncated or rewritten after its samples
	 * still resolves from what was read here, and the writer does no
	 * file I/O. After debuginfo_attach(): the debug file's .symtab is
	 * read in the same pass. A table larger than the budget's tables part is
	 * refused (budget.c: sym_table_fits()), by its section headers
	 * before it is read, else as read.
	 */
	if (!o->ef || !sym_table_fits(s, o, 0))
		return;		/* larger than the tables' budget: not read */
	before = elf_file_bytes(o->ef);
	if (elf_file_load_symbols(o->ef) < 0) {
		*unreadable = true;
	} else if (!sym_table_fits(s, o, elf_file_bytes(o->ef) - before + 1)) {
		elf_file_unload_symbols(o->ef);		/* as read: not kept */
		return;
	}
	/* its DWARF too, after the debug file was attached (frames.c) */
	sym_dwarf_load(s, o);
}

/*
 * Put @o (from object_read()) in the cache and return it referenced, or
 * NULL with *@err. Called with the cache's lock held.
 */
static struct sym_object *object_insert(struct symbolizer *s,
					struct sym_object *o, int fd_err,
					int ret, bool unreadable, int *err)
{
	if (!o) {
		*err = -ENOMEM;
		return NULL;
	}
	if (unreadable) {
		s->symbols_unreadable++;
		counter_inc(&counter_symbols_unreadable);
	}
	if (!o->ef) {
		/*
		 * Only a failure that belongs to the file is remembered for
		 * its identity: a failed open through a process that is
		 * exiting (ENOENT, ESRCH, ESTALE, EACCES) must not stop every
		 * other process mapping the same file from being symbolized.
		 */
		if (fd_err < 0 || ret == -ENOMEM) {
			free(o);
			s->open_errors++;
			*err = ret < 0 ? ret : -EIO;
			return NULL;
		}
		o->err = ret < 0 ? ret : -EIO;
		s->open_errors++;
		insert_node(s, o);
		*err = o->err;
		return NULL;
	}
	o->refs = 1;
	insert_node(s, o);
	if (o->too_big)
		sym_too_big_count(s, o);
	sym_admit(s, o, sym_object_bytes(o));
	return o;
}

/* Whether @m is to be opened at all; -EINVAL in *@err if not. */
static bool openable(const struct proc_mapping *m, int *err)
{
	if (!m->inode || m->special || !m->path || !m->path[0]) {
		*err = -EINVAL;
		return false;
	}
	return true;
}

/*
 * symbolizer_get - see symbolizer.h. The ELF headers, the symbol tables
 * and a debug file (when the object has no .symtab) are read here.
 */
struct sym_object *symbolizer_get(struct symbolizer *s, pid_t pid,
				  const struct proc_mapping *m, int *err)
{
	struct id_key k = {
		.dev_major = m->dev_major,
		.dev_minor = m->dev_minor,
		.inode = m->inode,
	};
	struct sym_object *o;
	int fd_err, ret;
	bool unreadable;

	if (m->special && m->path && !strcmp(m->path, "[vdso]"))
		return sym_vdso_get(s, m, err);
	if (!openable(m, err))
		return NULL;
	o = cache_get(s, pid, m, &k, err);
	if (o || *err)
		return o;
	o = object_open(s, pid, m, &k, &fd_err, &ret);
	if (o)
		o->same = sym_object_get(find_copy_of(s, o));
	object_load(s, o, pid, m, &unreadable);
	return object_insert(s, o, fd_err, ret, unreadable, err);
}

/*
 * symbolizer_get_unlocked - see symbolizer.h. A cached object that
 * appeared while the file was read (another caller) wins: ours goes.
 */
struct sym_object *symbolizer_get_unlocked(struct symbolizer *s,
					   pthread_mutex_t *lock, pid_t pid,
					   const struct proc_mapping *m, int *err)
{
	struct id_key k = {
		.dev_major = m->dev_major,
		.dev_minor = m->dev_minor,
		.inode = m->inode,
	};
	struct sym_object *o, *cached;
	int fd_err, ret;
	bool unreadable;

	pthread_mutex_lock(lock);
	if (m->special && m->path && !strcmp(m->path, "[vdso]")) {
		o = sym_vdso_get(s, m, err);
		pthread_mutex_unlock(lock);
		return o;
	}
	if (!openable(m, err)) {
		pthread_mutex_unlock(lock);
		return NULL;
	}
	o = cache_get(s, pid, m, &k, err);
	pthread_mutex_unlock(lock);
	if (o || *err)
		return o;
	o = object_open(s, pid, m, &k, &fd_err, &ret);
	if (o && o->ef) {
		pthread_mutex_lock(lock);
		o->same = sym_object_get(find_copy_of(s, o));
		pthread_mutex_unlock(lock);
	}
	object_load(s, o, pid, m, &unreadable);
	pthread_mutex_lock(lock);
	cached = find_node(s, &k);
	if (cached && o) {
		sym_object_destroy(o);
		o = NULL;
		if (cached->err) {
			*err = cached->err;
		} else {
			cached->refs++;
			o = cached;
		}
	} else {
		o = object_insert(s, o, fd_err, ret, unreadable, err);
	}
	pthread_mutex_unlock(lock);
	return o;
}

/* sym_object_get - see symbolizer.h. Returns @o. */
struct sym_object *sym_object_get(struct sym_object *o)
{
	if (o)
		o->refs++;
	return o;
}

/*
 * sym_object_put - see symbolizer.h. At 0 references the object stays
 * cached (symbolizer_trim frees it) unless its symbolizer is gone.
 */
void sym_object_put(struct sym_object *o)
{
	if (!o || !o->refs)
		return;
	if (--o->refs)
		return;
	if (!o->owner)
		sym_object_destroy(o);
}

/* sym_object_read - see symbolizer.h. */
ssize_t sym_object_read(const struct sym_object *o, uint64_t file_offset,
			void *buf, size_t len)
{
	if (!o || o->err || !o->ef)
		return -EBADF;
	return elf_file_read(o->ef, file_offset, buf, len);
}

/* sym_object_build_id - see symbolizer.h. Owned by @o. */
const char *sym_object_build_id(const struct sym_object *o)
{
	return elf_file_build_id(o->ef);
}

/*
 * symbolizer_stats - see symbolizer.h. @open_errors counts failed opens
 * since creation (each identity once until a trim forgets it).
 */
void symbolizer_stats(const struct symbolizer *s, uint64_t *objects,
		      uint64_t *open_errors)
{
	if (objects)
		*objects = s->nobjects;
	if (open_errors)
		*open_errors = s->open_errors;
}

/* symbolizer_symbols_unreadable - see symbolizer.h. */
uint64_t symbolizer_symbols_unreadable(const struct symbolizer *s)
{
	return s->symbols_unreadable;
}
