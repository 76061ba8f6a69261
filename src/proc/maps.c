// SPDX-License-Identifier: GPL-2.0
/*
 * maps.c - /proc/PID/maps parsing (see maps.h).
 *
 * Owns: the line parser for the proc(5) "maps" format, reading the whole
 * file in one go (it can be megabytes for big processes), making its
 * paths the process's own (relative to its root), and the binary search
 * by address.
 *
 * A line is
 *   start-end perms offset major:minor inode<spaces>pathname
 * with every number in hex except the inode (decimal). The kernel pads
 * after the inode column, so the pathname is whatever follows that
 * padding up to the newline; it may itself contain spaces. Anything that
 * does not fit is a malformed line: skipped and counted, never fatal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc/maps.h"
#include "util/hex.h"

#define DELETED_SUFFIX " (deleted)"

struct cursor {
	const char *p;
	const char *end;
};


/* Parse at least one hex digit (at most 16) into *v. */
static bool parse_hex(struct cursor *c, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0, d;

	while (c->p < c->end && (d = hex_digit(*c->p)) >= 0) {
		if (++n > 16)
			return false;
		x = (x << 4) | (uint64_t)d;
		c->p++;
	}
	*v = x;
	return n > 0;
}

static bool parse_dec(struct cursor *c, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		uint64_t d = (uint64_t)(*c->p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
		n++;
		c->p++;
	}
	*v = x;
	return n > 0;
}

static bool expect(struct cursor *c, char ch)
{
	if (c->p >= c->end || *c->p != ch)
		return false;
	c->p++;
	return true;
}

/* One or more blanks. */
static bool skip_blanks(struct cursor *c)
{
	const char *start = c->p;

	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
	return c->p > start;
}

/* One permission character: @yes or '-'. */
static bool parse_perm(struct cursor *c, char yes, bool *flag)
{
	if (c->p >= c->end)
		return false;
	if (*c->p == yes)
		*flag = true;
	else if (*c->p == '-')
		*flag = false;
	else
		return false;
	c->p++;
	return true;
}

static bool is_special_name(const char *s, size_t len)
{
	return len >= 2 && s[0] == '[' && s[len - 1] == ']';
}

/*
 * Parse the line [@line, @end) (no newline) into @m. Returns 0, -EINVAL
 * when malformed, -ENOMEM.
 */
static int parse_line(const char *line, const char *end,
		      struct proc_mapping *m)
{
	struct cursor c = { line, end };
	uint64_t major, minor;
	size_t len = 0;

	memset(m, 0, sizeof(*m));
	if (!parse_hex(&c, &m->start) || !expect(&c, '-') ||
	    !parse_hex(&c, &m->end) || m->start >= m->end)
		return -EINVAL;
	if (!skip_blanks(&c))
		return -EINVAL;
	if (!parse_perm(&c, 'r', &m->readable) ||
	    !parse_perm(&c, 'w', &m->writable) ||
	    !parse_perm(&c, 'x', &m->executable))
		return -EINVAL;
	if (c.p >= c.end || (*c.p != 's' && *c.p != 'p'))
		return -EINVAL;
	m->shared = *c.p++ == 's';
	if (!skip_blanks(&c) || !parse_hex(&c, &m->offset) ||
	    !skip_blanks(&c))
		return -EINVAL;
	if (!parse_hex(&c, &major) || !expect(&c, ':') ||
	    !parse_hex(&c, &minor) || major > UINT32_MAX ||
	    minor > UINT32_MAX)
		return -EINVAL;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	if (!skip_blanks(&c) || !parse_dec(&c, &m->inode))
		return -EINVAL;
	/* The inode must end the column: blanks or end of line follow. */
	if (c.p < c.end && !skip_blanks(&c))
		return -EINVAL;

	/*
	 * Pathname: the rest of the line, verbatim (a name may end in a
	 * blank; the kernel never pads after it).
	 */
	len = (size_t)(end - c.p);
	if (len >= sizeof(DELETED_SUFFIX) - 1 &&
	    !memcmp(end - (sizeof(DELETED_SUFFIX) - 1), DELETED_SUFFIX,
		    sizeof(DELETED_SUFFIX) - 1)) {
		m->deleted = true;
		len -= sizeof(DELETED_SUFFIX) - 1;
	}
	m->special = is_special_name(c.p, len);
	m->path = malloc(len + 1);
	if (!m->path)
		return -ENOMEM;
	memcpy(m->path, c.p, len);
	m->path[len] = '\0';
	return 0;
}

