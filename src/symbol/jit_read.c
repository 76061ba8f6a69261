// SPDX-License-Identifier: GPL-2.0
/*
 * jit_read.c - reading a process's perf map and jitdump files
 * (jit_syms_refresh(), see jit_syms.h).
 *
 * Owns: the process's pid in its own namespace and its uids
 * (/proc/PID/status), opening each file without following a symlink
 * (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS under /proc/PID/root, a
 * jitdump through /proc/PID/map_files first) as O_PATH, then checking it
 * is a regular file owned by the process before reopening it to read
 * (a FIFO or device is never opened for reading), the incremental reads
 * (offset kept, file identity checked: a replaced or truncated file is
 * read anew), and the two parsers:
 *   perf map   linux tools/perf/Documentation/jit-interface.txt
 *   jitdump    linux tools/perf/Documentation/jitdump-specification.txt
 * Every malformed line or record is counted, never fatal.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "counters/counters.h"
#include "symbol/jit_syms_internal.h"
#include "util/clock.h"
#include "util/utf8.h"

COUNTER_DEFINE(jitmap_parse_errors, COUNTER_STAT,
	       "perf map (/tmp/perf-PID.map) lines not understood: not "
	       "\"START SIZE name\", too long, a bad range or name");
COUNTER_DEFINE(jitdump_parse_errors, COUNTER_STAT,
	       "jitdump (jit-PID.dump) headers or records not understood; a "
	       "corrupt record ends the reading of its file");
COUNTER_DEFINE(jit_files_rejected, COUNTER_STAT,
	       "perf map or jitdump files not read: not a regular file, a "
	       "symlink on the way, or not owned by the process's user");

#define BUF_SIZE	65536
#define JITDUMP_MAGIC	0x4A695444u
#define JITDUMP_HEADER	40
#define JITDUMP_ARCH_TS	1ULL
#define REC_HEADER	16
#define DEBUG_BODY_MAX	(4u << 20)
#define RECORDS_PER_REFRESH	200000
/* the read buffer: a map line or a record (its debug info the biggest) fits */
#define READ_BUF_SIZE	(DEBUG_BODY_MAX > BUF_SIZE ? DEBUG_BODY_MAX : BUF_SIZE)

enum { JIT_CODE_LOAD, JIT_CODE_MOVE, JIT_CODE_DEBUG_INFO, JIT_CODE_CLOSE,
       JIT_CODE_UNWINDING_INFO };

/* NStgid (the pid in its own namespace) and the real/effective uids. */
static int read_status(struct jit_syms *js)
{
	char path[64], line[256];
	unsigned long ruid = 0, euid = 0;
	bool got_uid = false;
	pid_t nspid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", js->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NStgid:", 7)) {
			char *p = line + 7, *end;

			for (;;) {	/* the last one: its innermost namespace */
				long v = strtol(p, &end, 10);

				if (end == p)
					break;
				nspid = (pid_t)v;
				p = end;
			}
		} else if (!strncmp(line, "Uid:", 4)) {
			got_uid = sscanf(line + 4, "%lu %lu", &ruid, &euid) == 2;
		}
	}
	fclose(f);
	if (!got_uid)
		return -ESRCH;
	js->nspid = nspid ? nspid : js->pid;	/* no NStgid: no pid namespaces */
	js->uid = (uid_t)ruid;
	js->euid = (uid_t)euid;
	return 0;
}

/* @path (absolute, in the process's mount namespace) as O_PATH, no symlinks. */
static int open_in_root(pid_t pid, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char root[64];
	int dfd, fd;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	while (*path == '/')
		path++;
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)	/* before Linux 5.6: the last component only */
		fd = openat(dfd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	close(dfd);
	return fd;
}

/*
 * Reopen O_PATH descriptor @pfd for reading when it is a regular file
 * owned by the process's user; -EPERM (counted) otherwise. *@st gets its
 * stat. Closes @pfd.
 */
static int open_checked(const struct jit_syms *js, int pfd, struct stat *st)
{
	char self[64];
	int fd;

	if (fstat(pfd, st)) {
		fd = -errno;
		close(pfd);
		return fd;
	}
	if (!S_ISREG(st->st_mode) || (st->st_uid != js->uid && st->st_uid != js->euid)) {
		close(pfd);
		counter_inc(&counter_jit_files_rejected);
		return -EPERM;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	close(pfd);
	return fd;
}

/* Whether @s is a name to keep: not empty, printable, UTF-8. */
static bool good_name(const char *s)
{
	if (!*s)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return utf8_valid(s);
}

static bool parse_hex(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; isxdigit((unsigned char)*s); s++, n++) {
		if (n == 16)
			return false;
		v = v << 4 | (uint64_t)(isdigit((unsigned char)*s) ? *s - '0' :
					(tolower((unsigned char)*s) - 'a' + 10));
	}
	*p = s;
	*out = v;
	return n > 0;
}

