// SPDX-License-Identifier: GPL-2.0
/*
 * test_output.c - builds known profiles with the profile.h API and writes
 * them with the pprof and flame graph writers; tests/test_output.py checks
 * the files with independent readers (Google's pprof, protoc, chromium).
 *
 * Usage:
 *   test_output PPROF_OUT HTML_OUT     the realistic profile, both formats
 *   test_output --hostile HTML_OUT     names that try to break the page
 *   test_output --big NODES HTML_OUT   a flame graph of about NODES frames
 *
 * Exits 0 when every call succeeded and the in-process checks held, 1
 * otherwise (with a message on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/flamegraph.h"
#include "output/pprof.h"
#include "profile/profile.h"

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: check failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			exit(1);					\
		}							\
	} while (0)

/* The inputs; tests/test_output.py restates them to compare against. */
#define APP_PATH	"/usr/bin/myapp"
#define APP_BUILD_ID	"4f3c2a1b9d8e7f60a1b2c3d4e5f60718293a4b5c"
#define KERNEL		"[kernel.kallsyms]"
#define CXX_NAME	"MyNS::Worker::process(std::vector<int, std::allocator<int> > const&)"
#define CXX_MANGLED	"_ZN4MyNS6Worker7processERKSt6vectorIiSaIiEE"
#define PERIOD_NS	10101010	/* 99 Hz */

enum { F_START, F_MAIN, F_RUN, F_PROCESS, F_HASH, F_WRITE, F_ENTRY,
       F_DOSYS, F_SYSWRITE, F_TIMER, NFUNCS };

static const struct {
	const char *name, *system_name, *file;
	uint64_t addr;
	int64_t line;
	bool kernel;
} funcs[NFUNCS] = {
	[F_START]	= { "__libc_start_call_main", NULL, "", 0x555555556100, 0, false },
	[F_MAIN]	= { "main", NULL, "src/main.c", 0x555555556200, 42, false },
	[F_RUN]		= { "run_loop", NULL, "src/loop.c", 0x555555556300, 17, false },
	[F_PROCESS]	= { CXX_NAME, CXX_MANGLED, "src/worker.cc", 0x555555556400, 88, false },
	[F_HASH]	= { "compute_hash", NULL, "src/hash.c", 0x555555556500, 9, false },
	[F_WRITE]	= { "write", NULL, "", 0x555555556600, 0, false },
	[F_ENTRY]	= { "entry_SYSCALL_64", NULL, "", 0xffffffff81e000a0, 0, true },
	[F_DOSYS]	= { "do_syscall_64", NULL, "", 0xffffffff81d2c3e0, 0, true },
	[F_SYSWRITE]	= { "__x64_sys_write", NULL, "", 0xffffffff8134b2f0, 0, true },
	[F_TIMER]	= { "asm_sysvec_apic_timer_interrupt", NULL, "", 0xffffffff81e00e40, 0, true },
};

static uint32_t loc[NFUNCS];

static void label_num(struct profile_label *l, const char *key, int64_t num,
		      const char *unit)
{
	memset(l, 0, sizeof(*l));
	l->key = key;
	l->num = num;
	l->num_unit = unit;
}

static void label_str(struct profile_label *l, const char *key,
		      const char *str)
{
	memset(l, 0, sizeof(*l));
	l->key = key;
	l->str = str;
}

/* Add one sample: @stack leaf first, ended by -1. */
static void add(struct profile *p, const int *stack, int64_t count,
		int pid, int tid, const char *comm, const char *thread)
{
	struct profile_label labels[5];
	uint32_t ids[16], n = 0, nl = 0;
	int64_t values[2] = { count, count * PERIOD_NS };

	for (; stack[n] >= 0; n++)
		ids[n] = stack[n] >= NFUNCS ? (uint32_t)stack[n] - NFUNCS :
					      loc[stack[n]];
	label_num(&labels[nl++], "pid", pid, NULL);
	label_num(&labels[nl++], "tid", tid, NULL);
	label_str(&labels[nl++], "comm", comm);
	label_str(&labels[nl++], "thread_name", thread);
	if (pid == 4242)
		label_num(&labels[nl++], "rss", 1048576, "bytes");
	CHECK(profile_add_sample(p, ids, n, values, labels, nl) == 0);
}

static struct profile *realistic_profile(void)
{
	struct profile *p = profile_new();
	uint32_t app, kernel, unresolved;

