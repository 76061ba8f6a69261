// SPDX-License-Identifier: GPL-2.0
/*
 * detect.c - CRuby interpreters: recognised by symbols, their version,
 * and the attach check against a live process (see detect.h).
 *
 * Owns: nothing past one call. Files are read through libelf with
 * ELF_C_READ (pread: a file truncated under us is a read error, never a
 * SIGBUS), as src/python/detect.c does; the cheap reject of a file that is
 * not Ruby is a memmem of its symbol string tables.
 *
 * Symbols: defined ones only (st_shndx != SHN_UNDEF), so an extension
 * that imports ruby_current_vm_ptr is not an interpreter. .dynsym first,
 * .symtab fills what it lacks (a static ruby may export nothing).
 *
 * Version: `ruby_version` is `const char ruby_version[]` = RUBY_VERSION
 * ("3.1.2"), read from the file image of the section holding it and
 * parsed strictly ("N.N.N" and its NUL within the symbol's size).
 *
 * ruby_global_symbols is static in symbol.c; rb_sym_immortal_count()
 * returns its first field, so its code (a rip-relative load) gives the
 * address (rb_global_symbols_find(), the naming code's).
 *
 * Input is untrusted: sizes and offsets of the file go through libelf's
 * checked accessors and are checked again before use; the attach check
 * reads the process with remote_read() (a hung mapping cannot hang us).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/unwind_ruby.h"
#include "proc/remote.h"
#include "ruby/detect.h"
#include "ruby/iseq.h"
#include "ruby/symbols.h"
#include "runtime/elf_detect.h"
#include "runtime/elf_syms.h"

enum rb_sym {
	SYM_VM_PTR,
	SYM_VM_EXEC,
	SYM_VERSION,
	SYM_IMMORTAL,
	SYM_GC_COUNT,
	SYM_DURING_GC,
	NSYMS
};

/* What find_symbols() looks up, by enum rb_sym. */
static const char *const sym_names[NSYMS] = {
	[SYM_VM_PTR]	= "ruby_current_vm_ptr",
	[SYM_VM_EXEC]	= "rb_vm_exec",
	[SYM_VERSION]	= "ruby_version",
	[SYM_IMMORTAL]	= "rb_sym_immortal_count",
	[SYM_GC_COUNT]	= "rb_gc_count",
	[SYM_DURING_GC]	= "rb_during_gc",
};

#define VERSION_MAX	16	/* "NNN.NNN.NNN" and its NUL */
#define CODE_SCAN	16	/* bytes of rb_sym_immortal_count() decoded */
#define MAX_THREAD_CHECK	PROFD_RB_MAX_THREAD_SCAN

/* Fill @syms from .dynsym, then .symtab, each only if its strings hold the needle. */
static void find_symbols(Elf *elf, int fd, struct runtime_elf_sym *syms)
{
	runtime_elf_find_syms(elf, fd, sym_names, NSYMS, syms, "ruby_current_vm_ptr");
}

/*
 * Copy up to @len bytes at virtual address @addr from the file image of
 * the allocated section holding it (cut at the section's end). Returns
 * the bytes copied, -ENOENT (no such section with file data), -EIO.
 */
static ssize_t read_vaddr(Elf *elf, uint64_t addr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		uint64_t rel, off;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    sh.sh_type == SHT_NOBITS)
			continue;
		if (addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size)
			continue;
		rel = addr - sh.sh_addr;
		if (len > sh.sh_size - rel)
			len = sh.sh_size - rel;
		off = sh.sh_offset + rel;
		if (off < sh.sh_offset || off > INT64_MAX)
			return -EIO;
		d = elf_getdata_rawchunk(elf, (int64_t)off, len, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size < len)
			return -EIO;
		memcpy(buf, d->d_buf, len);
		return (ssize_t)len;
	}
	return -ENOENT;
}

/* 1 to 3 digits at @s[*i] (< @n), advancing *i. */
static bool parse_num(const char *s, size_t n, size_t *i, unsigned int *v)
{
	size_t start = *i;

	*v = 0;
	while (*i < n && s[*i] >= '0' && s[*i] <= '9' && *i - start < 3)
		*v = *v * 10 + (unsigned int)(s[(*i)++] - '0');
	return *i > start;
}

