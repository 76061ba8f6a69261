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

#include "util/utf8.h"
#include "agent/agent.h"
#include "agent/memory.h"
#include "config/config_file.h"
#include "config/options.h"
#include "util/version.h"

const char *argp_program_version = "profd " PROFD_VERSION;
const char *argp_program_bug_address = "the profd issue tracker";

static const char doc[] =
"profd -- whole-system continuous CPU and GPU profiler (eBPF)\n"
"\n"
"To profile one command and its children:\n"
"  profd exec [OPTION...] -- CMD [ARGS...]\n"
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
"GPU: CUDA programs that load profd's injection library\n"
"(CUDA_INJECTION64_PATH=.../libprofd_inject.so; `profd exec` sets it) get\n"
"DIR/gpu-<UTC time>.pb.gz: each kernel's time on the CPU stack that launched\n"
"it. Their NVTX ranges and marks (NVTX_INJECTION64_PATH, also set by\n"
"`profd exec`) become OTLP spans, span events and log records.\n"
"\n"
"OTLP: with --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT) every profile is\n"
"also exported as OTLP profiles, beside the pprof files.\n"
"OTEL_EXPORTER_OTLP_PROTOCOL, _HEADERS, _TIMEOUT, _COMPRESSION,\n"
"OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are honoured.\n"
"\n"
"SIGINT, SIGTERM and SIGHUP stop profd after writing the partial interval\n"
"and the flame graph. Exit status: 0 on success, 1 on a start-up error,\n"
"64 on a usage error; `profd exec` exits with the command's status.";

/* An argp option per entry of the option table (src/config/options.c). */
static struct argp_option argp_options[72];

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct options *o = state->input;
	const struct option_def *d;
	char why[320] = "";
	int ret;

	switch (key) {
	case ARGP_KEY_ARG:
		if (o->exec) {
			/* CMD and its arguments: everything from here on */
			o->cfg.exec_argv = &state->argv[state->next - 1];
			state->next = state->argc;
			return 0;
		}
		argp_error(state, "unexpected argument '%s'", arg);
		return 0;
	case ARGP_KEY_END:
		if (o->exec && !o->cfg.exec_argv)
			argp_error(state, "a command is needed: profd exec [OPTIONS] -- CMD [ARGS]");
		if (options_finish(o, why, sizeof(why)))
			argp_error(state, "%s", why);
		return 0;
	}
	d = option_by_key(key);
	if (!d)
		return ARGP_ERR_UNKNOWN;
	ret = option_set(o, d, arg, OPTION_FROM_FLAG, why, sizeof(why));
	if (ret == OPTION_EUSAGE)
		argp_error(state, "--%s %s", d->name, why);
	else if (ret)
		argp_failure(state, 1, 0, "error: --%s %s", d->name, why);
	return 0;
}

/*
 * The --config FILE (or -c FILE, --config=FILE) among the arguments, read
 * before the flags so that they override it; NULL when there is none.
 * `profd exec`: arguments stop at the command.
 */
static const char *find_config(int argc, char **argv, bool exec)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct option_def *d = NULL;

		if (!strcmp(a, "--"))
			return NULL;
		if (!strcmp(a, "--config") || !strcmp(a, "-c"))
			return i + 1 < argc ? argv[i + 1] : NULL;
		if (!strncmp(a, "--config=", 9))
			return a + 9;
		if (!strncmp(a, "-c", 2))
			return a + 2;
		if (a[0] != '-') {
			if (exec)
				return NULL;	/* CMD */
			continue;
		}
		/* skip an option's separate value */
		if (a[1] == '-' && !strchr(a, '='))
			d = option_by_name(a + 2);
		else if (a[1] != '-' && a[1] && !a[2])
			d = option_by_key((unsigned char)a[1]);
		if (d && d->arg && i + 1 < argc)
			i++;
	}
	return NULL;
}

/*
 * warn_debug_pids - one warning line per --debug-pid that names no process
 * now. Not an error: the process may be started after profd.
 */
