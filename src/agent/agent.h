/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent.h - one profd run: configuration and the run loop.
 *
 * Owns: the wiring of tracer -> reader thread -> process table ->
 * aggregation -> profile building -> writers, the interval clock, signal
 * handling (SIGINT/SIGTERM flush what was collected) and the status line.
 */
#ifndef PROFD_AGENT_AGENT_H
#define PROFD_AGENT_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROFD_VERSION "0.1.0"

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
	bool python_unwinding;		/* !--no-python-unwinding */
	unsigned int unwind_memory_mib;	/* --unwind-memory-limit: shard memory cap */
	unsigned int max_processes;	/* --max-processes with unwind tables */
	bool gpu;			/* !--no-gpu: attach to the CUDA injection library */
	const char *inject_library;	/* --inject-library; NULL: next to the binary */
	unsigned int gpu_timeout_s;	/* --gpu-correlation-timeout */
	char *const *exec_argv;		/* `profd exec -- CMD ARGS`; NULL: system-wide */
	const char *otlp_endpoint;	/* --otlp-endpoint; NULL: OTEL_EXPORTER_OTLP_ENDPOINT */
	const char *otlp_protocol;	/* --otlp-protocol; NULL: OTEL_EXPORTER_OTLP_PROTOCOL */
	bool otlp_insecure;		/* --otlp-insecure */
	unsigned int nvtx_max_spans_per_sec;	/* --nvtx-max-spans-per-sec, 0: unlimited */
};

/*
 * agent_run - run profd with @cfg until the duration ends, every --pid
 * process exited, the `profd exec` command exited, or SIGINT/SIGTERM
 * arrives; every interval writes OUTPUT_DIR/cpu-<UTC time>.pb.gz, when
 * CUDA kernels ran OUTPUT_DIR/gpu-<UTC time>.pb.gz (and gpu-pc-... with
 * PC sampling), and OUTPUT_DIR/flamegraph.html.
 * Returns the process exit code: 0 on success, 1 on an error already
 * printed as one line; with exec_argv, the command's exit status when
 * profd itself succeeded (128 + signal if it was killed).
 */
int agent_run(const struct agent_config *cfg);

#endif /* PROFD_AGENT_AGENT_H */