/* Is @s[0..@n) "MAJOR.MINOR.TEENY" and a NUL? */
static bool parse_version(const char *s, size_t n, struct rb_binary *out)
{
	size_t i = 0;

	if (!parse_num(s, n, &i, &out->major) || i >= n || s[i++] != '.' ||
	    !parse_num(s, n, &i, &out->minor) || i >= n || s[i++] != '.' ||
	    !parse_num(s, n, &i, &out->teeny))
		return false;
	return i < n && s[i] == '\0' && out->major >= 1;
}

static bool read_version(Elf *elf, const struct runtime_elf_sym *s, struct rb_binary *out)
{
	char buf[VERSION_MAX];
	size_t len = s->size && s->size < sizeof(buf) ? s->size : sizeof(buf);
	ssize_t n = read_vaddr(elf, s->value, buf, len);

	if (n > 0 && parse_version(buf, (size_t)n, out))
		return true;
	out->major = out->minor = out->teeny = 0;
	return false;
}

static void read_global_symbols(Elf *elf, const struct runtime_elf_sym *s, struct rb_binary *out)
{
	const struct rb_offsets *off = rb_offsets_find(out->major, out->minor, out->teeny);
	uint8_t code[CODE_SCAN];
	ssize_t n;

	if (!off || !s->found)
		return;
	n = read_vaddr(elf, s->value, code, s->size && s->size < sizeof(code) ?
					    s->size : sizeof(code));
	if (n <= 0 || rb_global_symbols_from_code(code, (size_t)n, s->value, off,
						   &out->global_symbols) != 1)
		out->global_symbols = 0;
}

/*
 * The objspace load both GC accessors begin with (gc.c's `rb_objspace`,
 * i.e. GET_VM()->objspace): mov rax,[rip+GOT(ruby_current_vm_ptr)];
 * mov rax,[rax]; mov rax,[rax+objspace]. RB_OBJSPACE_LOAD bytes of
 * @code at @fn; gives the GOT slot loaded and the objspace offset.
 */
#define RB_OBJSPACE_LOAD 17

static bool objspace_load(const uint8_t *code, uint64_t fn, uint64_t *got, int32_t *objspace)
{
	static const uint8_t want[RB_OBJSPACE_LOAD] = {
		0x48, 0x8b, 0x05, 0, 0, 0, 0,		/* mov rax,[rip+rel32] */
		0x48, 0x8b, 0x00,			/* mov rax,[rax] */
		0x48, 0x8b, 0x80, 0, 0, 0, 0,		/* mov rax,[rax+disp32] */
	};
	int32_t rel;

	for (size_t i = 0; i < sizeof(want); i++)
		if ((i < 3 || i > 6) && (i < 13 || i > 16) && code[i] != want[i])
			return false;
	memcpy(&rel, code + 3, 4);
	memcpy(objspace, code + 13, 4);
	*got = fn + 7 + (uint64_t)(int64_t)rel;
	return *objspace > 0 && *objspace <= 65536;
}

/*
 * rb_gc_count() is `return rb_objspace.profile.count;`, which x86-64
 * builds compile to exactly: the objspace load (objspace_load());
 * mov rax,[rax+count]; ret.
 * Anything else: no GC epochs (names are then trusted for
 * RB_ISEQ_RECHECK_NS, not per epoch).
 */
static void read_gc_count(Elf *elf, const struct runtime_elf_sym *s, struct rb_binary *out)
{
	static const uint8_t want[] = {
		0x48, 0x8b, 0x80, 0, 0, 0, 0,		/* mov rax,[rax+disp32] */
		0xc3,					/* ret */
	};
	uint8_t code[RB_OBJSPACE_LOAD + sizeof(want)];
	int32_t objspace, count;
	uint64_t got;

	if (!s->found || read_vaddr(elf, s->value, code, sizeof(code)) != (ssize_t)sizeof(code) ||
	    !objspace_load(code, s->value, &got, &objspace))
		return;
	for (size_t i = 0; i < sizeof(want); i++)
		if ((i < 3 || i > 6) && code[RB_OBJSPACE_LOAD + i] != want[i])
			return;
	memcpy(&count, code + RB_OBJSPACE_LOAD + 3, 4);
	/* the GOT slot it loads: attach checks it holds ruby_current_vm_ptr */
	if (count <= 0 || count > 65536 || count % 8)
		return;
	out->gc_got = got;
	out->gc_objspace = (uint32_t)objspace;
	out->gc_count = (uint32_t)count;
}

