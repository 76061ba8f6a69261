// SPDX-License-Identifier: GPL-2.0
/*
 * flamegraph_sink.c - the flame graph sink (see sink.h).
 *
 * Owns: DIR/flamegraph.html, one page for the whole run with a tab per
 * profile kind in tabs[] (CPU samples; off-CPU and wall-clock time, by
 * thread, with --off-cpu; GPU kernel time when GPU profiles may come),
 * each tab one bounded tree (flamegraph.c) that every profile
 * of its kind is merged into. Kinds without a tab (gpu-pc) are not shown.
 * The page is rewritten at the end of each interval whose first tab got
 * a profile (an interval probabilistic profiling did not sample leaves
 * it as it was); an empty tab shows why (struct sink_interval's
 * why_empty). Its temporary files a killed profd left are removed at open.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/flamegraph.h"
#include "output/sink.h"

#define FLAMEGRAPH_FILE "flamegraph.html"

/* A tab: which kind it shows and how. */
struct flame_tab_def {
	enum profile_kind kind;
	const char *name;		/* the tab's label */
	const char *unit;		/* "samples", or "ns" shown as durations */
	uint32_t value_index;		/* the sample value used as weight */
	unsigned int budget_div;	/* its tree: the flame graph budget / this */
	bool gpu;			/* only when GPU profiles may come */
	bool off_cpu;			/* only with --off-cpu */
	bool threads;			/* a frame per thread under its process */
};

static const struct flame_tab_def tabs[] = {
	{ PROFILE_KIND_CPU, "CPU", "samples", 0, 1, false, false, false },
	{ PROFILE_KIND_OFF_CPU, "Off-CPU time", "ns", 1, 4, false, true, false },
	/* wall: cpu, off_cpu, wall ns (aggregate_build_profile, AGG_WALL) */
	{ PROFILE_KIND_WALL, "Wall-clock", "ns", 2, 4, false, true, true },
	{ PROFILE_KIND_GPU, "GPU kernel time", "ns", 1, 8, true, false, false },
};
#define NTABS (sizeof(tabs) / sizeof(tabs[0]))

struct flame_sink {
	char path[PATH_MAX];		/* DIR/flamegraph.html */
	const struct flame_tab_def *def[NTABS];	/* the run's tabs, in order */
	struct flamegraph *fg[NTABS];
	unsigned int ntabs;
	bool first_merged;		/* the first tab got a profile this interval */
	/* at the last merge of the first tab: for /metrics */
	uint64_t bytes, names, pruned;
};

static void flame_sink_close(void *sink)
{
	struct flame_sink *s = sink;

	for (unsigned int i = 0; i < s->ntabs; i++)
		flamegraph_free(s->fg[i]);
	free(s);
}

static int flame_sink_open(const struct sink_setup *st, void **out)
{
	struct flame_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	if (snprintf(s->path, sizeof(s->path), "%s/" FLAMEGRAPH_FILE,
		     st->output_dir) >= (int)sizeof(s->path)) {
		free(s);
		return -ENAMETOOLONG;
	}
	for (size_t i = 0; i < NTABS; i++) {
		struct flamegraph *fg;

		if ((tabs[i].gpu && !st->gpu) || (tabs[i].off_cpu && !st->off_cpu))
			continue;
		fg = flamegraph_new(0);
		if (!fg) {
			flame_sink_close(s);
			return -ENOMEM;
		}
		flamegraph_set_budget(fg, st->flamegraph_budget / tabs[i].budget_div);
		flamegraph_set_threads(fg, tabs[i].threads);
		s->def[s->ntabs] = &tabs[i];
		s->fg[s->ntabs++] = fg;
	}
	output_remove_temps(st->output_dir, FLAMEGRAPH_FILE);
	*out = s;
	return 0;
}

/* Merge @fp into its tab's tree, if it has one. */
static void flame_sink_consume(void *sink, const struct finished_profile *fp,
			       struct sink_result *res)
{
	struct flame_sink *s = sink;

	if (!fp->profile)
		return;
	for (unsigned int i = 0; i < s->ntabs; i++) {
		if (s->def[i]->kind != fp->kind)
			continue;
		/* out of memory: the tree stays as it was, the page too */
		if (!flamegraph_add_profile(s->fg[i], fp->profile, s->def[i]->value_index) &&
		    i == 0)
			s->first_merged = true;
	}
}

/* Rewrite the page when its first tab got a profile; an error is printed. */
static void flame_sink_interval_end(void *sink, const struct sink_interval *iv,
				    struct sink_result *res)
{
	struct flame_sink *s = sink;
	struct flamegraph_view views[NTABS];
	int err;

	if (!s->first_merged)
		return;
	s->first_merged = false;
	s->bytes = s->names = s->pruned = 0;
	for (unsigned int i = 0; i < s->ntabs; i++) {
		uint64_t names = 0;

		s->bytes += flamegraph_bytes(s->fg[i], &names);
		s->names += names;
		s->pruned += flamegraph_pruned(s->fg[i]);
		views[i] = (struct flamegraph_view){
			.name = s->def[i]->name,
			.fg = s->fg[i],
			.unit = s->def[i]->unit,
			.empty_note = iv->why_empty[s->def[i]->kind],
		};
	}
	err = flamegraph_write_views(s->path, "profd flame graph", views, s->ntabs);
	if (err) {
		fprintf(stderr, "profd: error: writing %s: %s\n", s->path, strerror(-err));
		snprintf(res->where, sizeof(res->where), "%s", s->path);
		res->err = err;
	}
}

static void flame_sink_stats(void *sink, struct sink_stats *st)
{
	struct flame_sink *s = sink;

	st->cache_bytes += s->bytes;
	st->cache_entries += s->names;
	st->cache_evictions += s->pruned;
	/* the counters are the first tab's (CPU), as they always were */
	if (s->ntabs) {
		st->truncated += flamegraph_truncated(s->fg[0]);
		st->folded += flamegraph_pruned(s->fg[0]);
	}
}

const struct profile_sink_ops flamegraph_sink_ops = {
	.name = "flamegraph",
	.open = flame_sink_open,
	.consume = flame_sink_consume,
	.interval_end = flame_sink_interval_end,
	.stats = flame_sink_stats,
	.close = flame_sink_close,
};
