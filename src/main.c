// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - profd's command line (argp): parse and validate flags, then
 * hand over to agent_run().
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "export/otlp.h"
#include "bpf/profd.h"

const char *argp_program_version = "profd " PROFD_VERSION;
const char *argp_program_bug_address = "the profd issue tracker";

static const char doc[] =
"profd -- whole-system continuous CPU and GPU profiler (eBPF)\n"
"\n"
"To profile one command and its children: profd exec [OPTION...] -- CMD [ARGS...]\n"
"\n"
"Samples every process on every online CPU with the cpu-clock perf event,\n"
"captures kernel and user stacks in BPF, and writes one gzipped pprof\n"
"profile per interval (DIR/cpu-<UTC time>.pb.gz) plus a self-contained\n"
"flame graph of the whole run (DIR/flamegraph.html). Needs root (or\n"
"CAP_BPF + CAP_PERFMON) and a kernel >= 5.15 with BTF.\n"
"\v"
"EXAMPLES:\n"
"  profd --duration 10\n"
"      record the whole machine for 10 s into ./profd-out\n"
"  profd --pid 1234,1240 --sampling-frequency 99 --output-dir /tmp/p\n"
"      profile two processes (all their threads) at 99 Hz until Ctrl-C\n"
"  profd --profile-interval 60 --output-dir /var/lib/profd\n"
"      run continuously, one profile per minute\n"
"  pprof -top profd-out/cpu-*.pb.gz\n"
"      read a profile with Google's pprof\n"
"  profd exec --output-dir out -- python3 train.py\n"
"      run a command, profile its process tree (CPU, and GPU for CUDA\n"
"      programs: kernel time on the launching stacks) until it exits\n"
"\n"
"GPU: CUDA programs that load profd's injection library (CUDA_INJECTION64_PATH\n"
"=.../libprofd_inject.so; `profd exec` sets it) get DIR/gpu-<UTC time>.pb.gz:\n"
"each kernel's time on the CPU stack that launched it. Their NVTX ranges and\n"
"marks (NVTX_INJECTION64_PATH, also set by `profd exec`) become OTLP spans,\n"
"span events and log records.\n"
"\n"
"OTLP: with --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT) every profile is\n"
"also exported as OTLP profiles, beside the pprof files. OTEL_EXPORTER_OTLP_\n"
"PROTOCOL, _HEADERS, _TIMEOUT, _COMPRESSION, OTEL_SERVICE_NAME and\n"
"OTEL_RESOURCE_ATTRIBUTES are honoured.\n"
"\n"
"SIGINT/SIGTERM stop profd after writing the partial interval and the\n"
"flame graph. Exit status: 0 on success, 1 on a start-up error, 64 on a\n"
"usage error; `profd exec` exits with the command's status.";

enum {
	OPT_FREQ = 'F',
	OPT_DURATION = 'd',
	OPT_INTERVAL = 'i',
	OPT_OUTPUT = 'o',
	OPT_PID = 'p',
	OPT_VERBOSE = 'v',
	OPT_INCLUDE_IDLE = 0x100,
	OPT_MAX_DEPTH,
	OPT_NO_KVER,
	OPT_NO_DWARF,
	OPT_NO_PYTHON,
	OPT_UNWIND_MEMORY,
	OPT_MAX_PROCESSES,
	OPT_NO_GPU,
	OPT_INJECT_LIBRARY,
	OPT_GPU_TIMEOUT,
	OPT_OTLP_ENDPOINT,
	OPT_OTLP_PROTOCOL,
	OPT_OTLP_INSECURE,
	OPT_NVTX_MAX_SPANS,
};