/*
 * rb_during_gc() is `return during_gc;` (rb_objspace.flags.during_gc):
 * the objspace load; movzx eax,byte [rax+flags]; shr al,5; and eax,1;
 * ret. Its GOT slot and objspace offset must be rb_gc_count()'s and the
 * bit PROFD_RB_GC_DURING_GC_BIT (which places the flags' mode bits below
 * it, bpf/unwind_ruby.h). Anything else: no quiet samples.
 */
static void read_gc_flags(Elf *elf, const struct runtime_elf_sym *s, struct rb_binary *out)
{
	static const uint8_t want[] = {
		0x0f, 0xb6, 0x40, 0,			/* movzx eax,byte [rax+disp8] */
		0xc0, 0xe8, PROFD_RB_GC_DURING_GC_BIT,	/* shr al,bit */
		0x83, 0xe0, 0x01,			/* and eax,1 */
		0xc3,					/* ret */
	};
	uint8_t code[RB_OBJSPACE_LOAD + sizeof(want)], flags;
	int32_t objspace;
	uint64_t got;

	if (!out->gc_count || !s->found ||
	    read_vaddr(elf, s->value, code, sizeof(code)) != (ssize_t)sizeof(code) ||
	    !objspace_load(code, s->value, &got, &objspace))
		return;
	for (size_t i = 0; i < sizeof(want); i++)
		if (i != 3 && code[RB_OBJSPACE_LOAD + i] != want[i])
			return;
	flags = code[RB_OBJSPACE_LOAD + 3];
	if (got != out->gc_got || (uint32_t)objspace != out->gc_objspace || flags % 4)
		return;
	out->gc_flags = flags;
	out->gc_flags_found = true;
}

static int detect_elf(Elf *elf, int fd, struct rb_binary *out)
{
	struct runtime_elf_sym syms[NSYMS];
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF)
		return 0;
	if (!gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return 0;
	find_symbols(elf, fd, syms);
	if (!syms[SYM_VM_PTR].found || !syms[SYM_VM_EXEC].found ||
	    !syms[SYM_VERSION].found || !syms[SYM_VM_EXEC].size)
		return 0;
	out->vm_ptr = syms[SYM_VM_PTR].value;
	out->exec_start = syms[SYM_VM_EXEC].value;
	out->exec_end = out->exec_start + syms[SYM_VM_EXEC].size;
	if (!read_version(elf, &syms[SYM_VERSION], out))
		return -ENOTSUP;
	read_global_symbols(elf, &syms[SYM_IMMORTAL], out);
	read_gc_count(elf, &syms[SYM_GC_COUNT], out);
	read_gc_flags(elf, &syms[SYM_DURING_GC], out);
	return 1;
}

int rb_detect_fd(int fd, struct rb_binary *out)
{
	Elf *elf;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = runtime_elf_begin(fd, &elf);
	if (ret <= 0)
		return ret;
	ret = detect_elf(elf, fd, out);
	elf_end(elf);
	return ret;
}

int rb_detect_path(const char *path, struct rb_binary *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return -errno;
	}
	ret = rb_detect_fd(fd, out);
	close(fd);
	return ret;
}

bool rb_offsets_walkable(const struct rb_offsets *off)
{
	return off->cfp_size >= 24 && off->cfp_size <= 128 && !(off->cfp_size & 7) &&
	       off->thread_lt_node <= PROFD_RB_THREAD_BUF - 8 &&
	       off->ec_vm_stack <= 56 && off->ec_vm_stack_size <= 56 && off->ec_cfp <= 56 &&
	       off->ep_flags >= -2 && off->ep_flags <= 0 &&
	       off->ep_me_cref >= -2 && off->ep_me_cref <= 0;
}

static int read_u64(struct remote_reader *r, pid_t pid, uint64_t addr, uint64_t *v)
{
	return remote_read(r, pid, addr, v, sizeof(*v));
}

/* Is @tid a thread of process @pid? */
static bool thread_of(pid_t pid, int tid)
{
	char path[64];

	if (tid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, tid);
	return access(path, F_OK) == 0;
}

