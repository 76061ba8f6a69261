// SPDX-License-Identifier: GPL-2.0
/*
 * retention.c - output-directory retention (see retention.h).
 *
 * Owns: recognising profd's own profile files by name, ordering them
 * oldest first, deleting those beyond the age and size limits of
 * --output-retention, and parsing that option's value. flamegraph.html,
 * rewritten every interval, is never deleted but its size counts toward
 * the size limit, so the directory's profd files stay within it.
 *
 * How it fits: the agent calls retention_apply() after each interval's
 * files were written (the pprof sink, src/output/pprof_sink.c); options.c calls
 * retention_parse(). A file profd is still writing is a NAME.tmpXXXXXX
 * (src/util/atomic_file.c) and never matches the profile name pattern,
 * so a sweep cannot race a writer. Everything is done relative to one
 * directory descriptor (fstatat/unlinkat) and symlinks are never
 * followed, so a name planted in the directory cannot make profd delete
 * a file elsewhere.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/retention.h"
#include "output/sink.h"

/* The flame graph profd rewrites in the directory every interval. */
#define FLAMEGRAPH_NAME	"flamegraph.html"

/* One of profd's files in the directory. */
struct ret_file {
	int64_t mtime_s;
	long mtime_ns;
	uint64_t size;		/* st_size, bytes */
	char name[48];		/* is_profile_name() names: KIND + at most 33 bytes */
};

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Is @p "YYYYMMDDTHHMMSSZ[-N].pb.gz", the rest of a profile file's name? */
static bool is_stamp_suffix(const char *p)
{
	size_t n;

	/* 20261130T103000Z */
	if (!all_digits(p, 8) || p[8] != 'T' || !all_digits(p + 9, 6) || p[15] != 'Z')
		return false;
	p += 16;
	if (*p == '-') {
		p++;
		for (n = 0; p[n] >= '0' && p[n] <= '9'; n++)
			;
		if (!n || n > 9)
			return false;
		p += n;
	}
	return !strcmp(p, ".pb.gz");
}

/*
 * Is @name one of the pprof sink's names (pprof_sink.c):
 * KIND-YYYYMMDDTHHMMSSZ[-N].pb.gz with KIND a profile kind (sink.h:
 * cpu, gpu, gpu-pc, ...)?
 */
static bool is_profile_name(const char *name)
{
	for (int k = 0; k < PROFILE_KIND_MAX; k++) {
		const char *kind = profile_kind_name(k);
		size_t len = strlen(kind);

		if (!strncmp(name, kind, len) && name[len] == '-' &&
		    is_stamp_suffix(name + len + 1))
			return true;
	}
	return false;
}

/* Oldest first: modification time, then name. */
static int cmp_age(const void *a, const void *b)
{
	const struct ret_file *x = a, *y = b;

	if (x->mtime_s != y->mtime_s)
		return x->mtime_s < y->mtime_s ? -1 : 1;
	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * The profile files of directory @dfd into *@files (malloc'ed, *@n of
 * them). Returns 0 or a negative errno (the directory cannot be read,
 * out of memory).
 */
static int list_profiles(int dfd, struct ret_file **files, size_t *n)
{
	struct ret_file *v = NULL, *nv;
	size_t cnt = 0, cap = 0, len;
	struct dirent *de;
	struct stat st;
	int fd2, err = 0;
	DIR *d;

	fd2 = dup(dfd);		/* closedir() closes its descriptor */
	if (fd2 < 0)
		return -errno;
	d = fdopendir(fd2);
	if (!d) {
		err = -errno;
		close(fd2);
		return err;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			err = errno ? -errno : 0;
			break;
		}
		len = strlen(de->d_name);
		if (len >= sizeof(v->name) || !is_profile_name(de->d_name))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;	/* gone meanwhile, or not a plain file */
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[cnt].mtime_s = st.st_mtim.tv_sec;
		v[cnt].mtime_ns = st.st_mtim.tv_nsec;
		v[cnt].size = st.st_size;
		memcpy(v[cnt].name, de->d_name, len + 1);
		cnt++;
	}
	closedir(d);
	if (err) {
		free(v);
		return err;
	}
	*files = v;
	*n = cnt;
	return 0;
}

