// SPDX-License-Identifier: GPL-2.0
/*
 * flush.c - the end of an interval: its profiles to the sinks (see
 * agent_internal.h).
 *
 * Owns: what the main thread does at each interval end and once at exit
 * (agent_flush()): swap the aggregation table (interval.c), take the
 * counters' deltas, build the CPU profile with its comments (version,
 * configuration, every counter) and the GPU profiles (kernel time, PC
 * samples), hand each to every sink the run opened (src/output/sink.h:
 * pprof files, the flame graph, OTLP) through sinks_consume(), end the
 * interval for the sinks, print the status line, let the sinks prune
 * (--output-retention) and publish their figures. It never names a sink.
 *
 * The reader keeps aggregating into the next interval's table meanwhile;
 * an output that cannot be written is counted (lost.write_error, and a
 * CPU profile's samples lost.write_failed) and the run goes on.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "agent/export.h"
#include "aggregate/aggregate.h"
#include "gpu/gpu.h"
#include "counters/counters.h"
#include "output/sink.h"
#include "proc/process_jit.h"
#include "tracer/tracer.h"
#include "util/clock.h"

/* What writing an interval's outputs counts (write_error: also in /metrics). */
COUNTER_DEFINE(write_error, COUNTER_LOST, "profiles or flame graphs not written");
COUNTER_DEFINE(write_failed, COUNTER_LOST,
	       "samples of CPU profiles that could not be written");
COUNTER_DEFINE(flamegraph_truncated, COUNTER_PARTIAL,
	       "flame graph full: paths cut short");
COUNTER_DEFINE(flamegraph_folded, COUNTER_PARTIAL,
	       "flame graph full: light frames folded into their callers");
COUNTER_DEFINE(retention_files_removed, COUNTER_STAT,
	       "old profiles deleted by --output-retention");

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
			const uint64_t *delta, uint64_t processes, const char *path,
			int write_err, const char *also_failed)
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
		"%llu processes tracked, %llu lost%s%s%s, %llu partial events%s%s%s, %s %s%s\n",
		ag->intervals, (unsigned long long)a->nsamples,
		(unsigned long long)a->nstacks, (unsigned long long)processes,
		(unsigned long long)nlost, lo ? " (" : "", lost + (lo ? 1 : 0),
		lo ? ")" : "", (unsigned long long)npartial, po ? " (" : "",
		partial + (po ? 1 : 0), po ? ")" : "",
		write_err ? "FAILED to write" : "wrote", path, also_failed);
}

/* Most device lines in a profile's comments. */
#define GPU_COMMENT_DEVICES 8

/*
 * Hand @p of @kind covering @start_ns..@end_ns (CLOCK_REALTIME; @p NULL:
 * it could not be built) to every sink, --label added to it first, and
 * free it. @res gets the first error and the file written. Returns
 * @res->err.
 */
static int output_profile(struct agent *ag, enum profile_kind kind, struct profile *p,
			  uint64_t start_ns, uint64_t end_ns, struct sink_result *res)
{
	struct finished_profile fp = {
		.kind = kind, .start_ns = start_ns, .end_ns = end_ns,
		.profile = p, .err = p ? 0 : -ENOMEM,
	};

	/* --label: on every sample of every output, on every OTLP resource */
	for (size_t i = 0; !fp.err && i < ag->cfg->nlabels; i++)
		fp.err = profile_add_common_label(p, ag->cfg->labels[i].key,
						  ag->cfg->labels[i].value);
	sinks_consume(&ag->sinks, &fp, res);
	profile_free(p);
	return res->err;
}

/*
 * The GPU profiles of the interval: kernel time by launching stack
 * (gpu) and PC samples (gpu-pc), each only when the interval has some.
 * @paths gets the files written, for the status line.
 */
static int gpu_profiles(struct agent *ag, const struct build_opts *bo,
			uint64_t end, char *paths, size_t len,
			uint64_t *kernels, uint64_t *ns)
{
	struct gpu_interval *iv;
	struct sink_result res;
	uint64_t start = ag->gpu_interval_start;
	int err = 0, e;

	if (!ag->gpu || !(iv = gpu_swap(ag->gpu)))
		return 0;
	ag->gpu_interval_start = end;
	*kernels = gpu_interval_kernels(iv);
	*ns = gpu_interval_time_ns(iv);
	if (gpu_interval_kernels(iv)) {
		e = output_profile(ag, PROFILE_KIND_GPU, gpu_build_kernel_profile(iv, bo, start),
				   start, end, &res);
		err = err ? err : e;
		if (!e)
			snprintf(paths, len, "%s", res.where);
	}
	if (gpu_interval_pc_samples(iv)) {
		size_t used = strlen(paths);

		e = output_profile(ag, PROFILE_KIND_GPU_PC, gpu_build_pc_profile(iv, bo, start),
				   start, end, &res);
		err = err ? err : e;
		if (!e)
			snprintf(paths + used, len - used, "%s%s", used ? ", " : "", res.where);
	}
	gpu_interval_free(iv);
	return err;
}

