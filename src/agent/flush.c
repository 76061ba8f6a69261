// SPDX-License-Identifier: GPL-2.0
/*
 * flush.c - the end of an interval: its files (see agent_internal.h).
 *
 * Owns: what the main thread does at each interval end and once at exit
 * (agent_flush()): swap the aggregation table (interval.c), take the
 * counters' deltas, build the CPU profile and write it with its comments
 * (version, configuration, every counter) to DIR/cpu-<UTC>.pb.gz, write
 * the GPU profiles (gpu-*, gpu-pc-*), add the interval to the flame graph
 * and rewrite DIR/flamegraph.html, print the status line, and apply
 * --output-retention. Also the output directory itself: created (again)
 * before each write, and the temporary files a killed profd left there.
 *
 * The reader keeps aggregating into the next interval's table meanwhile;
 * a file that cannot be written is counted (lost.write_error, and its
 * samples lost.write_failed) and the run goes on.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "agent/export.h"
#include "aggregate/aggregate.h"
#include "gpu/gpu.h"
#include "output/flamegraph.h"
#include "output/pprof.h"
#include "output/retention.h"
#include "counters/counters.h"
#include "tracer/tracer.h"
#include "util/clock.h"

/* What writing an interval's files counts (write_error: also in /metrics). */
COUNTER_DEFINE(write_error, COUNTER_LOST, "profiles or flame graphs not written");
COUNTER_DEFINE(write_failed, COUNTER_LOST,
	       "samples of CPU profiles that could not be written");
COUNTER_DEFINE(flamegraph_truncated, COUNTER_PARTIAL,
	       "flame graph full: paths cut short");
COUNTER_DEFINE(flamegraph_folded, COUNTER_PARTIAL,
	       "flame graph full: light frames folded into their callers");
COUNTER_DEFINE(retention_files_removed, COUNTER_STAT,
	       "old profiles deleted by --output-retention");

int agent_make_dir(const char *dir)
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

void agent_remove_stale_temps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *t = strstr(e->d_name, ".tmp");

		if (t && strlen(t) == 10 &&
		    (!strncmp(e->d_name, "cpu-", 4) || !strncmp(e->d_name, "gpu-", 4) ||
		     !strncmp(e->d_name, "flamegraph.html", 15)))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

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

/*
 * Build the comments: version, config, and every counter by name (@delta:
 * this interval's, by registry position).
 */
static void counter_comments(struct agent *ag, const uint64_t *delta,
			     const struct unwind_loader_stats *us, uint64_t sampled_ns,
			     char comments[][96], uint32_t *n)
{
	char host[64] = "";

	gethostname(host, sizeof(host) - 1);
	snprintf(comments[(*n)++], 96, "profd %s on %s", PROFD_VERSION, host);
	snprintf(comments[(*n)++], 96, "sampling_frequency_hz=%u",
		 ag->cfg->frequency_hz);
	if (ag->cfg->probabilistic_threshold < 100)
		/* the part of the interval the perf events were on */
		snprintf(comments[(*n)++], 96, "probabilistic_sampled_ms=%llu",
			 (unsigned long long)(sampled_ns / 1000000));
	for (size_t i = 0; i < counters_count(); i++) {
		const struct counter_def *c = counters_at(i);

		snprintf(comments[(*n)++], 96, "%s.%s=%llu", counter_kind_name(c->kind),
			 c->name, (unsigned long long)delta[i]);
	}
	snprintf(comments[(*n)++], 96,
		 "stat.unwind: tables=%llu no_cfi=%llu processes=%llu rows=%llu shards=%u",
		 (unsigned long long)us->objects,
		 (unsigned long long)us->objects_failed,
		 (unsigned long long)us->processes,
		 (unsigned long long)us->rows, us->shards);
}

/* Append " name=N" for @val to @buf of @size at *@off when non-zero. */
static void note_counter(char *buf, size_t size, size_t *off, const char *name,
			 uint64_t val)
{
	if (val && *off < size)
		*off += snprintf(buf + *off, size - *off, " %s=%llu", name,
				 (unsigned long long)val);
}

