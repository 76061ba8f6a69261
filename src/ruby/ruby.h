/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ruby.h - CRuby processes: finding interpreters, attaching the BPF
 * walker, naming Ruby frames and merging them with native ones.
 *
 * Owns: the table of CRuby processes (which object is the interpreter,
 * its load bias, its version's layout, the VM it was attached to, where
 * rb_vm_exec is), their `runtime_procs` BPF entries, the naming cache
 * (src/ruby/iseq.h) and the interned frame tables.
 *
 * Data flow: the process table hands every maps read to ruby_maps_read()
 * (interpreters are recognised by symbols, detect.h, cached per file by
 * device and inode); a process is attached once its live memory matches
 * the layout (rb_attach_check(); a VM not set up yet is tried again at
 * later maps reads and by a retry thread of this module's); the reader turns each sample's Ruby frames
 * into frame ids and splices them into the native stack with
 * ruby_merge_stack(); writers name the ids with ruby_frame().
 *
 * Threads: ruby_maps_read() and ruby_removed() on the object loader's
 * thread (in order), attach retries on the module's own thread, ruby_merge_stack(), ruby_new_interval() and
 * ruby_tick() on the reader, ruby_frame() and ruby_stats() on any. The
 * process table and the runtime_procs entries are changed under a lock
 * ruby_merge_stack() holds while it runs; files and process memory are
 * read by the loader without it.
 */
#ifndef PROFD_RUBY_RUBY_H
#define PROFD_RUBY_RUBY_H

#include <stdint.h>
#include <sys/types.h>

#include "proc/maps.h"
#include "runtime/frames.h"

struct ruby;

struct ruby_stats {
	uint64_t processes;	/* CRuby processes known now (attached or not) */
	uint64_t attached;	/* of which walked by BPF */
	uint64_t bytes;		/* gauge: naming cache and frame tables */
	uint64_t objects;	/* gauge: objects in the naming cache */
	uint64_t evictions;	/* naming cache entries dropped for room */
	uint64_t frames;	/* distinct frames interned (this generation) */
};

/*
 * ruby_new - an empty table. @procs_fd is `runtime_procs` (-1: no BPF,
 * for tests); @budget bounds its heap in bytes (0: 64 MiB): half for the
 * naming cache, a quarter for each frame table generation; @verbose > 0
 * logs each interpreter found. NULL on OOM.
 */
struct ruby *ruby_new(int procs_fd, uint64_t budget, int verbose);

/* ruby_free - free the table; NULL is a no-op. */
void ruby_free(struct ruby *rb);

/*
 * ruby_maps_read - process @pid's mappings were (re-)read: find its
 * interpreter, attach (or refuse, counted), and add, update or remove
 * its runtime_procs entry (only ever one this module wrote).
 */
void ruby_maps_read(struct ruby *rb, pid_t pid, const struct proc_maps *maps);

/* ruby_removed - @pid left the process table: forget it, delete its entry if ours. */
void ruby_removed(struct ruby *rb, pid_t pid);

/*
 * ruby_merge_stack - splice a sample's @nframes Ruby frames (two words
 * each, bpf/unwind_ruby.h) into its @nuser native user IPs (leaf first):
 * each group of Ruby frames (up to a PROFD_RB_GROUP_END frame) replaces
 * the rb_vm_exec() frame that runs it, paired from the root (from the
 * leaf when either walk was cut short; groups left over go on top, or
 * below). Writes at most @cap IPs and frame tokens to @out, returns the
 * count. A process not attached gets its native stack back. @now_ns:
 * CLOCK_MONOTONIC.
 */
uint32_t ruby_merge_stack(struct ruby *rb, pid_t pid, uint32_t flags,
			  const uint64_t *user, uint32_t nuser,
			  const uint64_t *frames, uint32_t nframes,
			  uint64_t *out, uint32_t cap, uint64_t now_ns);

/* ruby_frame - the frame token @token stands for. 0, or -ENOENT. */
int ruby_frame(struct ruby *rb, uint64_t token, struct rt_frame *out);

/*
 * ruby_new_interval - an interval starts: renew the frame table when it
 * is half full or old (rt_frame_gens_new_interval(), as
 * python_new_interval() does; counted as ruby_frame_table_rotations).
 */
void ruby_new_interval(struct ruby *rb);

/* ruby_tick - the reader's tick: drop the naming cache of exited processes. */
void ruby_tick(struct ruby *rb);

/* ruby_stats - gauges and counts (any thread). */
void ruby_stats(struct ruby *rb, struct ruby_stats *out);

#endif /* PROFD_RUBY_RUBY_H */
