// SPDX-License-Identifier: GPL-2.0
/*
 * agent.c - one profd run (see agent.h).
 *
 * Owns: agent_run() and the main thread's part of it: the stop signals,
 * `profd exec`'s command (found, started, released, its exit), the
 * interval and probabilistic clocks, and the run's end (the last
 * interval, the summary, the exit status). What it calls lives beside it:
 * setup.c sets up and takes down, reader.c is the reader thread,
 * flush.c writes an interval's files, probabilistic.c switches sampling.
 *
 * Threads: the reader thread polls the ringbuf and turns every record into
 * process-table updates and aggregated stacks; the main thread keeps the
 * interval clock, waits for signals, and at each interval end swaps the
 * aggregation table and builds/writes the profile without stopping the
 * reader.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/agent_internal.h"
#include "agent/exec.h"
#include "agent/export.h"
#include "agent/metrics.h"
#include "tracer/tracer.h"
#include "util/clock.h"

/* The main thread's run: its signals and its clock (CLOCK_MONOTONIC ns). */
struct run {
	sigset_t set;		/* the stop signals, blocked in every thread */
	int sig;		/* the last signal that came; 0: none */
	bool from_tty;		/* ... sent by the terminal (Ctrl-C) */
	bool forwarded;		/* `profd exec`: one was passed to the command */
	bool stop;		/* the loop ends after this turn */
	uint64_t end;		/* --duration's end; UINT64_MAX: none */
	uint64_t interval_ns;	/* --profile-interval */
	uint64_t next_flush;	/* the current interval's end */
	uint64_t draw_ns;	/* --probabilistic-interval */
	uint64_t next_draw;	/* the next draw; UINT64_MAX: none (threshold 100) */
};

/* What a wait of the main loop ended with. */
enum wake {
	WAKE_DUE,	/* a deadline, or nothing: see what is due */
	WAKE_AGAIN,	/* a signal passed to the command: wait again */
	WAKE_STOP,	/* the run ends */
};

/* How long profd waits at exit for the OTLP endpoint to take the rest. */
#define EXPORT_STOP_TIMEOUT_MS 1000

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

/* Block the stop signals in every thread; the main thread waits on them. */
static void block_signals(const struct agent_config *cfg, sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);	/* the terminal or ssh session went away */
	if (cfg->exec_argv)
		sigaddset(set, SIGCHLD);	/* the command exited */
	pthread_sigmask(SIG_BLOCK, set, NULL);
	/* a closed stderr pipe must not kill profd before it writes its files */
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Before the BPF load: `profd exec`'s command found, the injection
 * library chosen, the command started (it waits to be released). Returns
 * 0, or the exit status (printed why): 126/127 when the command cannot
 * run, else 1.
 */
static int run_prepare(struct agent *ag, char **inject_lib, char **private_lib)
{
	const struct agent_config *cfg = ag->cfg;

	if (cfg->exec_argv) {
		/* before the BPF load: a typo should not cost seconds */
		int err = exec_find_command(cfg->exec_argv[0]);

		if (err) {
			fprintf(stderr, "profd: error: cannot run %s: %s\n",
				cfg->exec_argv[0], err == -ENOENT ?
				"command not found" : strerror(-err));
			return err == -EACCES ? 126 : 127;
		}
	}
	if (agent_inject_library(cfg, inject_lib, private_lib))
		return 1;
	if (cfg->exec_argv) {
		/* the child waits for the programs to load before it execs */
		int err = exec_child_start(&ag->child, cfg->exec_argv, *inject_lib);

		if (err) {
			fprintf(stderr, "profd: error: cannot start %s: %s\n",
				cfg->exec_argv[0], strerror(-err));
			return 1;
		}
	}
	return 0;
}

/* The run starts now: its clock, and the first profile's start. */
static void run_clock_start(struct agent *ag, struct run *r)
{
	const struct agent_config *cfg = ag->cfg;
	uint64_t start = clock_mono_ns();

	ag->run_start_mono = start;
	ag->on_since = ag->sampling_on ? start : 0;
	/* the first profile covers sampling time, not the BPF load before it */
	pthread_mutex_lock(&ag->agg_lock);
	ag->cur->start_ns = clock_real_ns();
	ag->ready = true;
	ag->last_write_ok = true;
	pthread_mutex_unlock(&ag->agg_lock);
	r->interval_ns = (uint64_t)cfg->interval_s * 1000000000ULL;
	r->end = cfg->duration_s ? start + (uint64_t)cfg->duration_s * 1000000000ULL : UINT64_MAX;
	r->next_flush = start + r->interval_ns;
	r->draw_ns = (uint64_t)cfg->probabilistic_interval_s * 1000000000ULL;
	r->next_draw = cfg->probabilistic_threshold < 100 ? start + r->draw_ns : UINT64_MAX;
}

/*
 * The first draw, /metrics, agent_setup(), the reader thread, the clock;
 * then `profd exec`'s command is released (when it cannot run, the run
 * stops at once: r->stop). Returns 0, or -1 (printed why).
 */
