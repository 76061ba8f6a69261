/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sink.h - the output seam: where an interval's finished profiles go.
 *
 * Owns: the profile kinds (cpu, offcpu, wall, gpu, gpu-pc), the interface every output
 * implements (struct profile_sink_ops), the registry of outputs and the
 * list of those a run opened (struct sink_list), and the output
 * directory itself (created, its stale temporary files removed).
 *
 * The interval loop (src/agent/flush.c) builds each of the interval's
 * profiles (struct profile, the pprof model: samples, locations,
 * mappings), hands it to every open sink (sinks_consume()), then ends the
 * interval for each (sinks_interval_end()), prints its status line and
 * lets each drop what it no longer keeps (sinks_prune()). It never names
 * a sink. The sinks today:
 *
 *   pprof      DIR/KIND-<UTC>.pb.gz per profile; --output-retention
 *              (pprof_sink.c)
 *   flamegraph DIR/flamegraph.html, one tab per kind it shows: CPU
 *              samples, off-CPU time, wall-clock time, GPU kernel time
 *              (flamegraph_sink.c)
 *   otlp       OTLP profiles on the exporter's queue, with an endpoint
 *              (src/export/otlp_sink.c)
 *
 * A new profile kind (allocations): add it to enum profile_kind
 * and profile_kind_names[] in sink.c (its name is the file prefix: pprof
 * files "offcpu-<UTC>.pb.gz", kept by --output-retention and their
 * temporary files removed at start, OTLP exported), then build it in
 * src/agent/flush.c and hand it over with output_profile() like the GPU
 * profiles. Nothing else changes: every sink takes every kind. Only the
 * flame graph chooses which kinds get a tab (its tabs[] table in
 * flamegraph_sink.c).
 *
 * A new sink: docs/ARCHITECTURE.md, "Adding an output".
 *
 * Threads: every function here and every callback runs on the main
 * thread, one interval at a time.
 */
#ifndef PROFD_OUTPUT_SINK_H
#define PROFD_OUTPUT_SINK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* What a profile measures; its name prefixes its file. */
enum profile_kind {
	PROFILE_KIND_CPU,	/* "cpu": CPU samples by stack */
	PROFILE_KIND_GPU,	/* "gpu": GPU kernel time by launching stack */
	PROFILE_KIND_GPU_PC,	/* "gpu-pc": GPU PC samples by stall reason */
	PROFILE_KIND_OFF_CPU,	/* "offcpu": time threads spent blocked, by stack */
	PROFILE_KIND_WALL,	/* "wall": on-CPU + blocked time, by thread and stack */
	PROFILE_KIND_MAX,
};

/*
 * profile_kind_name - "cpu", "gpu", "gpu-pc", "offcpu", "wall" (file
 * prefix); "?" if unknown.
 */
const char *profile_kind_name(enum profile_kind k);

/* One profile of an interval, as every sink receives it. Nothing owned. */
struct finished_profile {
	enum profile_kind kind;
	uint64_t start_ns;		/* CLOCK_REALTIME: what it covers ... */
	uint64_t end_ns;		/* ... up to here */
	/*
	 * The profile, --label already on every sample; NULL when it could
	 * not be built (out of memory). Read only: every sink gets the same.
	 */
	const struct profile *profile;
	/*
	 * 0, or why the profile is not complete (-ENOMEM: not built;
	 * --label could not be added): a sink that keeps a record of each
	 * profile (a file) does not write it and fails with this error.
	 */
	int err;
};

/* The end of an interval, after its profiles were consumed. */
struct sink_interval {
	unsigned int number;		/* intervals ended so far, this one included */
	uint64_t end_ns;		/* CLOCK_REALTIME boundary */
	/*
	 * Per kind: why nothing of that kind was recorded so far and what
	 * to run, as plain text (NULL: nothing to say). A sink showing an
	 * empty view of the kind shows this.
	 */
	const char *why_empty[PROFILE_KIND_MAX];
};

/*
 * What a sink did with one profile or one interval end: 0 or the -errno
 * of an output not written (printed by the sink; the caller counts it:
 * lost.write_error), and where it went or failed to go, for the status
 * line ("" when the sink has nothing to name, e.g. a network queue).
 */
struct sink_result {
	int err;
	char where[PATH_MAX];
};

/*
 * Figures a sink keeps, cumulative or current, summed over sinks by
 * sinks_stats(); a sink leaves 0 in what it does not have.
 */
struct sink_stats {
	/* memory held from interval to interval (profd_cache_*{cache="flamegraph"}) */
	uint64_t cache_bytes;
	uint64_t cache_entries;		/* e.g. names */
	uint64_t cache_evictions;	/* entries folded or dropped for room */
	/* the main view's: samples cut short, frames folded for room
	 * (lost.flamegraph_truncated, stat.flamegraph_folded) */
	uint64_t truncated;
	uint64_t folded;
	/* outputs deleted to keep within a bound (--output-retention) */
	uint64_t removed_files;
	uint64_t removed_bytes;
};

