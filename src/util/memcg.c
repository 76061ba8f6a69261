// SPDX-License-Identifier: GPL-2.0
/*
 * memcg.c - the room left in profd's own memory cgroup (see memcg.h).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/memcg.h"

/* A limit this large is no limit (v1 writes PAGE_COUNTER_MAX pages). */
#define MEMCG_NO_LIMIT	(1ULL << 62)
/* Levels looked at, the cgroup first. */
#define MEMCG_MAX_LEVELS 64

/* The cgroup's path in the hierarchy that holds the memory controller. */
struct memcg_where {
	bool v1;		/* a v1 hierarchy with "memory" */
	char path[PATH_MAX];
};

static bool has_token(const char *list, const char *tok, char sep)
{
	size_t n = strlen(tok);

	for (const char *p = list; p && *p; ) {
		const char *end = strchr(p, sep);
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, tok, n))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* The memory cgroup of a /proc/PID/cgroup text: v1's memory line if any, else v2's. */
static bool find_cgroup(const char *file, struct memcg_where *w)
{
	FILE *f = fopen(file, "re");
	char line[PATH_MAX + 128];
	bool v2 = false, v1 = false;

	if (!f)
		return false;
	while (!v1 && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		char *path;

		if (!c2)
			continue;
		*c2 = '\0';
		path = c2 + 1;
		path[strcspn(path, "\n")] = '\0';
		if (has_token(c1 + 1, "memory", ',')) {
			v1 = true;
		} else if (!strncmp(line, "0:", 2) && !c1[1] && !v2) {
			v2 = true;
		} else {
			continue;
		}
		if (strlen(path) >= sizeof(w->path)) {
			v1 = v2 = false;
			break;
		}
		strcpy(w->path, path);
		w->v1 = v1;
	}
	fclose(f);
	return v1 || v2;
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/*
 * The directory of @w's cgroup: the first mount of its hierarchy whose
 * root is a prefix of the path. *@top: where the mount's own level ends
 * in @dir (the walk up stops there).
 */
static bool find_dir(const char *file, const struct memcg_where *w,
		     char *dir, size_t len, size_t *top)
{
	FILE *f = fopen(file, "re");
	char line[3 * PATH_MAX];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *tok[64], *save = NULL, *root, *mnt, *fstype = NULL, *opts = NULL;
		size_t rlen;
		int n = 0;

		for (char *t = strtok_r(line, " \n", &save); t && n < 64;
		     t = strtok_r(NULL, " \n", &save))
			tok[n++] = t;
		if (n < 5)
			continue;
		root = tok[3];
		mnt = tok[4];
		for (int i = 6; i < n; i++)
			if (!strcmp(tok[i], "-")) {
				fstype = i + 1 < n ? tok[i + 1] : NULL;
				opts = i + 3 < n ? tok[i + 3] : NULL;
				break;
			}
		if (!fstype)
			continue;
		if (w->v1 ? strcmp(fstype, "cgroup") || !opts ||
			    !has_token(opts, "memory", ',') :
			    strcmp(fstype, "cgroup2"))
			continue;
		unescape(root);
		unescape(mnt);
		rlen = strcmp(root, "/") ? strlen(root) : 0;
		if (strncmp(w->path, root, rlen) ||
		    (w->path[rlen] && w->path[rlen] != '/'))
			continue;
		if ((size_t)snprintf(dir, len, "%s%s", mnt, w->path + rlen) >= len)
			continue;
		*top = strlen(mnt);
		found = true;
	}
	fclose(f);
	return found;
}

/* The number in @dir/@name (the first line); false if none. "max": UINT64_MAX. */
static bool read_u64(const char *dir, const char *name, uint64_t *v)
{
	char path[PATH_MAX + 64], buf[64];
	FILE *f;
	bool ok;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return false;
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return false;
	if (!strncmp(buf, "max", 3)) {
		*v = UINT64_MAX;
		return true;
	}
	return sscanf(buf, "%" SCNu64, v) == 1;
}

/* @key's value in @dir/memory.stat; 0 if none. */
static uint64_t stat_value(const char *dir, const char *key)
{
	char path[PATH_MAX + 64], line[256];
	size_t n = strlen(key);
	uint64_t v = 0;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/memory.stat", dir) >= sizeof(path))
		return 0;
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ') {
			sscanf(line + n + 1, "%" SCNu64, &v);
			break;
		}
	fclose(f);
	return v;
}

/* The room at the level @dir; UINT64_MAX where it has no limit. */
static uint64_t level_room(const char *dir, bool v1)
{
	uint64_t limit, usage, inactive;

	if (!read_u64(dir, v1 ? "memory.limit_in_bytes" : "memory.max", &limit) ||
	    limit >= MEMCG_NO_LIMIT)
		return UINT64_MAX;
	if (!read_u64(dir, v1 ? "memory.usage_in_bytes" : "memory.current", &usage))
		return UINT64_MAX;
	inactive = stat_value(dir, v1 ? "total_inactive_file" : "inactive_file");
	usage = inactive < usage ? usage - inactive : 0;
	return usage < limit ? limit - usage : 0;
}

uint64_t memcg_room_from(const char *cgroup_file, const char *mountinfo_file)
{
	struct memcg_where w;
	char dir[PATH_MAX];
	uint64_t room = UINT64_MAX;
	size_t top = 0;

	if (!find_cgroup(cgroup_file, &w) ||
	    !find_dir(mountinfo_file, &w, dir, sizeof(dir), &top))
		return UINT64_MAX;
	for (int level = 0; level < MEMCG_MAX_LEVELS; level++) {
		uint64_t r = level_room(dir, w.v1);
		char *slash;

		if (r < room)
			room = r;
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < top)
			break;
		*slash = '\0';
	}
	return room;
}

uint64_t memcg_room(void)
{
	return memcg_room_from("/proc/self/cgroup", "/proc/self/mountinfo");
}
