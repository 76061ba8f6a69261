// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nvtx_app.c - $(BUILD)/tests/nvtx/nvtx_app, the NVTX test program (tests
 * and bench/nvtx_cost.sh only).
 *
 * Owns: known NVTX ranges and marks made through the NVTX v3 headers, no
 * CUDA at all (NVTX loads the injection library named by
 * NVTX_INJECTION64_PATH; without it every call is a no-op), and the
 * program's own record of them: one JSON line per range, mark or name it
 * made, with its own clock, so a test can compare profd's spans with it:
 *
 *   {"kind":"range","name":"step t1","parent":null,"tid":123,
 *    "end_tid":123,"start_ns":...,"end_ns":...,
 *    "start_after_ns":...,"end_before_ns":...}
 *   {"kind":"mark","name":"...","parent":"..."|null,"tid":..,"time_ns":..,
 *    "time_after_ns":..}
 *   {"kind":"name","what":"category"|"thread"|"domain"|"cuda_stream"|
 *    "cu_device"|"domain_category","id":N,"name":"..."}
 *
 * Times are CLOCK_REALTIME ns taken just before the opening call and just
 * after the closing one (a range made by profd lies inside), and just
 * after the opening call and just before the closing one (_after/_before:
 * each end of profd's range lies between its pair, however long the call
 * took or the thread waited for a CPU); "parent" is
 * the innermost range open on the thread when it opened; end_ns is null
 * for a range never closed. Ranges made with attributes add "domain",
 * "category", "color" (ARGB), "payload_type" (NVTX's number) and
 * "payload" (the value, as JSON).
 *
 * Modes (argv[1]):
 *   nested    3 threads ("t1".."t3"), each --iter N (5) times the tree
 *             "step tK" > "forward tK" > ("layer0 tK", "layer1 tK"),
 *             "step tK" > "backward tK", sleeping 1-3 ms inside the leaves
 *   cross     --iter N (5) ranges "cross I" started (nvtxRangeStartA) on
 *             thread A and ended (nvtxRangeEnd) on thread B; then
 *             "cross inner" started inside push range "cross outer" on A,
 *             ended on B after A popped
 *   marks     marks "mark inside I" (3) inside push range "marks outer",
 *             then "mark outside I" (2) outside any range
 *   attrs     first the definitions: a named category (7) and OS thread,
 *             domain "my.domain" with a named category (3) and a
 *             registered string, CUDA resource names of fake handles;
 *             then (after --mid-delay-ms, so an agent can attach between)
 *             nvtxRangePushEx with color/category/payload of each payload
 *             type, nvtxDomainRangePushEx with the registered string and
 *             with an ASCII message, a wide message (UTF-8 in the JSON);
 *             the domain is destroyed at the end
 *   budget    --traces N (2000) traces "budget top" > "budget child 0..2",
 *             as fast as possible
 *   exitopen  push "open push" on the main thread and start "open start"
 *             on a second thread, never closed; sleep, exit 0
 *   fork      push range "parent before fork" in the parent, around a
 *             forked child that makes "child range" and exit()s, then
 *             "parent after fork"; the child is a new process to profd,
 *             so its range has no parent
 *   flood     --iter N (1000000) push+pop pairs per thread on --threads T
 *             (1) threads as fast as possible; prints one line
 *             "nvtx_app flood: threads=T iter=N ns_per_pair=X" (mean over
 *             threads, CLOCK_MONOTONIC around each thread's loop) and no
 *             JSON; --rate R paces each thread to R pairs per second;
 *             with --mid-delay-ms MS the main thread, once the threads
 *             have exited, sleeps MS and makes one more pair
 *
 * Options: --iter N, --threads T, --traces N, --out FILE (JSON lines to
 * FILE instead of stdout), --start-delay-ms MS (sleep before the first
 * NVTX call, so profd can attach), --mid-delay-ms MS (attrs: sleep between
 * the definitions and their use), --exit-delay-ms MS (sleep before exit).
 * Exit status 0, 2 for a usage error.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#include <sys/wait.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#define MS 1000000ull

static struct {
	int iter;
	int threads;
	int traces;
	long rate;		/* flood: pairs per second per thread, 0: unpaced */
	unsigned start_delay_ms;
	unsigned mid_delay_ms;
	unsigned exit_delay_ms;
	FILE *out;
} opt = { .iter = -1, .threads = 1, .traces = 2000 };

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A JSON string (or null), escaping what JSON needs; UTF-8 passes through. */
static void put_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* ,"@key":@ns, or null for 0 (not taken). */
static void put_time(FILE *f, const char *key, uint64_t ns)
{
	if (ns)
		fprintf(f, ",\"%s\":%llu", key, (unsigned long long)ns);
	else
		fprintf(f, ",\"%s\":null", key);
}

/* What the program made, as it saw it. */
struct rec {
	const char *kind;	/* "range", "mark" */
	const char *name;
	const char *parent;
	pid_t tid, end_tid;
	uint64_t start, end;	/* end 0: never closed */
	uint64_t start_after, end_before;	/* 0: not taken */
	/* attributes (attrs mode); has_attrs 0: none */
	int has_attrs;
	const char *domain;
	uint32_t category, color;
	int payload_type;
	char payload[64];	/* JSON value */
};

static void emit(const struct rec *r)
{
	FILE *f = opt.out;

	pthread_mutex_lock(&out_lock);
	fprintf(f, "{\"kind\":\"%s\",\"name\":", r->kind);
	put_str(f, r->name);
	fputs(",\"parent\":", f);
	put_str(f, r->parent);
	fprintf(f, ",\"tid\":%d", (int)r->tid);
	if (!strcmp(r->kind, "mark")) {
		fprintf(f, ",\"time_ns\":%llu", (unsigned long long)r->start);
		put_time(f, "time_after_ns", r->start_after);
	} else {
		fprintf(f, ",\"end_tid\":%d", (int)r->end_tid);
		put_time(f, "start_ns", r->start);
		put_time(f, "end_ns", r->end);
		put_time(f, "start_after_ns", r->start_after);
		put_time(f, "end_before_ns", r->end_before);
	}
	if (r->has_attrs) {
		fputs(",\"domain\":", f);
		put_str(f, r->domain);
		fprintf(f, ",\"category\":%u,\"color\":%u,\"payload_type\":%d,\"payload\":%s",
			r->category, r->color, r->payload_type,
			r->payload[0] ? r->payload : "null");
	}
	fputs("}\n", f);
	fflush(f);
	pthread_mutex_unlock(&out_lock);
}

static void emit_name(const char *what, unsigned long long id, const char *name)
{
	pthread_mutex_lock(&out_lock);
	fprintf(opt.out, "{\"kind\":\"name\",\"what\":\"%s\",\"id\":%llu,\"name\":", what, id);
	put_str(opt.out, name);
	fputs("}\n", opt.out);
	fflush(opt.out);
	pthread_mutex_unlock(&out_lock);
}

/* A push range around fn(arg); its record is emitted when it closes. */
static void push_range(const char *name, const char *parent,
		       void (*fn)(const char *self, void *), void *arg)
{
	struct rec r = { .kind = "range", .name = name, .parent = parent };

	r.tid = r.end_tid = gettid();
	r.start = realtime_ns();
	nvtxRangePushA(name);
	r.start_after = realtime_ns();
	if (fn)
		fn(name, arg);
	r.end_before = realtime_ns();
	nvtxRangePop();
	r.end = realtime_ns();
	emit(&r);
}

/* --- nested --- */

struct nested_names {
	char step[32], forward[32], layer0[32], layer1[32], backward[32];
};

static void sleep_fn(const char *self, void *arg)
{
	sleep_ms((unsigned)(uintptr_t)arg);
}

static void forward_fn(const char *self, void *arg)
{
	struct nested_names *n = arg;

	push_range(n->layer0, self, sleep_fn, (void *)1);
	push_range(n->layer1, self, sleep_fn, (void *)2);
}

static void step_fn(const char *self, void *arg)
{
	struct nested_names *n = arg;

	push_range(n->forward, self, forward_fn, n);
	push_range(n->backward, self, sleep_fn, (void *)3);
}

static void *nested_thread(void *arg)
{
	int k = (int)(uintptr_t)arg, i;
	struct nested_names n;

	snprintf(n.step, sizeof(n.step), "step t%d", k);
	snprintf(n.forward, sizeof(n.forward), "forward t%d", k);
	snprintf(n.layer0, sizeof(n.layer0), "layer0 t%d", k);
	snprintf(n.layer1, sizeof(n.layer1), "layer1 t%d", k);
	snprintf(n.backward, sizeof(n.backward), "backward t%d", k);
	for (i = 0; i < opt.iter; i++)
		push_range(n.step, NULL, step_fn, &n);
	return NULL;
}

static void run_threads(void *(*fn)(void *), int n)
{
	pthread_t th[64];
	int i;

	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)(i + 1))) {
			perror("nvtx_app: pthread_create");
			exit(1);
		}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

