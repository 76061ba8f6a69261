// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup.c - a process's cgroup path and its container id (see cgroup.h).
 *
 * Owns: the parsing of /proc/PID/cgroup and the container-id rules. Both
 * work on (pointer, length) slices of the text, so nothing is copied
 * until the chosen path is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/cgroup.h"

#define ID_HEX		64
#define CGROUP_FILE_MAX	(64u << 10)	/* a few lines of at most PATH_MAX */

/* Runtimes' "<prefix><id>[.scope]" cgroup names. */
static const char *const scope_prefixes[] = {
	"docker-", "cri-containerd-", "crio-", "libpod-", "nerdctl-",
};

/* containerd's cgroupfs layout under systemd: "<slice>:<runtime>:<id>". */
static const char *const colon_runtimes[] = {
	"cri-containerd", "crio", "docker",
};

static bool is_id(const char *s, size_t n)
{
	if (n != ID_HEX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool slice_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && !memcmp(s, word, n);
}

/* The container id in the path component @c of @n bytes, or NULL. */
static const char *component_id(const char *c, size_t n)
{
	const char *colon, *prev;

	if (n > 6 && !memcmp(c + n - 6, ".scope", 6))
		n -= 6;
	if (is_id(c, n))
		return c;
	for (size_t i = 0; i < sizeof(scope_prefixes) / sizeof(*scope_prefixes); i++) {
		size_t pl = strlen(scope_prefixes[i]);

		/* "crio-conmon-<id>": the rest is not an id, so no match */
		if (n > pl && !memcmp(c, scope_prefixes[i], pl) && is_id(c + pl, n - pl))
			return c + pl;
	}
	colon = memrchr(c, ':', n);
	if (!colon || !is_id(colon + 1, c + n - colon - 1))
		return NULL;
	prev = memrchr(c, ':', colon - c);
	if (!prev)
		return NULL;
	for (size_t i = 0; i < sizeof(colon_runtimes) / sizeof(*colon_runtimes); i++)
		if (slice_is(prev + 1, colon - prev - 1, colon_runtimes[i]))
			return colon + 1;
	return NULL;
}

/* The container id in the path @p of @n bytes, leaf first, or NULL. */
static const char *path_id(const char *p, size_t n)
{
	const char *end = p + n, *start, *id;

	while (end > p) {
		start = end;
		while (start > p && start[-1] != '/')
			start--;
		if (start < end && (id = component_id(start, end - start)))
			return id;
		if (start == p)
			break;
		end = start - 1;
	}
	return NULL;
}

bool cgroup_container_id(const char *cgroup_path, char *id, size_t len)
{
	const char *found = cgroup_path ? path_id(cgroup_path, strlen(cgroup_path)) : NULL;

	if (len)
		id[0] = '\0';
	if (!found || len < CGROUP_CONTAINER_ID_LEN)
		return false;
	memcpy(id, found, ID_HEX);
	id[ID_HEX] = '\0';
	return true;
}

struct cg_line {
	const char *p;		/* NULL: none */
	size_t n;
	int rank;		/* 0: cgroup v2, 1: name=systemd, 2: other v1 */
};

int cgroup_pick(const char *text, char *path, size_t len)
{
	static const char deleted[] = " (deleted)";
	struct cg_line with_id = { 0 }, first[3] = { { 0 } }, root = { 0 };
	const struct cg_line *pick;
	const char *ls = text, *le, *c1, *c2;

	if (len)
		path[0] = '\0';
	for (; *ls; ls = *le ? le + 1 : le) {
		struct cg_line l;

		le = ls + strcspn(ls, "\n");
		c1 = memchr(ls, ':', le - ls);
		c2 = c1 ? memchr(c1 + 1, ':', le - c1 - 1) : NULL;
		if (!c2 || c2 + 1 >= le || c2[1] != '/')
			continue;
		l.p = c2 + 1;
		l.n = le - l.p;
		if (l.n > sizeof(deleted) - 1 &&
		    !memcmp(le - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1))
			l.n -= sizeof(deleted) - 1;
		if (slice_is(ls, c1 - ls, "0") && c2 == c1 + 1)
			l.rank = 0;
		else if (slice_is(c1 + 1, c2 - c1 - 1, "name=systemd"))
			l.rank = 1;
		else
			l.rank = 2;
		if (path_id(l.p, l.n) && (!with_id.p || l.rank < with_id.rank))
			with_id = l;
		if (l.n == 1) {
			if (!root.p)
				root = l;
		} else if (!first[l.rank].p) {
			first[l.rank] = l;
		}
	}
	pick = with_id.p ? &with_id : first[0].p ? &first[0] : first[1].p ? &first[1] :
	       first[2].p ? &first[2] : &root;
	if (!pick->p)
		return -ENODATA;
	if (pick->n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(path, pick->p, pick->n);
	path[pick->n] = '\0';
	return 0;
}

int proc_read_cgroup(pid_t pid, char *path, size_t len)
{
	char file[64], *buf;
	size_t n = 0;
	ssize_t r = 0;
	int fd, ret;

	if (len)
		path[0] = '\0';
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(CGROUP_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (n < CGROUP_FILE_MAX) {
		r = read(fd, buf + n, CGROUP_FILE_MAX - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += r;
	}
	ret = r < 0 && !n ? -errno : 0;
	close(fd);
	buf[n] = '\0';
	if (!ret)
		ret = cgroup_pick(buf, path, len);
	free(buf);
	return ret;
}