static const struct argp_option options[] = {
	{ "sampling-frequency", OPT_FREQ, "HZ", 0,
	  "Samples per second on each CPU, 1-1000 (default 19)", 0 },
	{ "duration", OPT_DURATION, "SECONDS", 0,
	  "Stop after SECONDS (default 0: until SIGINT/SIGTERM)", 0 },
	{ "profile-interval", OPT_INTERVAL, "SECONDS", 0,
	  "Write one profile every SECONDS, 1-86400 (default 10)", 0 },
	{ "output-dir", OPT_OUTPUT, "DIR", 0,
	  "Where profiles and the flame graph go (default ./profd-out)", 0 },
	{ "pid", OPT_PID, "PID[,PID...]", 0,
	  "Profile only these processes (all their threads); stop when all exited", 0 },
	{ "verbose", OPT_VERBOSE, NULL, 0,
	  "More output: libbpf warnings; -vv the BPF verifier log; -vvv a line per sample", 0 },
	{ "include-idle", OPT_INCLUDE_IDLE, NULL, 0,
	  "Keep samples of the idle task (pid 0)", 0 },
	{ "max-stack-depth", OPT_MAX_DEPTH, "FRAMES", 0,
	  "User frames per stack, 1-512 (default 256); deeper stacks end in [truncated]", 0 },
	{ "no-kernel-version-check", OPT_NO_KVER, NULL, 0,
	  "Do not refuse kernels older than 5.15", 0 },
	{ "no-dwarf-unwinding", OPT_NO_DWARF, NULL, 0,
	  "Walk user stacks with frame pointers only (no .eh_frame tables)", 0 },
	{ "no-python-unwinding", OPT_NO_PYTHON, NULL, 0,
	  "Show CPython processes' native frames only (no Python functions)", 0 },
	{ "unwind-memory-limit", OPT_UNWIND_MEMORY, "MIB", 0,
	  "Memory for unwind tables in BPF maps, 1-65536 MiB (default 64); "
	  "least recently used tables are evicted beyond it", 0 },
	{ "max-processes", OPT_MAX_PROCESSES, "N", 0,
	  "Processes with unwind tables at once, 16-1048576 (default 8192)", 0 },
	{ "no-gpu", OPT_NO_GPU, NULL, 0,
	  "Do not attach to the CUDA/NVTX injection library (no GPU profiles, "
	  "no NVTX spans)", 0 },
	{ "inject-library", OPT_INJECT_LIBRARY, "PATH", 0,
	  "The CUDA/NVTX injection library (default: libprofd_inject.so next to "
	  "the profd binary, else PREFIX/lib/profd/)", 0 },
	{ "gpu-correlation-timeout", OPT_GPU_TIMEOUT, "SECONDS", 0,
	  "How long a GPU launch waits for its kernel records and a kernel for "
	  "its launch, 1-3600 (default 30)", 0 },
	{ "otlp-endpoint", OPT_OTLP_ENDPOINT, "URL", 0,
	  "Also export profiles, and NVTX ranges as spans and logs, over OTLP to "
	  "URL (http://HOST:PORT, https://HOST:PORT or HOST:PORT; default "
	  "$OTEL_EXPORTER_OTLP_ENDPOINT, none: pprof files only)", 0 },
	{ "otlp-protocol", OPT_OTLP_PROTOCOL, "PROTO", 0,
	  "grpc or http/protobuf (default $OTEL_EXPORTER_OTLP_PROTOCOL, else "
	  "http/protobuf)", 0 },
	{ "otlp-insecure", OPT_OTLP_INSECURE, NULL, 0,
	  "gRPC to HOST:PORT without TLS (plaintext HTTP/2)", 0 },
	{ "nvtx-max-spans-per-sec", OPT_NVTX_MAX_SPANS, "N", 0,
	  "NVTX spans each process may export per second, 0-10000000 (default 0: "
	  "no limit); whole traces are kept or dropped", 0 },
	{ 0 },
};

struct args {
	struct agent_config cfg;
	pid_t pids[1024];
	bool exec;		/* `profd exec`: the first argument starts CMD */
};