static void status_line(struct agent *ag, const struct aggregate *a,
			const uint64_t *delta, uint64_t processes, const char *path, int write_err,
			const char *flame_path, int flame_err)
{
	char lost[512] = "", partial[512] = "";
	uint64_t nlost = 0, npartial = 0;
	size_t lo = 0, po = 0;

	for (size_t i = 0; i < counters_count(); i++) {
		const struct counter_def *c = counters_at(i);

		if (c->kind == COUNTER_LOST) {
			nlost += delta[i];
			note_counter(lost, sizeof(lost), &lo, c->name, delta[i]);
		} else if (c->kind == COUNTER_PARTIAL) {
			npartial += delta[i];
			note_counter(partial, sizeof(partial), &po, c->name, delta[i]);
		}
	}
	fprintf(stderr, "profd: interval %u: %llu samples, %llu stacks, "
		"%llu processes tracked, %llu lost%s%s%s, %llu partial%s%s%s, %s %s%s%s\n",
		ag->intervals, (unsigned long long)a->nsamples,
		(unsigned long long)a->nstacks, (unsigned long long)processes,
		(unsigned long long)nlost, lo ? " (" : "", lost + (lo ? 1 : 0),
		lo ? ")" : "", (unsigned long long)npartial, po ? " (" : "",
		partial + (po ? 1 : 0), po ? ")" : "",
		write_err ? "FAILED to write" : "wrote", path,
		flame_err ? "; FAILED to write " : "", flame_err ? flame_path : "");
}

/* Most device lines in a profile's comments. */
#define GPU_COMMENT_DEVICES 8

/*
 * Write profile @p (NULL: it could not be built) to DIR/KIND-<time>.pb.gz,
 * its path into @path; an error is printed. Returns 0 or -errno.
 */
static int write_profile(struct agent *ag, const char *kind, struct profile *p,
			 uint64_t start_ns, char *path, size_t len)
{
	/* the name first: an error line and the status line name the file */
	int err = output_path(ag->cfg->output_dir, kind, start_ns, path, len);

	/* the directory may have been removed meanwhile: recreate it */
	if (!err)
		err = agent_make_dir(ag->cfg->output_dir);
	if (!err && !p)
		err = -ENOMEM;
	/* --label: on every sample of the file, on every OTLP resource */
	for (size_t i = 0; !err && i < ag->cfg->nlabels; i++)
		err = profile_add_common_label(p, ag->cfg->labels[i].key,
					       ag->cfg->labels[i].value);
	if (!err)
		err = pprof_write(p, path);
	agent_export_profile(ag->exp, p);	/* also when the file failed */
	if (err)
		fprintf(stderr, "profd: error: writing %s: %s\n",
			path[0] ? path : "the profile", strerror(-err));
	return err;
}

/*
 * The GPU profiles of the interval: kernel time by launching stack
 * (gpu-*.pb.gz) and PC samples (gpu-pc-*.pb.gz), each only when the
 * interval has some. @paths gets what was written, for the status line.
 */
static int write_gpu_profiles(struct agent *ag, const struct build_opts *bo,
			      uint64_t end, char *paths, size_t len,
			      uint64_t *kernels, uint64_t *ns)
{
	struct gpu_interval *iv;
	char path[PATH_MAX] = "";
	uint64_t start = ag->gpu_interval_start;
	int err = 0, e;

	if (!ag->gpu || !(iv = gpu_swap(ag->gpu)))
		return 0;
	ag->gpu_interval_start = end;
	*kernels = gpu_interval_kernels(iv);
	*ns = gpu_interval_time_ns(iv);
	if (gpu_interval_kernels(iv)) {
		struct profile *p = gpu_build_kernel_profile(iv, bo, start);

		e = write_profile(ag, "gpu", p, start, path, sizeof(path));
		err = err ? err : e;
		if (!e)
			snprintf(paths, len, "%s", path);
		if (p && ag->gpu_flame)
			flamegraph_add_profile(ag->gpu_flame, p, 1);
		profile_free(p);
	}
	if (gpu_interval_pc_samples(iv)) {
		struct profile *p = gpu_build_pc_profile(iv, bo, start);
		size_t used = strlen(paths);

		path[0] = '\0';
		e = write_profile(ag, "gpu-pc", p, start, path, sizeof(path));
		err = err ? err : e;
		if (!e)
			snprintf(paths + used, len - used, "%s%s", used ? ", " : "", path);
		profile_free(p);
	}
	gpu_interval_free(iv);
	return err;
}

/*
 * --output-retention: delete the oldest profiles beyond the age or size
 * limit, after the interval's files were written.
 */
static void apply_retention(struct agent *ag)
{
	const struct agent_config *cfg = ag->cfg;
	struct retention_result r = { 0 };
	int err;

	if (!cfg->retention_age_s && !cfg->retention_bytes)
		return;
	err = retention_apply(cfg->output_dir, cfg->retention_age_s,
			      cfg->retention_bytes, clock_real_ns() / 1000000000ULL, &r);
	if (err) {
		fprintf(stderr, "profd: warning: --output-retention: cannot read %s: %s\n",
			cfg->output_dir, strerror(-err));
		return;
	}
	if (r.files_removed && cfg->verbose)
		fprintf(stderr, "profd: --output-retention: removed %llu old profiles "
			"(%llu bytes); %llu kept (%llu bytes)\n",
			(unsigned long long)r.files_removed,
			(unsigned long long)r.bytes_removed,
			(unsigned long long)r.files_kept, (unsigned long long)r.bytes_kept);
	pthread_mutex_lock(&ag->agg_lock);
	ag->retention_removed_files += r.files_removed;
	ag->retention_removed_bytes += r.bytes_removed;
	counter_add(&counter_retention_files_removed, r.files_removed);
	pthread_mutex_unlock(&ag->agg_lock);
}

