/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iseq.h - naming CRuby frames from a live process: instruction
 * sequences (Ruby frames) and method entries (C frames).
 *
 * Owns: reading an rb_iseq_t and its rb_iseq_constant_body (label, path,
 * first line, the instruction-info line table: positions, or the succinct
 * index table once Ruby has encoded them) and an rb_callable_method_entry_t
 * (the method's name through the ID table, ruby_global_symbols; its
 * owner's name when it can be read) out of another process's memory
 * (src/proc/remote.h: reads that time out rather than hang), bounding
 * every length and checking every object's type bits (the memory may be
 * torn or hostile), and a bounded LRU cache of the decoded objects keyed
 * by (process generation, address). A cached object is re-checked
 * against the process at most once per RB_ISEQ_RECHECK_NS, so an object
 * freed and replaced at the same address is noticed.
 *
 * Threads: the reader thread only (like the Python code cache).
 */
#ifndef PROFD_RUBY_ISEQ_H
#define PROFD_RUBY_ISEQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ruby/offsets.h"

#define RB_ISEQ_RECHECK_NS	(1000ULL * 1000 * 1000)
#define RB_NAME_MAX		1024	/* bytes kept of a label, path or method name */
/* Bytes one sample may read from its process. */
#define RB_READ_BUDGET		(1u << 20)

struct remote_reader;

/* Where one process keeps what naming needs (found by detect.c). */
struct rb_proc_addrs {
	uint64_t global_symbols;	/* &ruby_global_symbols; 0: unknown (C
					 * frames named by address only) */
};

/* A named frame, owned by the cache (valid until the next rb_iseq_cache call). */
struct rb_frame_name {
	const char *function;	/* "foo", "block in foo", "<main>", "Array#each" */
	const char *file;	/* the iseq's path; "" for a C frame */
	int line;		/* the line executing at the frame's pc; 0 unknown */
	int first_line;		/* the iseq's first line; 0 for a C frame */
};

struct rb_iseq_cache;

/*
 * rb_iseq_cache_new - a cache of at most @max_entries objects and
 * @max_bytes of their strings and line tables, reading through @reader
 * (borrowed). NULL on OOM.
 */
struct rb_iseq_cache *rb_iseq_cache_new(struct remote_reader *reader,
					size_t max_entries, size_t max_bytes);
void rb_iseq_cache_free(struct rb_iseq_cache *c);

/*
 * rb_iseq_name - name the Ruby frame (iseq @iseq, its cfp->pc @pc as BPF
 * read it) of process @pid (generation @gen, layout @off). The line is
 * the one of the instruction before @pc (a frame's pc points after the
 * instruction that is running, or that made the call). @now_ns is
 * CLOCK_MONOTONIC; *@budget the bytes the caller may still read from the
 * process (reads are charged to it). Returns 0 and fills *@out, or
 * -ESRCH/-EFAULT (not readable), -EINVAL (not an iseq, or malformed),
 * -ESTALE (@pc does not lie in the iseq's instructions: replaced since the
 * sample), -EAGAIN (budget spent), -ETIMEDOUT, -ENOMEM. Failures are
 * cached like successes, for RB_ISEQ_RECHECK_NS.
 */
int rb_iseq_name(struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		 const struct rb_offsets *off, uint64_t iseq, uint64_t pc,
		 uint64_t now_ns, size_t *budget, struct rb_frame_name *out);

/*
 * rb_cme_name - name the C frame whose method entry is @cme in process
 * @pid (as rb_iseq_name(), with @addrs the process's addresses):
 * "Owner#method" (or "Owner.method" for a singleton's method) when the
 * owner's name can be read, else the method name alone. Same returns as
 * rb_iseq_name(), -EINVAL when @cme is not a method entry of a C method.
 */
int rb_cme_name(struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		const struct rb_offsets *off, const struct rb_proc_addrs *addrs,
		uint64_t cme, uint64_t now_ns, size_t *budget,
		struct rb_frame_name *out);

/*
 * rb_iseq_forget - drop the entries of the processes whose generation is
 * one of @gens (@n of them, sorted ascending): they exited.
 */
void rb_iseq_forget(struct rb_iseq_cache *c, const uint64_t *gens, size_t n);

struct rb_iseq_stats {
	uint64_t reads;		/* objects read from processes */
	uint64_t errors;	/* reads that failed or were malformed */
	uint64_t evictions;	/* entries dropped for room (LRU) */
	uint64_t entries;	/* gauge */
	uint64_t bytes;		/* gauge: heap held */
};

/* rb_iseq_stats - counters and sizes (reader thread). */
void rb_iseq_stats(struct rb_iseq_cache *c, struct rb_iseq_stats *out);

#endif /* PROFD_RUBY_ISEQ_H */