/* Size of @dfd's flame graph, a regular file (not followed): 0 if none. */
static uint64_t flamegraph_size(int dfd)
{
	struct stat st;

	if (fstatat(dfd, FLAMEGRAPH_NAME, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISREG(st.st_mode))
		return 0;
	return st.st_size;
}

/* Delete @f; true when it is gone (deleted by us or by someone else). */
static bool remove_file(int dfd, const struct ret_file *f, struct retention_result *r)
{
	if (!unlinkat(dfd, f->name, 0)) {
		r->files_removed++;
		r->bytes_removed += f->size;
		return true;
	}
	return errno == ENOENT;
}

int retention_apply(const char *dir, uint64_t max_age_s, uint64_t max_bytes,
		    uint64_t now_s, struct retention_result *out)
{
	struct retention_result r = { 0 };
	struct ret_file *files = NULL;
	bool *gone = NULL;
	uint64_t total = 0, left;
	size_t n = 0, i;
	int dfd, err;

	if (!dir || !*dir)
		return -EINVAL;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	err = list_profiles(dfd, &files, &n);
	if (err)
		goto out;
	gone = calloc(n ? n : 1, sizeof(*gone));
	if (!gone) {
		err = -ENOMEM;
		goto out;
	}
	if (n > 1)
		qsort(files, n, sizeof(*files), cmp_age);

	/* Age: everything modified before now - max_age. */
	if (max_age_s && now_s > max_age_s) {
		uint64_t cut = now_s - max_age_s;
		int64_t cutoff = cut > INT64_MAX ? INT64_MAX : (int64_t)cut;

		for (i = 0; i < n && files[i].mtime_s < cutoff; i++)
			gone[i] = remove_file(dfd, &files[i], &r);
	}

	/* Size: oldest first until the rest and the flame graph fit; never
	 * the newest file. */
	r.flamegraph_bytes = flamegraph_size(dfd);
	total = r.flamegraph_bytes;
	for (i = 0; i < n; i++)
		if (!gone[i])
			total += files[i].size;
	left = 0;
	for (i = 0; i < n; i++)
		left += !gone[i];
	for (i = 0; max_bytes && total > max_bytes && left > 1 && i + 1 < n; i++) {
		if (gone[i])
			continue;
		if (remove_file(dfd, &files[i], &r)) {
			gone[i] = true;
			total -= files[i].size;
			left--;
		}
	}

	for (i = 0; i < n; i++) {
		if (gone[i])
			continue;
		r.files_kept++;
		r.bytes_kept += files[i].size;
	}
	if (out)
		*out = r;
out:
	free(gone);
	free(files);
	close(dfd);
	return err;
}

/* Units of --output-retention values. */
enum unit_kind { UNIT_AGE, UNIT_SIZE };

static const struct {
	const char *name;
	enum unit_kind kind;
	uint64_t mult;		/* seconds or bytes */
	bool any_case;		/* also matched case-insensitively */
} units[] = {
	/* ages: lower case only, so "m" is minutes and "M" mebibytes */
	{ "s", UNIT_AGE, 1, false },
	{ "m", UNIT_AGE, 60, false },
	{ "h", UNIT_AGE, 3600, false },
	{ "d", UNIT_AGE, 86400, false },
	{ "w", UNIT_AGE, 7 * 86400, false },
	/* sizes: powers of 1024 whichever spelling */
	{ "B", UNIT_SIZE, 1, true },
	{ "K", UNIT_SIZE, 1ULL << 10, false },
	{ "k", UNIT_SIZE, 1ULL << 10, false },
	{ "KB", UNIT_SIZE, 1ULL << 10, true },
	{ "KiB", UNIT_SIZE, 1ULL << 10, true },
	{ "M", UNIT_SIZE, 1ULL << 20, false },
	{ "MB", UNIT_SIZE, 1ULL << 20, true },
	{ "MiB", UNIT_SIZE, 1ULL << 20, true },
	{ "G", UNIT_SIZE, 1ULL << 30, true },
	{ "GB", UNIT_SIZE, 1ULL << 30, true },
	{ "GiB", UNIT_SIZE, 1ULL << 30, true },
	{ "T", UNIT_SIZE, 1ULL << 40, true },
	{ "TB", UNIT_SIZE, 1ULL << 40, true },
	{ "TiB", UNIT_SIZE, 1ULL << 40, true },
};

#define UNITS_HELP "ages: s, m, h, d, w; sizes: B, K, M, G, T, KiB, MiB, GiB, TiB"

/*
 * One part of the value, @len bytes at @s (spaces trimmed): a positive
 * whole number and a unit. Returns 0 with its kind and value, or -EINVAL
 * with the reason in @err.
 */
static int parse_part(const char *s, size_t len, enum unit_kind *kind,
		      uint64_t *value, char *err, size_t errlen)
{
	char part[64], *unit;
	uint64_t v = 0;
	size_t i;

	while (len && *s == ' ')
		s++, len--;
	while (len && s[len - 1] == ' ')
		len--;
	if (!len) {
		snprintf(err, errlen, "empty part: takes AGE, SIZE or AGE,SIZE "
			 "(e.g. 7d, 10GiB, 7d,10GiB)");
		return -EINVAL;
	}
	if (len >= sizeof(part)) {
		snprintf(err, errlen, "'%.*s...' is too long", 20, s);
		return -EINVAL;
	}
	memcpy(part, s, len);
	part[len] = '\0';
	if (part[0] == '-') {
		snprintf(err, errlen, "'%s' is negative: must be greater than 0", part);
		return -EINVAL;
	}
	if (part[0] < '0' || part[0] > '9') {
		snprintf(err, errlen, "'%s' must start with a whole number "
			 "greater than 0 (e.g. 7d or 10GiB)", part);
		return -EINVAL;
	}
	for (unit = part; *unit >= '0' && *unit <= '9'; unit++) {
		unsigned d = *unit - '0';

		if (v > (UINT64_MAX - d) / 10) {
			snprintf(err, errlen, "'%s' is too large", part);
			return -EINVAL;
		}
		v = v * 10 + d;
	}
	if (*unit == '.' || *unit == ',') {
		snprintf(err, errlen, "'%s': whole numbers only (e.g. 1536MiB, "
			 "not 1.5GiB)", part);
		return -EINVAL;
	}
	if (!*unit) {
		snprintf(err, errlen, "'%s' needs a unit (%s)", part, UNITS_HELP);
		return -EINVAL;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (units[i].any_case ? strcasecmp(unit, units[i].name) :
					strcmp(unit, units[i].name))
			continue;
		if (!v) {
			snprintf(err, errlen, "'%s' must be greater than 0 "
				 "(leave the option out to keep everything)", part);
			return -EINVAL;
		}
		if (v > UINT64_MAX / units[i].mult) {
			snprintf(err, errlen, "'%s' is too large", part);
			return -EINVAL;
		}
		*kind = units[i].kind;
		*value = v * units[i].mult;
		return 0;
	}
	snprintf(err, errlen, "'%s': unknown unit '%s' (%s)", part, unit, UNITS_HELP);
	return -EINVAL;
}

int retention_parse(const char *s, uint64_t *age_s, uint64_t *bytes,
		    char *err, size_t errlen)
{
	uint64_t age = 0, size = 0, v;
	enum unit_kind kind;
	const char *p, *comma;
	int parts = 0;
	char dummy[8];

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	if (!s || !*s) {
		snprintf(err, errlen, "empty: takes AGE, SIZE or AGE,SIZE "
			 "(e.g. 7d, 10GiB, 7d,10GiB)");
		return -EINVAL;
	}
	for (p = s; ; p = comma + 1) {
		comma = strchr(p, ',');
		if (++parts > 2) {
			snprintf(err, errlen, "'%s': at most one AGE and one SIZE "
				 "(e.g. 7d,10GiB)", s);
			return -EINVAL;
		}
		if (parse_part(p, comma ? (size_t)(comma - p) : strlen(p),
			       &kind, &v, err, errlen))
			return -EINVAL;
		if ((kind == UNIT_AGE && age) || (kind == UNIT_SIZE && size)) {
			snprintf(err, errlen, "'%s': two %s; give at most one AGE "
				 "and one SIZE (e.g. 7d,10GiB)", s,
				 kind == UNIT_AGE ? "ages" : "sizes");
			return -EINVAL;
		}
		if (kind == UNIT_AGE)
			age = v;
		else
			size = v;
		if (!comma)
			break;
	}
	*age_s = age;
	*bytes = size;
	return 0;
}
