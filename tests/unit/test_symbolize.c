// SPDX-License-Identifier: GPL-2.0
/*
 * test_symbolize.c - command-line front end to the symbolizer, driven by
 * tests/test_symbol.py (which compares it against nm/readelf/c++filt).
 *
 *   test_symbolize [--no-debug] ELF_PATH VADDR...
 *	"build-id HEX" then, per VADDR (ELF virtual address), one line
 *	"0xVADDR NAME 0xSYMSTART" (NAME demangled, may contain spaces) or
 *	"0xVADDR ?" when no symbol covers it. On stderr "debug PATH" (the
 *	separate debug file used, searched on the host; "debug -" for none
 *	or with --no-debug) and "nsyms N".
 *   test_symbolize --pid PID ADDR...
 *	runtime addresses of a live process, through proc_maps_read,
 *	symbolizer_get and sym_object_resolve: "0xADDR NAME 0xSYMSTART"
 *	or "0xADDR ? REASON".
 *   test_symbolize --session
 *	one symbolizer for many requests read from stdin, one a line:
 *	"PID ADDR..." answers as --pid does, then a line "end"; "trim"
 *	calls symbolizer_trim and answers "end"; "memory" answers
 *	"memory BYTES" (symbolizer_memory(), as of the last trim), then
 *	"end". Stops at EOF.
 *   test_symbolize --kallsyms [--file PATH] [--range NAME] ADDR...
 *	"kallsyms COUNT LOAD_MS" then "0xADDR NAME 0xSYMADDR MODULE" per
 *	address (MODULE "-" for vmlinux) or "0xADDR ?"; with --range, first
 *	"range NAME 0xSTART 0xEND" (kallsyms_range()) or "range NAME ?".
 *
 * Exit status: 0, or 1 when the input could not be opened or parsed
 * (the error is printed on stderr).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proc/maps.h"
#include "symbol/debuginfo.h"
#include "symbol/demangle.h"
#include "symbol/elf_file.h"
#include "symbol/kallsyms.h"
#include "symbol/symbolizer.h"

static int parse_addr(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "bad address: %s\n", s);
		return -1;
	}
	return 0;
}

static int cmd_elf(const char *path, bool debug, int argc, char **argv)
{
	char found[PATH_MAX], *real;
	struct elf_file *f;
	int err = 0, i;

	f = elf_file_open(path, &err);
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(-err));
		return 1;
	}
	found[0] = '\0';
	if (debug) {
		real = realpath(path, NULL);
		debuginfo_attach(f, NULL, real, found, sizeof(found));
		free(real);
	}
	fprintf(stderr, "debug %s\n", found[0] ? found : "-");
	printf("build-id %s\n", elf_file_build_id(f));
	fprintf(stderr, "nsyms %" PRIu64 "\n", elf_file_nsymbols(f));
	for (i = 0; i < argc; i++) {
		uint64_t vaddr, start = 0;
		const char *name;
		char *dem;

		if (parse_addr(argv[i], &vaddr))
			continue;
		name = elf_file_lookup(f, vaddr, &start);
		if (!name) {
			printf("0x%" PRIx64 " ?\n", vaddr);
			continue;
		}
		dem = demangle(name);
		printf("0x%" PRIx64 " %s 0x%" PRIx64 "\n", vaddr,
		       dem ? dem : name, start);
		free(dem);
	}
	elf_file_free(f);
	return 0;
}

/* Resolve runtime addresses @argv of @pid through @s; 1 if maps fail. */
static int resolve_pid(struct symbolizer *s, pid_t pid, int argc, char **argv)
{
	struct proc_maps maps;
	int err, i;

	err = proc_maps_read(pid, &maps);
	if (err) {
		fprintf(stderr, "pid %d: %s\n", (int)pid, strerror(-err));
		return 1;
	}
	for (i = 0; i < argc; i++) {
		const struct proc_mapping *m;
		struct sym_result r;
		struct sym_object *o;
		uint64_t addr;

		if (parse_addr(argv[i], &addr))
			continue;
		m = proc_maps_find(&maps, addr);
		if (!m) {
			printf("0x%" PRIx64 " ? unmapped\n", addr);
			continue;
		}
		o = symbolizer_get(s, pid, m, &err);
		if (!o) {
			printf("0x%" PRIx64 " ? %s\n", addr, strerror(-err));
			continue;
		}
		/* Twice: the second answer comes from the offset cache. */
		err = sym_object_resolve(o, addr - m->start + m->offset, &r);
		if (!err)
			err = sym_object_resolve(o, addr - m->start + m->offset,
						 &r);
		if (err)
			printf("0x%" PRIx64 " ? no-symbol\n", addr);
		else
			printf("0x%" PRIx64 " %s 0x%" PRIx64 "\n", addr,
			       r.name, r.sym_vaddr);
		sym_object_put(o);
	}
	proc_maps_free(&maps);
	return 0;
}