static int cmp_mapping(const void *a, const void *b)
{
	const struct proc_mapping *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/*
 * proc_maps_parse - see maps.h. Lines the kernel would never write (bad
 * numbers, bad permissions, start >= end, ranges overlapping an earlier
 * line) are skipped and counted in *@bad_lines. Returns 0 or -ENOMEM
 * (then @out is left empty).
 */
int proc_maps_parse(const char *text, size_t len, struct proc_maps *out,
		    size_t *bad_lines)
{
	const char *p = text, *end = text + len;
	size_t cap = 0, bad = 0, n = 0, i, kept;
	struct proc_mapping *v = NULL;
	bool sorted = true;

	out->v = NULL;
	out->n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		int err;

		if (eol == p) {		/* empty line: not an error */
			p = eol + 1;
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct proc_mapping *nv;

			nv = realloc(v, ncap * sizeof(*v));
			if (!nv)
				goto nomem;
			v = nv;
			cap = ncap;
		}
		err = parse_line(p, eol, &v[n]);
		if (err == -ENOMEM)
			goto nomem;
		if (err) {
			bad++;
		} else {
			if (n && v[n].start < v[n - 1].start)
				sorted = false;
			n++;
		}
		p = nl ? nl + 1 : end;
	}

	if (!sorted)
		qsort(v, n, sizeof(*v), cmp_mapping);
	/* Keep the array non-overlapping: drop lines that overlap. */
	for (i = 0, kept = 0; i < n; i++) {
		if (kept && v[i].start < v[kept - 1].end) {
			free(v[i].path);
			bad++;
			continue;
		}
		v[kept++] = v[i];
	}
	out->v = v;
	out->n = kept;
	if (bad_lines)
		*bad_lines = bad;
	return 0;

nomem:
	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	return -ENOMEM;
}

/*
 * Read all of @fd into a malloc'd, NUL-terminated buffer (*@buf, *@len
 * bytes without the NUL). Returns 0 or -errno.
 */
static int read_all(int fd, char **buf, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *b = malloc(cap);

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (cap - n < 4096 + 1) {
			char *nb = realloc(b, cap * 2);

			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(b);
			return -errno;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/*
 * The kernel writes a mapping's path from the reader's root, or, for a
 * process in another mount namespace, from that namespace's root; a
 * process whose own root lies below that (it ran chroot, or its mount
 * namespace was made inside a chroot) sees the file at a shorter path,
 * the one /proc/PID/root/PATH finds. /proc/PID/root reads as that root's
 * path written the same way: strip it from the paths under it. Paths
 * outside the process's root stay as written.
 */
static void strip_root(pid_t pid, struct proc_maps *m)
{
	char link[64], root[PATH_MAX];
	ssize_t n;
	size_t i;

	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	n = readlink(link, root, sizeof(root) - 1);
	if (n <= 1 || root[0] != '/')
		return;		/* "/" (the usual case), or unreadable */
	for (i = 0; i < m->n; i++) {
		char *p = m->v[i].path;

		if (!strncmp(p, root, (size_t)n) && p[n] == '/')
			memmove(p, p + n, strlen(p + n) + 1);
	}
}

/*
 * proc_maps_read - see maps.h. A process that exits while being read
 * (ESRCH) reads as gone: -ENOENT.
 */
int proc_maps_read(pid_t pid, struct proc_maps *out)
{
	struct timespec ts;
	char path[64], *buf = NULL;
	size_t len = 0;
	int fd, err;

	out->v = NULL;
	out->n = 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	out->read_ns = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ESRCH ? -ENOENT : -errno;
	err = read_all(fd, &buf, &len);
	close(fd);
	if (err)
		return err == -ESRCH ? -ENOENT : err;
	err = proc_maps_parse(buf, len, out, NULL);
	out->read_ns = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	free(buf);
	if (!err)
		strip_root(pid, out);
	return err;
}

/* proc_maps_free - see maps.h. Leaves @m empty; safe to call twice. */
void proc_maps_free(struct proc_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* proc_maps_find - see maps.h. The result points into @m. */
const struct proc_mapping *proc_maps_find(const struct proc_maps *m,
					  uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	/* First mapping with start > addr; the candidate is the one before. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= m->v[lo - 1].end)
		return NULL;
	return &m->v[lo - 1];
}