static int run_start(struct agent *ag, struct run *r, const char *inject_lib)
{
	const struct agent_config *cfg = ag->cfg;

	/* the first probabilistic interval: sampling starts on or off */
	ag->sampling_on = agent_probabilistic_draw(ag);
	ag->interval_sampled = ag->sampling_on;
	/* setenv() for libdebuginfod: before the first thread */
	if (agent_debuginfod_env(ag))
		return -1;
	/* before the BPF load: a taken port should not cost seconds */
	if (cfg->http_address && agent_metrics_start(ag))
		return -1;
	if (agent_setup(ag, inject_lib))
		return -1;
	if (pthread_create(&ag->reader, NULL, agent_reader_main, ag)) {
		fprintf(stderr, "profd: error: cannot start the reader thread\n");
		return -1;
	}
	pthread_setname_np(ag->reader, "profd-reader");
	run_clock_start(ag, r);
	fprintf(stderr, "profd: sampling %u CPUs at %u Hz%s, writing to %s\n",
		tracer_ncpus(ag->tracer), cfg->frequency_hz,
		cfg->npids ? " (--pid)" : cfg->exec_argv ? " (exec)" : "",
		cfg->output_dir);
	if (cfg->probabilistic_threshold < 100)
		fprintf(stderr, "profd: probabilistic profiling: %u%% of %u s intervals; "
			"this one: %s\n", cfg->probabilistic_threshold,
			cfg->probabilistic_interval_s, ag->sampling_on ? "on" : "off");
	if (cfg->exec_argv) {
		int err = exec_child_release(&ag->child);

		if (err) {
			fprintf(stderr, "profd: error: cannot run %s: %s\n",
				cfg->exec_argv[0], strerror(-err));
			ag->exec_failed = err == -EACCES ? 126 : 127;
			r->stop = true;
		}
	}
	return 0;
}

/*
 * A stop signal (r->sig) came. Under `profd exec` the first one is the
 * command's: it stops (and flushes its GPU records) first.
 */
static enum wake stop_signal(struct agent *ag, struct run *r)
{
	const struct agent_config *cfg = ag->cfg;

	if (cfg->exec_argv && !r->forwarded && !ag->child.exited) {
		/* let the command stop (and flush its GPU records)
		 * first; a terminal's signal reached it already */
		fprintf(stderr, "profd: %s: %s %s; again to stop profd "
			"at once\n", strsignal(r->sig),
			r->from_tty ? "waiting for" : "passing it to",
			cfg->exec_argv[0]);
		if (!r->from_tty)
			kill(ag->child.pid, r->sig);
		r->forwarded = true;
		return WAKE_AGAIN;
	}
	fprintf(stderr, "profd: %s: writing what was collected\n",
		strsignal(r->sig));
	return WAKE_STOP;
}

/*
 * Wait until the next interval end, draw or --duration's end, at most a
 * second, for a stop signal; then see whether `profd exec`'s command
 * exited or the reader failed.
 */
static enum wake run_wait(struct agent *ag, struct run *r)
{
	const struct agent_config *cfg = ag->cfg;
	uint64_t deadline = r->next_flush < r->end ? r->next_flush : r->end;
	uint64_t now;

	if (r->next_draw < deadline)
		deadline = r->next_draw;

	/* wake at least once a second to notice --pid targets exiting */
	now = clock_mono_ns();
	if (deadline > now + 1000000000ULL)
		deadline = now + 1000000000ULL;
	if (wait_signal(&r->set, deadline, &r->sig, &r->from_tty) && r->sig != SIGCHLD)
		return stop_signal(ag, r);
	if (cfg->exec_argv && exec_child_reap(&ag->child, false)) {
		if (WIFSIGNALED(ag->child.status))
			fprintf(stderr, "profd: %s killed by %s (status %d)\n",
				cfg->exec_argv[0], strsignal(WTERMSIG(ag->child.status)),
				exec_child_exit_code(&ag->child));
		else
			fprintf(stderr, "profd: %s exited (status %d)\n",
				cfg->exec_argv[0], exec_child_exit_code(&ag->child));
		return WAKE_STOP;
	}
	return ag->reader_err ? WAKE_STOP : WAKE_DUE;
}

/*
 * The interval ended (@now, CLOCK_MONOTONIC ns): write it. A draw's "on"
 * (@draw_on) takes effect at its boundary, in agent_flush().
 */
static void end_interval(struct agent *ag, struct run *r, bool draw_on, uint64_t now)
{
	ag->draw_on_pending = draw_on;
	ag->draw_switched = false;
	agent_flush(ag);
	if (ag->draw_on_pending) {	/* no boundary: the swap failed */
		ag->draw_on_pending = false;
		ag->draw_switched = agent_probabilistic_set(ag, true);
	}
	r->next_flush += r->interval_ns;
	if (r->next_flush <= now)
		r->next_flush = now + r->interval_ns;
}

/*
 * One turn of the main loop: wait, then end the interval and draw when
 * they are due. Returns false when the run ends now.
 */
