// SPDX-License-Identifier: GPL-2.0
/*
 * ruby_walk.c - a test-only harness for tests/test_ruby_names.py: run a
 * Ruby program that stops itself (SIGSTOP), walk its main thread's
 * control frames from user space as the BPF walker does
 * (bpf/unwind_ruby.h: vm -> main thread -> ec -> cfp .. the end of the VM
 * stack, offsets from src/ruby/offsets.c), name every frame with
 * src/ruby/iseq.h and print them, leaf first, one per line:
 *   KIND<TAB>ERR<TAB>FUNCTION<TAB>FILE<TAB>LINE
 * KIND is "method" (a VM_FRAME_MAGIC_METHOD frame, named from its method
 * entry), "iseq" (another frame with an iseq), "cfunc" (a C frame); ERR
 * is 0 or the naming error. The outermost control frame (th_init()'s
 * dummy frame, to which Init_VM() gives the main thread's toplevel
 * "<main>" iseq, at its first instruction: line 0), which Ruby's own
 * backtraces leave out (vm_backtrace.c: backtrace_each() starts at
 * RUBY_VM_NEXT_CONTROL_FRAME twice from the end, i.e. end - 2), is
 * printed with "#outer " before KIND. Then kill the program.
 *
 * Usage: ruby_walk RUBY ARGS... (the program's own output goes to stderr)
 * Exit: 0 walked, 2 usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/remote.h"
#include "ruby/iseq.h"
#include "ruby/symbols.h"

static struct remote_reader *rr;
static pid_t child;

static void die(const char *msg)
{
	fprintf(stderr, "ruby_walk: %s\n", msg);
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	exit(2);
}

static uint64_t rd64(uint64_t addr)
{
	uint64_t v = 0;

	if (remote_read(rr, child, addr, &v, sizeof(v)))
		die("read failed");
	return v;
}

/* The dynamic symbol @name's value in ELF file @fd, 0 if absent. */
static uint64_t dynsym(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			n = elf_strptr(elf, sh.sh_link, s.st_name);
			if (n && !strcmp(n, name) && s.st_value)
				return s.st_value;
		}
	}
	return 0;
}

/* The mapping of libruby at file offset 0: its start and path. */
static int find_libruby(pid_t pid, uint64_t *start, char *path, size_t plen)
{
	char fn[64], line[4096];
	FILE *f;
	int found = 0;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", pid);
	f = fopen(fn, "r");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, offset;
		char perms[8], p[4096] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &lo, &hi, perms, &offset, p) < 4)
			continue;
		if (offset == 0 && strstr(p, "libruby")) {
			*start = lo;
			snprintf(path, plen, "%s", p);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

static void field(const char *s)
{
	for (; s && *s; s++)
		putchar(*s == '\t' || *s == '\n' ? ' ' : *s);
}

int main(int argc, char **argv)
{
	const struct rb_offsets *off = rb_offsets_find(3, 1, 2);
	struct rb_proc_addrs addrs = { 0 };
	uint64_t start = 0, bias, vm_ptr, fn, gs_vaddr = 0, lowest = ~0ULL;
	uint64_t vm, th, ec, cfp, stack, stack_size, end;
	struct rb_iseq_cache *c;
	char path[4096];
	struct timespec ts;
	size_t nph;
	int st, fd, ret;
	Elf *elf;

	if (argc < 2 || !off)
		die("usage: ruby_walk RUBY ARGS...");
	rr = remote_reader_new();
	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		dup2(2, 1);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	alarm(60);
	if (waitpid(child, &st, WUNTRACED) != child || !WIFSTOPPED(st))
		die("the program did not stop itself");
	if (!find_libruby(child, &start, path, sizeof(path)))
		die("no libruby mapping");
	fd = open(path, O_RDONLY);
	elf_version(EV_CURRENT);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!elf || elf_getphdrnum(elf, &nph))
		die("libruby unreadable");
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < lowest)
			lowest = ph.p_vaddr & ~0xfffULL;
	}
	bias = start - lowest;
	vm_ptr = dynsym(elf, "ruby_current_vm_ptr");
	fn = dynsym(elf, "rb_sym_immortal_count");
	if (!vm_ptr)
		die("no ruby_current_vm_ptr");
	ret = fn ? rb_global_symbols_find_fd(fd, fn, off, &gs_vaddr) : 0;
	if (ret == 1)
		addrs.global_symbols = gs_vaddr + bias;
	printf("# global_symbols %d 0x%llx\n", ret, (unsigned long long)addrs.global_symbols);
	elf_end(elf);
	close(fd);

	vm = rd64(vm_ptr + bias);
	th = rd64(vm + off->vm_main_thread);
	ec = rd64(th + off->thread_ec);
	cfp = rd64(ec + off->ec_cfp);
	stack = rd64(ec + off->ec_vm_stack);
	stack_size = rd64(ec + off->ec_vm_stack_size);
	end = stack + stack_size * 8;
	if (cfp < stack || cfp >= end)
		die("cfp outside the VM stack");
	c = rb_iseq_cache_new(rr, 4096, 16 << 20);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	for (int n = 0; cfp + off->cfp_size <= end && n < 10000; n++, cfp += off->cfp_size) {
		uint64_t pc = rd64(cfp + off->cfp_pc), iseq = rd64(cfp + off->cfp_iseq);
		uint64_t ep = rd64(cfp + off->cfp_ep), flags, me, now;
		struct rb_frame_name name = { 0 };
		size_t budget = RB_READ_BUDGET;
		const char *kind;
		uint32_t magic;
		int err;

		if (!ep)
			continue;
		flags = rd64(ep + off->ep_flags * 8);
		magic = (uint32_t)flags & off->frame_magic_mask;
		now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		if (magic == off->frame_magic_cfunc) {
			kind = "cfunc";
			me = rd64(ep + off->ep_me_cref * 8);
			err = rb_cme_name(c, child, 1, off, &addrs, me, 0, now, &budget, &name);
		} else if (iseq && pc) {
			if (magic == off->frame_magic_method) {
				kind = "method";
				me = rd64(ep + off->ep_me_cref * 8);
				err = rb_method_frame_name(c, child, 1, off, &addrs, me, pc, now,
							   &budget, &name);
			} else {
				kind = "iseq";
				err = rb_iseq_name(c, child, 1, off, NULL, iseq, pc, now, &budget, &name);
			}
		} else {
			continue;	/* dummy and ifunc frames, as Ruby's backtraces skip */
		}
		printf("%s%s\t%d\t", cfp + off->cfp_size >= end ? "#outer " : "", kind, err);
		field(err ? "" : name.function);
		putchar('\t');
		field(err ? "" : name.file);
		printf("\t%d\n", err ? 0 : name.line);
	}
	rb_iseq_cache_free(c);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	remote_reader_free(rr);
	return 0;
}
