// SPDX-License-Identifier: GPL-2.0
/*
 * pprof_sink.c - the pprof file sink (see sink.h).
 *
 * Owns: one gzipped pprof file per profile, DIR/KIND-<UTC>.pb.gz (KIND:
 * profile_kind_name(), <UTC> the start of what it covers, "-N" added
 * when the name is taken), written atomically (pprof_write()); the
 * directory created again before each write (it may have been removed
 * meanwhile); the temporary files a killed profd left, removed at open;
 * and --output-retention, applied after each interval's status line.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/pprof.h"
#include "output/retention.h"
#include "output/sink.h"
#include "util/clock.h"

struct pprof_sink {
	char *dir;
	uint64_t retention_age_s;	/* 0: no age limit */
	uint64_t retention_bytes;	/* 0: no size limit */
	int verbose;
	uint64_t removed_files;		/* --output-retention, so far */
	uint64_t removed_bytes;
};

/*
 * The path of @kind's profile starting at @start_ns (CLOCK_REALTIME) into
 * @out of @len bytes: the first of KIND-<UTC>.pb.gz, KIND-<UTC>-1.pb.gz,
 * ... not taken. Returns 0 or -EEXIST (after 1000 names).
 */
static int output_path(const char *dir, const char *kind, uint64_t start_ns,
		       char *out, size_t len)
{
	time_t secs = start_ns / 1000000000ULL;
	struct tm tm;
	char stamp[32];

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int i = 0; i < 1000; i++) {
		if (i)
			snprintf(out, len, "%s/%s-%s-%d.pb.gz", dir, kind, stamp, i);
		else
			snprintf(out, len, "%s/%s-%s.pb.gz", dir, kind, stamp);
		if (access(out, F_OK))
			return 0;
	}
	return -EEXIST;
}

static int pprof_sink_open(const struct sink_setup *st, void **out)
{
	struct pprof_sink *s = calloc(1, sizeof(*s));

	if (!s || !(s->dir = strdup(st->output_dir))) {
		free(s);
		return -ENOMEM;
	}
	s->retention_age_s = st->retention_age_s;
	s->retention_bytes = st->retention_bytes;
	s->verbose = st->verbose;
	for (int k = 0; k < PROFILE_KIND_MAX; k++) {
		char prefix[64];

		snprintf(prefix, sizeof(prefix), "%s-", profile_kind_name(k));
		output_remove_temps(s->dir, prefix);
	}
	*out = s;
	return 0;
}

/* Write @fp to its file; an error is printed. */
static void pprof_sink_consume(void *sink, const struct finished_profile *fp,
			       struct sink_result *res)
{
	struct pprof_sink *s = sink;
	/* the name first: an error line and the status line name the file */
	int err = output_path(s->dir, profile_kind_name(fp->kind), fp->start_ns,
			      res->where, sizeof(res->where));

	/* the directory may have been removed meanwhile: recreate it */
	if (!err)
		err = output_make_dir(s->dir);
	if (!err && !fp->profile)
		err = -ENOMEM;
	if (!err)
		err = fp->err;
	if (!err)
		err = pprof_write(fp->profile, res->where);
	if (err)
		fprintf(stderr, "profd: error: writing %s: %s\n",
			res->where[0] ? res->where : "the profile", strerror(-err));
	res->err = err;
}

/*
 * --output-retention: delete the oldest profiles beyond the age or size
 * limit, after the interval's files were written.
 */
static void pprof_sink_prune(void *sink, const struct sink_interval *iv)
{
	struct pprof_sink *s = sink;
	struct retention_result r = { 0 };
	int err;

	if (!s->retention_age_s && !s->retention_bytes)
		return;
	err = retention_apply(s->dir, s->retention_age_s, s->retention_bytes,
			      clock_real_ns() / 1000000000ULL, &r);
	if (err) {
		fprintf(stderr, "profd: warning: --output-retention: cannot read %s: %s\n",
			s->dir, strerror(-err));
		return;
	}
	if (r.files_removed && s->verbose)
		fprintf(stderr, "profd: --output-retention: removed %llu old profiles "
			"(%llu bytes); %llu kept (%llu bytes)\n",
			(unsigned long long)r.files_removed,
			(unsigned long long)r.bytes_removed,
			(unsigned long long)r.files_kept, (unsigned long long)r.bytes_kept);
	s->removed_files += r.files_removed;
	s->removed_bytes += r.bytes_removed;
}

static void pprof_sink_stats(void *sink, struct sink_stats *st)
{
	struct pprof_sink *s = sink;

	st->removed_files += s->removed_files;
	st->removed_bytes += s->removed_bytes;
}

static void pprof_sink_close(void *sink)
{
	struct pprof_sink *s = sink;

	free(s->dir);
	free(s);
}

const struct profile_sink_ops pprof_sink_ops = {
	.name = "pprof",
	.open = pprof_sink_open,
	.consume = pprof_sink_consume,
	.prune = pprof_sink_prune,
	.stats = pprof_sink_stats,
	.close = pprof_sink_close,
};
