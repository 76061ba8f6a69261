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

/*
 * The injection library profd attaches to at start: --inject-library, or
 * libprofd_inject.so next to the binary, or in ../lib/profd/ (installed).
 * Resolved to an absolute path (the child's environment gets it). NULL
 * when there is none.
 */
static char *find_inject_library(const struct agent_config *cfg)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64], *slash;
	ssize_t n;

	if (cfg->inject_library)
		return realpath(cfg->inject_library, NULL);	/* checked in agent_run */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/libprofd_inject.so", exe);
	if (!access(cand, R_OK))
		return realpath(cand, NULL);
	snprintf(cand, sizeof(cand), "%s/../lib/profd/libprofd_inject.so", exe);
	if (!access(cand, R_OK))
		return realpath(cand, NULL);
	return NULL;
}

/*
 * --inject-library PATH must be a profd injection library: one line saying
 * what is wrong with it otherwise. @resolved is realpath(PATH) or NULL.
 */
static int check_inject_library(const char *path, const char *resolved)
{
	unsigned char magic[4] = { 0 };
	struct stat st;
	const char *why = NULL;
	FILE *f;

	if (!resolved || stat(resolved, &st))
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (!(f = fopen(resolved, "re")))
		why = strerror(errno);
	else {
		if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "\177ELF", 4))
			why = "not an ELF shared library";
		fclose(f);
	}
	if (why)
		fprintf(stderr, "profd: error: --inject-library %s: %s\n", path, why);
	return why ? -1 : 0;
}

/* GPU: the correlation state and the probes of profd's own library. */
static int gpu_setup(struct agent *ag, const char *lib)
{
	const struct agent_config *cfg = ag->cfg;
	struct gpu_opts go = {
		.launch_timeout_ns = (uint64_t)cfg->gpu_timeout_s * 1000000000ULL,
		.verbose = cfg->verbose,
	};
	int ret;

	ag->gpu = gpu_new(&go);
	ag->gpu_flame = flamegraph_new(0);
	if (ag->gpu_flame)
		flamegraph_set_budget(ag->gpu_flame, ag->budgets.flamegraph / 8);
	if (!ag->gpu || !ag->gpu_flame) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	ag->gpu_interval_start = clock_real_ns();
	/* --pid / exec: only the chosen processes' libraries, no full scans */
	gpu_discovery_init(&ag->discovery, !cfg->npids && !cfg->exec_argv,
			   agent_attach_gpu_library, ag);
	if (!lib) {
		if (cfg->exec_argv || cfg->verbose)
			fprintf(stderr, "profd: warning: no CUDA injection library "
				"(libprofd_inject.so) next to profd or in ../lib/profd/: "
				"GPU kernels are profiled only in processes that load a "
				"copy profd finds (use --inject-library PATH)\n");
		return 0;
	}
	/*
	 * Uprobes cost time to attach and more to detach (~0.1 s per probe
	 * site at exit), so system-wide and --pid runs attach to a copy of
	 * the library only once a process maps it (discovery below); a
	 * `profd exec` command maps its private copy from the start.
	 */
	if (!cfg->exec_argv && !cfg->inject_library)
		return 0;
	ret = tracer_gpu_attach(ag->tracer, lib);
	if (ret < 0) {
		fprintf(stderr, "profd: error: cannot attach to the CUDA injection "
			"library %s: %s\n", cfg->inject_library ? cfg->inject_library : lib,
			ret == -ESRCH ? "it has no profd probes" :
			ret == -EBADF || ret == -EINVAL || ret == -ENOEXEC ?
			"not a profd injection library (bad ELF or no USDT notes)" :
			strerror(-ret));
		return -1;
	}
	return 0;
}

/* OTLP export (--otlp-endpoint or OTEL_*) and NVTX ranges (with the GPU library). */
static int export_setup(struct agent *ag)
{
	const struct agent_config *cfg = ag->cfg;
	struct agent_export_config xc = {
		.endpoint = cfg->otlp_endpoint,
		.protocol = cfg->otlp_protocol,
		.insecure = cfg->otlp_insecure,
		.nvtx = cfg->gpu,
		.nvtx_max_spans_per_sec = cfg->nvtx_max_spans_per_sec,
		.labels = cfg->labels,
		.nlabels = cfg->nlabels,
		.verbose = cfg->verbose,
	};
	char err[256] = "";

	if (agent_export_new(&xc, &ag->exp, err, sizeof(err))) {
		if (cfg->otlp_endpoint || cfg->otlp_protocol) {
			fprintf(stderr, "profd: error: OTLP export: %s\n",
				err[0] ? err : "cannot start");
			return -1;
		}
		/* a bad OTEL_* variable must not stop profiling: go on without */
		fprintf(stderr, "profd: warning: OTLP export and NVTX off: %s\n",
			err[0] ? err : "cannot start");
		ag->exp = NULL;
	}
	if (ag->exp && agent_export_endpoint(ag->exp)[0])
		fprintf(stderr, "profd: exporting OTLP to %s\n", agent_export_endpoint(ag->exp));
	return 0;
}