/*
 * Is @th on the main ractor of @vm's thread list? 0, -EPROTO, or a read
 * error.
 */
static int on_thread_list(struct remote_reader *r, pid_t pid, const struct rb_offsets *off,
			  uint64_t vm, uint64_t th)
{
	uint64_t ractor, head, node, next;
	int err;

	if ((err = read_u64(r, pid, vm + off->vm_main_ractor, &ractor)))
		return err;
	if (!ractor)
		return -EPROTO;
	head = ractor + off->ractor_threads;
	if ((err = read_u64(r, pid, head, &node)))
		return err;
	for (int i = 0; i < MAX_THREAD_CHECK && node && node != head; i++) {
		if ((err = read_u64(r, pid, node, &next)))	/* lt_node.next */
			return err;
		if (node - off->thread_lt_node == th)
			return 0;
		node = next;
	}
	return -EPROTO;
}

/*
 * Does @vm's ractor list (vm->ractor.set) start with its main ractor, as
 * CRuby keeps it (the main ractor is inserted first and never leaves):
 * head.next is the main ractor's vmlr_node and that node's prev is the
 * head? Only these two links are read: the rest of the list changes
 * while ractors start and end. 0, -EAGAIN (the list is empty: a forked
 * child between emptying it and putting its main ractor back),
 * -EPROTO, or a read error.
 */
static int ractor_list_ok(struct remote_reader *r, pid_t pid, const struct rb_offsets *off,
			  uint64_t vm)
{
	uint64_t ractor, head = vm + off->vm_ractor_set, first, prev;
	int err;

	if ((err = read_u64(r, pid, vm + off->vm_main_ractor, &ractor)) ||
	    (err = read_u64(r, pid, head, &first)))
		return err;
	if (first == head)
		return -EAGAIN;
	if (!ractor || first != ractor + off->ractor_vmlr_node)
		return -EPROTO;
	if ((err = read_u64(r, pid, first + 8, &prev)))	/* vmlr_node.prev */
		return err;
	return prev == head ? 0 : -EPROTO;
}

int rb_attach_check(struct remote_reader *reader, pid_t pid, const struct rb_offsets *off,
		    uint64_t vm_ptr_addr, uint64_t *vm_out, bool *stale_main_tid)
{
	uint64_t vm, th, th_vm, ec, ec_th, stack, size, cfp, end;
	int32_t tid;
	int err;

	if ((err = read_u64(reader, pid, vm_ptr_addr, &vm)))
		return err;
	if (!vm)
		return -EAGAIN;
	if ((err = read_u64(reader, pid, vm + off->vm_main_thread, &th)))
		return err;
	if (!th)
		return -EAGAIN;
	if ((err = read_u64(reader, pid, th + off->thread_vm, &th_vm)) ||
	    (err = read_u64(reader, pid, th + off->thread_ec, &ec)) ||
	    (err = remote_read(reader, pid, th + off->thread_tid, &tid, sizeof(tid))))
		return err;
	if (th_vm != vm)
		return -EPROTO;
	if (!ec || !tid)
		return -EAGAIN;
	if ((err = on_thread_list(reader, pid, off, vm, th)) ||
	    (err = ractor_list_ok(reader, pid, off, vm)))
		return err;
	/*
	 * A forked child's main thread keeps the tid of the thread that
	 * forked, in its parent (CRuby 3.1 never updates it; a daemon's
	 * parent and grandparent are gone by then); threads the child starts
	 * have their own. The main thread is then the child's leader.
	 */
	*stale_main_tid = !thread_of(pid, tid);
	if ((err = read_u64(reader, pid, ec + off->ec_thread_ptr, &ec_th)) ||
	    (err = read_u64(reader, pid, ec + off->ec_vm_stack, &stack)) ||
	    (err = read_u64(reader, pid, ec + off->ec_vm_stack_size, &size)) ||
	    (err = read_u64(reader, pid, ec + off->ec_cfp, &cfp)))
		return err;
	end = stack + size * 8;
	if (ec_th != th || !stack || !size || size > (1ULL << 28) ||
	    cfp < stack || cfp >= end || (end - cfp) % off->cfp_size)
		return -EPROTO;
	*vm_out = vm;
	return 0;
}