struct otlp_exporter;
struct otlp_resources;

/*
 * What sinks may be opened with: the run's configuration as the sinks
 * need it. Borrowed for the call; a sink copies what it keeps.
 */
struct sink_setup {
	const char *output_dir;		/* --output-dir (exists, writable) */
	uint64_t retention_age_s;	/* --output-retention: 0: no age limit */
	uint64_t retention_bytes;	/* ... 0: no size limit */
	uint64_t flamegraph_budget;	/* bytes of the flame graph's trees (--memory-limit's share) */
	bool gpu;			/* GPU profiles may come (not --no-gpu) */
	bool off_cpu;			/* off-CPU profiles may come (--off-cpu) */
	struct otlp_exporter *exporter;	/* NULL: no OTLP endpoint */
	struct otlp_resources *resources;	/* per-process OTLP resources (with exporter) */
	int verbose;
};

/*
 * One output. Every callback gets the handle open() made. Each is
 * required unless marked optional.
 */
struct profile_sink_ops {
	const char *name;		/* "pprof", "flamegraph", "otlp" */
	/*
	 * open - make the sink per @st into *@sink. *@sink NULL and 0: not
	 * configured in this run (no endpoint, ...), never called again.
	 * Returns 0 or -errno (-ENOMEM): the run does not start.
	 */
	int (*open)(const struct sink_setup *st, void **sink);
	/*
	 * consume - one finished profile (@fp->profile may be NULL, see
	 * struct finished_profile). Called for every profile of every
	 * kind, in the order built. Fills @res (zeroed by the caller).
	 */
	void (*consume)(void *sink, const struct finished_profile *fp,
			struct sink_result *res);
	/*
	 * interval_end - optional: the interval's profiles were all
	 * consumed: write what spans them (the flame graph page). Fills
	 * @res (zeroed by the caller).
	 */
	void (*interval_end)(void *sink, const struct sink_interval *iv,
			     struct sink_result *res);
	/*
	 * prune - optional: after the interval's status line, drop old
	 * outputs (the files beyond --output-retention). Errors are the
	 * sink's to print; nothing is counted as a write error.
	 */
	void (*prune)(void *sink, const struct sink_interval *iv);
	/* stats - optional: add the sink's figures to @st. */
	void (*stats)(void *sink, struct sink_stats *st);
	/* close - free the sink (the run is over). */
	void (*close)(void *sink);
};

/* The sinks a run opened, in registry order. */
#define SINKS_MAX 8
struct sink_list {
	struct {
		const struct profile_sink_ops *ops;
		void *sink;
	} s[SINKS_MAX];
	unsigned int n;
};

/*
 * sinks_open - open every registered sink (sink.c's registry) per @st
 * into @l (zeroed first). Returns 0, or the -errno of the first that
 * failed (its name in *@failed); what was opened stays in @l for
 * sinks_close().
 */
int sinks_open(struct sink_list *l, const struct sink_setup *st,
	       const char **failed);

/*
 * sinks_consume - hand @fp to every sink. @res gets the first error and
 * the first place a sink named (the profile's file). Returns @res->err.
 */
int sinks_consume(struct sink_list *l, const struct finished_profile *fp,
		  struct sink_result *res);

/*
 * sinks_interval_end - end @iv for every sink. Each failing sink's
 * result goes to @res[i], at most @nres of them; returns how many failed.
 */
unsigned int sinks_interval_end(struct sink_list *l, const struct sink_interval *iv,
				struct sink_result *res, unsigned int nres);

/* sinks_prune - prune every sink (after the status line). */
void sinks_prune(struct sink_list *l, const struct sink_interval *iv);

/* sinks_stats - the sum of every sink's figures into @st (zeroed first). */
void sinks_stats(struct sink_list *l, struct sink_stats *st);

/* sinks_close - close every sink; @l is empty after. */
void sinks_close(struct sink_list *l);

/*
 * output_make_dir - create directory @dir and its parents (0755) if
 * missing. Returns 0 when it is a directory profd may write in, or
 * -ENAMETOOLONG, -ENOTDIR, or the negative errno of mkdir(), stat() or
 * access().
 */
int output_make_dir(const char *dir);

/*
 * output_remove_temps - remove from @dir the temporary files a killed
 * profd left (atomic writes: NAME.tmpXXXXXX) whose name starts with
 * @prefix: nothing else ever reads or removes them. An unreadable @dir
 * is left alone.
 */
void output_remove_temps(const char *dir, const char *prefix);

#endif /* PROFD_OUTPUT_SINK_H */
