/*
 * test_usdt_multi.c - src/tracer/usdt_multi.c without BPF: SDT operands
 * encoded as libbpf's bpf_usdt_arg() reads them (the operand forms of
 * the SystemTap SDT note format), operands it must refuse, and the note
 * reader on a fixed-seed fuzz of the injection library (never a crash,
 * every offset inside the file).
 *
 *   test_usdt_multi                 the checks above (from the repository root)
 *   test_usdt_multi sites FILE PROV print FILE's PROV sites, one a line:
 *                                   "name offset ref_ctr_offset encoded|refused args"
 *                                   (offsets in hex)
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <asm/ptrace.h>
#include <sys/stat.h>

#include "check.h"
#include "tracer/usdt_multi.h"

static int print_sites(const char *path, const char *provider)
{
	struct usdt_site *s = calloc(4096, sizeof(*s));
	int fd = open(path, O_RDONLY), n;

	if (fd < 0 || !s)
		return 2;
	n = usdt_sites_read(fd, provider, s, 4096);
	close(fd);
	if (n < 0) {
		printf("error %d\n", n);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct profd_usdt_spec spec;

		printf("%s %llx %llx %s %s\n", s[i].name, (unsigned long long)s[i].offset,
		       (unsigned long long)s[i].ref_ctr_offset,
		       usdt_args_parse(s[i].args, &spec) ? "refused" : "encoded", s[i].args);
	}
	free(s);
	return 0;
}

struct operand_case {
	const char *text;
	int type;
	long long val_off;
	int reg_off;		/* -1: none */
	int is_signed;
	int bitshift;
};