/* A code range worth keeping: not empty, not huge, in user space. */
static bool good_range(uint64_t start, uint64_t size)
{
	return size && size <= JIT_ENTRY_SIZE_MAX && start < (1ULL << 56) &&
	       start + size <= (1ULL << 56);
}

/* One perf map line, NUL-terminated, newline stripped. Lock held. */
static void map_line(struct jit_syms *js, struct jit_file *f, char *line)
{
	const char *p = line;
	uint64_t start, size;
	size_t len = strlen(line);

	if (len && line[len - 1] == '\r')
		line[--len] = 0;
	if (!len)
		return;		/* blank lines are not errors */
	if (!parse_hex(&p, &start) || *p != ' ')
		goto bad;
	while (*p == ' ')
		p++;
	if (!parse_hex(&p, &size) || *p != ' ')
		goto bad;
	p++;
	if (!good_range(start, size) || !good_name(p))
		goto bad;
	jit_syms_add(js, start, size, f->prev_read_ns, f->now_ns, p, 0, NULL, 0);
	return;
bad:
	counter_inc(&counter_jitmap_parse_errors);
}

/* Read what was appended to perf map @fd (@size bytes now). Returns entries added. */
static int read_map(struct jit_syms *js, struct jit_file *f, int fd, uint64_t size,
		    char *buf)
{
	uint64_t read = 0;
	uint32_t before = js->n;

	while (f->off < size && read < JIT_READ_MAX) {
		size_t want = size - f->off < BUF_SIZE - 1 ? size - f->off : BUF_SIZE - 1;
		ssize_t n = pread(fd, buf, want, (off_t)f->off);
		char *p = buf, *end;
		size_t used;

		if (n <= 0)
			break;
		end = buf + n;
		pthread_mutex_lock(&js->lock);
		while (p < end) {
			char *nl = memchr(p, '\n', (size_t)(end - p));

			if (!nl)
				break;
			*nl = 0;
			if (f->skipping)
				f->skipping = false;	/* the end of a line too long */
			else if (nl - p + 1 > JIT_LINE_MAX)
				counter_inc(&counter_jitmap_parse_errors);
			else
				map_line(js, f, p);
			p = nl + 1;
		}
		jit_syms_index(js);
		pthread_mutex_unlock(&js->lock);
		used = (size_t)(p - buf);
		if (!used && (size_t)n == want && want == BUF_SIZE - 1) {
			/* no newline in a whole buffer: a line too long */
			if (!f->skipping)
				counter_inc(&counter_jitmap_parse_errors);
			f->skipping = true;
			used = (size_t)n;
		}
		if (!used)
			break;	/* a line still being written */
		f->off += used;
		read += used;
	}
	f->behind = f->off < size && read >= JIT_READ_MAX;	/* the read's cap */
	return (int)(js->n - before);
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void dump_error(struct jit_file *f, bool fatal)
{
	counter_inc(&counter_jitdump_parse_errors);
	if (fatal)
		f->dead = true;
}

static void pending_free(struct jit_pending_debug *d)
{
	free(d->lines);
	free(d->files);
	memset(d, 0, sizeof(*d));
}

/*
 * A DEBUG_INFO body (@len bytes): code_addr, nr_entry, then entries of
 * { addr u64, line u32, discrim u32, name[] } ("\xff\0": the previous
 * entry's file). Kept until its LOAD.
 */
static void dump_debug(struct jit_file *f, const unsigned char *b, size_t len)
{
	struct jit_pending_debug d = { 0 };
	uint64_t nr;
	size_t off = 16, names = 0;
	char *prev = NULL;

	if (len < 16)
		goto bad;
	d.code_addr = rd64(b);
	nr = rd64(b + 8);
	if (nr > JIT_DEBUG_LINES_MAX || nr > (len - 16) / 17)
		goto bad;
	d.lines = calloc(nr ? nr : 1, sizeof(*d.lines));
	d.files = malloc(len);	/* names are copied here: at most the body */
	if (!d.lines || !d.files)
		goto drop;
	for (uint64_t i = 0; i < nr; i++) {
		const char *name;
		size_t nlen;

		if (len - off < 17)
			goto bad;
		d.lines[i].addr = rd64(b + off);
		d.lines[i].line = rd32(b + off + 8);
		name = (const char *)b + off + 16;
		nlen = strnlen(name, len - off - 16);
		if (nlen == len - off - 16)
			goto bad;	/* no NUL before the end */
		off += 16 + nlen + 1;
		if (nlen == 1 && (unsigned char)name[0] == 0xff) {
			if (!prev)
				goto bad;
			d.lines[i].file = prev;
			continue;
		}
		memcpy(d.files + names, name, nlen + 1);
		prev = d.files + names;
		names += nlen + 1;
		d.lines[i].file = good_name(prev) ? prev : NULL;
	}
	d.n = (uint32_t)nr;
	if (f->npending == JIT_PENDING_DEBUG) {	/* the oldest never got its LOAD */
		pending_free(&f->pending[0]);
		memmove(f->pending, f->pending + 1,
			(JIT_PENDING_DEBUG - 1) * sizeof(f->pending[0]));
		f->npending--;
	}
	f->pending[f->npending++] = d;
	return;
bad:
	dump_error(f, false);
drop:
	pending_free(&d);
}

static int by_addr(const void *a, const void *b)
{
	const struct jit_line *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * When an entry of @f valid from @from surely holds: a timed record at
 * its timestamp; an untimed one (arch timestamps, not converted) was
 * written between the last read and this one.
 */
static uint64_t sure_of(const struct jit_file *f, uint64_t from)
{
	return f->arch_ts ? f->now_ns : from;
}

/* A LOAD body: pid, tid, vma, code_addr, code_size, code_index, name. Lock held. */
static void dump_load(struct jit_syms *js, struct jit_file *f, const unsigned char *b,
		      size_t len, uint64_t from)
{
	struct jit_pending_debug d = { 0 };
	uint64_t addr, size, index;
	char name[JIT_NAME_MAX + 1];
	size_t nlen;
	bool cut;

	if (len < 41) {
		dump_error(f, false);
		return;
	}
	addr = rd64(b + 16);
	size = rd64(b + 24);
	index = rd64(b + 32);
	nlen = strnlen((const char *)b + 40, len - 40);
	cut = nlen > JIT_NAME_MAX;
	if (cut)
		nlen = JIT_NAME_MAX;	/* the read stops past JIT_NAME_MAX */
	memcpy(name, b + 40, nlen);
	name[nlen] = 0;
	if (cut) {
		/* not inside a UTF-8 sequence: back to the start of the last one */
		while (nlen && ((unsigned char)name[nlen - 1] & 0xc0) == 0x80)
			name[--nlen] = 0;
		if (nlen && (unsigned char)name[nlen - 1] >= 0xc0)
			name[--nlen] = 0;
	}
	if (!good_range(addr, size) || !good_name(name)) {
		dump_error(f, false);
		return;
	}
	for (uint32_t i = 0; i < f->npending; i++) {
		if (f->pending[i].code_addr != addr)
			continue;
		d = f->pending[i];
		memmove(f->pending + i, f->pending + i + 1,
			(f->npending - i - 1) * sizeof(f->pending[0]));
		f->npending--;
		break;
	}
	if (d.n)
		qsort(d.lines, d.n, sizeof(*d.lines), by_addr);
	jit_syms_add(js, addr, size, from, sure_of(f, from), name, index, d.lines, d.n);
	pending_free(&d);
}

/* A MOVE body: pid, tid, vma, old_code_addr, new_code_addr, code_size, code_index. Lock held. */
static void dump_move(struct jit_syms *js, struct jit_file *f, const unsigned char *b,
		      size_t len, uint64_t from)
{
	uint64_t old, new, size, index;
	const struct jit_entry *src;
	struct jit_line *lines = NULL;
	const char *name;
	uint32_t n;

	if (len < 48) {
		dump_error(f, false);
		return;
	}
	old = rd64(b + 16);
	new = rd64(b + 24);
	size = rd64(b + 32);
	index = rd64(b + 40);
	if (!good_range(old, size) || !good_range(new, size)) {
		dump_error(f, false);
		return;
	}
	src = jit_syms_find_load(js, old, index);
	/* the old place holds nothing from now on, known or not */
	jit_syms_add(js, old, size, from, sure_of(f, from), NULL, index, NULL, 0);
	if (!src)
		return;		/* moved code never seen loaded: stays unnamed */
	src = jit_syms_find_load(js, old, index);	/* the array may have moved */
	name = src->name;	/* the arena's: stays put */
	n = src->nlines;
	if (n) {
		lines = malloc(n * sizeof(*lines));
		if (!lines)
			return;
		for (uint32_t i = 0; i < n; i++) {
			lines[i] = src->lines[i];
			lines[i].addr = src->lines[i].addr - old + new;
		}
	}
	jit_syms_add(js, new, size, from, sure_of(f, from), name, index, lines,
		     lines ? n : 0);
	free(lines);
}

/* The jitdump header: magic, version, total_size, elf_mach, pad, pid, timestamp, flags. */
static int dump_header(struct jit_syms *js, struct jit_file *f, int fd, uint64_t size)
{
	unsigned char h[JITDUMP_HEADER];
	uint32_t total;

	if (size < JITDUMP_HEADER || pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -EAGAIN;		/* being written */
	total = rd32(h + 8);
	if (rd32(h) != JITDUMP_MAGIC || rd32(h + 4) < 1 || total < JITDUMP_HEADER ||
	    total > 4096 || (pid_t)rd32(h + 20) != js->nspid) {
		dump_error(f, true);	/* another byte order, not a jitdump, not its own */
		return -EINVAL;
	}
	f->arch_ts = rd64(h + 32) & JITDUMP_ARCH_TS;
	f->off = total;
	f->header_done = true;
	return 0;
}

/* Read the records appended to jitdump @fd (@size bytes now). Returns entries added. */
static int read_dump(struct jit_syms *js, struct jit_file *f, int fd, uint64_t size,
		     unsigned char *buf)
{
	uint64_t start = f->off;
	uint32_t before = js->n, records = 0;

	if (!f->header_done && dump_header(js, f, fd, size))
		return 0;
	while (!f->dead && f->off + REC_HEADER <= size && f->off - start < JIT_READ_MAX &&
	       records++ < RECORDS_PER_REFRESH) {
		unsigned char h[REC_HEADER];
		uint32_t id, total;
		uint64_t ts, from;
		size_t body, want;

		if (pread(fd, h, sizeof(h), (off_t)f->off) != (ssize_t)sizeof(h))
			break;
		id = rd32(h);
		total = rd32(h + 4);
		ts = rd64(h + 8);
		if (total < REC_HEADER || total > JIT_RECORD_MAX) {
			dump_error(f, true);	/* no way to find the next record */
			break;
		}
		if (f->off + total > size)
			break;		/* the rest is being written */
		body = total - REC_HEADER;
		from = f->arch_ts ? f->prev_read_ns : ts;
		switch (id) {
		case JIT_CODE_LOAD:
		case JIT_CODE_MOVE:
		case JIT_CODE_DEBUG_INFO:
			want = id == JIT_CODE_LOAD ? 40 + JIT_NAME_MAX + 1 :
			       id == JIT_CODE_MOVE ? 48 : DEBUG_BODY_MAX;
			if (body < want)
				want = body;
			if (id == JIT_CODE_DEBUG_INFO && body > DEBUG_BODY_MAX) {
				dump_error(f, false);
				break;
			}
			if (pread(fd, buf, want, (off_t)(f->off + REC_HEADER)) != (ssize_t)want)
				goto out;
			if (id == JIT_CODE_DEBUG_INFO) {
				dump_debug(f, buf, want);
				break;
			}
			pthread_mutex_lock(&js->lock);
			if (id == JIT_CODE_LOAD)
				dump_load(js, f, buf, want, from);
			else
				dump_move(js, f, buf, want, from);
			pthread_mutex_unlock(&js->lock);
			break;
		case JIT_CODE_CLOSE:
			f->dead = true;		/* the JIT is done with it */
			break;
		default:	/* UNWINDING_INFO, and kinds newer than the spec: skipped */
			break;
		}
		f->off += total;
	}
out:
	/* stopped by the read's caps, not by a record being written */
	f->behind = !f->dead && f->off + REC_HEADER <= size &&
		    (f->off - start >= JIT_READ_MAX || records > RECORDS_PER_REFRESH);
	pthread_mutex_lock(&js->lock);
	jit_syms_index(js);
	pthread_mutex_unlock(&js->lock);
	return (int)(js->n - before);
}

/* The slot of @kind and @path, a free one, or NULL (all in use). */
static struct jit_file *file_slot(struct jit_syms *js, enum jit_file_kind kind,
				  const char *path)
{
	struct jit_file *free_slot = NULL;

	for (int i = 0; i < JIT_FILES; i++) {
		struct jit_file *f = &js->files[i];

		if (f->kind == kind && (kind == JIT_FILE_MAP || !strcmp(f->path, path)))
			return f;
		if (f->kind == JIT_FILE_NONE && !free_slot)
			free_slot = f;
	}
	if (free_slot) {
		free_slot->path = strdup(path);
		if (!free_slot->path)
			return NULL;
		free_slot->kind = kind;
	}
	return free_slot;
}

/* Read file slot @f through descriptor @fd (its stat @st). Returns entries added. */
static int read_file(struct jit_syms *js, struct jit_file *f, int fd,
		     const struct stat *st, void *buf, uint64_t now)
{
	int added;

	if (f->dev != st->st_dev || f->ino != st->st_ino ||
	    (uint64_t)st->st_size < f->off) {
		/* another file, or truncated: read from its start; what it says
		 * counts from the last read on (the old names stay for before) */
		for (uint32_t k = 0; k < f->npending; k++)
			pending_free(&f->pending[k]);
		f->npending = 0;
		f->dev = st->st_dev;
		f->ino = st->st_ino;
		f->off = 0;
		f->skipping = f->header_done = f->arch_ts = false;
		if (f->seen)
			f->dead = false;
	}
	f->seen = true;
	if (f->dead)
		return 0;
	/* after the stat that sized this read: what it reads was written.
	 * Past the budget the file is still parsed (its entries dropped) to
	 * learn where code not kept lies (jit_syms_add()'s hull). */
	f->now_ns = clock_mono_ns();
	added = f->kind == JIT_FILE_MAP ?
		read_map(js, f, fd, (uint64_t)st->st_size, buf) :
		read_dump(js, f, fd, (uint64_t)st->st_size, buf);
	/* stopped by the read's cap (f->behind): the rest was written before
	 * this read, after the last read that reached the end, which stays
	 * its entries' from */
	if (!f->behind)
		f->prev_read_ns = now;
	__atomic_store_n(&js->found, true, __ATOMIC_RELEASE);
	return added;
}

/* Whether @path's file name is "jit-<nspid>.dump". */
static bool dump_name(const struct jit_syms *js, const char *path)
{
	const char *base = strrchr(path, '/');
	char want[48];

	snprintf(want, sizeof(want), "jit-%d.dump", js->nspid);
	return base && !strcmp(base + 1, want);
}

int jit_syms_refresh(struct jit_syms *js, const char *const *dump_paths,
		     const uint64_t *starts, const uint64_t *ends, size_t n,
		     uint64_t now)
{
	char path[128];
	void *buf;
	int added = 0, ret, fd;
	bool busy = false;
	struct stat st;

	if (!__atomic_compare_exchange_n(&js->refreshing, &busy, true, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;	/* another refresh runs: it reads the same files */
	if (!js->nspid && (ret = read_status(js)) < 0)
		goto out;
	buf = malloc(READ_BUF_SIZE);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", js->nspid);
	fd = open_in_root(js->pid, path);
	if (fd == -ELOOP || fd == -EXDEV)	/* a symlink on the way */
		counter_inc(&counter_jit_files_rejected);
	if (fd >= 0)
		fd = open_checked(js, fd, &st);
	if (fd >= 0) {
		struct jit_file *f = file_slot(js, JIT_FILE_MAP, path);

		if (f)
			added += read_file(js, f, fd, &st, buf, now);
		close(fd);
	}
	for (size_t i = 0; i < n; i++) {
		struct jit_file *f;
		char mf[96];
		int pfd;

		if (!dump_name(js, dump_paths[i]))
			continue;
		/* the very file it mapped (its path may be another's by now) */
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", js->pid,
			 (unsigned long long)starts[i], (unsigned long long)ends[i]);
		pfd = open(mf, O_PATH | O_CLOEXEC);
		if (pfd < 0)
			pfd = open_in_root(js->pid, dump_paths[i]);
		if (pfd == -ELOOP || pfd == -EXDEV)
			counter_inc(&counter_jit_files_rejected);
		if (pfd < 0)
			continue;
		fd = open_checked(js, pfd, &st);
		if (fd < 0)
			continue;
		f = file_slot(js, JIT_FILE_DUMP, dump_paths[i]);
		if (f)
			added += read_file(js, f, fd, &st, buf, now);
		close(fd);
	}
	free(buf);
	pthread_mutex_lock(&js->lock);
	js->behind_from = UINT64_MAX;
	for (size_t i = 0; i < JIT_FILES; i++)
		if (js->files[i].kind && js->files[i].behind &&
		    js->files[i].prev_read_ns < js->behind_from)
			js->behind_from = js->files[i].prev_read_ns;
	pthread_mutex_unlock(&js->lock);
	__atomic_store_n(&js->read_ns, now, __ATOMIC_RELEASE);
	ret = added;
out:
	__atomic_store_n(&js->refreshing, false, __ATOMIC_RELEASE);
	return ret;
}
