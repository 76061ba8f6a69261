// SPDX-License-Identifier: GPL-2.0
/*
 * debuginfod_cache.c - the size cap of the debuginfod cache on disk (see
 * debuginfod.h: dbgd_cache_trim(), dbgd_mkdirs()).
 *
 * Owns: walking libdebuginfod's cache directory and deleting its least
 * recently used files past the cap. libdebuginfod keeps one directory per
 * build ID with a file per artifact (debuginfo, executable, sources) and
 * a few control files at the top (cache_clean_interval_s, ...); its own
 * cleaning only goes by age (max_unused_age_s, a week), so the size is
 * profd's to bound. The layout is "deliberately undocumented", so the
 * walk assumes only this: every regular file one level down is an
 * artifact, and its access time says when it was last used (the client
 * sets it on a cache hit; dbgd_entry_open() sets it when profd reads one).
 * Empty files (the client's remembered misses) cost nothing and are left
 * to the client. Directories emptied are removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbol/debuginfod.h"

#define CACHE_FILES_MAX	65536	/* files looked at per trim */

struct cached_file {
	char *path;
	uint64_t bytes;		/* allocated on disk (st_blocks) */
	struct timespec atime;
	bool keep;		/* deleted last */
};

/* Older first; the kept file after every other. */
static int by_use(const void *pa, const void *pb)
{
	const struct cached_file *a = pa, *b = pb;

	if (a->keep != b->keep)
		return a->keep ? 1 : -1;
	if (a->atime.tv_sec != b->atime.tv_sec)
		return a->atime.tv_sec < b->atime.tv_sec ? -1 : 1;
	if (a->atime.tv_nsec != b->atime.tv_nsec)
		return a->atime.tv_nsec < b->atime.tv_nsec ? -1 : 1;
	return 0;
}

/* Append the regular non-empty files in @sub (a directory of @dir) to @v. */
static int scan_subdir(const char *dir, const char *sub, const char *keep,
		       struct cached_file **v, size_t *n, size_t *cap)
{
	struct dirent *de;
	struct stat st;
	char *path;
	DIR *dh;

	if (asprintf(&path, "%s/%s", dir, sub) < 0)
		return -ENOMEM;
	dh = opendir(path);
	free(path);
	if (!dh)
		return 0;	/* removed meanwhile, or not a directory */
	while ((de = readdir(dh)) != NULL && *n < CACHE_FILES_MAX) {
		if (de->d_name[0] == '.' && (!de->d_name[1] ||
					     (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (fstatat(dirfd(dh), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || !st.st_size)
			continue;
		if (*n == *cap) {
			size_t ncap = *cap ? 2 * *cap : 64;
			struct cached_file *nv = realloc(*v, ncap * sizeof(*nv));

			if (!nv)
				break;
			*v = nv;
			*cap = ncap;
		}
		if (asprintf(&path, "%s/%s/%s", dir, sub, de->d_name) < 0)
			break;
		(*v)[*n] = (struct cached_file){
			.path = path,
			.bytes = (uint64_t)st.st_blocks * 512,
			.atime = st.st_atim,
			.keep = keep && !strcmp(path, keep),
		};
		(*n)++;
	}
	closedir(dh);
	return 0;
}

/* Remove the directory holding @path if that left it empty. */
static void remove_parent(const char *path)
{
	char *dir = strdup(path), *slash;

	if (!dir)
		return;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		rmdir(dir);	/* fails, as it should, unless empty */
	}
	free(dir);
}

/* dbgd_cache_trim - see debuginfod.h. */
int dbgd_cache_trim(const char *dir, uint64_t cap, const char *keep)
{
	struct cached_file *v = NULL;
	size_t n = 0, vcap = 0, i;
	uint64_t total = 0;
	struct dirent *de;
	int removed = 0;
	DIR *dh = opendir(dir);

	if (!dh)
		return -errno;
	while ((de = readdir(dh)) != NULL) {
		if (de->d_name[0] == '.' || de->d_type == DT_REG)
			continue;	/* dot entries, the control files */
		if (scan_subdir(dir, de->d_name, keep, &v, &n, &vcap))
			break;
	}
	closedir(dh);
	for (i = 0; i < n; i++)
		total += v[i].bytes;
	if (total > cap)
		qsort(v, n, sizeof(*v), by_use);
	for (i = 0; i < n && total > cap; i++) {
		if (unlink(v[i].path))
			continue;
		total -= v[i].bytes;
		removed++;
		remove_parent(v[i].path);
	}
	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	return removed;
}

/* dbgd_mkdirs - see debuginfod.h. */
int dbgd_mkdirs(const char *path)
{
	char *p = strdup(path), *s;
	struct stat st;
	int ret = 0;

	if (!p)
		return -ENOMEM;
	for (s = p + 1; ; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;

		*s = '\0';
		if (mkdir(p, 0700) && errno != EEXIST) {
			ret = -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	if (!ret && (stat(path, &st) || !S_ISDIR(st.st_mode)))
		ret = stat(path, &st) ? -errno : -ENOTDIR;
	free(p);
	return ret;
}
