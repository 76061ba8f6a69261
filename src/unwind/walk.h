/* SPDX-License-Identifier: GPL-2.0 */
/*
 * walk.h - the user-space walker of stack copies.
 *
 * Owns: walking a sample's copied user stack (struct profd_stack_copy and
 * the bytes after it, bpf/profd.h) with the rows the BPF unwinder uses,
 * read from the same BPF maps (`unwind_procs`, the mmap-able shards of
 * `unwind_shards`, `exec_times`), by the same step (bpf/unwind_step.h).
 * A sample whose process's tables were not in BPF when it was taken is
 * walked once they are: its stack is as full as if BPF had walked it.
 * Threads: one thread uses a walker (the reader).
 */
#ifndef PROFD_UNWIND_WALK_H
#define PROFD_UNWIND_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/profd.h"

struct unwind_walker;

/*
 * unwind_walker_new - a walker over the BPF maps @procs_fd (unwind_procs),
 * @shards_fd (unwind_shards) and @exec_fd (exec_times); the fds stay the
 * caller's; @copy_bytes: --stack-copy-bytes (a copy that size was cut by
 * it, one shorter ended where the stack or its mapping did). NULL on out
 * of memory.
 */
struct unwind_walker *unwind_walker_new(int procs_fd, int shards_fd, int exec_fd,
					uint32_t copy_bytes);

/* unwind_walker_free - unmap the shards and free @w (NULL: nothing). */
void unwind_walker_free(struct unwind_walker *w);

/* What unwind_walker_walk() found. */
enum unwind_walk_status {
	UNWIND_WALK_OK = 0,		/* ips/flags hold the walk */
	UNWIND_WALK_NOT_READY = 1,	/* no tables for the process as of the
					 * sample yet: try again later */
	UNWIND_WALK_STALE = 2,		/* the process exec'd after the sample:
					 * no table will ever describe it */
};

/*
 * unwind_walker_walk - walk the user stack copied with sample @s: @regs
 * and @s->stack_len bytes at @stack (from regs->sp up), into @ips (leaf
 * first, at most @max frames, return addresses as BPF records them: a
 * pc after a signal frame flagged PROFD_IP_EXACT) and their number into
 * *@n, with the PROFD_SAMPLE_* flags of the walk in *@flags
 * (USER_TRUNCATED at the depth limit, where a rule cannot be followed or
 * the copy ended before the stack did; USER_ERROR; USER_COMPLETE; DWARF).
 * NOT_READY while the process has no unwind_procs entry for its image, or
 * the walk met a pc outside the entry's ranges and the entry is older
 * than the sample (maps read since will have it). @count: count the
 * walk's cuts (stack_copy_short, go_switch_stack_copy): false for a walk
 * whose stack is not the one kept (--check-unwinder's).
 */
enum unwind_walk_status unwind_walker_walk(struct unwind_walker *w,
					   const struct profd_sample *s,
					   const struct profd_stack_copy *regs,
					   const uint8_t *stack, uint64_t *ips,
					   uint32_t max, uint32_t *n,
					   uint32_t *flags, bool count);

#endif /* PROFD_UNWIND_WALK_H */
