// SPDX-License-Identifier: GPL-2.0
/*
 * usdt_multi.c - USDT probes as uprobe-multi links (see usdt_multi.h):
 * the SDT note reader, the x86-64 operand encoder and the raw
 * BPF_LINK_CREATE call libbpf 1.1 lacks.
 *
 * The note reader takes any file a process maps under the injection
 * library's name, so it trusts nothing in it: every size and string is
 * bounded by the note, every address must fall in a PT_LOAD segment.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <asm/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <gelf.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

#include "tracer/usdt_multi.h"

/* Bytes of .note.stapsdt read at most (HotSpot's 529 probes: 52 KiB). */
#define USDT_NOTES_MAX (1u << 20)

/* The uprobe_multi member of union bpf_attr's link_create (kernel >= 6.6). */
struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__aligned_u64 path;
	__aligned_u64 offsets;
	__aligned_u64 ref_ctr_offsets;
	__aligned_u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad[9];		/* the rest of union bpf_attr's 64 bytes+: zero */
};

int usdt_multi_link(int prog_fd, const char *path, const uint64_t *offsets,
		    const uint64_t *ref_ctr_offsets, const uint64_t *cookies,
		    unsigned int cnt)
{
	struct link_create_uprobe_multi a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = prog_fd;
	a.attach_type = USDT_MULTI_ATTACH_TYPE;
	a.path = (uintptr_t)path;
	a.offsets = (uintptr_t)offsets;
	a.ref_ctr_offsets = (uintptr_t)ref_ctr_offsets;
	a.cookies = (uintptr_t)cookies;
	a.cnt = cnt;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : (int)fd;
}

static int probe_support(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = USDT_MULTI_ATTACH_TYPE);
	uint64_t offset = 0;
	int prog, link, err;

	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "profd_um_probe", "GPL",
			     insns, 2, &opts);
	if (prog < 0)
		return 0;
	/* a kernel with the link refuses "/" as a directory: EBADF */
	link = usdt_multi_link(prog, "/", &offset, NULL, NULL, 1);
	err = link;
	if (link >= 0)
		close(link);
	close(prog);
	return link >= 0 || err == -EBADF;
}

bool usdt_multi_supported(void)
{
	static int supported = -1;	/* benign race: both threads agree */

	if (supported < 0)
		supported = !getenv("PROFD_NO_UPROBE_MULTI") && probe_support();
	return supported;
}

/* The file offset of @addr in a PT_LOAD segment (executable if @exec); 0: none. */
static uint64_t addr_to_offset(Elf *e, size_t nphdr, uint64_t addr, bool exec)
{
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (exec && !(ph.p_flags & PF_X))
			continue;
		if (addr >= ph.p_vaddr && addr - ph.p_vaddr < ph.p_filesz)
			return addr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

/* The address of section @want; 0: none. */
static uint64_t section_addr(Elf *e, size_t shstrndx, const char *want)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, want))
			return sh.sh_addr;
	}
	return 0;
}

/* Copy the NUL-terminated string at *@p (< @end) into @dst; false if none. */
static bool take_string(const char **p, const char *end, char *dst, size_t size)
{
	size_t len = strnlen(*p, end - *p);

	if (len == (size_t)(end - *p) || len >= size)
		return false;
	memcpy(dst, *p, len + 1);
	*p += len + 1;
	return true;
}

/*
 * One stapsdt note (@desc, @len bytes) into @s if it is @provider's;
 * false if another provider's or malformed.
 */
static bool parse_note(Elf *e, size_t nphdr, uint64_t base_addr, uint64_t file_size,
		       const char *desc, size_t len, const char *provider,
		       struct usdt_site *s)
{
	const char *p = desc + 24, *end = desc + len;
	char prov[64];
	uint64_t pc, base, sema;

	if (len < 24 + 3)
		return false;
	memcpy(&pc, desc, 8);
	memcpy(&base, desc + 8, 8);
	memcpy(&sema, desc + 16, 8);
	if (!take_string(&p, end, prov, sizeof(prov)) || strcmp(prov, provider) ||
	    !take_string(&p, end, s->name, sizeof(s->name)))
		return false;
	if (p == end)
		s->args[0] = '\0';	/* a probe without arguments */
	else if (!take_string(&p, end, s->args, sizeof(s->args)))
		return false;
	if (base_addr && base) {	/* prelinked: the note's base moved */
		pc += base_addr - base;
		if (sema)
			sema += base_addr - base;
	}
	s->offset = addr_to_offset(e, nphdr, pc, true);
	s->ref_ctr_offset = sema ? addr_to_offset(e, nphdr, sema, false) : 0;
	/* segments of a truncated file may claim bytes it lacks */
	return s->offset && s->offset < file_size &&
	       (!sema || (s->ref_ctr_offset && s->ref_ctr_offset + 2 <= file_size));
}