/*
 * What the flame graph's CPU view says while it has no samples: for how
 * long, the likely reason by the BPF counters (@bpf_now, totals since
 * the start) and what to run. Written to @buf of @len bytes.
 */
static void cpu_empty_note(const struct agent *ag, const uint64_t *bpf_now,
			   char *buf, size_t len)
{
	const struct agent_config *cfg = ag->cfg;
	bool filtered = cfg->exec_argv || cfg->npids;
	unsigned long long secs = (clock_mono_ns() - ag->run_start_mono +
				   500000000ULL) / 1000000000ULL;
	unsigned long long n = bpf_now[PROFD_CNT_SAMPLES];
	unsigned long long idle = bpf_now[PROFD_CNT_IDLE_SKIPPED];
	unsigned long long other = bpf_now[PROFD_CNT_FILTERED];
	char counts[160] = "";
	int off = 0;

	if (n)
		off = snprintf(counts, sizeof(counts), " (%llu samples: %llu of "
			       "the idle task, dropped unless --include-idle",
			       n, idle);
	if (n && filtered)
		off += snprintf(counts + off, sizeof(counts) - off,
				", %llu of other processes", other);
	if (n)
		snprintf(counts + off, sizeof(counts) - off, ")");
	snprintf(buf, len, "No CPU samples in %llu s: %s%s. %s", secs,
		 !n ? "the sampler never fired" :
		 cfg->exec_argv ? "the command did not run on a CPU" :
		 cfg->npids ? "the --pid processes did not run" :
		 idle == n ? "the machine was idle" : "no sample was kept",
		 counts,
		 cfg->exec_argv ? "Run a command that works longer, or raise "
				  "--sampling-frequency." :
		 cfg->npids ? "Record while they work, or profile a command "
			      "with `profd exec -- COMMAND`." :
		 "Run a workload while profd records, or "
		 "`profd exec -- COMMAND`.");
}

/*
 * Count @n in counter @c while this interval's files are written: in the
 * registry, in this interval's @delta and in counter_prev, so the next
 * interval does not count it again.
 */
static void count_written(struct agent *ag, uint64_t *delta, struct counter_def *c,
			  uint64_t n)
{
	counter_add(c, n);
	delta[c->index] += n;
	ag->counter_prev[c->index] += n;
}

