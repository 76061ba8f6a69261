// SPDX-License-Identifier: GPL-2.0
/*
 * test_unwind_dump.c - a CLI over the unwind-table compiler, for
 * tests/test_unwind_table.py and bench/unwind_table_build.sh.
 *
 *   test_unwind_dump [--debug DBG] [--mem] FILE     the table
 *   test_unwind_dump --lookup [--debug DBG] [--mem] FILE VADDR...
 *   test_unwind_dump --stats [--debug DBG] [--mem] FILE
 *   test_unwind_dump --time FILE [N]                 build time
 *   test_unwind_dump --go FILE                       Go: version, offsets
 *
 * --debug: also read DBG's .debug_frame (unwind_table_build_fds());
 * --mem: read FILE into memory and use unwind_table_build_mem() (the
 * vDSO path). With --lookup, a VADDR of "-" reads addresses (hex) from
 * stdin, one per line. --time builds N times (default 1) in this process
 * and prints the best and the first build's time in ms (the first pays
 * for fresh memory: page faults), rows, table bytes, ns per row.
 *
 * A row prints as "VADDR CFA RBP": VADDR in hex; CFA "rsp+N", "rbp+N",
 * "plt1"/"plt2"/"plt3" (the three PLT expressions), "outer" (return
 * address undefined: outermost frame), "sig" (signal frame),
 * "go-systemstack"/"go-mcall"/"go-morestack"/"go-vdso"/"go-asmcgocall"/
 * "go-cgocallback" (a Go stack switch; RBP then prints as "curg=N,tls=N":
 * the row's two offsets; curg= is m.vdsoSP's for go-vdso; go-cgocallback
 * adds ",cfa=N", the frame's CFA offset from rsp), "u"
 * (UNSUPPORTED) or "end" (END row); RBP "u" (unchanged), "c-N" (saved
 * at CFA-N) or "x" (UNSUPPORTED). --lookup prints "VADDR -" where
 * unwind_table_find() returns NULL. Counters follow as "# stats k=v ...",
 * the build's result as "# result N". --go prints one line of key=value:
 * what unwind_go_apply() found (on an empty table: pcsp rows) and the
 * curg offset unwind_go_dwarf_curg() reads from the DWARF, and how the
 * pclntab was found (pclntab=section|magic, "-" on failure). Exit 0 on success, 2 when the
 * build failed (counters still printed), 1 on usage or I/O errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libelf.h>

#include "unwind/compile.h"
#include "unwind/go.h"

static void fmt_row(const struct unwind_row *r, char *cfa, char *rbp)
{
	switch (UNWIND_ROW_CFA_TYPE(r)) {
	case UNWIND_CFA_END:
		strcpy(cfa, "end");
		break;
	case UNWIND_CFA_RSP:
		sprintf(cfa, "rsp+%u", r->cfa_off8 * 8u);
		break;
	case UNWIND_CFA_RBP:
		sprintf(cfa, "rbp+%u", r->cfa_off8 * 8u);
		break;
	case UNWIND_CFA_PLT1:
		strcpy(cfa, "plt1");
		break;
	case UNWIND_CFA_PLT2:
		strcpy(cfa, "plt2");
		break;
	case UNWIND_CFA_PLT3:
		strcpy(cfa, "plt3");
		break;
	case UNWIND_CFA_RA_UNDEFINED:
		strcpy(cfa, "outer");
		break;
	case UNWIND_CFA_SIGNAL:
		strcpy(cfa, "sig");
		break;
	case UNWIND_CFA_GO_SWITCH:
		/* Go stack switch: kind, m.curg offset, g's TLS offset */
		strcpy(cfa, UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_SYSTEMSTACK ?
		       "go-systemstack" : UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_MCALL ?
		       "go-mcall" : UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_VDSO ?
		       "go-vdso" : UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_ASMCGOCALL ?
		       "go-asmcgocall" : UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_CGOCALLBACK ?
		       "go-cgocallback" : "go-morestack");
		if (UNWIND_ROW_RBP_TYPE(r) == UNWIND_GO_CGOCALLBACK)
			sprintf(rbp, "curg=%u,tls=%d,cfa=%u", UNWIND_GO_CB_CURG8(r) * 8u,
				r->rbp_off8 * 8, UNWIND_GO_CB_CFA8(r) * 8u);
		else
			sprintf(rbp, "curg=%u,tls=%d", r->cfa_off8 * 8u, r->rbp_off8 * 8);
		return;
	default:
		strcpy(cfa, "u");
	}
	switch (UNWIND_ROW_RBP_TYPE(r)) {
	case UNWIND_RBP_UNCHANGED:
		strcpy(rbp, "u");
		break;
	case UNWIND_RBP_CFA_OFFSET:
		sprintf(rbp, "c%+d", r->rbp_off8 * 8);
		break;
	default:
		strcpy(rbp, "x");
	}
}

static void print_stats(const struct unwind_build_stats *st, int ret)
{
	int i;

	printf("# stats sections=%u bytes=%" PRIu64 " cies=%u fdes=%u"
	       " fdes_empty=%u fdes_overlap=%u rows=%u rows_unsupported=%u"
	       " rows_plt=%u rows_signal=%u errors=%u",
	       st->sections, st->section_bytes, st->cies, st->fdes,
	       st->fdes_empty, st->fdes_overlap, st->rows,
	       st->rows_unsupported, st->rows_plt, st->rows_signal,
	       st->errors);
	for (i = 0; i < UNWIND_ERR__COUNT; i++)
		printf(" %s=%u", unwind_err_name(i), st->err[i]);
	printf("\n# result %d%s%s\n", ret, ret ? " " : "",
	       ret ? strerror(-ret) : "");
}