static int cmd_pid(pid_t pid, int argc, char **argv)
{
	struct symbolizer *s = symbolizer_new();
	int rc;

	if (!s)
		return 1;
	rc = resolve_pid(s, pid, argc, argv);
	symbolizer_trim(s);
	symbolizer_free(s);
	return rc;
}

#define SESSION_ARGS 256

static int cmd_session(void)
{
	struct symbolizer *s = symbolizer_new();
	char *line = NULL, *argv[SESSION_ARGS], *tok, *save;
	size_t cap = 0;
	int argc;

	if (!s)
		return 1;
	while (getline(&line, &cap, stdin) > 0) {
		argc = 0;
		for (tok = strtok_r(line, " \t\n", &save);
		     tok && argc < SESSION_ARGS;
		     tok = strtok_r(NULL, " \t\n", &save))
			argv[argc++] = tok;
		if (argc == 1 && !strcmp(argv[0], "trim")) {
			symbolizer_trim(s);
		} else if (argc == 1 && !strcmp(argv[0], "memory")) {
			uint64_t bytes, sheds;

			symbolizer_memory(s, &bytes, &sheds);
			printf("memory %" PRIu64 "\n", bytes);
		}
		else if (argc)
			resolve_pid(s, (pid_t)atoi(argv[0]), argc - 1, argv + 1);
		printf("end\n");
		fflush(stdout);
	}
	free(line);
	symbolizer_trim(s);
	symbolizer_free(s);
	return 0;
}

static int cmd_kallsyms(const char *path, const char *range, int argc, char **argv)
{
	struct timespec t0, t1;
	struct kallsyms *k;
	uint64_t start, end;
	int err = 0, i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	k = kallsyms_load(path, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!k) {
		fprintf(stderr, "%s: %s\n", path, strerror(-err));
		printf("error %d\n", err);
		return 1;
	}
	printf("kallsyms %" PRIu64 " %.1f\n", kallsyms_count(k),
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	if (range && !kallsyms_range(k, range, &start, &end))
		printf("range %s 0x%" PRIx64 " 0x%" PRIx64 "\n", range, start, end);
	else if (range)
		printf("range %s ?\n", range);
	for (i = 0; i < argc; i++) {
		const struct ksym *ks;
		uint64_t addr;

		if (parse_addr(argv[i], &addr))
			continue;
		ks = kallsyms_lookup(k, addr);
		if (!ks)
			printf("0x%" PRIx64 " ?\n", addr);
		else
			printf("0x%" PRIx64 " %s 0x%" PRIx64 " %s\n", addr,
			       ks->name, ks->addr,
			       ks->module[0] ? ks->module : "-");
	}
	kallsyms_free(k);
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: test_symbolize [--no-debug] ELF_PATH VADDR...\n"
		"       test_symbolize --pid PID ADDR...\n"
		"       test_symbolize --session\n"
		"       test_symbolize --kallsyms [--file PATH] [--range NAME] ADDR...\n");
	return 2;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "--pid")) {
		if (argc < 3)
			return usage();
		rc = cmd_pid((pid_t)atoi(argv[2]), argc - 3, argv + 3);
	} else if (!strcmp(argv[1], "--session")) {
		rc = cmd_session();
	} else if (!strcmp(argv[1], "--no-debug")) {
		if (argc < 3)
			return usage();
		rc = cmd_elf(argv[2], false, argc - 3, argv + 3);
	} else if (!strcmp(argv[1], "--kallsyms")) {
		const char *path = "/proc/kallsyms", *range = NULL;

		argc -= 2;
		argv += 2;
		if (argc >= 2 && !strcmp(argv[0], "--file")) {
			path = argv[1];
			argc -= 2;
			argv += 2;
		}
		if (argc >= 2 && !strcmp(argv[0], "--range")) {
			range = argv[1];
			argc -= 2;
			argv += 2;
		}
		rc = cmd_kallsyms(path, range, argc, argv);
	} else {
		rc = cmd_elf(argv[1], true, argc - 2, argv + 2);
	}
	fflush(stdout);
	return rc;
}
