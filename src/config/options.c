// SPDX-License-Identifier: GPL-2.0
/*
 * options.c - the option table and value parsing (see options.h);
 * --print-config is options_print.c, durations ("90s", "2h") duration.c.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "bpf/profd.h"
#include "config/options.h"
#include "config/options_internal.h"
#include "config/runtimes.h"
#include "export/otlp.h"
#include "metrics/http.h"
#include "output/retention.h"
#include "symbol/debuginfod.h"


static const struct option_def table[] = {
	{ "config", OPT_CONFIG, "FILE", OPTION_VALUE, false, 3,
	  "Read settings from FILE: YAML, each key the name of a long option "
	  "(e.g. sampling-frequency: 99); flags override the file" },
	{ "print-config", OPT_PRINT_CONFIG, NULL, OPTION_FLAG, false, 3,
	  "Print the settings (defaults, FILE and flags applied) as a config "
	  "file and exit" },
	{ "sampling-frequency", OPT_FREQ, "HZ", OPTION_VALUE, true, 1,
	  "Samples per second on each CPU, 1-1000 (default 19)" },
	{ "duration", OPT_DURATION, "SECONDS", OPTION_VALUE, true, 1,
	  "Stop after SECONDS or a duration (90, 30s, 2h; at most 365d; default 0: "
	  "until SIGINT, SIGTERM or SIGHUP)" },
	{ "profile-interval", OPT_INTERVAL, "SECONDS", OPTION_VALUE, true, 1,
	  "Write one profile every SECONDS or duration (10, 30s, 1m), 1s-1d "
	  "(default 10)" },
	{ "output-dir", OPT_OUTPUT, "DIR", OPTION_VALUE, true, 1,
	  "Where profiles and the flame graph go (default ./profd-out)" },
	{ "output-retention", OPT_RETENTION, "AGE|SIZE", OPTION_VALUE, true, 3,
	  "Delete profd's oldest profiles in DIR beyond AGE (e.g. 7d, 12h) "
	  "and/or a total SIZE (e.g. 10GiB); both: 7d,10GiB (default: keep all)" },
	{ "pid", OPT_PID, "PID[,PID...]", OPTION_LIST, true, 1,
	  "Profile only these processes (all their threads); stop when all exited" },
	{ "verbose", OPT_VERBOSE, NULL, OPTION_COUNT, true, 1,
	  "More output: libbpf warnings; -vv libbpf's debug log; -vvv every "
	  "sample of every process (see --debug-pid). Any -v given replaces "
	  "the config file's `verbose` (counted from 0)" },
	{ "include-idle", OPT_INCLUDE_IDLE, NULL, OPTION_FLAG, true, 1,
	  "Keep samples of the idle task (pid 0)" },
	{ "max-stack-depth", OPT_MAX_DEPTH, "FRAMES", OPTION_VALUE, true, 2,
	  "Native user frames per stack, 1-512 (default 256); deeper stacks end in "
	  "[truncated] (Python and Ruby frames have their own limit, 128)" },
	{ "probabilistic-interval", OPT_PROB_INTERVAL, "DURATION", OPTION_VALUE, true, 3,
	  "How often to decide whether to profile, 1s-1d (default 1m)" },
	{ "probabilistic-threshold", OPT_PROB_THRESHOLD, "0-100", OPTION_VALUE, true, 3,
	  "Profile a --probabilistic-interval only when a number drawn in "
	  "[0,100) is below this (default 100: always; 10: ~10% of the time)" },
	{ "off-cpu", OPT_OFF_CPU, NULL, OPTION_FLAG, true, 1,
	  "Also record where threads block and for how long (offcpu profiles: "
	  "off_cpu/nanoseconds and switches/count by stack, kernel frames "
	  "saying why), and on-CPU + off-CPU time by thread (wall profiles)" },
	{ "off-cpu-threshold", OPT_OFF_CPU_THRESHOLD, "(0-1]", OPTION_VALUE, true, 1,
	  "With --off-cpu: the probability that a thread's blocking switch is "
	  "recorded (default 0.01; 1: every one)" },
	{ "off-cpu-min-block", OPT_OFF_CPU_MIN_BLOCK, "DURATION", OPTION_VALUE, true, 1,
	  "With --off-cpu: waits shorter than this are dropped (counted), "
	  "0-10s, e.g. 250us, 1ms (default 1ms)" },
	{ "no-kernel-version-check", OPT_NO_KVER, NULL, OPTION_FLAG, true, 2,
	  "Do not refuse kernels older than 5.15" },
	{ "no-dwarf-unwinding", OPT_NO_DWARF, NULL, OPTION_FLAG, true, 2,
	  "Walk user stacks with frame pointers only (no .eh_frame tables)" },
	{ "no-symbolize-lines", OPT_NO_LINES, NULL, OPTION_FLAG, true, 2,
	  "Name native frames by their symbols only: no source file:line and no "
	  "inlined frames from DWARF (no debug information read; less memory)" },
	{ "stack-copy-bytes", OPT_STACK_COPY, "BYTES", OPTION_VALUE, true, 2,
	  "User stack a sample carries when its process's unwind tables are not "
	  "loaded yet, walked once they are: 0-16384 (default 16384; 0: such "
	  "samples keep a frame-pointer walk, checked)" },
	{ "check-unwinder", OPT_CHECK_UNWINDER, NULL, OPTION_FLAG, true, 2,
	  "Diagnostic: every sample carries its stack, and user space walks it "
	  "too and compares (counters unwinder_check_match / _mismatch)" },
	{ "tracers", OPT_TRACERS, "NAME[,NAME...]", OPTION_LIST, true, 2,
	  "Which unwinders run, of " CONFIG_TRACER_NAMES " (default: all); "
	  "native always runs, so `native` alone shows every process's native "
	  "frames only. Repeatable; --no-python-unwinding still turns python off" },
	{ "no-python-unwinding", OPT_NO_PYTHON, NULL, OPTION_FLAG, true, 2,
	  "Show CPython processes' native frames only (no Python functions); "
	  "the same as leaving python out of --tracers" },
	{ "bpf-map-scale-factor", OPT_MAP_SCALE, "N", OPTION_VALUE, true, 2,
	  "BPF map sizes (ringbufs, process and thread tables, the defaults of "
	  "--unwind-memory-limit and --max-processes) x 2^N, 0-8 (default 0); a "
	  "map that cannot be created that big is made smaller, with a warning" },
	{ "unwind-memory-limit", OPT_UNWIND_MEMORY, "MIB", OPTION_VALUE, true, 2,
	  "Memory for unwind tables in BPF maps, 1-1024 MiB (default 64); "
	  "least recently used tables are evicted beyond it" },
	{ "symbol-cache-limit", OPT_SYMBOL_CACHE, "MIB", OPTION_VALUE, true, 2,
	  "Heap for the symbolizer's caches, DWARF included, 1-4096 MiB "
	  "(default 64); beyond it the least recently used address caches, "
	  "DWARF and symbol tables are freed" },
	{ "debuginfod-urls", OPT_DEBUGINFOD_URLS, "URLS", OPTION_VALUE, true, 2,
	  "debuginfod servers (space separated http://, https://, file:// URLs) "
	  "asked in the background for the debug files of binaries without "
	  "symbols (default $DEBUGINFOD_URLS; \"\" or off: none)" },
	{ "debuginfod-cache", OPT_DEBUGINFOD_CACHE, "DIR", OPTION_VALUE, true, 2,
	  "Where fetched debug files are kept (default " DBGD_CACHE_DIR ")" },
	{ "debuginfod-cache-size", OPT_DEBUGINFOD_CACHE_SIZE, "MIB", OPTION_VALUE, true, 2,
	  "The cache's cap, 1-1048576 MiB (default 2048): least recently used "
	  "files are deleted past it; a bigger file is not fetched" },
	{ "memory-limit", OPT_MEMORY_LIMIT, "MIB", OPTION_VALUE, true, 2,
	  "RSS ceiling, 80-65536 MiB (default 160): past a fixed base of 72 MiB "
	  "(BPF maps, code, fixed heap, one big file's build) and, with lines, up "
	  "to 28 MiB for DWARF beyond the first 56, half goes to the symbolizer (at most "
	  "--symbol-cache-limit), a quarter to the flame graph; caches past "
	  "their share shed" },
	{ "max-processes", OPT_MAX_PROCESSES, "N", OPTION_VALUE, true, 2,
	  "Processes with unwind tables at once, 16-1048576 (default 8192)" },
	{ "bpf-verifier-log-level", OPT_VERIFIER_LOG, "0-2", OPTION_VALUE, true, 2,
	  "When a BPF program fails to load, print the kernel verifier's log at "
	  "this level (default 0: one error line)" },
	{ "debug-pid", OPT_DEBUG_PID, "PID[,PID...]", OPTION_LIST, true, 2,
	  "Print every sample of these processes (frames, mappings, unwinder) to stderr" },
	{ "label", OPT_LABEL, "KEY=VALUE", OPTION_LIST, true, 3,
	  "Add label KEY=VALUE to every sample and OTLP resource, repeatable. "
	  "KEY: letters, digits, '_', '.', '-', not one of profd's own labels; "
	  "VALUE: non-empty UTF-8 text, no control characters" },
	{ "http-address", OPT_HTTP_ADDRESS, "HOST:PORT", OPTION_VALUE, true, 3,
	  "Serve /metrics (Prometheus text format) and /healthz on HOST:PORT, "
	  "e.g. 127.0.0.1:7071 (default: off)" },
	{ "no-gpu", OPT_NO_GPU, NULL, OPTION_FLAG, true, 4,
	  "Do not attach to the CUDA/NVTX injection library (no GPU profiles, "
	  "no NVTX spans)" },
	{ "inject-library", OPT_INJECT_LIBRARY, "PATH", OPTION_VALUE, true, 4,
	  "The CUDA/NVTX injection library (default: libprofd_inject.so next to "
	  "the profd binary, else in ../lib/profd/ from the binary's directory, "
	  "where `make install` puts it)" },
	{ "gpu-correlation-timeout", OPT_GPU_TIMEOUT, "SECONDS", OPTION_VALUE, true, 4,
	  "How long a GPU launch waits for its kernel records and a kernel for "
	  "its launch, 1-3600 (default 30)" },
	{ "otlp-endpoint", OPT_OTLP_ENDPOINT, "URL", OPTION_VALUE, true, 4,
	  "Also export profiles, and NVTX ranges as spans and logs, over OTLP to "
	  "URL (http://HOST:PORT, https://HOST:PORT or HOST:PORT; default "
	  "$OTEL_EXPORTER_OTLP_ENDPOINT, none: pprof files only)" },
	{ "otlp-protocol", OPT_OTLP_PROTOCOL, "PROTO", OPTION_VALUE, true, 4,
	  "grpc or http/protobuf (default $OTEL_EXPORTER_OTLP_PROTOCOL, else "
	  "http/protobuf)" },
	{ "otlp-insecure", OPT_OTLP_INSECURE, NULL, OPTION_FLAG, true, 4,
	  "gRPC to HOST:PORT without TLS (plaintext HTTP/2)" },
	{ "nvtx-max-spans-per-sec", OPT_NVTX_MAX_SPANS, "N", OPTION_VALUE, true, 4,
	  "NVTX spans each process may export per second, 0-10000000 (default 0: "
	  "no limit); whole traces are kept or dropped" },
	{ NULL },
};

#define NOPTIONS (sizeof(table) / sizeof(table[0]) - 1)
_Static_assert(NOPTIONS <= sizeof(((struct options *)0)->from_file), "from_file too small");

const char *option_group_title(int g)
{
	static const char *const titles[OPTION_GROUP_MAX] = {
		[OPTION_GROUP_SAMPLING] = "What to sample and where profiles go:",
		[OPTION_GROUP_UNWINDING] = "Unwinding, BPF limits and debugging:",
		[OPTION_GROUP_SERVICE] = "Running as a service (config file, cost, metrics, disk):",
		[OPTION_GROUP_GPU] = "GPU, NVTX and OTLP export:",
	};

	return g > 0 && g < OPTION_GROUP_MAX ? titles[g] : "";
}

const struct option_def *option_table(size_t *n)
{
	if (n)
		*n = NOPTIONS;
	return table;
}

const struct option_def *option_by_name(const char *name)
{
	for (size_t i = 0; i < NOPTIONS; i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}

const struct option_def *option_by_key(int key)
{
	for (size_t i = 0; i < NOPTIONS; i++)
		if (table[i].key == key)
			return &table[i];
	return NULL;
}

void options_init(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->cfg = (struct agent_config){
		.frequency_hz = 19,
		.interval_s = 10,
		.output_dir = "profd-out",
		.max_stack_depth = 256,
		.check_kernel_version = true,
		.dwarf_unwinding = true,
		.symbolize_lines = true,
		.stack_copy_bytes = 16384,
		.python_unwinding = true,
		.tracers = config_tracers_all(),
		.unwind_memory_mib = 64,
		.symbol_cache_mib = 64,
		.memory_limit_mib = 160,
		.debuginfod_cache = DBGD_CACHE_DIR,
		.debuginfod_cache_mib = 2048,
		.max_processes = 8192,
		.gpu = true,
		.gpu_timeout_s = 30,
		.probabilistic_interval_s = 60,
		.probabilistic_threshold = 100,
		.off_cpu_threshold = OFF_CPU_THRESHOLD_DEFAULT,
		.off_cpu_min_block_ns = OFF_CPU_MIN_BLOCK_DEFAULT_NS,
	};
}

void options_free(struct options *o)
{
	for (size_t i = 0; i < o->nowned; i++)
		free(o->owned[i]);
	free(o->owned);
	o->owned = NULL;
	o->nowned = o->cap_owned = 0;
}

/* A copy of the @n bytes at @s that @o owns; NULL on out of memory. */
static char *own_len(struct options *o, const char *s, size_t n)
{
	char *c;

	if (o->nowned == o->cap_owned) {
		size_t cap = o->cap_owned ? 2 * o->cap_owned : 32;
		char **v = realloc(o->owned, cap * sizeof(*v));

		if (!v)
			return NULL;
		o->owned = v;
		o->cap_owned = cap;
	}
	c = strndup(s, n);
	if (c)
		o->owned[o->nowned++] = c;
	return c;
}

