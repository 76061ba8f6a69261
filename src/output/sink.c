// SPDX-License-Identifier: GPL-2.0
/*
 * sink.c - the output seam (see sink.h): the profile kinds' names, the
 * registry of sinks, the loops over the sinks a run opened, and the
 * output directory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/sink.h"

static const char *const profile_kind_names[PROFILE_KIND_MAX] = {
	[PROFILE_KIND_CPU] = "cpu",
	[PROFILE_KIND_GPU] = "gpu",
	[PROFILE_KIND_GPU_PC] = "gpu-pc",
	[PROFILE_KIND_OFF_CPU] = "offcpu",
	[PROFILE_KIND_WALL] = "wall",
};

const char *profile_kind_name(enum profile_kind k)
{
	return (unsigned int)k < PROFILE_KIND_MAX && profile_kind_names[k] ?
	       profile_kind_names[k] : "?";
}

/*
 * The registry: every output profd has, in the order each profile
 * reaches them. A sink opens only when the run's configuration asks for
 * it (its open() decides).
 */
extern const struct profile_sink_ops pprof_sink_ops;		/* pprof_sink.c */
extern const struct profile_sink_ops flamegraph_sink_ops;	/* flamegraph_sink.c */
extern const struct profile_sink_ops otlp_profile_sink_ops;	/* src/export/otlp_sink.c */

static const struct profile_sink_ops *const sink_registry[] = {
	&pprof_sink_ops,
	&flamegraph_sink_ops,
	&otlp_profile_sink_ops,
};

_Static_assert(sizeof(sink_registry) / sizeof(sink_registry[0]) <= SINKS_MAX,
	       "SINKS_MAX is too small for the registry");

int sinks_open(struct sink_list *l, const struct sink_setup *st,
	       const char **failed)
{
	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < sizeof(sink_registry) / sizeof(sink_registry[0]); i++) {
		const struct profile_sink_ops *ops = sink_registry[i];
		void *sink = NULL;
		int err = ops->open(st, &sink);

		if (err) {
			if (failed)
				*failed = ops->name;
			return err;
		}
		if (!sink)
			continue;	/* not configured in this run */
		l->s[l->n].ops = ops;
		l->s[l->n].sink = sink;
		l->n++;
	}
	return 0;
}

int sinks_consume(struct sink_list *l, const struct finished_profile *fp,
		  struct sink_result *res)
{
	memset(res, 0, sizeof(*res));
	for (unsigned int i = 0; i < l->n; i++) {
		struct sink_result r = { 0 };

		l->s[i].ops->consume(l->s[i].sink, fp, &r);
		if (!res->err)
			res->err = r.err;
		if (!res->where[0] && r.where[0])
			memcpy(res->where, r.where, sizeof(res->where));
	}
	return res->err;
}

unsigned int sinks_interval_end(struct sink_list *l, const struct sink_interval *iv,
				struct sink_result *res, unsigned int nres)
{
	unsigned int nfailed = 0;

	for (unsigned int i = 0; i < l->n; i++) {
		struct sink_result r = { 0 };

		if (!l->s[i].ops->interval_end)
			continue;
		l->s[i].ops->interval_end(l->s[i].sink, iv, &r);
		if (!r.err)
			continue;
		if (nfailed < nres)
			res[nfailed] = r;
		nfailed++;
	}
	return nfailed;
}

void sinks_prune(struct sink_list *l, const struct sink_interval *iv)
{
	for (unsigned int i = 0; i < l->n; i++)
		if (l->s[i].ops->prune)
			l->s[i].ops->prune(l->s[i].sink, iv);
}

void sinks_stats(struct sink_list *l, struct sink_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned int i = 0; i < l->n; i++)
		if (l->s[i].ops->stats)
			l->s[i].ops->stats(l->s[i].sink, st);
}

void sinks_close(struct sink_list *l)
{
	for (unsigned int i = l->n; i-- > 0;)
		l->s[i].ops->close(l->s[i].sink);
	memset(l, 0, sizeof(*l));
}

/* the output directory */

int output_make_dir(const char *dir)
{
	char tmp[PATH_MAX];
	struct stat st;

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	if (stat(tmp, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (access(tmp, W_OK | X_OK))
		return -errno;
	return 0;
}

void output_remove_temps(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	size_t plen = strlen(prefix);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *t = strstr(e->d_name, ".tmp");

		/* atomic_file_begin(): ".tmp" and 6 random characters */
		if (t && strlen(t) == 10 && !strncmp(e->d_name, prefix, plen))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}