void agent_flush(struct agent *ag)
{
	const size_t ncounters = counters_count();
	uint64_t bpf_now[PROFD_CNT_MAX] = { 0 };
	uint64_t now[ncounters + 1], delta[ncounters + 1];
	uint64_t end, processes;
	char comments[ncounters + 8 + GPU_COMMENT_DEVICES][96];
	const char *comment_ptrs[ncounters + 8 + GPU_COMMENT_DEVICES];
	struct unwind_loader_stats us;
	char path[PATH_MAX] = "", flame_path[PATH_MAX] = "";
	struct aggregate *a;
	struct profile *p;
	uint32_t ncomments = 0;
	char gpu_path[PATH_MAX] = "";
	uint64_t gpu_kernels = 0, gpu_ns = 0;
	int err = 0, ferr = 0, gerr = 0;
	bool skip;

	a = agent_interval_swap(ag, &end, agent_probabilistic_boundary);
	if (!a)
		return;	/* no boundary (no callback): keep aggregating */
	pthread_mutex_lock(&ag->agg_lock);
	processes = ag->procs_stats.processes;
	us = ag->unwind_stats;
	pthread_mutex_unlock(&ag->agg_lock);

	tracer_read_counters(ag->tracer, bpf_now);
	counters_read(bpf_now, now);
	for (size_t i = 0; i < ncounters; i++) {
		delta[i] = now[i] - ag->counter_prev[i];
		ag->counter_prev[i] = now[i];
	}
	pthread_mutex_lock(&ag->agg_lock);
	ag->intervals++;
	pthread_mutex_unlock(&ag->agg_lock);
	counter_comments(ag, delta, &us, ag->ended_on_ns, comments, &ncomments);
	if (ag->gpu)
		ncomments += gpu_device_comments(ag->gpu, comments + ncomments,
						 GPU_COMMENT_DEVICES);
	for (uint32_t i = 0; i < ncomments; i++)
		comment_ptrs[i] = comments[i];

	struct build_opts bo = {
		.period_ns = 1000000000ULL / ag->cfg->frequency_hz,
		.end_ns = end,
		.ksyms = ag->ksyms,
		.kernel_build_id = ag->kernel_build_id,
		.sym_lock = &ag->sym_lock,
		.rts = ag->rts,
		.comments = comment_ptrs,
		.ncomments = ncomments,
	};
	/* probabilistic profiling: an interval never sampled has no profile */
	skip = !a->nsamples && !ag->ended_sampled;
	ag->interval_sampled = ag->sampling_on;
	/* objects still being opened for this interval's samples: a bounded wait */
	if (!skip) {
		uint64_t wait = (uint64_t)ag->cfg->interval_s * 1000000000ULL / 4;

		object_loader_wait(ag->objects, wait < OBJECTS_FLUSH_WAIT_NS ?
				   wait : OBJECTS_FLUSH_WAIT_NS);
	}
	p = skip ? NULL : aggregate_build_profile(a, &bo);
	err = skip ? 0 : write_profile(ag, "cpu", p, a->start_ns, path, sizeof(path));
	if (err) {
		count_written(ag, delta, &counter_write_error, 1);
		count_written(ag, delta, &counter_write_failed, a->nsamples);
	} else if (!skip) {
		/* written means written: counted as soon as the file is there */
		pthread_mutex_lock(&ag->agg_lock);
		ag->total_samples += a->nsamples;
		pthread_mutex_unlock(&ag->agg_lock);
	}
	ag->skipped_intervals += skip;
	gerr = write_gpu_profiles(ag, &bo, end, gpu_path, sizeof(gpu_path),
				  &gpu_kernels, &gpu_ns);
	if (gerr)
		count_written(ag, delta, &counter_write_error, 1);
	if (p && !flamegraph_add_profile(ag->flame, p, 0)) {
		uint64_t fb, fn, gb, gn;

		fb = flamegraph_bytes(ag->flame, &fn);
		gb = flamegraph_bytes(ag->gpu_flame, &gn);
		__atomic_store_n(&ag->flame_bytes, fb + gb, __ATOMIC_RELAXED);
		__atomic_store_n(&ag->flame_names, fn + gn, __ATOMIC_RELAXED);
		__atomic_store_n(&ag->flame_pruned, flamegraph_pruned(ag->flame) +
				 (ag->gpu_flame ? flamegraph_pruned(ag->gpu_flame) : 0),
				 __ATOMIC_RELAXED);
		char cpu_note[320];
		struct flamegraph_view views[2] = {
			{ .name = "CPU", .fg = ag->flame, .unit = "samples",
			  .empty_note = cpu_note },
			{ .name = "GPU kernel time", .fg = ag->gpu_flame, .unit = "ns",
			  .empty_note = "No GPU kernels were timed: no CUDA program "
					"ran with profd's injection library (`profd "
					"exec -- COMMAND` loads it; CUDA_INJECTION64_PATH "
					"names it for other programs)." },
		};

		cpu_empty_note(ag, bpf_now, cpu_note, sizeof(cpu_note));

		snprintf(flame_path, sizeof(flame_path), "%s/flamegraph.html",
			 ag->cfg->output_dir);
		ferr = flamegraph_write_views(flame_path, "profd flame graph", views,
					      ag->gpu_flame ? 2 : 1);
		if (ferr) {
			fprintf(stderr, "profd: error: writing %s: %s\n",
				flame_path, strerror(-ferr));
			count_written(ag, delta, &counter_write_error, 1);
		}
	}
	/* the flame graph's totals since the start, in the next interval's delta */
	counter_set(&counter_flamegraph_truncated, flamegraph_truncated(ag->flame));
	counter_set(&counter_flamegraph_folded, flamegraph_pruned(ag->flame));
	pthread_mutex_lock(&ag->agg_lock);
	/* for /healthz and /metrics */
	ag->write_failures += err || ferr || gerr;
	ag->total_gpu_kernels += gpu_kernels;
	ag->last_write_ok = !(err || ferr || gerr);
	ag->last_flush_mono = clock_mono_ns();
	if (ag->last_write_ok)
		ag->last_written_mono = ag->last_flush_mono;
	pthread_mutex_unlock(&ag->agg_lock);
	if (skip)
		fprintf(stderr, "profd: interval %u: not profiled (--probabilistic-threshold "
			"%u), no profile written\n", ag->intervals,
			ag->cfg->probabilistic_threshold);
	else
		status_line(ag, a, delta, processes, path, err,
			    flame_path, ferr);
	apply_retention(ag);
	agent_export_warn(ag->exp);
	if (gpu_path[0] || gerr)
		fprintf(stderr, "profd: interval %u: %llu GPU kernels, %.3f s of GPU time%s; "
			"%s %s\n", ag->intervals, (unsigned long long)gpu_kernels,
			gpu_ns / 1e9, gpu_kernels ? "" : " (PC samples only)",
			gerr ? "FAILED to write" : "wrote",
			gpu_path[0] ? gpu_path : "the GPU profile");
	profile_free(p);
	aggregate_free(a);
}