/* A copy of string @s that @o owns; NULL on out of memory. */
static char *own(struct options *o, const char *s)
{
	return own_len(o, s, strlen(s));
}

/* Parse an unsigned decimal in [min, max]; -1 on anything else. */
static long long parse_uint(const char *s, long long min, long long max)
{
	char *end;
	long long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	return v;
}

static int fail(char *err, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return code;
}

/* parse_duration() of @s into *@out if it is @min-@max seconds; else -EINVAL. */
static int duration_in(const char *s, unsigned int min, unsigned int max,
		       unsigned int *out)
{
	unsigned long long v;

	if (parse_duration(s, &v) || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

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

/* PID[,PID...] appended to @v (*@n entries of @max). */
static int set_pids(const char *value, pid_t *v, size_t *n, size_t max,
		    bool must_exist, char *err, size_t len)
{
	char *copy = strdup(value), *tok, *save = NULL;
	int ret = 0;
	size_t added = 0;

	if (!copy)
		return fail(err, len, OPTION_ERUNTIME, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		long long p = parse_uint(tok, 1, INT_MAX);

		if (p < 0)
			ret = fail(err, len, OPTION_EUSAGE, "takes PID[,PID...], got '%s'", value);
		else if (*n >= max)
			ret = fail(err, len, OPTION_EUSAGE, "at most %zu processes", max);
		else if (must_exist && kill((pid_t)p, 0) && errno == ESRCH)
			ret = fail(err, len, OPTION_ERUNTIME, "%lld: no such process", p);
		else if (must_exist && tgid_of(p) > 0 && tgid_of(p) != p)
			ret = fail(err, len, OPTION_ERUNTIME, "%lld is a thread of process "
				   "%ld: use --pid %ld", p, tgid_of(p), tgid_of(p));
		else {
			v[(*n)++] = (pid_t)p;
			added++;
		}
	}
	/* ",," or a trailing comma is a typo, not an empty list */
	if (!ret && (!added || strstr(value, ",,") || value[0] == ',' ||
		     value[strlen(value) - 1] == ','))
		ret = fail(err, len, OPTION_EUSAGE, "takes PID[,PID...], got '%s'", value);
	free(copy);
	return ret;
}

/* @s (@len bytes, valid UTF-8) holds a C0 or C1 control character or DEL. */
static bool has_control(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t i = 0; i < len; i++) {
		if (s[i] < 0x20 || s[i] == 0x7f)
			return true;
		if (s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f)
			return true;	/* U+0080..U+009F */
	}
	return false;
}

/*
 * Label keys profd sets itself on CPU, off-CPU, GPU and GPU PC-sample
 * profiles (src/aggregate/build.c, src/gpu/build.c): --label cannot
 * shadow them.
 */
static const char *const own_labels[] = {
	"pid", "tid", "comm", "thread_name", "container_id", "cgroup",
	"executable", "build_id", "cuda_device", "cuda_stream", "cuda_graph",
	"stall_reason", "wait",
	NULL,
};

/*
 * OTLP resource attributes profd sets on every resource it exports
 * (src/export/resource.c): a --label of the same key would be ambiguous.
 */
static const char *const own_resource_attributes[] = {
	"service.name", "host.name", "host.id", "process.pid",
	"process.executable.name", "process.executable.path",
	"process.command_line", "container.id", "telemetry.sdk.language",
	"telemetry.sdk.name", "telemetry.sdk.version",
	NULL,
};

/* The flag that follows the file's list starts a new one. */
static void list_source(struct options *o, const struct option_def *d,
			enum option_source src)
{
	struct agent_config *c = &o->cfg;
	size_t idx = d - table;

	if (d->kind == OPTION_LIST && src == OPTION_FROM_FLAG && o->from_file[idx]) {
		if (d->key == OPT_PID)
			c->npids = 0;
		else if (d->key == OPT_DEBUG_PID)
			c->ndebug_pids = 0;
		else if (d->key == OPT_LABEL)
			c->nlabels = 0;
		else if (d->key == OPT_TRACERS)
			c->tracers_set = false;
	}
	o->from_file[idx] = src == OPTION_FROM_FILE;
}

/* Add label @k=@v (@klen and @vlen bytes, NULs among them refused). */
static int set_label(struct options *o, const char *k, size_t klen, const char *v,
		     size_t vlen, char *err, size_t len)
{
	char key[128];
	char *ok, *ov;

	if (!klen)
		return fail(err, len, OPTION_EUSAGE, "takes KEY=VALUE: the key is empty");
	if (klen >= sizeof(key))
		return fail(err, len, OPTION_EUSAGE, "key longer than %zu characters",
			    sizeof(key) - 1);
	if (utf8_invalid_at(k, klen) != klen)
		return fail(err, len, OPTION_EUSAGE, "key must be valid UTF-8");
	if (has_control(k, klen))
		return fail(err, len, OPTION_EUSAGE, "key must not contain control characters");
	memcpy(key, k, klen);
	key[klen] = '\0';
	/* KEY=VALUE splits at the first '=': only a file's `KEY: VALUE` has one */
	if (memchr(key, '=', klen))
		return fail(err, len, OPTION_EUSAGE, "key '%s' must not contain '='", key);
	if (!((key[0] >= 'a' && key[0] <= 'z') || (key[0] >= 'A' && key[0] <= 'Z') ||
	      key[0] == '_'))
		return fail(err, len, OPTION_EUSAGE, "key '%s' must start with a letter "
			    "or '_'", key);
	for (size_t i = 1; i < klen; i++) {
		char c = key[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return fail(err, len, OPTION_EUSAGE, "key '%s': only letters, "
				    "digits, '_', '.' and '-'", key);
	}
	for (int i = 0; own_labels[i]; i++)
		if (!strcmp(key, own_labels[i]))
			return fail(err, len, OPTION_EUSAGE, "'%s' is one of profd's own "
				    "labels", key);
	for (int i = 0; own_resource_attributes[i]; i++)
		if (!strcmp(key, own_resource_attributes[i]))
			return fail(err, len, OPTION_EUSAGE, "'%s' is an OTLP resource "
				    "attribute profd sets", key);
	/* pprof: string index 0 is "", which reads back as a numeric label */
	if (!vlen)
		return fail(err, len, OPTION_EUSAGE, "value of '%s' must not be empty", key);
	if (vlen > 1024)
		return fail(err, len, OPTION_EUSAGE, "value of '%s' longer than 1024 bytes",
			    key);
	if (utf8_invalid_at(v, vlen) != vlen)
		return fail(err, len, OPTION_EUSAGE, "value of '%s' must be valid UTF-8", key);
	if (has_control(v, vlen))
		return fail(err, len, OPTION_EUSAGE, "value of '%s' must not contain "
			    "control characters", key);
	ok = own(o, key);
	ov = own_len(o, v, vlen);
	if (!ok || !ov)
		return fail(err, len, OPTION_ERUNTIME, "out of memory");
	/* a list from flags replaced the file's (list_source): one list */
	for (size_t i = 0; i < o->cfg.nlabels; i++)
		if (!strcmp(o->labels[i].key, ok))
			return fail(err, len, OPTION_EUSAGE, "'%s' given twice", key);
	if (o->cfg.nlabels >= AGENT_MAX_LABELS)
		return fail(err, len, OPTION_EUSAGE, "at most %d labels", AGENT_MAX_LABELS);
	o->labels[o->cfg.nlabels].key = ok;
	o->labels[o->cfg.nlabels].value = ov;
	o->cfg.nlabels++;
	o->cfg.labels = o->labels;
	return 0;
}

int option_set_label(struct options *o, const char *key, size_t klen,
		     const char *value, size_t vlen, enum option_source src,
		     char *err, size_t len)
{
	list_source(o, option_by_key(OPT_LABEL), src);
	return set_label(o, key, klen, value, vlen, err, len);
}

/*
 * --tracers NAME[,NAME...] added to the run's tracers: the first value
 * replaces the default (all), later ones add. Names are the registry's
 * (config_tracer_id()); spaces around a name are allowed (a file's
 * `tracers: native, python`), an empty one is not.
 */
static int set_tracers(struct agent_config *c, const char *value, char *err, size_t len)
{
	uint32_t mask = 1u << PROFD_RUNTIME_NONE;	/* native always runs */
	const char *p = value;

	for (;;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		int id;

		while (n && *p == ' ')
			p++, n--;
		while (n && p[n - 1] == ' ')
			n--;
		if (!n)
			return fail(err, len, OPTION_EUSAGE, "takes NAME[,NAME...] of %s, "
				    "got '%s'", CONFIG_TRACER_NAMES, value);
		id = config_tracer_id(p, n);
		if (id < 0 && has_control(p, n))
			return fail(err, len, OPTION_EUSAGE, "names an unknown tracer: known are %s",
				    CONFIG_TRACER_NAMES);
		if (id < 0)
			return fail(err, len, OPTION_EUSAGE, "names an unknown tracer '%.*s': "
				    "known are %s", (int)(n > 64 ? 64 : n), p, CONFIG_TRACER_NAMES);
		mask |= 1u << id;
		if (!end)
			break;
		p = end + 1;
	}
	if (!c->tracers_set)
		c->tracers = 0;
	c->tracers |= mask;
	c->tracers_set = true;
	return 0;
}

/* true/false from the config file for a flag. */
static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "True", "TRUE", "1", NULL };
	static const char *const no[] = { "false", "no", "off", "False", "FALSE", "0", NULL };

	for (int i = 0; yes[i]; i++)
		if (!strcmp(s, yes[i]))
			return *out = true, 0;
	for (int i = 0; no[i]; i++)
		if (!strcmp(s, no[i]))
			return *out = false, 0;
	return -EINVAL;
}