static void operands(void)
{
	const struct operand_case cases[] = {
		{ "8@%rdi", PROFD_USDT_ARG_REG, 0, offsetof(struct pt_regs, rdi), 0, 0 },
		{ "-4@%eax", PROFD_USDT_ARG_REG, 0, offsetof(struct pt_regs, rax), 1, 32 },
		{ "2@%r9w", PROFD_USDT_ARG_REG, 0, offsetof(struct pt_regs, r9), 0, 48 },
		{ "-1@%sil", PROFD_USDT_ARG_REG, 0, offsetof(struct pt_regs, rsi), 1, 56 },
		{ "8@-16(%rbp)", PROFD_USDT_ARG_REG_DEREF, -16, offsetof(struct pt_regs, rbp), 0, 0 },
		{ "4@24(%rsp)", PROFD_USDT_ARG_REG_DEREF, 24, offsetof(struct pt_regs, rsp), 0, 32 },
		{ "8@(%r12)", PROFD_USDT_ARG_REG_DEREF, 0, offsetof(struct pt_regs, r12), 0, 0 },
		{ "4@$71", PROFD_USDT_ARG_CONST, 71, -1, 0, 32 },
		{ "-8@$-9", PROFD_USDT_ARG_CONST, -9, -1, 1, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct operand_case *c = &cases[i];
		struct profd_usdt_spec spec;
		const struct profd_usdt_arg_spec *a = &spec.args[0];
		int err = usdt_args_parse(c->text, &spec);

		CHECK(!err && spec.arg_cnt == 1 && a->arg_type == (__u32)c->type &&
		      (long long)a->val_off == c->val_off &&
		      (c->reg_off < 0 || a->reg_off == c->reg_off) &&
		      a->arg_signed == c->is_signed && a->arg_bitshift == c->bitshift,
		      "operand %s: type %u val_off %lld reg_off %d signed %d shift %d (err %d)",
		      c->text, a->arg_type, (long long)a->val_off, a->reg_off,
		      a->arg_signed, a->arg_bitshift, err);
	}
}

static void operand_lists(void)
{
	struct profd_usdt_spec spec;
	const char *bad[] = {
		"8@%xmm0",		/* not a general register */
		"3@%rax",		/* no such size */
		"8@-16(%rbp,%rax,8)",	/* index register: libbpf 1.1 cannot read it */
		"8@",			/* no location */
		"rdi",			/* no size */
		"1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al",
	};
	int err;

	err = usdt_args_parse("8@%rdi -4@%esi 4@%edx", &spec);
	CHECK(!err && spec.arg_cnt == 3 &&
	      spec.args[1].reg_off == offsetof(struct pt_regs, rsi) && spec.args[1].arg_signed &&
	      spec.args[2].reg_off == offsetof(struct pt_regs, rdx) && !spec.args[2].arg_signed,
	      "three operands: %d of them (err %d)", spec.arg_cnt, err);
	err = usdt_args_parse("", &spec);
	CHECK(!err && spec.arg_cnt == 0, "no operands: %d (err %d)", spec.arg_cnt, err);
	err = usdt_args_parse("  8@%rdi  ", &spec);
	CHECK(!err && spec.arg_cnt == 1, "spaces around one operand: %d (err %d)",
	      spec.arg_cnt, err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(usdt_args_parse(bad[i], &spec) == -EINVAL, "refused: \"%s\"", bad[i]);
}

/* Flip bytes of @lib at a fixed seed; read its sites each time. */
static void fuzz(const char *lib)
{
	int fd = open(lib, O_RDONLY), bad = 0, found = 0, rounds = 400;
	struct stat st;
	char *orig, *buf, tmp[] = "/tmp/profd-usdt-fuzz-XXXXXX";
	int out = mkstemp(tmp);

	if (fd < 0 || fstat(fd, &st) || out < 0) {
		CHECK(0, "fuzz: cannot open %s or a temporary file", lib);
		return;
	}
	orig = malloc(st.st_size);
	buf = malloc(st.st_size);
	if (!orig || !buf || read(fd, orig, st.st_size) != st.st_size) {
		CHECK(0, "fuzz: cannot read %s", lib);
		return;
	}
	srand(14);
	for (int r = 0; r < rounds; r++) {
		struct usdt_site s[32];
		off_t len = r % 7 == 6 ? rand() % st.st_size : st.st_size;	/* truncated */
		int n;

		memcpy(buf, orig, st.st_size);
		for (int k = 0; k < 1 + r % 64; k++)
			buf[rand() % st.st_size] = rand();
		if (ftruncate(out, 0) || pwrite(out, buf, len, 0) != len)
			break;
		n = usdt_sites_read(out, "profd", s, 32);
		if (n > 0)
			found++;
		for (int i = 0; i < n; i++)
			if (s[i].offset >= (uint64_t)len || s[i].ref_ctr_offset >= (uint64_t)len ||
			    !memchr(s[i].name, 0, sizeof(s[i].name)) ||
			    !memchr(s[i].args, 0, sizeof(s[i].args)))
				bad++;
	}
	CHECK(bad == 0, "fuzz: %d rounds, %d read sites, %d sites outside the file", rounds,
	      found, bad);
	close(out);
	unlink(tmp);
	close(fd);
	free(orig);
	free(buf);
}

int main(int argc, char **argv)
{
	struct usdt_site s[32];
	int fd, n;

	if (argc == 4 && !strcmp(argv[1], "sites"))
		return print_sites(argv[2], argv[3]);
	operands();
	operand_lists();

	fd = open("build/libprofd_inject.so", O_RDONLY);
	n = fd < 0 ? -errno : usdt_sites_read(fd, "profd", s, 32);
	CHECK(n >= 9, "the injection library's profd probes: %d", n);
	CHECK(fd < 0 || usdt_sites_read(fd, "no_such_provider", s, 32) == -ENODATA,
	      "another provider: none");
	CHECK(fd < 0 || usdt_sites_read(fd, "profd", s, 2) == -E2BIG, "too many for 2: E2BIG");
	if (fd >= 0)
		close(fd);
	fd = open("/proc/self/exe", O_RDONLY);	/* ELF, no stapsdt notes */
	CHECK(usdt_sites_read(fd, "profd", s, 32) == -ENODATA, "a program without probes");
	close(fd);
	fd = open("tests/unit/check.h", O_RDONLY);
	CHECK(usdt_sites_read(fd, "profd", s, 32) == -ENOEXEC, "not ELF: ENOEXEC");
	close(fd);
	fuzz("build/libprofd_inject.so");
	printf("uprobe_multi: %s\n", usdt_multi_supported() ? "yes" : "no");
	return failures ? 1 : 0;
}