/* The thread group (process) of task @tid, or -1 if it is gone. */
static long tgid_of(long tid)
{
	char path[64], line[256];
	long tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* Parse an unsigned decimal in [min, max]; -1 on anything else. */
static long parse_uint(const char *s, long min, long max)
{
	char *end;
	long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	return v;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct args *a = state->input;
	long v;

	switch (key) {
	case OPT_FREQ:
		v = parse_uint(arg, 1, 1000);
		if (v < 0)
			argp_error(state, "--sampling-frequency must be 1-1000 Hz, got '%s'", arg);
		a->cfg.frequency_hz = v;
		break;
	case OPT_DURATION:
		v = parse_uint(arg, 0, 365L * 86400);
		if (v < 0)
			argp_error(state, "--duration must be a number of seconds >= 0, got '%s'", arg);
		a->cfg.duration_s = v;
		break;
	case OPT_INTERVAL:
		v = parse_uint(arg, 1, 86400);
		if (v < 0)
			argp_error(state, "--profile-interval must be 1-86400 seconds, got '%s'", arg);
		a->cfg.interval_s = v;
		break;
	case OPT_OUTPUT:
		if (!*arg)
			argp_error(state, "--output-dir must not be empty");
		a->cfg.output_dir = arg;
		break;
	case OPT_PID: {
		char *copy = strdup(arg), *tok, *save = NULL;

		if (!copy)
			argp_failure(state, 1, ENOMEM, "--pid");
		for (tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			v = parse_uint(tok, 1, INT_MAX);
			if (v < 0)
				argp_error(state, "--pid takes PID[,PID...], got '%s'", arg);
			if (a->cfg.npids >= sizeof(a->pids) / sizeof(a->pids[0]))
				argp_error(state, "--pid: at most %zu processes",
					   sizeof(a->pids) / sizeof(a->pids[0]));
			if (kill((pid_t)v, 0) && errno == ESRCH)
				argp_failure(state, 1, 0, "error: --pid %ld: no such process", v);
			if (tgid_of(v) > 0 && tgid_of(v) != v)
				argp_failure(state, 1, 0, "error: --pid %ld is a thread of "
					     "process %ld: use --pid %ld", v, tgid_of(v),
					     tgid_of(v));
			a->pids[a->cfg.npids++] = (pid_t)v;
		}
		free(copy);
		if (!a->cfg.npids)
			argp_error(state, "--pid takes PID[,PID...], got '%s'", arg);
		a->cfg.pids = a->pids;
		break;
	}
	case OPT_VERBOSE:
		a->cfg.verbose++;
		break;
	case OPT_INCLUDE_IDLE:
		a->cfg.include_idle = true;
		break;
	case OPT_MAX_DEPTH:
		v = parse_uint(arg, 1, PROFD_MAX_USER_FRAMES);
		if (v < 0)
			argp_error(state, "--max-stack-depth must be 1-%d, got '%s'",
				   PROFD_MAX_USER_FRAMES, arg);
		a->cfg.max_stack_depth = v;
		break;
	case OPT_NO_KVER:
		a->cfg.check_kernel_version = false;
		break;
	case OPT_NO_PYTHON:
		a->cfg.python_unwinding = false;
		break;
	case OPT_NO_DWARF:
		a->cfg.dwarf_unwinding = false;
		break;
	case OPT_UNWIND_MEMORY:
		v = parse_uint(arg, 1, 65536);
		if (v < 0)
			argp_error(state, "--unwind-memory-limit must be 1-65536 MiB, got '%s'", arg);
		a->cfg.unwind_memory_mib = v;
		break;
	case OPT_MAX_PROCESSES:
		v = parse_uint(arg, 16, 1 << 20);
		if (v < 0)
			argp_error(state, "--max-processes must be 16-1048576, got '%s'", arg);
		a->cfg.max_processes = v;
		break;
	case OPT_NO_GPU:
		a->cfg.gpu = false;
		break;
	case OPT_INJECT_LIBRARY:
		if (!*arg)
			argp_error(state, "--inject-library must not be empty");
		a->cfg.inject_library = arg;
		break;
	case OPT_GPU_TIMEOUT:
		v = parse_uint(arg, 1, 3600);
		if (v < 0)
			argp_error(state, "--gpu-correlation-timeout must be 1-3600 seconds, "
				   "got '%s'", arg);
		a->cfg.gpu_timeout_s = v;
		break;
	case OPT_OTLP_ENDPOINT:
		if (!*arg)
			argp_error(state, "--otlp-endpoint must not be empty");
		a->cfg.otlp_endpoint = arg;
		break;
	case OPT_OTLP_PROTOCOL: {
		enum otlp_protocol proto;

		if (otlp_parse_protocol(arg, &proto))
			argp_error(state, "--otlp-protocol must be grpc or http/protobuf, "
				   "got '%s'", arg);
		a->cfg.otlp_protocol = arg;
		break;
	}
	case OPT_OTLP_INSECURE:
		a->cfg.otlp_insecure = true;
		break;
	case OPT_NVTX_MAX_SPANS:
		v = parse_uint(arg, 0, 10000000);
		if (v < 0)
			argp_error(state, "--nvtx-max-spans-per-sec must be 0-10000000, "
				   "got '%s'", arg);
		a->cfg.nvtx_max_spans_per_sec = v;
		break;
	case ARGP_KEY_ARG:
		if (a->exec) {
			/* CMD and its arguments: everything from here on */
			a->cfg.exec_argv = &state->argv[state->next - 1];
			state->next = state->argc;
			break;
		}
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (a->exec && !a->cfg.exec_argv)
			argp_error(state, "a command is needed: profd exec [OPTIONS] -- CMD [ARGS]");
		if (a->exec && a->cfg.npids)
			argp_error(state, "exec profiles the command's process tree: "
				   "--pid does not apply");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct args a = {
		.cfg = {
			.frequency_hz = 19,
			.interval_s = 10,
			.output_dir = "profd-out",
			.max_stack_depth = 256,
			.check_kernel_version = true,
			.dwarf_unwinding = true,
			.python_unwinding = true,
			.unwind_memory_mib = 64,
			.max_processes = 8192,
			.gpu = true,
			.gpu_timeout_s = 30,
		},
	};
	struct argp argp = { options, parse_opt, NULL, doc, NULL, NULL, NULL };
	unsigned int flags = 0;

	argp_err_exit_status = 64;	/* EX_USAGE */
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		/* `profd exec [OPTIONS] [--] CMD [ARGS]`: options stop at CMD */
		a.exec = true;
		argp.args_doc = "-- CMD [ARGS...]";
		flags = ARGP_IN_ORDER;
		argv[1] = "profd exec";	/* argp's name in usage and errors */
		argc--;
		argv++;
	}
	if (argp_parse(&argp, argc, argv, flags, NULL, &a))
		return 64;
	return agent_run(&a.cfg);
}
