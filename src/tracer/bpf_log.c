// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_log.c - libbpf's messages and the kernel verifier's log (see
 * bpf_log.h).
 *
 * libbpf has one process-wide print callback. While an object loads,
 * warnings go into a memory stream instead of stderr: a load that works
 * prints what it printed before (libbpf warnings with -v), and one that
 * fails can print them all, the verifier log included, without -v. The
 * failing program's name is taken from libbpf's "prog 'NAME': BPF program
 * load failed" warning; libbpf 1.1 has no API that says which program
 * failed, and unloads them all before returning.
 *
 * Level 2 is only asked for on failure: a BPF_LOG_LEVEL2 log of every
 * program on every start takes minutes (each instruction's state is
 * printed), so the failing program alone is loaded a second time.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "tracer/bpf_log.h"

enum hold_mode {
	HOLD_NONE,	/* print as -v says */
	HOLD_ALL,	/* keep every warning in lb.held */
	HOLD_NO_LOG,	/* ... except libbpf's verifier log blocks */
	HOLD_DISCARD,	/* drop every warning (the level-2 reload) */
};

static struct {
	int verbose;
	enum hold_mode mode;
	FILE *held;		/* open_memstream() while a load runs */
	char failed_prog[128];	/* first program libbpf said failed */
} lb;

/* Remember the program of libbpf's "prog 'NAME': BPF program load failed". */
static void note_failed_prog(const char *fmt, va_list ap)
{
	char buf[512], *p, *q;
	va_list aq;

	if (lb.failed_prog[0] || !strstr(fmt, "load failed"))
		return;
	va_copy(aq, ap);
	vsnprintf(buf, sizeof(buf), fmt, aq);
	va_end(aq);
	p = strstr(buf, "prog '");
	if (!p || !strstr(buf, "BPF program load failed"))
		return;
	p += strlen("prog '");
	q = strchr(p, '\'');
	if (!q || q == p || (size_t)(q - p) >= sizeof(lb.failed_prog))
		return;
	memcpy(lb.failed_prog, p, q - p);
	lb.failed_prog[q - p] = '\0';
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	int want = getenv("PROFD_LIBBPF_DEBUG") ? 2 : lb.verbose;

	if (want >= 2)		/* everything, as it comes */
		return vfprintf(stderr, fmt, ap);
	if (level != LIBBPF_WARN)
		return 0;
	switch (lb.mode) {
	case HOLD_NONE:
		return want >= 1 ? vfprintf(stderr, fmt, ap) : 0;
	case HOLD_DISCARD:
		return 0;
	case HOLD_NO_LOG:
		note_failed_prog(fmt, ap);
		if (strstr(fmt, "PROG LOAD LOG"))
			return 0;
		break;
	case HOLD_ALL:
		note_failed_prog(fmt, ap);
		break;
	}
	return lb.held ? vfprintf(lb.held, fmt, ap) : 0;
}

void tracer_libbpf_setup(int verbose)
{
	lb.verbose = verbose;
	libbpf_set_print(libbpf_print);
}

/* Stop holding; print what was held when @print. */
static void release_held(char **buf, size_t *len, bool print)
{
	lb.mode = HOLD_NONE;
	if (lb.held) {
		fclose(lb.held);
		lb.held = NULL;
		if (print && *buf && *len)
			fwrite(*buf, 1, *len, stderr);
	}
	free(*buf);
	*buf = NULL;
}

int tracer_load_logged(const struct tracer_loader *l, unsigned int log_level)
{
	char *buf = NULL, prog[sizeof(lb.failed_prog)];
	size_t len = 0;
	int err;

	lb.failed_prog[0] = '\0';
	lb.held = open_memstream(&buf, &len);
	/* without a stream, warnings are dropped unless -v: as before */
	lb.mode = !lb.held ? HOLD_NONE : log_level >= 2 ? HOLD_NO_LOG : HOLD_ALL;
	err = l->load(l->ctx);
	release_held(&buf, &len, err ? lb.verbose >= 1 || log_level >= 1 :
				       lb.verbose >= 1);
	if (!err || log_level < 2)
		return err;
	if (!lb.failed_prog[0] || !l->load_one) {
		fprintf(stderr, "profd: no program failed verification: "
			"there is no verifier log to show\n");
		return err;
	}
	snprintf(prog, sizeof(prog), "%s", lb.failed_prog);
	lb.mode = HOLD_DISCARD;
	l->load_one(l->ctx, prog, log_level);
	lb.mode = HOLD_NONE;
	return err;
}

int tracer_load_only(struct bpf_object *obj, const char *prog,
		     unsigned int level)
{
	struct bpf_program *p, *target = NULL;
	size_t len;
	char *log;
	int err;

	bpf_object__for_each_program(p, obj) {
		if (!strcmp(bpf_program__name(p), prog))
			target = p;
		else
			bpf_program__set_autoload(p, false);
	}
	if (!target)
		return -ENOENT;
	log = malloc(TRACER_VERIFIER_LOG_BYTES);
	if (!log)
		return -ENOMEM;
	log[0] = '\0';
	bpf_program__set_autoload(target, true);
	bpf_program__set_log_buf(target, log, TRACER_VERIFIER_LOG_BYTES);
	bpf_program__set_log_level(target, level);
	err = bpf_object__load(obj);
	len = strnlen(log, TRACER_VERIFIER_LOG_BYTES);
	fprintf(stderr, "profd: verifier log of program %s (level %u%s):\n",
		prog, level, err == -ENOSPC ? ", longer than the buffer: cut" : "");
	fwrite(log, 1, len, stderr);
	if (len && log[len - 1] != '\n')
		fputc('\n', stderr);
	fprintf(stderr, "profd: end of the verifier log of program %s\n", prog);
	free(log);
	return err;
}