/*
 * The probability that a blocking switch was recorded, as the BPF draw
 * makes it of --off-cpu-threshold (src/tracer/tracer.c: a 32-bit
 * fraction), inverted: what the wall-clock view multiplies recorded
 * off-CPU time by. 0 when nothing is recorded.
 */
static double offcpu_scale(double threshold)
{
	uint64_t t = (uint64_t)(threshold * 4294967296.0);

	return t ? 4294967296.0 / (double)t : 0;
}

/*
 * The interval's off-CPU profiles (--off-cpu): offcpu, the AGG_OFF_CPU
 * stacks of @a, and wall, its CPU and off-CPU stacks as wall-clock
 * time with what that time holds in two more comments; @bo's comments in
 * both. @paths gets the files written. Returns the first error.
 */
static int offcpu_profiles(struct agent *ag, const struct aggregate *a,
			   const struct build_opts *bo, uint64_t end, char *paths, size_t len)
{
	static const struct { uint32_t agg; enum profile_kind kind; } views[] = {
		{ AGG_OFF_CPU, PROFILE_KIND_OFF_CPU },
		{ AGG_WALL, PROFILE_KIND_WALL },
	};
	struct build_opts ob = *bo;
	char note[2][160];
	int err = 0;

	ob.off_cpu_scale = offcpu_scale(ag->cfg->off_cpu_threshold);
	snprintf(note[0], sizeof(note[0]), "wall = cpu (samples x %llu ns) + off_cpu "
		 "(recorded blocked ns x %.6g = 1/off_cpu_threshold %g)",
		 (unsigned long long)bo->period_ns, ob.off_cpu_scale,
		 ag->cfg->off_cpu_threshold);
	snprintf(note[1], sizeof(note[1]), "wall leaves out run-queue waits after a "
		 "preemption and waits under off_cpu_min_block=%lluns",
		 (unsigned long long)ag->cfg->off_cpu_min_block_ns);
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		struct sink_result res = { 0 };
		struct profile *p;
		size_t used = strlen(paths);
		int e;

		ob.kind = views[i].agg;
		p = aggregate_build_profile(a, &ob);
		for (int c = 0; p && views[i].agg == AGG_WALL && c < 2; c++)
			if (profile_add_comment(p, note[c])) {
				profile_free(p);
				p = NULL;	/* written as out of memory */
			}
		e = output_profile(ag, views[i].kind, p, a->start_ns, end, &res);
		err = err ? err : e;
		if (!e)
			snprintf(paths + used, len - used, "%s%s", used ? ", " : "",
				 res.where);
	}
	return err;
}

/*
 * The sinks' figures (sinks_stats()) where /metrics and the counters
 * read them: the flame graph's memory, its truncated and folded
 * counters, the files --output-retention removed.
 */