static void mode_nested(void)
{
	run_threads(nested_thread, 3);
}

/* --- cross --- */

struct cross_range {
	struct rec r;
	char name[32];
	nvtxRangeId_t id;
};

static int cross_pipe[2];

static void *cross_ender(void *arg)
{
	struct cross_range *c;

	while (read(cross_pipe[0], &c, sizeof(c)) == sizeof(c) && c) {
		sleep_ms(2);
		c->r.end_before = realtime_ns();
		nvtxRangeEnd(c->id);
		c->r.end = realtime_ns();
		c->r.end_tid = gettid();
		emit(&c->r);
	}
	return NULL;
}

static void cross_start(struct cross_range *c, const char *name, const char *parent)
{
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->r = (struct rec){ .kind = "range", .name = c->name, .parent = parent };
	c->r.tid = gettid();
	c->r.start = realtime_ns();
	c->id = nvtxRangeStartA(c->name);
	c->r.start_after = realtime_ns();
}

static void cross_send(struct cross_range *c)
{
	if (write(cross_pipe[1], &c, sizeof(c)) != sizeof(c)) {
		perror("nvtx_app: write");
		exit(1);
	}
}

static void mode_cross(void)
{
	struct cross_range *v = calloc((size_t)opt.iter + 1, sizeof(*v));
	struct rec outer = { .kind = "range", .name = "cross outer" };
	char name[32];
	pthread_t b;
	int i;

	if (!v || pipe(cross_pipe) || pthread_create(&b, NULL, cross_ender, NULL)) {
		perror("nvtx_app: cross");
		exit(1);
	}
	for (i = 0; i < opt.iter; i++) {
		snprintf(name, sizeof(name), "cross %d", i);
		cross_start(&v[i], name, NULL);
		sleep_ms(1);
		cross_send(&v[i]);
		sleep_ms(3);
	}
	/* one started inside a push range, ended on B after the pop */
	outer.tid = outer.end_tid = gettid();
	outer.start = realtime_ns();
	nvtxRangePushA("cross outer");
	outer.start_after = realtime_ns();
	cross_start(&v[opt.iter], "cross inner", "cross outer");
	sleep_ms(1);
	outer.end_before = realtime_ns();
	nvtxRangePop();
	outer.end = realtime_ns();
	emit(&outer);
	cross_send(&v[opt.iter]);
	cross_send(NULL);
	pthread_join(b, NULL);
	free(v);
}