	CHECK(p);
	CHECK(profile_add_sample_type(p, "samples", "count") == 0);
	CHECK(profile_add_sample_type(p, "cpu", "nanoseconds") == 0);
	p->period_type.type = profile_intern(p, "cpu");
	p->period_type.unit = profile_intern(p, "nanoseconds");
	p->period = PERIOD_NS;
	p->time_nanos = 1700000000123456789LL;
	p->duration_nanos = 10000000000LL;
	CHECK(profile_add_comment(p, "profd test profile") == 0);
	CHECK(profile_add_comment(p, "host=testhost kernel=6.1.0") == 0);

	app = profile_add_mapping(p, 0x555555554000, 0x555555600000, 0x1000,
				  APP_PATH, APP_BUILD_ID);
	kernel = profile_add_mapping(p, 0xffffffff81000000,
				     0xffffffff83000000, 0, KERNEL, "");
	CHECK(app == 1 && kernel == 2);
	for (int i = 0; i < NFUNCS; i++) {
		uint32_t f = profile_function_id(p, funcs[i].name,
						 funcs[i].system_name,
						 funcs[i].file);

		CHECK(f);
		loc[i] = profile_location_id(p, funcs[i].kernel ? kernel : app,
					     funcs[i].addr, f, funcs[i].line);
		CHECK(loc[i]);
	}
	/* Deduplication: asking again gives the same ids. */
	CHECK(profile_function_id(p, "main", NULL, "src/main.c") ==
	      p->locations[loc[F_MAIN] - 1].function_id);
	unresolved = profile_location_id(p, app, 0x5555555a1234, 0, 0);
	CHECK(unresolved);

	/* 5 deep: the hottest path. */
	add(p, (int[]){ F_HASH, F_PROCESS, F_RUN, F_MAIN, F_START, -1 },
	    7, 4242, 4243, "myapp", "worker-1");
	/* User into kernel, leaf first: kernel frames on top. */
	add(p, (int[]){ F_SYSWRITE, F_DOSYS, F_ENTRY, F_WRITE, F_RUN, F_MAIN,
			F_START, -1 },
	    3, 4242, 4242, "myapp", "myapp");
	add(p, (int[]){ F_PROCESS, F_RUN, F_MAIN, F_START, -1 },
	    2, 4242, 4243, "myapp", "worker-1");
	/* An interrupt in the hash loop. */
	add(p, (int[]){ F_TIMER, F_HASH, F_PROCESS, F_RUN, F_MAIN, F_START,
			-1 },
	    1, 4242, 4244, "myapp", "worker-2");
	/* Another process with an unresolved frame. */
	add(p, (int[]){ (int)(NFUNCS + unresolved), F_MAIN, F_START, -1 },
	    4, 777, 777, "other", "other");
	return p;
}

static int write_realistic(const char *pprof_path, const char *html_path)
{
	struct profile *p = realistic_profile();
	struct flamegraph *fg = flamegraph_new(0);
	uint8_t *buf;
	size_t len;
	int err;

	CHECK(fg);
	err = pprof_encode(p, &buf, &len);
	CHECK(err == 0 && len > 0);
	free(buf);
	err = pprof_write(p, pprof_path);
	if (err) {
		fprintf(stderr, "pprof_write %s: %s\n", pprof_path,
			strerror(-err));
		return 1;
	}
	/* Errors: a missing directory is reported, no temp file is left. */
	CHECK(pprof_write(p, "/nonexistent-profd-dir/x.pb.gz") == -ENOENT);
	CHECK(flamegraph_add_profile(fg, p, 2) == -EINVAL);

	CHECK(flamegraph_add_profile(fg, p, 0) == 0);
	CHECK(flamegraph_total(fg) == 7 + 3 + 2 + 1 + 4);
	/* Merging the same profile again doubles every weight. */
	CHECK(flamegraph_add_profile(fg, p, 0) == 0);
	CHECK(flamegraph_total(fg) == 2 * 17);
	CHECK(flamegraph_truncated(fg) == 0);
	{
		/* A bounded tree keeps every weight on the paths it has. */
		struct flamegraph *small = flamegraph_new(4);

		CHECK(small && flamegraph_add_profile(small, p, 0) == 0);
		CHECK(flamegraph_total(small) == 17);
		CHECK(flamegraph_truncated(small) > 0);
		flamegraph_free(small);
	}
	err = flamegraph_write_html(fg, html_path, "profd test: myapp", "samples");
	if (err) {
		fprintf(stderr, "flamegraph_write_html %s: %s\n", html_path,
			strerror(-err));
		return 1;
	}
	flamegraph_free(fg);
	profile_free(p);
	return 0;
}

