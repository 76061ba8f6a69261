// SPDX-License-Identifier: GPL-2.0
/*
 * setup.c - what a run sets up before it samples and takes down after
 * (see agent_internal.h).
 *
 * Owns: choosing the CUDA/NVTX injection library (found next to profd or
 * given, checked, copied privately for `profd exec`); agent_setup(): the
 * preflight checks, the output directory, kernel symbols, the memory
 * budgets, the symbolizer (and its debuginfod fetcher: the environment
 * libdebuginfod reads is set by agent_debuginfod_env(), before any
 * thread), process table, file gate and object loader,
 * OTLP export and NVTX, the outputs (sinks_setup(): src/output/sink.h),
 * the BPF programs (tracer), the GPU correlation and probes, the language
 * runtimes and DWARF unwinders and the process listener that ties them to
 * the process table; and
 * agent_teardown(), which frees all of it in an order that never leaves a
 * worker using what was freed.
 *
 * All on the main thread, before the reader starts and after it stopped.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_internal.h"
#include "agent/exec.h"
#include "agent/export.h"
#include "agent/memory.h"
#include "agent/metrics.h"
#include "aggregate/aggregate.h"
#include "bpf/unwind_table.h"	/* UNWIND_MAX_SHARDS */
#include "gpu/gpu.h"
#include "output/sink.h"
#include "proc/process.h"
#include "config/runtimes.h"
#include "runtime/runtime.h"
#include "symbol/kallsyms.h"
#include "symbol/kernel_notes.h"
#include "symbol/symbolizer.h"
#include "tracer/preflight.h"
#include "tracer/tracer.h"
#include "unwind/async.h"
#include "unwind/callsite.h"
#include "unwind/loader.h"
#include "util/clock.h"
#include "util/memcg.h"

/*
 * Return-address verdicts the reader keeps (32 bytes each: 512 KiB): far
 * more distinct call sites than hot stacks hold; past it, evictions are
 * counted (stat.unwind_callsite_evictions) and the sites read again.
 */
#define CALLSITE_CACHE_SLOTS 16384

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
		return realpath(cfg->inject_library, NULL);	/* checked by the caller */
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

