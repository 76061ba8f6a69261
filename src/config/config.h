/* SPDX-License-Identifier: GPL-2.0 */
/*
 * config.h - the settings of one profd run, as agent_run() takes them.
 *
 * Owns: struct agent_config (one field per option, filled from flags
 * and the config file by options.c) and struct agent_label, and their
 * bounds. A plain data type below the agent: config/ fills it, agent/
 * runs it, export/ and others read it, and none of them needs agent/'s
 * headers for it. Strings and lists are borrowed from their storage
 * (struct options) for the run.
 */
#ifndef PROFD_CONFIG_CONFIG_H
#define PROFD_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct agent_config {
	unsigned int frequency_hz;	/* --sampling-frequency, 1..1000 */
	unsigned int duration_s;	/* --duration, 0 = until a signal */
	unsigned int interval_s;	/* --profile-interval, >= 1 */
	const char *output_dir;		/* --output-dir */
	pid_t *pids;			/* --pid, NULL = every process */
	size_t npids;
	int verbose;			/* -v: libbpf warnings, -vv: its log, -vvv: every sample */
	bool include_idle;		/* --include-idle */
	unsigned int max_stack_depth;	/* --max-stack-depth, user frames */
	bool check_kernel_version;	/* !--no-kernel-version-check */
	bool dwarf_unwinding;		/* !--no-dwarf-unwinding */
	bool symbolize_lines;		/* !--no-symbolize-lines: DWARF lines, inlined frames */
	unsigned int stack_copy_bytes;	/* --stack-copy-bytes */
	bool check_unwinder;		/* --check-unwinder */
	bool python_unwinding;		/* !--no-python-unwinding */
	uint32_t tracers;		/* --tracers: bit (1 << id) per unwinder named
					 * (enum profd_runtime_id; bit 0: native, always) */
	bool tracers_set;		/* --tracers given (not the default: all) */
	unsigned int unwind_memory_mib;	/* --unwind-memory-limit: shard memory cap */
	unsigned int symbol_cache_mib;	/* --symbol-cache-limit: symbolizer heap budget */
	unsigned int memory_limit_mib;	/* --memory-limit: RSS ceiling (memory.h budgets) */
	const char *debuginfod_urls;	/* --debuginfod-urls; NULL: $DEBUGINFOD_URLS; "": off */
	const char *debuginfod_cache;	/* --debuginfod-cache DIR */
	unsigned int debuginfod_cache_mib;	/* --debuginfod-cache-size: the cache's cap */
	unsigned int max_processes;	/* --max-processes with unwind tables */
	bool gpu;			/* !--no-gpu: attach to the CUDA injection library */
	const char *inject_library;	/* --inject-library; NULL: next to the binary */
	unsigned int gpu_timeout_s;	/* --gpu-correlation-timeout */
	char *const *exec_argv;		/* `profd exec -- CMD ARGS`; NULL: system-wide */
	const char *otlp_endpoint;	/* --otlp-endpoint; NULL: OTEL_EXPORTER_OTLP_ENDPOINT */
	const char *otlp_protocol;	/* --otlp-protocol; NULL: OTEL_EXPORTER_OTLP_PROTOCOL */
	bool otlp_insecure;		/* --otlp-insecure */
	unsigned int nvtx_max_spans_per_sec;	/* --nvtx-max-spans-per-sec, 0: unlimited */
#define OFF_CPU_THRESHOLD_DEFAULT	0.01	/* docs/ARCHITECTURE.md, Decisions */
#define OFF_CPU_MIN_BLOCK_DEFAULT_NS	1000000ULL
	bool off_cpu;			/* --off-cpu: where threads block (offcpu profiles) */
	double off_cpu_threshold;	/* --off-cpu-threshold: P(record a switch-out), 0..1 */
	uint64_t off_cpu_min_block_ns;	/* --off-cpu-min-block: shorter waits dropped */

	/* Running on every host (issue 7) */
	unsigned int probabilistic_interval_s;	/* --probabilistic-interval, >= 1 */
	unsigned int probabilistic_threshold;	/* --probabilistic-threshold, 0..100; 100: always */
	unsigned int bpf_map_scale_factor;	/* --bpf-map-scale-factor, 0..8: map sizes x 2^N */
	bool unwind_memory_set;		/* --unwind-memory-limit given: not scaled */
	bool max_processes_set;		/* --max-processes given: not scaled */
	unsigned int bpf_verifier_log_level;	/* --bpf-verifier-log-level, 0..2 */
	const pid_t *debug_pids;	/* --debug-pid: per-sample debug lines for these */
	size_t ndebug_pids;
	const struct agent_label *labels;	/* --label KEY=VALUE: on every profile/resource */
	size_t nlabels;
	const char *http_address;	/* --http-address HOST:PORT for /metrics; NULL: off */
	uint64_t retention_age_s;	/* --output-retention AGE: 0 = no age limit */
	uint64_t retention_bytes;	/* --output-retention SIZE: 0 = no size limit */
	const char *config_file;	/* --config FILE, for messages; NULL: none */
};

/* An external label (--label KEY=VALUE). */
struct agent_label {
	const char *key;
	const char *value;
};

/* Most --label flags; most --debug-pid processes. */
#define AGENT_MAX_LABELS 16
#define AGENT_MAX_DEBUG_PIDS 64

#endif /* PROFD_CONFIG_CONFIG_H */