static void warn_debug_pids(const struct agent_config *cfg)
{
	for (size_t i = 0; i < cfg->ndebug_pids; i++)
		if (kill(cfg->debug_pids[i], 0) == -1 && errno == ESRCH)
			fprintf(stderr, "profd: warning: --debug-pid %d: no such process "
				"(yet)\n", (int)cfg->debug_pids[i]);
}

int main(int argc, char **argv)
{
	static struct options o;
	static char **args;	/* argv as parsed; see argp_parse() below */
	struct argp argp = { argp_options, parse_opt, NULL, doc, NULL, NULL, NULL };
	const struct option_def *table;
	const char *config;
	unsigned int flags = 0;
	size_t n;
	bool help_fmt;
	int ret;

	agent_memory_init();		/* before any thread: malloc arenas */
	argp_err_exit_status = 64;	/* EX_USAGE */
	options_init(&o);
	table = option_table(&n);
	/* a heading per --help section, then its options (argp sorts them) */
	for (int g = 1, k = 0; g < OPTION_GROUP_MAX; g++) {
		argp_options[k++] = (struct argp_option){
			.doc = option_group_title(g), .group = g,
		};
		for (size_t i = 0; i < n; i++)
			if (table[i].group == g)
				argp_options[k++] = (struct argp_option){
					.name = table[i].name, .key = table[i].key,
					.arg = table[i].arg, .doc = table[i].doc,
					.group = g,
				};
	}
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		/* `profd exec [OPTIONS] [--] CMD [ARGS]`: options stop at CMD */
		o.exec = true;
		argp.args_doc = "-- CMD [ARGS...]";
		flags = ARGP_IN_ORDER;
		argv[1] = "profd exec";	/* argp's name in usage and errors */
		argc--;
		argv++;
	}
	config = find_config(argc, argv, o.exec);
	if (config && (!*config || utf8_invalid_at(config, strlen(config)) !=
			strlen(config))) {
		/* not an ENOENT about "": say what is wrong with the name */
		fprintf(stderr, "profd: error: --config: %s\n", *config ?
			"the file name must be valid UTF-8" : "empty file name");
		return 64;
	}
	if (config) {
		char err[512] = "";

		ret = config_file_load(&o, config, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "profd: error: %s\n", err);
			return ret == OPTION_EUSAGE ? 64 : 1;
		}
		o.cfg.config_file = config;
	}
	/*
	 * --help's option column: argp's default (29) is narrower than our
	 * longest options with their argument (--bpf-verifier-log-level=0-2),
	 * and glibc's argp then misplaces the header or its text. Set only
	 * for the parse: a workload profd starts does not inherit it.
	 */
	help_fmt = !getenv("ARGP_HELP_FMT") && !setenv("ARGP_HELP_FMT", "opt-doc-col=36", 0);
	/*
	 * getopt starts its messages (an unknown option, a missing argument)
	 * with argv[0], the path profd was started by: parse a copy whose
	 * argv[0] is "profd", as every other error line starts. The copy
	 * lives as long as the run (the workload's argv points into it).
	 */
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (args) {
		memcpy(args, argv, (size_t)argc * sizeof(*args));
		args[0] = (char *)"profd";
		argv = args;
	}
	ret = argp_parse(&argp, argc, argv, flags, NULL, &o);
	if (help_fmt)
		unsetenv("ARGP_HELP_FMT");
	if (ret)
		return 64;
	if (o.print_config) {
		ret = options_print_yaml(&o, stdout);
		if (ret || fflush(stdout)) {
			fprintf(stderr, "profd: error: --print-config: %s\n", ret == -EILSEQ ?
				"a value is not valid UTF-8" : "cannot write the settings");
			ret = 1;
		}
		options_free(&o);
		return ret;
	}
	warn_debug_pids(&o.cfg);
	ret = agent_run(&o.cfg);
	options_free(&o);
	return ret;
}