static bool run_turn(struct agent *ag, struct run *r)
{
	const struct agent_config *cfg = ag->cfg;
	bool draw_due, draw_on, switched, flushed = false;
	enum wake w = run_wait(ag, r);
	uint64_t now;

	if (w != WAKE_DUE)
		return w == WAKE_AGAIN;
	now = clock_mono_ns();
	if (now >= r->end)
		return false;
	/*
	 * Switching off comes before the flush: the samples still in the
	 * ringbuf then are read into the interval ending now, not into
	 * the next one, which is not profiled.
	 */
	draw_due = now >= r->next_draw;
	draw_on = draw_due && agent_probabilistic_draw(ag);
	switched = draw_due && !draw_on && agent_probabilistic_set(ag, false);
	if (cfg->npids && !pids_alive(cfg)) {
		fprintf(stderr, "profd: every --pid process exited\n");
		r->stop = true;
	} else if (now >= r->next_flush) {
		end_interval(ag, r, draw_on, now);
		flushed = true;
	}
	/* after the flush: a draw at an interval's end is the next one's */
	if (draw_due) {
		if (draw_on)
			switched = flushed ? ag->draw_switched :
				   agent_probabilistic_set(ag, true);
		if (switched && cfg->verbose)
			fprintf(stderr, "profd: probabilistic profiling: sampling %s "
				"for %u s\n", draw_on ? "on" : "off",
				cfg->probabilistic_interval_s);
		r->next_draw += r->draw_ns;
		if (r->next_draw <= now)
			r->next_draw = now + r->draw_ns;
	}
	return true;
}

/* Stop sampling, let the reader drain the ringbuf, write the rest. */
static void run_stop(struct agent *ag)
{
	tracer_set_sampling(ag->tracer, false);
	__atomic_store_n(&ag->stop_reader, 1, __ATOMIC_RELEASE);
	pthread_join(ag->reader, NULL);
	tracer_detach_probes_start(ag->tracer);	/* slow: beside the last flush */
	/* the last interval counts every NVTX record the reader queued */
	agent_export_quiesce(ag->exp);
	agent_publish_stats(ag);
	agent_flush(ag);
}

/* The run's last line: what was written, or that some of it was not. */
static void print_summary(const struct agent *ag)
{
	const struct agent_config *cfg = ag->cfg;

	if (ag->write_failures)
		fprintf(stderr, "profd: error: the files of %u of %u intervals could "
			"not all be written to %s (see above)\n", ag->write_failures, ag->intervals,
			cfg->output_dir);
	else {
		char gpu[48] = "";

		if (ag->total_gpu_kernels)
			snprintf(gpu, sizeof(gpu), " and %llu GPU kernels",
				 (unsigned long long)ag->total_gpu_kernels);
		char off[64] = "";

		if (ag->skipped_intervals)
			snprintf(off, sizeof(off), " (%u intervals not profiled)",
				 ag->skipped_intervals);
		if (ag->intervals && ag->skipped_intervals == ag->intervals && !gpu[0])
			fprintf(stderr, "profd: done: no interval was profiled "
				"(--probabilistic-threshold %u): nothing written\n",
				cfg->probabilistic_threshold);
		else
			fprintf(stderr, "profd: done: %llu samples%s in %u profiles%s; "
				"flame graph: %s/flamegraph.html\n",
				(unsigned long long)ag->total_samples, gpu,
				ag->intervals - ag->skipped_intervals, off, cfg->output_dir);
	}
}

/*
 * profd's exit status: 1 when the reader failed or files were not
 * written; under `profd exec` otherwise the command's (126/127: it could
 * not run), or 128 + the stop signal when it is still running.
 */
static int exit_status(struct agent *ag, const struct run *r)
{
	const struct agent_config *cfg = ag->cfg;
	int ret = ag->reader_err || ag->write_failures ? 1 : 0;

	if (cfg->exec_argv && !ret) {
		if (ag->exec_failed)
			ret = ag->exec_failed;
		else if (exec_child_reap(&ag->child, false))
			ret = exec_child_exit_code(&ag->child);
		else {
			fprintf(stderr, "profd: %s (pid %d) is still running, "
				"no longer profiled\n", cfg->exec_argv[0], ag->child.pid);
			ret = r->sig ? 128 + r->sig : 1;
		}
	}
	return ret;
}

int agent_run(const struct agent_config *cfg)
{
	struct agent ag = { .cfg = cfg };
	struct run r = { .sig = 0 };
	char *inject_lib = NULL, *private_lib = NULL;
	int ret;

	pthread_mutex_init(&ag.sym_lock, NULL);
	pthread_mutex_init(&ag.agg_lock, NULL);
	block_signals(cfg, &r.set);
	ret = run_prepare(&ag, &inject_lib, &private_lib);
	if (ret)
		goto out;
	if (run_start(&ag, &r, inject_lib)) {
		ret = 1;
		goto out;
	}
	while (!r.stop && run_turn(&ag, &r))
		;
	run_stop(&ag);
	print_summary(&ag);
	export_finish(&ag);
	ret = exit_status(&ag, &r);
out:
	if (cfg->exec_argv && ag.child.go_fd >= 0)
		exec_child_kill(&ag.child);	/* never released: it must not run */
	agent_teardown(&ag);
	exec_private_library_remove(private_lib);
	free(inject_lib);
	return ret;
}