/* --- marks --- */

static void mark(const char *name, const char *parent)
{
	struct rec r = { .kind = "mark", .name = name, .parent = parent };

	r.tid = gettid();
	r.start = realtime_ns();
	nvtxMarkA(name);
	r.start_after = realtime_ns();
	emit(&r);
}

static void marks_fn(const char *self, void *arg)
{
	char name[32];
	int i;

	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "mark inside %d", i);
		sleep_ms(1);
		mark(name, self);
	}
	sleep_ms(1);
}

static void mode_marks(void)
{
	char name[32];
	int i;

	push_range("marks outer", NULL, marks_fn, NULL);
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "mark outside %d", i);
		mark(name, NULL);
		sleep_ms(1);
	}
}

/* --- attrs --- */

/* A push range with attributes (domain NULL: the default one). */
static void attr_range(nvtxDomainHandle_t d, const char *domain_name,
		       nvtxEventAttributes_t *a, const char *name, const char *payload)
{
	struct rec r = { .kind = "range", .name = name, .has_attrs = 1,
			 .domain = domain_name, .category = a->category,
			 .color = a->colorType == NVTX_COLOR_ARGB ? a->color : 0,
			 .payload_type = a->payloadType };

	snprintf(r.payload, sizeof(r.payload), "%s", payload ? payload : "");
	r.tid = r.end_tid = gettid();
	r.start = realtime_ns();
	if (d)
		nvtxDomainRangePushEx(d, a);
	else
		nvtxRangePushEx(a);
	sleep_ms(1);
	if (d)
		nvtxDomainRangePop(d);
	else
		nvtxRangePop();
	r.end = realtime_ns();
	emit(&r);
}

