/* SPDX-License-Identifier: GPL-2.0 */
/*
 * process_jit.h - which processes' JIT code is named from the files the
 * JIT writes (perf map, jitdump: src/symbol/jit_syms.h), and when they
 * are read.
 *
 * Owns: the reader's side (a sample with a frame in anonymous executable
 * memory makes its process look for its files, at most every
 * PROCESS_JIT_PROBE_NS; a sample newer than the files' last read asks
 * for a re-read, at most every PROCESS_JIT_READ_NS, so reading is
 * incremental and off the sample path), the interval's last read (every
 * table its stacks use is read once more before the profile is built:
 * a JIT that buffers its file writes records late, after the last
 * sample that would have asked) and the object loader's (the read
 * itself, with the jitdump files the process mapped).
 */
#ifndef PROFD_PROC_PROCESS_JIT_H
#define PROFD_PROC_PROCESS_JIT_H

#include <stdint.h>

#include "proc/process.h"

#define PROCESS_JIT_PROBE_NS	(2000ULL * 1000 * 1000)
#define PROCESS_JIT_READ_NS	(100ULL * 1000 * 1000)

/*
 * process_jit_bin - for a sample of @p taken at @sample_ns (CLOCK_MONOTONIC)
 * with user IPs @ips[0..@n) (leaf first, as aggregated: PROFD_IP_EXACT
 * marks, runtime frame tokens skipped): the time bin to aggregate it
 * under (sample_ns / JIT_TIME_BIN_NS + 1) when @p has JIT symbols and a
 * frame lies in anonymous executable memory or outside every mapping,
 * else 0. Queues the look for the files or their re-read (see above).
 * Reader thread; @now_ns CLOCK_MONOTONIC.
 */
uint32_t process_jit_bin(struct process_table *pt, struct process *p,
			 const uint64_t *ips, uint32_t n, uint64_t sample_ns,
			 uint64_t now_ns);

/*
 * process_jit_read_all - queue one process_jit_read() on the object
 * loader for each JIT table among @snaps[0..@n) (sorted here, by table);
 * the interval's build waits for them (object_loader_wait()), bounded.
 * Reads are incremental and capped as any other (jit_syms.h). Any
 * thread (the loader's queue is locked). Returns the reads queued; one
 * not queued (queue full) is counted (object_queue_full).
 */
size_t process_jit_read_all(struct process_table *pt, struct proc_snapshot **snaps,
			    size_t n);

/*
 * process_jit_read - on the object loader: read @s->jit's files (the
 * perf map, and the jitdumps among @s's mappings).
 */
void process_jit_read(struct proc_snapshot *s);

/* proc_snapshot_jit - @s's JIT symbols (atomic load), NULL if none. */
static inline struct jit_syms *proc_snapshot_jit(const struct proc_snapshot *s)
{
	return s ? __atomic_load_n(&s->jit, __ATOMIC_ACQUIRE) : NULL;
}

/* process_queue_jit - queue process_jit_read(@s) (process.c). 0 or < 0 (counted). */
int process_queue_jit(struct process_table *pt, struct proc_snapshot *s);

/*
 * proc_mapping_anon_exec - whether @m is executable memory no file backs
 * (where JIT code lives): no path, or a named anonymous one ("[anon:...]").
 */
bool proc_mapping_anon_exec(const struct proc_mapping *m);

#endif /* PROFD_PROC_PROCESS_JIT_H */
