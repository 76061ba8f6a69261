// SPDX-License-Identifier: GPL-2.0
/*
 * test_verifier_log.c - --bpf-verifier-log-level on a program the kernel's
 * verifier really rejects (profd's own programs load, and no flag makes
 * them fail): tracer_load_logged() and tracer_load_only()
 * (src/tracer/bpf_log.c), the code profd's tracer_open() loads its
 * skeleton with. Two BPF objects are compiled here with clang: one whose
 * program reads past the perf_event context (rejected: "invalid
 * bpf_context access"), one that is fine. Checks, on stderr:
 *   - a good load at level 2 prints nothing;
 *   - a failing load at level 0 prints nothing (tracer.c prints the one
 *     error line), at level 1 libbpf's level-1 log, at level 2 the
 *     level-2 log of a second load of the failing program alone (longer
 *     than the level-1 log) and not the level-1 log.
 * Needs root (CAP_BPF + CAP_PERFMON) and clang. Usage: test_verifier_log
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "check.h"
#include "tracer/bpf_log.h"

static const char bpf_src[] =
	"#define SEC(n) __attribute__((section(n), used))\n"
	"char LICENSE[] SEC(\"license\") = \"GPL\";\n"
	"SEC(\"perf_event\") int %s(void *ctx)\n"
	"{\n"
	"	long x = *(volatile long *)ctx;\n"
	"	if (x > 5)\n"
	"		x += 3;\n"
	"	else\n"
	"		x -= 1;\n"
	"	return x%s;\n"
	"}\n";

static char dir[] = "/tmp/profd-vlog-XXXXXX";

/* Compile a one-program object into @out; @bad reads past the context. */
static int build_obj(const char *out, const char *prog, bool bad)
{
	char src[512], cmd[1024];
	FILE *f;

	snprintf(src, sizeof(src), "%s/%s.bpf.c", dir, prog);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fprintf(f, bpf_src, prog, bad ? " + *(long *)((char *)ctx + 4096)" : "");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "clang -O2 -g -target bpf -c %s -o %s", src, out);
	return system(cmd);
}

struct loader_ctx {
	const char *path;
	struct bpf_object *obj;
};

static int load(void *ctx)
{
	struct loader_ctx *c = ctx;

	return bpf_object__load(c->obj);
}

static int load_one(void *ctx, const char *prog, unsigned int level)
{
	struct loader_ctx *c = ctx;
	struct bpf_object *copy = bpf_object__open_file(c->path, NULL);
	int err;

	if (!copy)
		return -errno;
	err = tracer_load_only(copy, prog, level);
	bpf_object__close(copy);
	return err;
}

/*
 * Load @path at @level with stderr captured into @out (malloc'ed text).
 * Returns the load's result.
 */
static int load_captured(const char *path, unsigned int level, char **out)
{
	struct loader_ctx c = { .path = path };
	struct tracer_loader l = { .load = load, .load_one = load_one, .ctx = &c };
	char cap[512];
	int saved, fd, err;
	FILE *f;
	long n;

	snprintf(cap, sizeof(cap), "%s/stderr", dir);
	fflush(stderr);
	saved = dup(2);
	fd = open(cap, O_RDWR | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	close(fd);
	c.obj = bpf_object__open_file(path, NULL);
	err = c.obj ? tracer_load_logged(&l, level) : -errno;
	bpf_object__close(c.obj);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(cap, "r");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*out = calloc(1, n + 1);
	if (fread(*out, 1, n, f) != (size_t)n)
		n = 0;
	fclose(f);
	return err;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

int main(void)
{
	char good[256], bad[256], *out;
	int err, lines1 = 0, lines2 = 0;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	snprintf(good, sizeof(good), "%s/good.bpf.o", dir);
	snprintf(bad, sizeof(bad), "%s/bad.bpf.o", dir);
	if (build_obj(good, "good_prog", false) || build_obj(bad, "bad_prog", true)) {
		fprintf(stderr, "cannot compile the test BPF programs with clang\n");
		return 2;
	}
	tracer_libbpf_setup(0);

	err = load_captured(good, 2, &out);
	CHECK(err == 0, "a good program loads at level 2 (%d)", err);
	CHECK(out[0] == '\0', "and nothing is printed: [%.300s]", out);
	free(out);

	err = load_captured(bad, 0, &out);
	CHECK(err < 0, "the bad program is rejected (%d)", err);
	CHECK(out[0] == '\0', "level 0 prints nothing itself: [%.300s]", out);
	free(out);

	err = load_captured(bad, 1, &out);
	CHECK(err < 0, "level 1: rejected (%d)", err);
	CHECK(strstr(out, "prog 'bad_prog': BPF program load failed") != NULL,
	      "level 1 names the program: [%.300s]", out);
	CHECK(strstr(out, "BEGIN PROG LOAD LOG") && strstr(out, "invalid bpf_context access"),
	      "level 1 prints the verifier's log with its error");
	CHECK(!strstr(out, "profd: verifier log of"), "level 1 loads only once");
	if (strstr(out, "BEGIN PROG LOAD LOG"))
		lines1 = count_lines(strstr(out, "BEGIN PROG LOAD LOG"));
	free(out);

	err = load_captured(bad, 2, &out);
	CHECK(err < 0, "level 2: rejected (%d)", err);
	CHECK(strstr(out, "profd: verifier log of program bad_prog (level 2):") != NULL,
	      "level 2 prints the failing program's level-2 log: [%.300s]", out);
	CHECK(strstr(out, "invalid bpf_context access") != NULL,
	      "with the verifier's error");
	CHECK(!strstr(out, "BEGIN PROG LOAD LOG"), "and not the level-1 log");
	if (strstr(out, "profd: verifier log of"))
		lines2 = count_lines(strstr(out, "profd: verifier log of"));
	CHECK(lines2 > lines1, "the level-2 log is the longer one (%d > %d lines)",
	      lines2, lines1);
	fprintf(stdout, "--- level 2 output ---\n%s--- end ---\n", out);
	free(out);

	{
		struct bpf_object *obj = bpf_object__open_file(good, NULL);

		CHECK(obj && tracer_load_only(obj, "no_such_prog", 2) == -ENOENT,
		      "tracer_load_only of an unknown program: -ENOENT");
		bpf_object__close(obj);
	}

	snprintf(good, sizeof(good), "rm -rf %s", dir);
	if (system(good))
		fprintf(stderr, "cannot remove %s\n", dir);
	return failures ? 1 : 0;
}
