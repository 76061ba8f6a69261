// SPDX-License-Identifier: GPL-2.0
/*
 * agent.c - one profd run (see agent.h).
 *
 * Threads: the reader thread polls the ringbuf and turns every record into
 * process-table updates and aggregated stacks; the main thread keeps the
 * interval clock, waits for signals, and at each interval end swaps the
 * aggregation table and builds/writes the profile without stopping the
 * reader.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_internal.h"
#include "agent/debug.h"
#include "bpf/unwind_table.h"	/* UNWIND_MAX_SHARDS */
#include "agent/memory.h"
#include "agent/metrics.h"
#include "output/retention.h"
#include "bpf/gpu_events.h"
#include "agent/exec.h"
#include "agent/export.h"
#include "bpf/nvtx_events.h"
#include "aggregate/aggregate.h"
#include "gpu/gpu.h"
#include "output/flamegraph.h"
#include "output/pprof.h"
#include "proc/process.h"
#include "python/python.h"
#include "symbol/kallsyms.h"
#include "symbol/kernel_notes.h"
#include "symbol/symbolizer.h"
#include "tracer/counters.h"
#include "tracer/preflight.h"
#include "tracer/tracer.h"
#include "unwind/async.h"
#include "unwind/loader.h"
#include "util/clock.h"

/* How long profd waits at exit for the OTLP endpoint to take the rest. */
#define EXPORT_STOP_TIMEOUT_MS 5000

/*
 * Close the NVTX ranges still open, send what is pending (the endpoint
 * gets a few seconds) and say what was exported.
 */
static void export_finish(struct agent *ag)
{
	struct agent_export_stats st;

	if (!ag->exp)
		return;
	agent_export_stop(ag->exp, EXPORT_STOP_TIMEOUT_MS);
	agent_export_stats(ag->exp, &st);
	if (agent_export_endpoint(ag->exp)[0])
		fprintf(stderr, "profd: OTLP: %llu spans, %llu log records from NVTX; "
			"%llu items sent to %s, %llu dropped\n",
			(unsigned long long)st.nvtx_spans, (unsigned long long)st.nvtx_logs,
			(unsigned long long)st.otlp_items_sent, agent_export_endpoint(ag->exp),
			(unsigned long long)st.otlp_items_dropped);
	else if (st.nvtx_spans || st.nvtx_logs)
		fprintf(stderr, "profd: NVTX: %llu spans, %llu log records not exported "
			"(no --otlp-endpoint / OTEL_EXPORTER_OTLP_ENDPOINT)\n",
			(unsigned long long)st.nvtx_spans, (unsigned long long)st.nvtx_logs);
}


/* A process is alive while /proc/PID/stat exists and it is not a zombie. */
static bool pid_alive(pid_t pid)
{
	char path[64], buf[512], *paren;
	FILE *f;
	bool alive = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		paren = strrchr(buf, ')');	/* comm may hold spaces and ')' */
		alive = paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
	}
	fclose(f);
	return alive;
}

static bool pids_alive(const struct agent_config *cfg)
{
	for (size_t i = 0; i < cfg->npids; i++)
		if (pid_alive(cfg->pids[i]))
			return true;
	return false;
}

/* Wait for a signal until @deadline (CLOCK_MONOTONIC ns); true if one came. */
static bool wait_signal(const sigset_t *set, uint64_t deadline, int *sig,
			bool *from_tty)
{
	siginfo_t info;
	uint64_t now = clock_mono_ns();
	uint64_t left = deadline > now ? deadline - now : 0;
	struct timespec ts = {
		.tv_sec = left / 1000000000ULL,
		.tv_nsec = left % 1000000000ULL,
	};
	int s = sigtimedwait(set, &info, &ts);

	if (s > 0) {
		*sig = s;
		/* the terminal signals its whole foreground group (Ctrl-C) */
		*from_tty = info.si_code == SI_KERNEL;
		return true;
	}
	return false;
}