static int agent_setup(struct agent *ag, const char *inject_lib)
{
	const struct agent_config *cfg = ag->cfg;
	unsigned int scale = cfg->bpf_map_scale_factor;
	struct tracer_opts to = {
		.frequency_hz = cfg->frequency_hz,
		.pids = cfg->exec_argv ? &ag->child.pid : cfg->pids,
		.npids = cfg->exec_argv ? 1 : cfg->npids,
		.follow_children = cfg->exec_argv != NULL,
		.include_idle = cfg->include_idle,
		.max_stack_depth = cfg->max_stack_depth,
		.ringbuf_bytes = 8u << 20,
		.gpu_ringbuf_bytes = cfg->gpu ? 8u << 20 : 4096,
		.verbose = cfg->verbose,
		.dwarf_unwinding = cfg->dwarf_unwinding,
		.max_processes = cfg->max_processes,
		.verifier_log_level = cfg->bpf_verifier_log_level,
		.start_disabled = !ag->sampling_on,
	};
	uint64_t unwind_mib = cfg->unwind_memory_set ? cfg->unwind_memory_mib :
			      (uint64_t)cfg->unwind_memory_mib << scale;
	int err;

	/* the shards: at most UNWIND_MAX_SHARDS of 1 MiB (--unwind-memory-limit's range) */
	if (unwind_mib > UNWIND_MAX_SHARDS)
		unwind_mib = UNWIND_MAX_SHARDS;

	/* --bpf-map-scale-factor: x 2^N (tracer_open() makes a map that
	 * cannot be created that big smaller, with a warning) */
	tracer_scale_opts(&to, scale, !cfg->max_processes_set);
	if (!cfg->gpu)
		to.gpu_ringbuf_bytes = 4096;	/* --no-gpu: nothing writes it */
	/* /metrics reads it from its own thread */
	__atomic_store_n(&ag->unwind_memory_limit,
			 cfg->dwarf_unwinding ? unwind_mib << 20 : 0, __ATOMIC_RELAXED);

	if (preflight_check(cfg->check_kernel_version, cfg->gpu))
		return -1;
	err = agent_make_dir(cfg->output_dir);
	if (err) {
		fprintf(stderr, "profd: error: cannot use output directory %s: %s\n",
			cfg->output_dir, strerror(-err));
		return -1;
	}
	agent_remove_stale_temps(cfg->output_dir);
	ag->ksyms = kallsyms_load("/proc/kallsyms", &err);
	if (!ag->ksyms)
		fprintf(stderr, "profd: warning: no kernel symbols from /proc/kallsyms "
			"(%s): kernel frames stay addresses\n", strerror(-err));
	kernel_build_id("/sys/kernel/notes", ag->kernel_build_id,
			sizeof(ag->kernel_build_id));
	agent_memory_budgets(cfg->memory_limit_mib, cfg->symbol_cache_mib,
			     &ag->budgets);
	ag->sym = symbolizer_new();
	if (ag->sym)
		symbolizer_set_budget(ag->sym, ag->budgets.symbols);
	ag->procs = ag->sym ? process_table_new(ag->sym, &ag->sym_lock) : NULL;
	ag->gate = file_gate_new(0);
	ag->objects = object_loader_new();
	if (ag->procs) {
		process_table_set_gate(ag->procs, ag->gate);
		process_table_set_loader(ag->procs, ag->objects);
	}
	ag->flame = flamegraph_new(0);
	if (ag->flame)
		flamegraph_set_budget(ag->flame, ag->budgets.flamegraph);
	ag->cur = aggregate_new(MAX_STACKS_PER_INTERVAL, clock_real_ns());
	if (!ag->procs || !ag->gate || !ag->objects || !ag->flame || !ag->cur) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	if (export_setup(ag))
		return -1;
	ag->tracer = tracer_open(&to, agent_on_event, ag);
	if (!ag->tracer)
		return -1;
	if (!ag->sampling_on) {
		/* not profiling this probabilistic interval: drop the samples
		 * taken while the events were being attached */
		ag->discard_samples = true;
		tracer_drain(ag->tracer);
		agent_defer_workers(ag, false, 0);
		ag->discard_samples = false;
	}
	if (cfg->gpu && gpu_setup(ag, inject_lib))
		return -1;
	if (cfg->python_unwinding) {
		ag->py = python_new(tracer_python_procs_fd(ag->tracer), cfg->verbose);
		ag->merged = malloc((PROFD_MAX_KERNEL_FRAMES + MERGED_USER_MAX) *
				    sizeof(*ag->merged));
		if (!ag->py || !ag->merged) {
			fprintf(stderr, "profd: error: out of memory\n");
			return -1;
		}
	}
	if (cfg->dwarf_unwinding) {
		int shards_fd, procs_fd;
		struct unwind_loader *l;

		tracer_unwind_maps(ag->tracer, &shards_fd, &procs_fd);
		l = unwind_loader_new(shards_fd, procs_fd, unwind_mib << 20);
		ag->unwind = l ? unwind_async_new(l) : NULL;
		if (!ag->unwind) {
			unwind_loader_free(l);
			fprintf(stderr, "profd: error: out of memory\n");
			return -1;
		}
	}
	if (ag->unwind || ag->py)
		agent_listen_processes(ag);
	return 0;
}