int agent_inject_library(const struct agent_config *cfg, char **lib_out,
			 char **private_out)
{
	char *inject_lib = NULL, *private_lib = NULL;

	if (cfg->gpu) {
		inject_lib = find_inject_library(cfg);
		if (cfg->inject_library && check_inject_library(cfg->inject_library, inject_lib)) {
			free(inject_lib);
			return -1;
		}
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
	*lib_out = inject_lib;
	*private_out = private_lib;
	return 0;
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
	if (!ag->gpu) {
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
		.export_queue_bytes = ag->budgets.export_queue,
		.nvtx_queue_bytes = ag->budgets.nvtx_queue,
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

/*
 * The outputs (src/output/sink.h): every registered sink the
 * configuration asks for, in registry order. After export_setup(): the
 * OTLP sink queues on its exporter.
 */
static int sinks_setup(struct agent *ag)
{
	const struct agent_config *cfg = ag->cfg;
	struct sink_setup st = {
		.output_dir = cfg->output_dir,
		.retention_age_s = cfg->retention_age_s,
		.retention_bytes = cfg->retention_bytes,
		.flamegraph_budget = ag->budgets.flamegraph,
		.gpu = cfg->gpu,
		.off_cpu = cfg->off_cpu,
		.verbose = cfg->verbose,
	};
	const char *failed = "?";
	int err;

	agent_export_otlp(ag->exp, &st.exporter, &st.resources);
	err = sinks_open(&ag->sinks, &st, &failed);
	if (err) {
		if (err == -ENOMEM)
			fprintf(stderr, "profd: error: out of memory\n");
		else
			fprintf(stderr, "profd: error: cannot open the %s output in %s: %s\n",
				failed, cfg->output_dir, strerror(-err));
		return -1;
	}
	return 0;
}

/*
 * Keep in @urls (from $DEBUGINFOD_URLS: the flag's are checked when
 * parsed) only its http://, https:// and file:// URLs, in place, and say
 * which word was left out; none left: "" (no server is asked).
 */
static void usable_urls(char *urls)
{
	char *in = urls, *out = urls, word[256];
	bool told = false;

	while (*in) {
		size_t n = strcspn(in, " ");

		if (n && n < sizeof(word)) {
			memcpy(word, in, n);
			word[n] = 0;
		}
		if (n && n < sizeof(word) && dbgd_urls_valid(word)) {
			if (out != urls)
				*out++ = ' ';
			memmove(out, in, n);
			out += n;
		} else if (n && !told) {
			fprintf(stderr, "profd: warning: $DEBUGINFOD_URLS: '%.*s' is not an "
				"http://, https:// or file:// URL: left out\n", (int)(n > 80 ? 80 : n), in);
			told = true;
		}
		in += n + (in[n] == ' ');
	}
	*out = 0;
}

/* agent_debuginfod_env - see agent_internal.h. */
int agent_debuginfod_env(struct agent *ag)
{
	const struct agent_config *cfg = ag->cfg;
	const char *urls = cfg->debuginfod_urls;

	if (!urls)	/* the flag wins over the variable */
		urls = getenv("DEBUGINFOD_URLS");
	ag->dbgd_cfg = (struct dbgd_config){
		.urls = urls && urls[0] ? strdup(urls) : NULL,
		.cache_dir = cfg->debuginfod_cache,
		.cache_bytes = (uint64_t)cfg->debuginfod_cache_mib << 20,
		.verbose = cfg->verbose,
	};
	if (urls && urls[0] && !ag->dbgd_cfg.urls) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	if (urls && urls[0] && !dbgd_urls_valid(urls))
		usable_urls((char *)ag->dbgd_cfg.urls);	/* our strdup */
	if (ag->dbgd_cfg.urls && !ag->dbgd_cfg.urls[0]) {
		free((char *)ag->dbgd_cfg.urls);
		ag->dbgd_cfg.urls = NULL;
	}
	/* unset or "" alike: libdebuginfod then asks no server */
	if (dbgd_env_setup(&ag->dbgd_cfg)) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	return 0;
}

/*
 * The debuginfod fetcher for the symbolizer, when servers are set; one
 * that cannot start is a warning: its frames keep addresses.
 */
static void debuginfod_setup(struct agent *ag)
{
	const struct dbgd_config *c = &ag->dbgd_cfg;
	char why[256];

	if (!c->urls)
		return;
	ag->dbgd = dbgd_fetcher_new(c, why, sizeof(why));
	if (!ag->dbgd) {
		fprintf(stderr, "profd: warning: debuginfod: %s; binaries without "
			"symbols stay unnamed\n", why);
		return;
	}
	symbolizer_set_debuginfod(ag->sym, ag->dbgd);
	fprintf(stderr, "profd: debuginfod: debug files of binaries without symbols "
		"from %s (cache %s, at most %llu MiB)\n", c->urls, c->cache_dir,
		(unsigned long long)(c->cache_bytes >> 20));
}

/*
 * --unwind-memory-limit's default scaled to @mib (MiB) by
 * --bpf-map-scale-factor, made to fit profd's memory cgroup (@room
 * bytes, UINT64_MAX: none): at most half of the cgroup's room beyond
 * --memory-limit, never below the unscaled default; one warning line
 * when it is cut. Unwind tables are BPF memory, charged to the cgroup:
 * grown past its room they get profd OOM-killed.
 */
static uint64_t unwind_default_in_memcg(const struct agent_config *cfg, uint64_t mib,
					uint64_t room)
{
	uint64_t fit;

	if (room == UINT64_MAX)
		return mib;
	room >>= 20;
	fit = room > cfg->memory_limit_mib ? (room - cfg->memory_limit_mib) / 2 : 0;
	if (fit < cfg->unwind_memory_mib)
		fit = cfg->unwind_memory_mib;
	if (mib <= fit)
		return mib;
	fprintf(stderr, "profd: warning: --unwind-memory-limit: %llu MiB (the default at "
		"--bpf-map-scale-factor %u) is more than half of the memory cgroup's room "
		"beyond --memory-limit (room %llu MiB, --memory-limit %u MiB); using %llu MiB\n",
		(unsigned long long)mib, cfg->bpf_map_scale_factor, (unsigned long long)room,
		cfg->memory_limit_mib, (unsigned long long)fit);
	return fit;
}

/*
 * Warn once when what profd may take by its limits (--memory-limit, the
 * unwind tables' @unwind_mib, the ringbufs' @rings bytes) is more than its
 * memory cgroup's @room bytes: the kernel would OOM-kill profd before
 * its caches shed.
 */
static void warn_over_memcg(const struct agent_config *cfg, uint64_t unwind_mib,
			    uint64_t rings, uint64_t room)
{
	uint64_t need = ((uint64_t)cfg->memory_limit_mib + unwind_mib) + (rings >> 20);

	if (room == UINT64_MAX || need <= room >> 20)
		return;
	fprintf(stderr, "profd: warning: --memory-limit %u MiB, --unwind-memory-limit %llu "
		"MiB and %llu MiB of ring buffers are more than the memory cgroup's room "
		"(%llu MiB): the kernel may OOM-kill profd before its caches shed; lower "
		"them or raise the cgroup's limit\n", cfg->memory_limit_mib,
		(unsigned long long)unwind_mib, (unsigned long long)(rings >> 20),
		(unsigned long long)(room >> 20));
}

/* The process table's image clock: BPF's exec times (exec_times). */
static uint64_t image_clock(void *ctx, pid_t pid)
{
	return tracer_exec_ns(ctx, pid);
}

int agent_setup(struct agent *ag, const char *inject_lib)
{
	const struct agent_config *cfg = ag->cfg;
	unsigned int scale = cfg->bpf_map_scale_factor;
	uint32_t runtimes_on = 0;
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
		.stack_copy_bytes = cfg->stack_copy_bytes,
		.stack_copy_always = cfg->check_unwinder && cfg->stack_copy_bytes,
		.off_cpu = cfg->off_cpu,
		.off_cpu_threshold = cfg->off_cpu_threshold,
		.max_processes = cfg->max_processes,
		.verifier_log_level = cfg->bpf_verifier_log_level,
		.start_disabled = !ag->sampling_on,
	};
	uint64_t unwind_mib = cfg->unwind_memory_set ? cfg->unwind_memory_mib :
			      (uint64_t)cfg->unwind_memory_mib << scale;
	uint64_t room;
	char why[128];
	int err;

	/* every BPF counter slot named once (src/counters/counters.h) */
	if (counters_check(PROFD_CNT_RUNTIME_FIRST, PROFD_CNT_MAX, why, sizeof(why))) {
		fprintf(stderr, "profd: error: counter registry: %s\n", why);
		return -1;
	}
	ag->counter_prev = calloc(counters_count() + 1, sizeof(*ag->counter_prev));
	if (!ag->counter_prev) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}

	/* the shards: at most UNWIND_MAX_SHARDS of 1 MiB (--unwind-memory-limit's range) */
	if (unwind_mib > UNWIND_MAX_SHARDS)
		unwind_mib = UNWIND_MAX_SHARDS;
	room = memcg_room();
	if (!cfg->unwind_memory_set && scale)
		unwind_mib = unwind_default_in_memcg(cfg, unwind_mib, room);
	to.memcg_reserve_bytes = ((uint64_t)cfg->memory_limit_mib +
				  (cfg->dwarf_unwinding ? unwind_mib : 0)) << 20;

	/* --bpf-map-scale-factor: x 2^N (tracer_open() makes a map that
	 * cannot be created that big smaller, with a warning) */
	tracer_scale_opts(&to, scale, !cfg->max_processes_set);
	if (!cfg->gpu)
		to.gpu_ringbuf_bytes = 4096;	/* --no-gpu: nothing writes it */
	/* the ringbufs' unscaled sizes: what a tight cgroup leaves them */
	warn_over_memcg(cfg, cfg->dwarf_unwinding ? unwind_mib : 0,
			(uint64_t)(to.ringbuf_bytes >> scale) +
			(to.gpu_ringbuf_bytes >> (cfg->gpu ? scale : 0)), room);
	/* /metrics reads it from its own thread */
	__atomic_store_n(&ag->unwind_memory_limit,
			 cfg->dwarf_unwinding ? unwind_mib << 20 : 0, __ATOMIC_RELAXED);

	if (preflight_check(cfg->check_kernel_version, cfg->gpu))
		return -1;
	err = output_make_dir(cfg->output_dir);
	if (err) {
		fprintf(stderr, "profd: error: cannot use output directory %s: %s\n",
			cfg->output_dir, strerror(-err));
		return -1;
	}
	ag->ksyms = kallsyms_load("/proc/kallsyms", &err);
	if (!ag->ksyms)
		fprintf(stderr, "profd: warning: no kernel symbols from /proc/kallsyms "
			"(%s): kernel frames stay addresses\n", strerror(-err));
	kernel_build_id("/sys/kernel/notes", ag->kernel_build_id,
			sizeof(ag->kernel_build_id));
	agent_memory_budgets(cfg->memory_limit_mib, cfg->symbol_cache_mib,
			     cfg->symbolize_lines, &ag->budgets);
	ag->sym = symbolizer_new();
	if (ag->sym) {
		symbolizer_set_budget(ag->sym, ag->budgets.symbols, ag->budgets.lines);
		debuginfod_setup(ag);
		symbolizer_set_lines(ag->sym, cfg->symbolize_lines);
	}
	ag->procs = ag->sym ? process_table_new(ag->sym, &ag->sym_lock) : NULL;
	ag->gate = file_gate_new(0);
	ag->objects = object_loader_new();
	if (ag->procs) {
		process_table_set_gate(ag->procs, ag->gate);
		process_table_set_loader(ag->procs, ag->objects);
	}
	ag->cur = aggregate_new(MAX_STACKS_PER_INTERVAL, clock_real_ns());
	if (cfg->off_cpu)
		ag->offcpu = agent_offcpu_new(cfg->off_cpu_min_block_ns, ag->ksyms);
	else if (cfg->off_cpu_threshold != OFF_CPU_THRESHOLD_DEFAULT ||
		 cfg->off_cpu_min_block_ns != OFF_CPU_MIN_BLOCK_DEFAULT_NS)
		fprintf(stderr, "profd: warning: --off-cpu-threshold and --off-cpu-min-block "
			"do nothing without --off-cpu\n");
	if (!ag->procs || !ag->gate || !ag->objects || !ag->cur ||
	    (cfg->off_cpu && !ag->offcpu)) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	if (export_setup(ag) || sinks_setup(ag))
		return -1;
	ag->tracer = tracer_open(&to, agent_on_event, ag);
	if (!ag->tracer)
		return -1;
	/* which image each maps read found: samples from before it are not its */
	process_table_set_image_clock(ag->procs, image_clock, ag->tracer);
	if (!ag->sampling_on) {
		/* not profiling this probabilistic interval: drop the samples
		 * taken while the events were being attached */
		ag->discard_samples = true;
		for (int i = 0; i < 64; i++) {	/* in batches: a flood never ends */
			ag->batch_records = 0;
			if (tracer_drain(ag->tracer) != INT_MAX)
				break;
		}
		agent_defer_workers(ag, false, 0);
		ag->discard_samples = false;
	}
	if (cfg->gpu && gpu_setup(ag, inject_lib))
		return -1;
	for (unsigned int id = 1; id <= runtimes_count(); id++)
		if (config_runtime_enabled(cfg, id))
			runtimes_on |= 1u << id;
	if (runtimes_on) {
		struct runtime_env env = {
			.procs_fd = tracer_runtime_procs_fd(ag->tracer),
			.budget = ag->budgets.runtimes, .verbose = cfg->verbose,
		};

		ag->rts = runtimes_new(&env, runtimes_on);
		ag->merged = malloc((PROFD_MAX_KERNEL_FRAMES + MERGED_USER_MAX) *
				    sizeof(*ag->merged));
		if (!ag->rts || !ag->merged) {
			fprintf(stderr, "profd: error: out of memory\n");
			return -1;
		}
	}
	ag->callsites = callsite_cache_new(CALLSITE_CACHE_SLOTS);
	if (!ag->callsites) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	if (cfg->dwarf_unwinding) {
		int shards_fd, procs_fd, exec_fd;
		struct unwind_loader *l;

		tracer_unwind_maps(ag->tracer, &shards_fd, &procs_fd, &exec_fd);
		l = unwind_loader_new(shards_fd, procs_fd, unwind_mib << 20);
		ag->unwind = l ? unwind_async_new(l) : NULL;
		if (!ag->unwind) {
			unwind_loader_free(l);
			fprintf(stderr, "profd: error: out of memory\n");
			return -1;
		}
	}
	if (cfg->check_unwinder && (!cfg->dwarf_unwinding || !cfg->stack_copy_bytes))
		fprintf(stderr, "profd: warning: --check-unwinder does nothing here: it compares "
			"the DWARF walk with a stack copy's (needs DWARF unwinding and "
			"--stack-copy-bytes > 0)\n");
	if (agent_stack_copies_init(ag)) {
		fprintf(stderr, "profd: error: out of memory\n");
		return -1;
	}
	if (ag->unwind || ag->rts)
		agent_listen_processes(ag);
	return 0;
}

void agent_teardown(struct agent *ag)
{
	agent_metrics_stop(ag);		/* first: it reads everything below */
	/*
	 * The object loader uses the process table, symbolizer, unwind loader
	 * and runtimes' state: stopped first; stuck in a file read, it is left
	 * alone with all of them (the process is exiting anyway).
	 */
	ag->objects_stuck = !object_loader_free(ag->objects, OBJECTS_STOP_WAIT_NS);
	ag->objects = NULL;
	/* before the BPF maps it writes are closed; one stuck in a read is left */
	if (!ag->objects_stuck)
		unwind_async_free(ag->unwind, UNWIND_STOP_WAIT_NS);
	agent_stack_copies_free(ag);	/* its shards mapped: before the maps go */
	tracer_close(ag->tracer);
	if (!ag->objects_stuck)
		runtimes_free(ag->rts);
	gpu_free(ag->gpu);
	agent_offcpu_free(ag->offcpu);	/* its stacks hold snapshots */
	sinks_close(&ag->sinks);	/* before the exporter the OTLP sink uses */
	agent_export_free(ag->exp);
	free(ag->merged);
	callsite_cache_free(ag->callsites);
	free(ag->counter_prev);
	ag->counter_prev = NULL;
	aggregate_free(ag->cur);
	aggregate_free(ag->next);
	agent_exited_free(ag);
	if (!ag->objects_stuck) {
		process_table_free(ag->procs);
		file_gate_free(ag->gate);	/* stays allocated while a read hangs */
		symbolizer_free(ag->sym);
		/* after the objects whose entries it owns; a fetch is cancelled */
		if (!dbgd_fetcher_free(ag->dbgd, DBGD_STOP_WAIT_NS))
			fprintf(stderr, "profd: warning: a debuginfod fetch did not stop; "
				"left running\n");
	}
	free((char *)ag->dbgd_cfg.urls);
	ag->dbgd_cfg.urls = NULL;
	kallsyms_free(ag->ksyms);
}