static nvtxEventAttributes_t attrs_ascii(const char *msg, uint32_t color, uint32_t category)
{
	nvtxEventAttributes_t a;

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = category;
	a.colorType = color ? NVTX_COLOR_ARGB : NVTX_COLOR_UNKNOWN;
	a.color = color;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = msg;
	return a;
}

static void mode_attrs(void)
{
	static const wchar_t wide[] = L"wide \u00fcn\u00efc\u00f8d\u00e9 \u2713 \U0001F680";
	static const char wide_utf8[] = "wide \xc3\xbc" "n\xc3\xaf" "c\xc3\xb8" "d\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x9a\x80";
	nvtxEventAttributes_t a;
	nvtxDomainHandle_t d;
	nvtxStringHandle_t s;
	struct rec r = { .kind = "range", .name = wide_utf8 };

	/* the definitions first: --mid-delay-ms lets an agent attach after them */
	nvtxNameCategoryA(7, "my category");
	emit_name("category", 7, "my category");
	nvtxNameOsThreadA((uint32_t)gettid(), "attrs main");
	emit_name("thread", (unsigned long long)gettid(), "attrs main");
	d = nvtxDomainCreateA("my.domain");
	emit_name("domain", (unsigned long long)(uintptr_t)d, "my.domain");
	nvtxDomainNameCategoryA(d, 3, "domain category");
	emit_name("domain_category", 3, "domain category");
	s = nvtxDomainRegisterStringA(d, "registered name");
	nvtxNameCudaStreamA((cudaStream_t)(uintptr_t)0x1234, "fake stream");
	emit_name("cuda_stream", 0x1234, "fake stream");
	nvtxNameCuDeviceA((CUdevice)0, "fake device");
	emit_name("cu_device", 0, "fake device");
	if (opt.mid_delay_ms)
		sleep_ms(opt.mid_delay_ms);

	a = attrs_ascii("attrs u64", 0xff00ff00, 7);
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = 18446744073709551615ull;
	attr_range(NULL, NULL, &a, "attrs u64", "18446744073709551615");

	a = attrs_ascii("attrs i64", 0xffff0000, 7);
	a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
	a.payload.llValue = -1234567890123ll;
	attr_range(NULL, NULL, &a, "attrs i64", "-1234567890123");

	a = attrs_ascii("attrs double", 0xff0000ff, 0);
	a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	a.payload.dValue = 3.25;
	attr_range(NULL, NULL, &a, "attrs double", "3.25");

	a = attrs_ascii("attrs u32", 0, 8);
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
	a.payload.uiValue = 4000000000u;
	attr_range(NULL, NULL, &a, "attrs u32", "4000000000");

	a = attrs_ascii("attrs i32", 0x80123456, 0);
	a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
	a.payload.iValue = -42;
	attr_range(NULL, NULL, &a, "attrs i32", "-42");

	a = attrs_ascii("attrs float", 0, 0);
	a.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
	a.payload.fValue = 1.5f;
	attr_range(NULL, NULL, &a, "attrs float", "1.5");

	a = attrs_ascii(NULL, 0xff00ffff, 3);
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = s;
	attr_range(d, "my.domain", &a, "registered name", NULL);
	a = attrs_ascii("domain ascii", 0, 0);
	attr_range(d, "my.domain", &a, "domain ascii", NULL);

	r.tid = r.end_tid = gettid();
	r.start = realtime_ns();
	nvtxRangePushW(wide);
	sleep_ms(1);
	nvtxRangePop();
	r.end = realtime_ns();
	emit(&r);
	nvtxDomainDestroy(d);
}