static void agent_teardown(struct agent *ag)
{
	agent_metrics_stop(ag);		/* first: it reads everything below */
	/*
	 * The object loader uses the process table, symbolizer, unwind loader
	 * and Python state: stopped first; stuck in a file read, it is left
	 * alone with all of them (the process is exiting anyway).
	 */
	ag->objects_stuck = !object_loader_free(ag->objects, OBJECTS_STOP_WAIT_NS);
	ag->objects = NULL;
	/* before the BPF maps it writes are closed; one stuck in a read is left */
	if (!ag->objects_stuck)
		unwind_async_free(ag->unwind, UNWIND_STOP_WAIT_NS);
	tracer_close(ag->tracer);
	if (!ag->objects_stuck)
		python_free(ag->py);
	gpu_free(ag->gpu);
	flamegraph_free(ag->gpu_flame);
	agent_export_free(ag->exp);
	free(ag->merged);
	aggregate_free(ag->cur);
	aggregate_free(ag->next);
	agent_exited_free(ag);
	if (!ag->objects_stuck) {
		process_table_free(ag->procs);
		file_gate_free(ag->gate);	/* stays allocated while a read hangs */
		symbolizer_free(ag->sym);
	}
	flamegraph_free(ag->flame);
	kallsyms_free(ag->ksyms);
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
	if (cfg->gpu) {
		inject_lib = find_inject_library(cfg);
		if (cfg->inject_library && check_inject_library(cfg->inject_library, inject_lib))
			goto out;
	}
	if (cfg->exec_argv && inject_lib) {
		/* a copy only the command's tree maps: other CUDA programs using
		 * the library file are left alone (uprobes are per file) */
		private_lib = exec_private_library(inject_lib);
		if (private_lib) {
			free(inject_lib);
			inject_lib = strdup(private_lib);
		} else if (cfg->verbose) {
			fprintf(stderr, "profd: note: no private copy of %s (%s): other "
				"processes using it are traced too (their data is "
				"filtered out)\n", inject_lib, strerror(errno));
		}
		const char *env = getenv("CUDA_INJECTION64_PATH");
		char *preset = env && strstr(env, GPU_INJECT_LIBRARY_NAME) ?
			       realpath(env, NULL) : NULL;

		if (preset) {
			/* a profd library already: attach to that one before the start */
			exec_private_library_remove(private_lib);
			private_lib = NULL;
			free(inject_lib);
			inject_lib = preset;
		} else if (env) {
			fprintf(stderr, "profd: warning: CUDA_INJECTION64_PATH is already "
				"set (%s) and is kept: it is not profd's injection library, "
				"so GPU kernels are not profiled\n", env);
		}
		env = getenv("NVTX_INJECTION64_PATH");
		if (env && !strstr(env, GPU_INJECT_LIBRARY_NAME))
			fprintf(stderr, "profd: warning: NVTX_INJECTION64_PATH is already "
				"set (%s) and is kept: it is not profd's injection library, "
				"so NVTX ranges are not traced\n", env);
	}
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