int agent_run(const struct agent_config *cfg)
{
	struct agent ag = { .cfg = cfg };
	uint64_t start, next_flush, end, interval_ns, now, next_draw, draw_ns;
	char *inject_lib = NULL, *private_lib = NULL;
	sigset_t set;
	int sig = 0, ret = 1;
	bool stop = false, forwarded = false, from_tty = false;

	pthread_mutex_init(&ag.sym_lock, NULL);
	pthread_mutex_init(&ag.agg_lock, NULL);
	/* Block the stop signals in every thread; the main thread waits on them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);	/* the terminal or ssh session went away */
	if (cfg->exec_argv)
		sigaddset(&set, SIGCHLD);	/* the command exited */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* a closed stderr pipe must not kill profd before it writes its files */
	signal(SIGPIPE, SIG_IGN);

	if (cfg->exec_argv) {
		/* before the BPF load: a typo should not cost seconds */
		int err = exec_find_command(cfg->exec_argv[0]);

		if (err) {
			fprintf(stderr, "profd: error: cannot run %s: %s\n",
				cfg->exec_argv[0], err == -ENOENT ?
				"command not found" : strerror(-err));
			ret = err == -EACCES ? 126 : 127;
			goto out;
		}
	}
	if (agent_inject_library(cfg, &inject_lib, &private_lib))
		goto out;
	if (cfg->exec_argv) {
		/* the child waits for the programs to load before it execs */
		int err = exec_child_start(&ag.child, cfg->exec_argv, inject_lib);

		if (err) {
			fprintf(stderr, "profd: error: cannot start %s: %s\n",
				cfg->exec_argv[0], strerror(-err));
			goto out;
		}
	}
	/* the first probabilistic interval: sampling starts on or off */
	ag.sampling_on = agent_probabilistic_draw(&ag);
	ag.interval_sampled = ag.sampling_on;
	/* before the BPF load: a taken port should not cost seconds */
	if (cfg->http_address && agent_metrics_start(&ag))
		goto out;
	if (agent_setup(&ag, inject_lib))
		goto out;
	if (pthread_create(&ag.reader, NULL, agent_reader_main, &ag)) {
		fprintf(stderr, "profd: error: cannot start the reader thread\n");
		goto out;
	}
	pthread_setname_np(ag.reader, "profd-reader");
	start = clock_mono_ns();
	ag.run_start_mono = start;
	ag.on_since = ag.sampling_on ? start : 0;
	/* the first profile covers sampling time, not the BPF load before it */
	pthread_mutex_lock(&ag.agg_lock);
	ag.cur->start_ns = clock_real_ns();
	ag.ready = true;
	ag.last_write_ok = true;
	pthread_mutex_unlock(&ag.agg_lock);
	interval_ns = (uint64_t)cfg->interval_s * 1000000000ULL;
	end = cfg->duration_s ? start + (uint64_t)cfg->duration_s * 1000000000ULL : UINT64_MAX;
	next_flush = start + interval_ns;
	draw_ns = (uint64_t)cfg->probabilistic_interval_s * 1000000000ULL;
	next_draw = cfg->probabilistic_threshold < 100 ? start + draw_ns : UINT64_MAX;
	fprintf(stderr, "profd: sampling %u CPUs at %u Hz%s, writing to %s\n",
		tracer_ncpus(ag.tracer), cfg->frequency_hz,
		cfg->npids ? " (--pid)" : cfg->exec_argv ? " (exec)" : "",
		cfg->output_dir);
	if (cfg->probabilistic_threshold < 100)
		fprintf(stderr, "profd: probabilistic profiling: %u%% of %u s intervals; "
			"this one: %s\n", cfg->probabilistic_threshold,
			cfg->probabilistic_interval_s, ag.sampling_on ? "on" : "off");
	if (cfg->exec_argv) {
		int err = exec_child_release(&ag.child);

		if (err) {
			fprintf(stderr, "profd: error: cannot run %s: %s\n",
				cfg->exec_argv[0], strerror(-err));
			ag.exec_failed = err == -EACCES ? 126 : 127;
			stop = true;
		}
	}

	while (!stop) {
		uint64_t deadline = next_flush < end ? next_flush : end;
		bool draw_due, draw_on, switched, flushed;

		if (next_draw < deadline)
			deadline = next_draw;

		/* wake at least once a second to notice --pid targets exiting */
		now = clock_mono_ns();
		if (deadline > now + 1000000000ULL)
			deadline = now + 1000000000ULL;
		if (wait_signal(&set, deadline, &sig, &from_tty) && sig != SIGCHLD) {
			if (cfg->exec_argv && !forwarded && !ag.child.exited) {
				/* let the command stop (and flush its GPU records)
				 * first; a terminal's signal reached it already */
				fprintf(stderr, "profd: %s: %s %s; again to stop profd "
					"at once\n", strsignal(sig),
					from_tty ? "waiting for" : "passing it to",
					cfg->exec_argv[0]);
				if (!from_tty)
					kill(ag.child.pid, sig);
				forwarded = true;
				continue;
			}
			fprintf(stderr, "profd: %s: writing what was collected\n",
				strsignal(sig));
			break;
		}
		if (cfg->exec_argv && exec_child_reap(&ag.child, false)) {
			if (WIFSIGNALED(ag.child.status))
				fprintf(stderr, "profd: %s killed by %s (status %d)\n",
					cfg->exec_argv[0], strsignal(WTERMSIG(ag.child.status)),
					exec_child_exit_code(&ag.child));
			else
				fprintf(stderr, "profd: %s exited (status %d)\n",
					cfg->exec_argv[0], exec_child_exit_code(&ag.child));
			break;
		}
		if (ag.reader_err)
			break;
		now = clock_mono_ns();
		if (now >= end)
			break;
		/*
		 * Switching off comes before the flush: the samples still in the
		 * ringbuf then are read into the interval ending now, not into
		 * the next one, which is not profiled.
		 */
		flushed = false;
		draw_due = now >= next_draw;
		draw_on = draw_due && agent_probabilistic_draw(&ag);
		switched = draw_due && !draw_on && agent_probabilistic_set(&ag, false);
		if (cfg->npids && !pids_alive(cfg)) {
			fprintf(stderr, "profd: every --pid process exited\n");
			stop = true;
		} else if (now >= next_flush) {
			/* a draw's "on" takes effect at the boundary, in agent_flush() */
			ag.draw_on_pending = draw_on;
			ag.draw_switched = false;
			agent_flush(&ag);
			if (ag.draw_on_pending) {	/* no boundary: the swap failed */
				ag.draw_on_pending = false;
				ag.draw_switched = agent_probabilistic_set(&ag, true);
			}
			flushed = true;
			next_flush += interval_ns;
			if (next_flush <= now)
				next_flush = now + interval_ns;
		}
		/* after the flush: a draw at an interval's end is the next one's */
		if (draw_due) {
			if (draw_on)
				switched = flushed ? ag.draw_switched :
					   agent_probabilistic_set(&ag, true);
			if (switched && cfg->verbose)
				fprintf(stderr, "profd: probabilistic profiling: sampling %s "
					"for %u s\n", draw_on ? "on" : "off",
					cfg->probabilistic_interval_s);
			next_draw += draw_ns;
			if (next_draw <= now)
				next_draw = now + draw_ns;
		}
	}
	/* Stop sampling, let the reader drain the ringbuf, write the rest. */
	tracer_set_sampling(ag.tracer, false);
	__atomic_store_n(&ag.stop_reader, 1, __ATOMIC_RELEASE);
	pthread_join(ag.reader, NULL);
	/* the last interval counts every NVTX record the reader queued */
	agent_export_quiesce(ag.exp);
	agent_publish_stats(&ag);
	agent_flush(&ag);
	if (ag.write_failures)
		fprintf(stderr, "profd: error: the files of %u of %u intervals could "
			"not all be written to %s (see above)\n", ag.write_failures, ag.intervals,
			cfg->output_dir);
	else {
		char gpu[48] = "";

		if (ag.total_gpu_kernels)
			snprintf(gpu, sizeof(gpu), " and %llu GPU kernels",
				 (unsigned long long)ag.total_gpu_kernels);
		char off[64] = "";

		if (ag.skipped_intervals)
			snprintf(off, sizeof(off), " (%u intervals not profiled)",
				 ag.skipped_intervals);
		if (ag.intervals && ag.skipped_intervals == ag.intervals && !gpu[0])
			fprintf(stderr, "profd: done: no interval was profiled "
				"(--probabilistic-threshold %u): nothing written\n",
				cfg->probabilistic_threshold);
		else
			fprintf(stderr, "profd: done: %llu samples%s in %u profiles%s; "
				"flame graph: %s/flamegraph.html\n",
				(unsigned long long)ag.total_samples, gpu,
				ag.intervals - ag.skipped_intervals, off, cfg->output_dir);
	}
	export_finish(&ag);
	ret = ag.reader_err || ag.write_failures ? 1 : 0;
	if (cfg->exec_argv && !ret) {
		if (ag.exec_failed)
			ret = ag.exec_failed;
		else if (exec_child_reap(&ag.child, false))
			ret = exec_child_exit_code(&ag.child);
		else {
			fprintf(stderr, "profd: %s (pid %d) is still running, "
				"no longer profiled\n", cfg->exec_argv[0], ag.child.pid);
			ret = sig ? 128 + sig : 1;
		}
	}
out:
	if (cfg->exec_argv && ag.child.go_fd >= 0)
		exec_child_kill(&ag.child);	/* never released: it must not run */
	agent_teardown(&ag);
	exec_private_library_remove(private_lib);
	free(inject_lib);
	return ret;
}
