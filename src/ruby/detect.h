/* SPDX-License-Identifier: GPL-2.0 */
/*
 * detect.h - is this ELF object a CRuby interpreter, which version, and
 * does a live process match its layout?
 *
 * Owns: recognising CRuby by its symbols, never by file name: an object
 * that defines `ruby_current_vm_ptr`, `rb_vm_exec` and `ruby_version` (in
 * .dynsym or .symtab) is an interpreter, whether it is libruby.so, a
 * renamed copy or a statically linked ruby. The version is the bytes of
 * `ruby_version` ("3.1.2") in the file; where ruby_global_symbols is
 * (naming C methods), from the code of rb_sym_immortal_count(). And the
 * attach check: the layout of the version checked against the process's
 * memory before its BPF walker is turned on.
 */
#ifndef PROFD_RUBY_DETECT_H
#define PROFD_RUBY_DETECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ruby/offsets.h"

struct remote_reader;

/* What profd needs of one interpreter object. Addresses are ELF virtual
 * addresses (add the load bias for runtime addresses); 0 = absent. */
struct rb_binary {
	unsigned int major, minor, teeny;
	uint64_t vm_ptr;		/* ruby_current_vm_ptr */
	uint64_t exec_start;		/* rb_vm_exec */
	uint64_t exec_end;		/*   start + st_size */
	uint64_t global_symbols;	/* ruby_global_symbols; 0: not found */
	/* where rb_gc_count() finds the GC count (from its code): the GOT
	 * slot gc_got holds &ruby_current_vm_ptr (checked at attach), the
	 * VM + gc_objspace the objspace, that + gc_count its profile.count;
	 * gc_count 0: not recognised (no GC epochs) */
	uint64_t gc_got;
	uint32_t gc_objspace, gc_count;
	/* where rb_during_gc() finds rb_objspace.flags: objspace +
	 * gc_flags (gc_flags_found: recognised, same GOT slot and objspace) */
	uint32_t gc_flags;
	bool gc_flags_found;
};

/*
 * rb_detect_fd - inspect the ELF object open on @fd (not taken over; read
 * with pread). Returns 1 and fills @out when it is a CRuby interpreter
 * whose version was read, 0 when it is not one (or not ELF, or not a
 * regular file), -ENOTSUP for an interpreter whose version string is
 * unreadable (@out's addresses set, version 0), another negative errno on
 * a read error. A file that is not Ruby costs its section headers and
 * symbol string tables (searched for "ruby_current_vm_ptr"). Untrusted
 * input: a corrupt file is 0 or an error, never a crash. Thread-safe.
 */
int rb_detect_fd(int fd, struct rb_binary *out);

/* rb_detect_path - rb_detect_fd() on open(@path). Same returns (-errno of open). */
int rb_detect_path(const char *path, struct rb_binary *out);

/*
 * rb_offsets_walkable - whether @off fits the BPF walker's reads (thread
 * fields in its thread read, the execution context's in its 64-byte read,
 * ep[-2..0] in its 24-byte read, the frame in 128 bytes). A table error
 * otherwise: the process is refused.
 */
bool rb_offsets_walkable(const struct rb_offsets *off);

/*
 * rb_attach_check - check CRuby layout @off against process @pid, whose
 * ruby_current_vm_ptr is at runtime address @vm_ptr_addr, through
 * @reader: *ruby_current_vm_ptr non-NULL, vm->ractor.main_thread's vm is
 * vm, it is on the main ractor's thread list, its tid is a thread of
 * @pid, its ec's thread_ptr is it and the ec's cfp lies in its VM stack;
 * vm->ractor.set (the ractors whose threads the BPF walker searches)
 * starts with the main ractor.
 * A main thread whose tid is no thread of @pid is accepted when it is the
 * only thread on the list and @pid's leader forked from a ruby (a forked
 * child: CRuby 3.1 keeps the parent's tid), with *@stale_main_tid set.
 * Returns 0 with the VM's address in *@vm, -EAGAIN when the VM is not set
 * up yet (try again later), -EPROTO when memory contradicts the layout,
 * or remote_read()'s error (-ESRCH: gone, -EFAULT, -ETIMEDOUT, ...).
 */
int rb_attach_check(struct remote_reader *reader, pid_t pid, const struct rb_offsets *off,
		    uint64_t vm_ptr_addr, uint64_t *vm, bool *stale_main_tid);


#endif /* PROFD_RUBY_DETECT_H */