int usdt_sites_read(int fd, const char *provider, struct usdt_site *out,
		    unsigned int max)
{
	Elf *e;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t shstrndx, nphdr;
	uint64_t base_addr;
	unsigned int n = 0;
	int ret = 0;

	struct stat st;

	if (elf_version(EV_CURRENT) == EV_NONE || fstat(fd, &st))
		return -ENOEXEC;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	if (!gelf_getehdr(e, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64 || elf_getshdrstrndx(e, &shstrndx) ||
	    elf_getphdrnum(e, &nphdr)) {
		elf_end(e);
		return -ENOEXEC;
	}
	base_addr = section_addr(e, shstrndx, ".stapsdt.base");
	while (!ret && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt"))
			continue;
		if (sh.sh_size > USDT_NOTES_MAX) {
			ret = -E2BIG;	/* never read: a hostile file's 200 MB of notes */
			break;
		}
		if (!(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			const char *buf = d->d_buf;

			if (nh.n_type != 3 || nh.n_namesz != 8 ||
			    memcmp(buf + name_off, "stapsdt", 8))
				continue;
			if (n == max) {
				ret = -E2BIG;
				break;
			}
			if (parse_note(e, nphdr, base_addr, st.st_size, buf + desc_off,
				       nh.n_descsz, provider, &out[n]))
				n++;
		}
	}
	elf_end(e);
	if (ret)
		return ret;
	return n ? (int)n : -ENODATA;
}

/* The offset in struct pt_regs of x86-64 register @name (any width); -1: unknown. */
static int reg_offset(const char *name)
{
	static const struct {
		const char *names[4];
		size_t off;
	} regs[] = {
		{ { "rip", "eip" }, offsetof(struct pt_regs, rip) },
		{ { "rax", "eax", "ax", "al" }, offsetof(struct pt_regs, rax) },
		{ { "rbx", "ebx", "bx", "bl" }, offsetof(struct pt_regs, rbx) },
		{ { "rcx", "ecx", "cx", "cl" }, offsetof(struct pt_regs, rcx) },
		{ { "rdx", "edx", "dx", "dl" }, offsetof(struct pt_regs, rdx) },
		{ { "rsi", "esi", "si", "sil" }, offsetof(struct pt_regs, rsi) },
		{ { "rdi", "edi", "di", "dil" }, offsetof(struct pt_regs, rdi) },
		{ { "rbp", "ebp", "bp", "bpl" }, offsetof(struct pt_regs, rbp) },
		{ { "rsp", "esp", "sp", "spl" }, offsetof(struct pt_regs, rsp) },
		{ { "r8", "r8d", "r8w", "r8b" }, offsetof(struct pt_regs, r8) },
		{ { "r9", "r9d", "r9w", "r9b" }, offsetof(struct pt_regs, r9) },
		{ { "r10", "r10d", "r10w", "r10b" }, offsetof(struct pt_regs, r10) },
		{ { "r11", "r11d", "r11w", "r11b" }, offsetof(struct pt_regs, r11) },
		{ { "r12", "r12d", "r12w", "r12b" }, offsetof(struct pt_regs, r12) },
		{ { "r13", "r13d", "r13w", "r13b" }, offsetof(struct pt_regs, r13) },
		{ { "r14", "r14d", "r14w", "r14b" }, offsetof(struct pt_regs, r14) },
		{ { "r15", "r15d", "r15w", "r15b" }, offsetof(struct pt_regs, r15) },
	};

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (int j = 0; j < 4; j++)
			if (regs[i].names[j] && !strcmp(regs[i].names[j], name))
				return (int)regs[i].off;
	return -1;
}

/* One operand at @s into @a; the characters it took, or -EINVAL. */
static int parse_operand(const char *s, struct profd_usdt_arg_spec *a)
{
	char reg[16];
	int size, len = -1, off_reg;
	long off;

	memset(a, 0, sizeof(*a));
	if (sscanf(s, " %d @ %ld ( %%%15[^)] ) %n", &size, &off, reg, &len) == 3 && len > 0) {
		a->arg_type = PROFD_USDT_ARG_REG_DEREF;
		a->val_off = off;
	} else if (len = -1, sscanf(s, " %d @ ( %%%15[^)] ) %n", &size, reg, &len) == 2 &&
		   len > 0) {
		a->arg_type = PROFD_USDT_ARG_REG_DEREF;
	} else if (len = -1, sscanf(s, " %d @ %%%15s %n", &size, reg, &len) == 2 && len > 0) {
		a->arg_type = PROFD_USDT_ARG_REG;
	} else if (len = -1, sscanf(s, " %d @ $%ld %n", &size, &off, &len) == 2 && len > 0) {
		a->arg_type = PROFD_USDT_ARG_CONST;
		a->val_off = off;
		reg[0] = '\0';
	} else {
		return -EINVAL;
	}
	if (a->arg_type != PROFD_USDT_ARG_CONST) {
		off_reg = reg_offset(reg);
		if (off_reg < 0)
			return -EINVAL;	/* also "(%rax,%rbx,8)": not encodable here */
		a->reg_off = off_reg;
	}
	a->arg_signed = size < 0;
	if (size < 0)
		size = -size;
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return -EINVAL;
	a->arg_bitshift = 64 - size * 8;
	return len;
}

int usdt_args_parse(const char *args, struct profd_usdt_spec *spec)
{
	const char *s = args;

	memset(spec, 0, sizeof(*spec));
	while (*s) {
		int len;

		while (*s == ' ')
			s++;
		if (!*s)
			break;
		if (spec->arg_cnt == PROFD_USDT_MAX_ARGS)
			return -EINVAL;
		len = parse_operand(s, &spec->args[spec->arg_cnt]);
		if (len <= 0)
			return -EINVAL;
		spec->arg_cnt++;
		s += len;
	}
	return 0;
}
