/* SPDX-License-Identifier: GPL-2.0 */
/*
 * callsite.h - is a user return address true? (issue 16: no wrong frames)
 *
 * Owns: the check every user caller passes before its frame goes into a
 * profile: a return address must lie in an executable mapping of the
 * process and follow a call instruction (x86-64: `E8 rel32` whose target
 * lies in an executable mapping, or `FF /2`, an indirect near call), read
 * from the code bytes before it. The stack is cut at the first caller
 * that fails: it and its callers go, the stack ends in "[truncated]"
 * (counted: partial.unwind_unverified_caller). Also owns the cache of
 * verdicts per (file identity, file offset), so a hot stack costs a hash
 * lookup per frame, not a read.
 *
 * Where the bytes come from: the mapping's file through the descriptor
 * its ELF object holds (src/symbol/; the vDSO from profd's copy), read
 * from the page cache only (preadv2 RWF_NOWAIT); when the object is not
 * open (yet, or the file could not be opened) from the process's memory
 * (process_vm_readv). Never by opening a path nor by waiting for storage:
 * the reader thread must not block on a hung file. A frame whose
 * bytes cannot be read either way (the process exited before its object
 * was opened; an anonymous JIT region gone; a file the gate found hung;
 * a code page no longer in the page cache)
 * is kept and counted (stat.unwind_callsite_unchecked): its address is
 * in an executable mapping of the process, which is all that can be
 * said of it. Anonymous executable mappings (JIT code) are checked in
 * process memory and their verdicts are not cached (the code may be
 * rewritten). One planted frame is true though no call precedes it:
 * Go's runtime.goexit + 1, the bottom of every goroutine (by its symbol).
 * Runtime frame tokens (runtime_ip_ops()) are not addresses:
 * left alone. Exact IPs (PROFD_IP_EXACT: the sigreturn trampoline and the
 * pc a signal interrupted) are not return addresses: no call precedes
 * them, but they must lie in an executable mapping all the same.
 *
 * Threads: a cache belongs to one thread (the reader).
 */
#ifndef PROFD_UNWIND_CALLSITE_H
#define PROFD_UNWIND_CALLSITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes before a return address that can hold the call (the longest x86 instruction). */
#define CALLSITE_WINDOW 15

/*
 * callsite_target_fn - whether a direct call's target @target (a virtual
 * address of the process) is code (lies in an executable mapping).
 */
typedef bool (*callsite_target_fn)(void *ctx, uint64_t target);

/*
 * callsite_x86_after_call - whether the @n bytes at @code (at most
 * CALLSITE_WINDOW; @code[@n - 1] is the byte just before return address
 * @ra) end in an x86-64 near call that ends exactly at @ra: `E8 rel32`
 * (its target ra + rel32 accepted by @target_ok, when not NULL) or
 * `FF /2` with its ModRM, SIB and displacement (register, [reg],
 * [reg+disp8], [reg+disp32], SIB forms, RIP-relative `FF 15 disp32`).
 * Prefixes (REX, 3E notrack, F2 bnd, segment) come before the opcode and
 * do not change where the instruction ends: the opcode is the anchor.
 * Far calls (`FF /3`, `9A`) are rejected. Pure: reads nothing else.
 */
bool callsite_x86_after_call(const uint8_t *code, size_t n, uint64_t ra,
			     callsite_target_fn target_ok, void *ctx);

struct callsite_cache;
struct proc_snapshot;

/*
 * callsite_cache_new - an empty verdict cache of @slots entries (rounded
 * up to a power of two, at least 64; 32 bytes each), two-way set
 * associative: a verdict pushed out is counted
 * (stat.unwind_callsite_evictions). NULL on out of memory.
 */
struct callsite_cache *callsite_cache_new(uint32_t slots);

/* callsite_cache_free - free @c. NULL is fine. */
void callsite_cache_free(struct callsite_cache *c);

/*
 * callsite_verify - how many leading frames of the user stack @ips
 * (@nuser IPs, leaf first, PROFD_IP_EXACT in the top bit, runtime tokens
 * among them) of the process of snapshot @snap are plausible: the leaf
 * and tokens always are, an exact IP when it lies in an executable
 * mapping, a return address when it passes the check above. The caller keeps that many frames and marks the stack
 * truncated when fewer than @nuser (this counts the cut). With no
 * snapshot nothing can be checked: @nuser (frames counted unchecked).
 * @outermost: the walk ended because the unwind tables call the last
 * frame's code outermost (PROFD_SAMPLE_USER_COMPLETE: _start, clone3,
 * Go's TOPFRAME runtime.goexit whose planted return address follows no
 * call): that last IP needs only lie in executable code.
 * Reads the process's files (pread) and the memory of @pid, a process
 * whose memory holds @snap's code (the sample's for its current image,
 * the parent's for a forked child's view of its parent's snapshot,
 * process_fork()); 0: none (an image the process left by an exec): the
 * files alone, code they do not hold unchecked. Never opens a file.
 */
uint32_t callsite_verify(struct callsite_cache *c, const struct proc_snapshot *snap,
			 pid_t pid, const uint64_t *ips, uint32_t nuser, bool outermost);

#endif /* PROFD_UNWIND_CALLSITE_H */