/* Keep a string value: argv strings live on, file strings are copied. */
static const char *keep(struct options *o, const char *value, enum option_source src)
{
	return src == OPTION_FROM_FLAG ? value : own(o, value);
}

int option_set(struct options *o, const struct option_def *d, const char *value,
	       enum option_source src, char *err, size_t len)
{
	struct agent_config *c = &o->cfg;
	bool b = true, was_file = o->from_file[d - table];
	long long v;

	/* a label names its key; other values are never echoed when not UTF-8 */
	if (value && d->key != OPT_LABEL &&
	    utf8_invalid_at(value, strlen(value)) != strlen(value))
		return fail(err, len, OPTION_EUSAGE, "must be valid UTF-8");
	if (d->kind == OPTION_FLAG && value && parse_bool(value, &b))
		return fail(err, len, OPTION_EUSAGE, "must be true or false, got '%s'", value);
	list_source(o, d, src);		/* a flag replaces the file's list */
	if (d->kind != OPTION_FLAG && d->kind != OPTION_COUNT && (!value || !*value) &&
	    !(d->key == OPT_DEBUGINFOD_URLS && value))	/* "": off */
		return fail(err, len, OPTION_EUSAGE, "must not be empty");

	switch (d->key) {
	case OPT_CONFIG:
		/* main() loads the file before the flags; one it did not find
		 * (an abbreviation, -vc FILE, a second file) would be ignored */
		if (src == OPTION_FROM_FLAG &&
		    (!c->config_file || strcmp(c->config_file, value)))
			return fail(err, len, OPTION_EUSAGE, "%s: give one config file, as "
				    "--config FILE, --config=FILE or -c FILE", value);
		c->config_file = keep(o, value, src);
		break;
	case OPT_PRINT_CONFIG:
		o->print_config = b;
		break;
	case OPT_FREQ:
		v = parse_uint(value, 1, 1000);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 1-1000 Hz, got '%s'", value);
		c->frequency_hz = v;
		break;
	case OPT_DURATION:
		if (duration_in(value, 0, 365 * 86400, &c->duration_s))
			return fail(err, len, OPTION_EUSAGE, "must be seconds or a duration "
				    "of at most 365d (e.g. 90, 30s, 2h), got '%s'", value);
		break;
	case OPT_INTERVAL:
		if (duration_in(value, 1, 86400, &c->interval_s))
			return fail(err, len, OPTION_EUSAGE, "must be seconds or a duration "
				    "of 1s-1d (e.g. 10, 30s, 1m), got '%s'", value);
		break;
	case OPT_OUTPUT:
		c->output_dir = keep(o, value, src);
		break;
	case OPT_RETENTION: {
		uint64_t age, bytes;
		char why[160] = "";

		if (retention_parse(value, &age, &bytes, why, sizeof(why)))
			return fail(err, len, OPTION_EUSAGE, "%s", why[0] ? why :
				    "takes AGE, SIZE or AGE,SIZE (e.g. 7d,10GiB)");
		c->retention_age_s = age;
		c->retention_bytes = bytes;
		break;
	}
	case OPT_PID:
		c->pids = o->pids;
		return set_pids(value, o->pids, &c->npids, OPTIONS_MAX_PIDS, true, err, len);
	case OPT_DEBUG_PID:
		c->debug_pids = o->debug_pids;
		return set_pids(value, o->debug_pids, &c->ndebug_pids, AGENT_MAX_DEBUG_PIDS,
				false, err, len);
	case OPT_LABEL: {
		const char *eq = strchr(value, '=');

		if (!eq || eq == value) {
			size_t n = strlen(value);

			if (utf8_invalid_at(value, n) != n || has_control(value, n))
				return fail(err, len, OPTION_EUSAGE, "takes KEY=VALUE");
			return fail(err, len, OPTION_EUSAGE, "takes KEY=VALUE, got '%s'",
				    value);
		}
		return set_label(o, value, eq - value, eq + 1, strlen(eq + 1), err, len);
	}
	case OPT_VERBOSE:
		if (!value) {
			/* -v on the command line: the file's count does not add up */
			if (src == OPTION_FROM_FLAG && was_file)
				c->verbose = 0;
			if (c->verbose < 3)	/* -vvvv is -vvv: 0-3 round-trips */
				c->verbose++;
			break;
		}
		v = parse_uint(value, 0, 3);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 0-3, got '%s'", value);
		c->verbose = v;
		break;
	case OPT_INCLUDE_IDLE:
		c->include_idle = b;
		break;
	case OPT_MAX_DEPTH:
		v = parse_uint(value, 1, PROFD_MAX_USER_FRAMES);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 1-%d, got '%s'",
				    PROFD_MAX_USER_FRAMES, value);
		c->max_stack_depth = v;
		break;
	case OPT_PROB_INTERVAL:
		if (duration_in(value, 1, 86400, &c->probabilistic_interval_s))
			return fail(err, len, OPTION_EUSAGE, "must be a duration of 1s-1d "
				    "(e.g. 30s, 1m, 1h), got '%s'", value);
		break;
	case OPT_PROB_THRESHOLD:
		v = parse_uint(value, 0, 100);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 0-100, got '%s'", value);
		c->probabilistic_threshold = v;
		break;
	case OPT_OFF_CPU:
		c->off_cpu = b;
		break;
	case OPT_OFF_CPU_THRESHOLD: {
		char *end;
		double d;

		errno = 0;
		d = value && *value >= '0' && *value <= '9' ? strtod(value, &end) : -1;
		/* 0 (or less than the BPF draw's 2^-32) would record nothing */
		if (!(d >= 0x1p-32) || d > 1 || errno || *end)
			return fail(err, len, OPTION_EUSAGE, "must be a probability above 0, "
				    "at most 1 (e.g. 0.01), got '%s'", value);
		c->off_cpu_threshold = d;
		break;
	}
	case OPT_OFF_CPU_MIN_BLOCK: {
		unsigned long long ns;

		if (parse_duration_ns(value, &ns) || ns > 10000000000ULL)
			return fail(err, len, OPTION_EUSAGE, "must be a duration of 0-10s "
				    "(e.g. 250us, 1ms), got '%s'", value);
		c->off_cpu_min_block_ns = ns;
		break;
	}
	case OPT_NO_KVER:
		c->check_kernel_version = !b;
		break;
	case OPT_NO_DWARF:
		c->dwarf_unwinding = !b;
		break;
	case OPT_NO_LINES:
		c->symbolize_lines = !b;
		break;
	case OPT_STACK_COPY:
		v = parse_uint(value, 0, PROFD_STACK_COPY_MAX);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 0-%d, got '%s'",
				    PROFD_STACK_COPY_MAX, value);
		c->stack_copy_bytes = v;
		break;
	case OPT_CHECK_UNWINDER:
		c->check_unwinder = b;
		break;
	case OPT_NO_PYTHON:
		c->python_unwinding = !b;
		break;
	case OPT_TRACERS:
		return set_tracers(c, value, err, len);
	case OPT_MAP_SCALE:
		v = parse_uint(value, 0, 8);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 0-8, got '%s'", value);
		c->bpf_map_scale_factor = v;
		break;
	case OPT_UNWIND_MEMORY:
		/* UNWIND_MAX_SHARDS shards of 1 MiB (bpf/unwind_table.h) */
		v = parse_uint(value, 1, 1024);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 1-1024 MiB, got '%s'", value);
		c->unwind_memory_mib = v;
		c->unwind_memory_set = true;
		break;
	case OPT_SYMBOL_CACHE:
		v = parse_uint(value, 1, 4096);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 1-4096 MiB, got '%s'", value);
		c->symbol_cache_mib = v;
		break;
	case OPT_DEBUGINFOD_URLS:
		if (!strcmp(value, "off"))
			value = "";
		if (!dbgd_urls_valid(value))
			return fail(err, len, OPTION_EUSAGE, "takes space-separated http://, "
				    "https:// or file:// URLs, got '%s'", value);
		c->debuginfod_urls = keep(o, value, src);
		break;
	case OPT_DEBUGINFOD_CACHE:
		if (value[0] != '/')
			return fail(err, len, OPTION_EUSAGE, "must be an absolute path, got '%s'",
				    value);
		c->debuginfod_cache = keep(o, value, src);
		break;
	case OPT_DEBUGINFOD_CACHE_SIZE:
		v = parse_uint(value, 1, 1 << 20);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 1-1048576 MiB, got '%s'",
				    value);
		c->debuginfod_cache_mib = v;
		break;
	case OPT_MEMORY_LIMIT:
		v = parse_uint(value, 80, 65536);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 80-65536 MiB, got '%s'", value);
		c->memory_limit_mib = v;
		break;
	case OPT_MAX_PROCESSES:
		v = parse_uint(value, 16, 1 << 20);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 16-1048576, got '%s'", value);
		c->max_processes = v;
		c->max_processes_set = true;
		break;
	case OPT_VERIFIER_LOG:
		v = parse_uint(value, 0, 2);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 0-2, got '%s'", value);
		c->bpf_verifier_log_level = v;
		break;
	case OPT_HTTP_ADDRESS: {
		char host[256], why[160] = "";	/* host: as big as the server's */
		unsigned int port;

		/* the server's own parser: what passes here binds or fails later
		 * only for reasons of the machine (unknown host, port in use) */
		if (metrics_parse_address(value, host, sizeof(host), &port, why, sizeof(why)))
			return fail(err, len, OPTION_EUSAGE, "%s, got '%s'",
				    why[0] ? why : "takes HOST:PORT", value);
		c->http_address = keep(o, value, src);
		break;
	}
	case OPT_NO_GPU:
		c->gpu = !b;
		break;
	case OPT_INJECT_LIBRARY:
		c->inject_library = keep(o, value, src);
		break;
	case OPT_GPU_TIMEOUT:
		v = parse_uint(value, 1, 3600);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 1-3600 seconds, got '%s'",
				    value);
		c->gpu_timeout_s = v;
		break;
	case OPT_OTLP_ENDPOINT:
		if (*value && !otlp_endpoint_valid(value))
			return fail(err, len, OPTION_EUSAGE, "expected http://HOST[:PORT][/PATH], "
				    "https://... or HOST:PORT, got '%s'", value);
		c->otlp_endpoint = keep(o, value, src);
		break;
	case OPT_OTLP_PROTOCOL: {
		enum otlp_protocol proto;

		if (otlp_parse_protocol(value, &proto))
			return fail(err, len, OPTION_EUSAGE, "must be grpc or http/protobuf, "
				    "got '%s'", value);
		c->otlp_protocol = keep(o, value, src);
		break;
	}
	case OPT_OTLP_INSECURE:
		c->otlp_insecure = b;
		break;
	case OPT_NVTX_MAX_SPANS:
		v = parse_uint(value, 0, 10000000);
		if (v < 0)
			return fail(err, len, OPTION_EUSAGE, "must be 0-10000000, got '%s'", value);
		c->nvtx_max_spans_per_sec = v;
		break;
	default:
		return fail(err, len, OPTION_EUSAGE, "unknown option");
	}
	return 0;
}

int options_finish(struct options *o, char *err, size_t len)
{
	if (o->exec && o->cfg.npids)
		return fail(err, len, OPTION_EUSAGE, "exec profiles the command's process "
			    "tree: --pid does not apply");
	return 0;
}