/* --- budget --- */

static void budget_fn(const char *self, void *arg)
{
	static const char *const child[] = {
		"budget child 0", "budget child 1", "budget child 2",
	};
	int i;

	for (i = 0; i < 3; i++)
		push_range(child[i], self, NULL, NULL);
}

static void mode_budget(void)
{
	int i;

	for (i = 0; i < opt.traces; i++)
		push_range("budget top", NULL, budget_fn, NULL);
}

/* --- exitopen --- */

static void *exitopen_thread(void *arg)
{
	struct rec r = { .kind = "range", .name = "open start" };

	r.tid = r.end_tid = gettid();
	r.start = realtime_ns();
	nvtxRangeStartA("open start");
	emit(&r);
	return NULL;
}

static void mode_exitopen(void)
{
	struct rec r = { .kind = "range", .name = "open push" };

	r.tid = r.end_tid = gettid();
	r.start = realtime_ns();
	nvtxRangePushA("open push");
	emit(&r);
	run_threads(exitopen_thread, 1);
	sleep_ms(50);
}

/* --- fork --- */

static void mode_fork(void)
{
	struct rec r = { .kind = "range", .name = "parent before fork" };
	pid_t pid;

	r.tid = r.end_tid = gettid();
	r.start = realtime_ns();
	nvtxRangePushA("parent before fork");
	fflush(opt.out);
	pid = fork();
	if (pid < 0) {
		perror("nvtx_app: fork");
		exit(1);
	}
	if (pid == 0) {
		/* a new process: the parent's open range is not the child's */
		push_range("child range", NULL, sleep_fn, (void *)2);
		exit(0);
	}
	waitpid(pid, NULL, 0);
	nvtxRangePop();
	r.end = realtime_ns();
	emit(&r);
	push_range("parent after fork", NULL, sleep_fn, (void *)1);
}

/* --- flood --- */

static uint64_t flood_ns[64];

static void *flood_thread(void *arg)
{
	int k = (int)(uintptr_t)arg, i;
	uint64_t t0, t1;

	t0 = mono_ns();
	for (i = 0; i < opt.iter; i++) {
		nvtxRangePushA("flood");
		nvtxRangePop();
		/* --rate: keep to the schedule, checked every 256 pairs */
		if (opt.rate && !(i & 255)) {
			uint64_t due = t0 + (uint64_t)i * 1000000000ull / opt.rate;
			uint64_t now = mono_ns();

			if (due > now)
				sleep_ns(due - now);
		}
	}
	t1 = mono_ns();
	flood_ns[k - 1] = t1 - t0;
	return NULL;
}