/* read_file - FILE whole into malloc'd memory. */
static void *read_file(const char *path, size_t *size)
{
	struct stat sb;
	char *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &sb)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc(sb.st_size ? (size_t)sb.st_size : 1);
	while (buf && got < (size_t)sb.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*size = got;
	return buf;
}

/* build - the table of @path (and @debug), by fd or from memory. */
static int build(const char *path, const char *debug, int mem,
		 struct unwind_table *t, struct unwind_build_stats *st)
{
	int fd, dfd = -1, ret;

	if (mem) {
		size_t size = 0;
		void *img = read_file(path, &size);

		if (!img) {
			perror(path);
			exit(1);
		}
		ret = unwind_table_build_mem(img, size, t, st);
		free(img);
		return ret;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	if (debug) {
		dfd = open(debug, O_RDONLY | O_CLOEXEC);
		if (dfd < 0) {
			perror(debug);
			exit(1);
		}
	}
	ret = unwind_table_build_fds(fd, dfd, t, st);
	close(fd);
	if (dfd >= 0)
		close(dfd);
	return ret;
}

static void lookup_one(const struct unwind_table *t, uint64_t va)
{
	const struct unwind_row *r = unwind_table_find(t, va);
	char cfa[32], rbp[32];

	if (!r) {
		printf("%" PRIx64 " -\n", va);
		return;
	}
	fmt_row(r, cfa, rbp);
	printf("%" PRIx64 " %s %s\n", va, cfa, rbp);
}

static int do_time(const char *path, int n)
{
	double best = 1e30, first = 0;
	struct unwind_build_stats st;
	int i, ret = 0;

	for (i = 0; i < n; i++) {
		struct unwind_table t;
		struct timespec a, b;
		double ms;

		clock_gettime(CLOCK_MONOTONIC, &a);
		ret = build(path, NULL, 0, &t, &st);
		clock_gettime(CLOCK_MONOTONIC, &b);
		unwind_table_free(&t);
		ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
		if (ms < best)
			best = ms;
		if (!i)
			first = ms;
	}
	printf("ms=%.3f first_ms=%.3f rows=%u bytes=%zu fdes=%u section_bytes=%" PRIu64
	       " ns_per_row=%.1f result=%d\n", best, first, st.rows,
	       st.rows * sizeof(struct unwind_row), st.fdes, st.section_bytes,
	       st.rows ? best * 1e6 / st.rows : 0.0, ret);
	return ret ? 2 : 0;
}

/* --go: what unwind_go_apply() finds in a Go binary, and its DWARF's curg. */
static int do_go(const char *path)
{
	struct unwind_table t = { 0 };
	struct unwind_go_info info;
	uint32_t dwarf_curg, dwarf_vdso_sp;
	int fd = open(path, O_RDONLY), ret, dret;
	Elf *elf;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE ||
	    !(elf = elf_begin(fd, ELF_C_READ, NULL))) {
		perror(path);
		return 1;
	}
	ret = unwind_go_apply(elf, &t, &info);
	dret = unwind_go_dwarf_offsets(elf, &dwarf_curg, &dwarf_vdso_sp);
	printf("version=%s nfuncs=%u switch_funcs=%u special_funcs=%u pcsp_rows=%u "
	       "tls_g_off=%d curg=%u vdso_sp=%u curg_from_dwarf=%u dwarf_curg=%u "
	       "dwarf_vdso_sp=%u dwarf_result=%d pclntab=%s result=%d\n",
	       info.version[0] ? info.version : "-", info.nfuncs,
	       info.switch_funcs, info.special_funcs, info.pcsp_rows, info.tls_g_off,
	       info.m_curg_off, info.m_vdso_sp_off, info.curg_from_dwarf, dwarf_curg,
	       dwarf_vdso_sp, dret, ret ? "-" : info.pclntab_by_magic ? "magic" : "section",
	       ret);
	unwind_table_free(&t);
	elf_end(elf);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *debug = NULL, *path;
	int lookup = 0, stats_only = 0, mem = 0, i = 1, ret;
	struct unwind_build_stats st;
	struct unwind_table t;
	char cfa[32], rbp[32];
	uint32_t k;

	if (argc == 3 && !strcmp(argv[1], "--go"))
		return do_go(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "--time"))
		return do_time(argv[2], argc > 3 ? atoi(argv[3]) : 1);
	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--lookup"))
			lookup = 1;
		else if (!strcmp(argv[i], "--stats"))
			stats_only = 1;
		else if (!strcmp(argv[i], "--mem"))
			mem = 1;
		else if (!strcmp(argv[i], "--debug") && i + 1 < argc)
			debug = argv[++i];
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: %s [--lookup|--stats] [--debug DBG] "
			"[--mem] FILE [VADDR...|-]\n       %s --time FILE [N]\n",
			argv[0], argv[0]);
		return 1;
	}
	path = argv[i++];
	ret = build(path, debug, mem, &t, &st);

	if (lookup) {
		for (; i < argc; i++) {
			if (!strcmp(argv[i], "-")) {
				char line[64];

				while (fgets(line, sizeof(line), stdin))
					lookup_one(&t, strtoull(line, NULL, 16));
			} else {
				lookup_one(&t, strtoull(argv[i], NULL, 16));
			}
		}
	} else if (!stats_only) {
		printf("# base %" PRIx64 " rows %u\n", t.base, t.nr_rows);
		for (k = 0; k < t.nr_rows; k++) {
			fmt_row(&t.rows[k], cfa, rbp);
			printf("%016" PRIx64 " %s %s\n", t.base + t.rows[k].pc,
			       cfa, rbp);
		}
	}
	print_stats(&st, ret);
	unwind_table_free(&t);
	return ret ? 2 : 0;
}