static void publish_sink_stats(struct agent *ag)
{
	struct sink_stats st;

	sinks_stats(&ag->sinks, &st);
	__atomic_store_n(&ag->flame_bytes, st.cache_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&ag->flame_names, st.cache_entries, __ATOMIC_RELAXED);
	__atomic_store_n(&ag->flame_pruned, st.cache_evictions, __ATOMIC_RELAXED);
	/* totals since the start: in the next interval's delta */
	counter_set(&counter_flamegraph_truncated, st.truncated);
	counter_set(&counter_flamegraph_folded, st.folded);
	counter_set(&counter_retention_files_removed, st.removed_files);
	pthread_mutex_lock(&ag->agg_lock);
	ag->retention_removed_files = st.removed_files;
	ag->retention_removed_bytes = st.removed_bytes;
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

/* What the flame graph's GPU tab says while no kernel was timed. */
#define GPU_EMPTY_NOTE "No GPU kernels were timed: no CUDA program ran with " \
	"profd's injection library (`profd exec -- COMMAND` loads it; " \
	"CUDA_INJECTION64_PATH names it for other programs)."

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

/*
 * End the interval for every sink: each that fails is counted
 * (write_error, in @delta too) and named in @also (the status line's
 * "; FAILED to write ..."). Returns whether one failed.
 */
static bool end_sinks(struct agent *ag, const struct sink_interval *iv,
		      uint64_t *delta, char *also, size_t len)
{
	struct sink_result res[SINKS_MAX];
	unsigned int n = sinks_interval_end(&ag->sinks, iv, res, SINKS_MAX);
	size_t off = 0;

	for (unsigned int i = 0; i < n && i < SINKS_MAX; i++) {
		count_written(ag, delta, &counter_write_error, 1);
		if (off < len)
			off += snprintf(also + off, len - off, "; FAILED to write %s",
					res[i].where[0] ? res[i].where : "an output");
	}
	return n;
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
	struct sink_result cpu = { 0 };
	char cpu_note[320], also_failed[PATH_MAX + 64] = "";
	struct aggregate *a;
	uint32_t ncomments = 0;
	char gpu_path[2 * PATH_MAX + 8] = "";	/* gpu and gpu-pc files */
	char offcpu_path[2 * PATH_MAX + 8] = "";	/* offcpu and wall files */
	int oerr = 0;
	uint64_t gpu_kernels = 0, gpu_ns = 0;
	int err = 0, gerr = 0;
	bool skip, ferr;

	a = agent_interval_swap(ag, &end, agent_probabilistic_boundary);
	if (!a)
		return;	/* no boundary (no callback): keep aggregating */
	pthread_mutex_lock(&ag->agg_lock);
	processes = ag->procs_stats.processes;
	us = ag->unwind_stats;
	pthread_mutex_unlock(&ag->agg_lock);

	struct build_opts bo = {
		.period_ns = 1000000000ULL / ag->cfg->frequency_hz,
		.end_ns = end,
		.ksyms = ag->ksyms,
		.kernel_build_id = ag->kernel_build_id,
		.sym_lock = &ag->sym_lock,
		.rts = ag->rts,
	};
	struct profile *prof = NULL;

	/* probabilistic profiling: an interval never sampled has no profile */
	skip = !a->nsamples && !ag->ended_sampled;
	ag->interval_sampled = ag->sampling_on;
	/* objects still being opened for this interval's samples: a bounded wait */
	if (!skip) {
		uint64_t wait = (uint64_t)ag->cfg->interval_s * 1000000000ULL / 4;
		size_t nsnaps;
		struct proc_snapshot **snaps = aggregate_snapshots(a, &nsnaps);

		/* JIT files once more: records written since the last read
		 * (a JIT that buffers them writes late) name this interval */
		process_jit_read_all(ag->procs, snaps, nsnaps);
		free(snaps);
		object_loader_wait(ag->objects, wait < OBJECTS_FLUSH_WAIT_NS ?
				   wait : OBJECTS_FLUSH_WAIT_NS);
		/* symbolized before the counters are read: what naming this
		 * interval's frames counted (symbols shed or pending, lines)
		 * is in this interval's comments and status line */
		prof = aggregate_build_profile(a, &bo);
	}
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
	bo.comments = comment_ptrs;
	bo.ncomments = ncomments;
	for (uint32_t i = 0; prof && i < ncomments; i++)
		if (profile_add_comment(prof, comment_ptrs[i])) {
			profile_free(prof);
			prof = NULL;	/* written as out of memory */
		}
	if (!skip)
		err = output_profile(ag, PROFILE_KIND_CPU, prof, a->start_ns, end, &cpu);
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
	if (ag->offcpu && !skip) {
		oerr = offcpu_profiles(ag, a, &bo, end, offcpu_path, sizeof(offcpu_path));
		if (oerr)
			count_written(ag, delta, &counter_write_error, 1);
	}
	gerr = gpu_profiles(ag, &bo, end, gpu_path, sizeof(gpu_path),
			    &gpu_kernels, &gpu_ns);
	if (gerr)
		count_written(ag, delta, &counter_write_error, 1);

	struct sink_interval iv = {
		.number = ag->intervals,
		.end_ns = end,
		.why_empty = { [PROFILE_KIND_CPU] = cpu_note,
			       [PROFILE_KIND_GPU] = GPU_EMPTY_NOTE },
	};

	cpu_empty_note(ag, bpf_now, cpu_note, sizeof(cpu_note));
	ferr = end_sinks(ag, &iv, delta, also_failed, sizeof(also_failed));
	pthread_mutex_lock(&ag->agg_lock);
	/* for /healthz and /metrics */
	ag->write_failures += err || ferr || gerr || oerr;
	ag->total_gpu_kernels += gpu_kernels;
	ag->last_write_ok = !(err || ferr || gerr || oerr);
	ag->last_flush_mono = clock_mono_ns();
	if (ag->last_write_ok)
		ag->last_written_mono = ag->last_flush_mono;
	pthread_mutex_unlock(&ag->agg_lock);
	if (skip)
		fprintf(stderr, "profd: interval %u: not profiled (--probabilistic-threshold "
			"%u), no profile written\n", ag->intervals,
			ag->cfg->probabilistic_threshold);
	else
		status_line(ag, a, delta, processes, cpu.where, err, also_failed);
	sinks_prune(&ag->sinks, &iv);
	publish_sink_stats(ag);
	agent_export_warn(ag->exp);
	if (ag->offcpu && !skip)
		fprintf(stderr, "profd: interval %u: %llu off-CPU periods counted; %s %s\n",
			ag->intervals, (unsigned long long)a->nadded[AGG_OFF_CPU],
			oerr ? "FAILED to write" : "wrote",
			offcpu_path[0] ? offcpu_path : "the off-CPU profiles");
	if (gpu_path[0] || gerr)
		fprintf(stderr, "profd: interval %u: %llu GPU kernels, %.3f s of GPU time%s; "
			"%s %s\n", ag->intervals, (unsigned long long)gpu_kernels,
			gpu_ns / 1e9, gpu_kernels ? "" : " (PC samples only)",
			gerr ? "FAILED to write" : "wrote",
			gpu_path[0] ? gpu_path : "the GPU profile");
	aggregate_free(a);
}