/* Names made to break out of the JSON, the <script> or the encoding. */
static const char *const hostile[] = {
	"evil</script><script>document.title='pwned'</script>",
	"quote\"in<name>&amp;",
	"bad\xff\xfeutf8\xc3(",
	"ctl\x01\x1f\ttab\nnl",
	"sep\xe2\x80\xa8" "ls\xe2\x80\xa9ps",
	"<!--comment",
	"snow\xe2\x98\x83man \xf0\x9f\x94\xa5",
};

static int write_hostile(const char *html_path)
{
	struct profile *p = profile_new();
	struct flamegraph *fg = flamegraph_new(0);
	size_t n = sizeof(hostile) / sizeof(hostile[0]);
	uint32_t m, ids[2];
	int64_t v;
	int err;

	CHECK(p && fg);
	CHECK(profile_add_sample_type(p, "samples", "count") == 0);
	m = profile_add_mapping(p, 0x1000, 0x2000, 0, "/bin/</script>", "");
	ids[1] = profile_location_id(p, m, 0x1100,
				     profile_function_id(p, "main", NULL, ""), 0);
	for (size_t i = 0; i < n; i++) {
		struct profile_label l = { .key = "comm", .str = "app</script>\"" };

		ids[0] = profile_location_id(p, m, 0x1200 + i,
			profile_function_id(p, hostile[i], NULL, ""), 0);
		CHECK(ids[0] && ids[1]);
		v = 10 + i;
		CHECK(profile_add_sample(p, ids, 2, &v, &l, 1) == 0);
	}
	CHECK(flamegraph_add_profile(fg, p, 0) == 0);
	err = flamegraph_write_html(fg, html_path,
				    "</script><b id=\"injected\">x</b>\xff", "samples");
	flamegraph_free(fg);
	profile_free(p);
	if (err)
		fprintf(stderr, "flamegraph_write_html: %s\n", strerror(-err));
	return err ? 1 : 0;
}

/*
 * A tree of about @nodes frames: one process, below it a 10-ary tree
 * whose leaves are the samples: leaf s has frames "fn_<d>_<digit d of s>",
 * so every prefix of digits is one node. Leaf weights vary (1..13).
 */
static int write_big(long nodes, const char *html_path)
{
	struct profile *p = profile_new();
	struct flamegraph *fg = flamegraph_new(0);
	struct profile_label l;
	uint32_t m, ids[16], depth = 1;
	long leaves = nodes * 9 / 10, span = 10;
	char name[64];
	int err;

	CHECK(p && fg && nodes > 0);
	CHECK(profile_add_sample_type(p, "samples", "count") == 0);
	m = profile_add_mapping(p, 0x400000, 0x800000, 0, "/usr/bin/big", "");
	for (; span < leaves && depth < 15; depth++)
		span *= 10;
	label_str(&l, "comm", "big");
	for (long s = 0; s < leaves; s++) {
		int64_t v = 1 + s % 13;
		long x = s;

		/* ids[] is leaf first: the last digit is the leaf frame. */
		for (uint32_t d = depth; d-- > 0; x /= 10) {
			uint32_t f;

			snprintf(name, sizeof(name), "fn_%u_%ld", d, x % 10);
			f = profile_function_id(p, name, NULL, "");
			ids[depth - 1 - d] = profile_location_id(p, m,
				0x400000 + d * 16 + x % 10, f, 0);
			CHECK(f && ids[depth - 1 - d]);
		}
		CHECK(profile_add_sample(p, ids, depth, &v, &l, 1) == 0);
	}
	CHECK(flamegraph_add_profile(fg, p, 0) == 0);
	err = flamegraph_write_html(fg, html_path, "big", "samples");
	flamegraph_free(fg);
	profile_free(p);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--hostile") == 0)
		return write_hostile(argv[2]);
	if (argc == 4 && strcmp(argv[1], "--big") == 0)
		return write_big(strtol(argv[2], NULL, 10), argv[3]);
	if (argc == 3 && argv[1][0] != '-')
		return write_realistic(argv[1], argv[2]);
	fprintf(stderr, "usage: %s PPROF_OUT HTML_OUT | --hostile HTML_OUT | "
		"--big NODES HTML_OUT\n", argv[0]);
	return 2;
}