static void mode_flood(void)
{
	double sum = 0;
	int i;

	/* NVTX loads the injection library at the first call: not timed */
	nvtxRangePushA("flood warm-up");
	nvtxRangePop();
	run_threads(flood_thread, opt.threads);
	for (i = 0; i < opt.threads; i++)
		sum += (double)flood_ns[i] / opt.iter;
	printf("nvtx_app flood: threads=%d iter=%d ns_per_pair=%.2f\n", opt.threads,
	       opt.iter, sum / opt.threads);
	fflush(stdout);
	if (opt.mid_delay_ms) {		/* the threads are gone: one more pair */
		sleep_ms(opt.mid_delay_ms);
		nvtxRangePushA("flood after");
		nvtxRangePop();
	}
}

/* --- main --- */

static void usage(void)
{
	fprintf(stderr, "usage: nvtx_app nested|cross|marks|attrs|budget|exitopen|fork|flood "
		"[--iter N] [--threads T] [--rate PAIRS_PER_S] [--traces N] [--out FILE] "
		"[--start-delay-ms MS] [--mid-delay-ms MS] [--exit-delay-ms MS]\n");
	exit(2);
}

static long num_arg(int argc, char **argv, int *i, long min, long max)
{
	char *end;
	long v;

	if (*i + 1 >= argc)
		usage();
	errno = 0;
	v = strtol(argv[++*i], &end, 10);
	if (errno || *end || v < min || v > max)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
		int iter;	/* default --iter */
	} modes[] = {
		{ "nested", mode_nested, 5 },
		{ "cross", mode_cross, 5 },
		{ "marks", mode_marks, 1 },
		{ "attrs", mode_attrs, 1 },
		{ "budget", mode_budget, 1 },
		{ "exitopen", mode_exitopen, 1 },
		{ "fork", mode_fork, 1 },
		{ "flood", mode_flood, 1000000 },
	};
	const char *out = NULL;
	int m, i;

	if (argc < 2)
		usage();
	for (m = 0; m < (int)(sizeof(modes) / sizeof(modes[0])); m++)
		if (!strcmp(argv[1], modes[m].name))
			break;
	if (m == (int)(sizeof(modes) / sizeof(modes[0])))
		usage();
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--iter"))
			opt.iter = (int)num_arg(argc, argv, &i, 1, 1000000000);
		else if (!strcmp(argv[i], "--rate"))
			opt.rate = num_arg(argc, argv, &i, 0, 100000000);
		else if (!strcmp(argv[i], "--threads"))
			opt.threads = (int)num_arg(argc, argv, &i, 1, 64);
		else if (!strcmp(argv[i], "--traces"))
			opt.traces = (int)num_arg(argc, argv, &i, 1, 100000000);
		else if (!strcmp(argv[i], "--start-delay-ms"))
			opt.start_delay_ms = (unsigned)num_arg(argc, argv, &i, 0, 3600000);
		else if (!strcmp(argv[i], "--mid-delay-ms"))
			opt.mid_delay_ms = (unsigned)num_arg(argc, argv, &i, 0, 3600000);
		else if (!strcmp(argv[i], "--exit-delay-ms"))
			opt.exit_delay_ms = (unsigned)num_arg(argc, argv, &i, 0, 3600000);
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else
			usage();
	}
	if (opt.iter < 0)
		opt.iter = modes[m].iter;
	opt.out = stdout;
	if (out && !(opt.out = fopen(out, "w"))) {
		fprintf(stderr, "nvtx_app: %s: %s\n", out, strerror(errno));
		return 1;
	}
	if (opt.start_delay_ms)
		sleep_ms(opt.start_delay_ms);
	/* NVTX loads the injection library at its first call: make it now,
	 * so no measured range includes the load */
	nvtxInitialize(NULL);
	modes[m].fn();
	if (opt.exit_delay_ms)
		sleep_ms(opt.exit_delay_ms);
	if (opt.out != stdout)
		fclose(opt.out);
	return 0;
}
