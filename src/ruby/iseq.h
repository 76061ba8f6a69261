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
 * by (pid, process generation, kind, address) (src/runtime/addr_cache.h).
 * A cached object is re-checked against the process (the fields it was
 * decoded from, one or two small reads) at most once per
 * RB_ISEQ_RECHECK_NS, so an object freed and replaced at the same address
 * is noticed; failures are cached for as long. IDs, once named, are not
 * re-read (a process never gives an ID serial another name).
 * The object readers are src/ruby/rvalue.h; where the ID table is,
 * src/ruby/symbols.h.
 *
 * Not here: which control frames to name (the walker's; note that the
 * main thread's outermost control frame, th_init()'s dummy frame, holds
 * the toplevel "<main>" iseq at its first instruction, line 0, and Ruby's
 * backtraces leave it out).
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
/* Line table entries read of one iseq (more: its lines are unknown, 0). */
#define RB_LINES_MAX		8192
/* Instructions an iseq may have (more: malformed). */
#define RB_ISEQ_SIZE_MAX	(1u << 24)
/* The name of a C frame whose method name cannot be read (no ID table
 * found, or the ID unknown to it): counted in rb_iseq_stats.unnamed. */
#define RB_CFUNC_UNNAMED	"[ruby C method]"
struct remote_reader;

/* Where one process keeps what naming needs (found by detect.c). */
struct rb_proc_addrs {
	uint64_t global_symbols;	/* runtime &ruby_global_symbols
					 * (rb_global_symbols_find_fd() + the load
					 * bias); 0: unknown (C frames are
					 * RB_CFUNC_UNNAMED, methods unowned) */
	uint64_t gc_count;		/* runtime address of the GC count
					 * (bpf/unwind_ruby.h's epochs); 0:
					 * none: names trusted for
					 * RB_ISEQ_RECHECK_NS instead */
};

/* A named frame, owned by the cache (valid until the cache's next call). */
struct rb_frame_name {
	const char *function;	/* "Foo#bar", "block in bar", "<main>", "Array#each" */
	const char *file;	/* the iseq's path; "" for a C frame */
	int line;		/* the line executing at the frame's pc; 0 unknown */
	int first_line;		/* the iseq's first line; 0 for a C frame */
};

struct rb_iseq_cache;

/*
 * rb_iseq_cache_new - a cache of at most @max_entries objects and
 * @max_bytes of heap (entries, strings, line tables), reading through
 * @reader (borrowed: it must outlive the cache). NULL on OOM.
 */
struct rb_iseq_cache *rb_iseq_cache_new(struct remote_reader *reader,
					size_t max_entries, size_t max_bytes);

/* rb_iseq_cache_free - free the cache and every entry. NULL is fine. */
void rb_iseq_cache_free(struct rb_iseq_cache *c);

/*
 * rb_iseq_name - name the Ruby frame (iseq @iseq; @w1 its second word
 * from BPF: cfp->pc and the sample's GC epoch, bpf/unwind_ruby.h) of
 * process @pid (generation @gen, layout @off, addresses @addrs, or NULL).
 * The line is the one of the instruction before the pc (a frame's pc
 * points after the instruction that is running, or that made the call).
 * @now_ns is CLOCK_MONOTONIC; *@budget the bytes the caller may still
 * read from the process (reads are charged to it). A pc of 0 (a frame
 * not started) gives the first line, as Ruby does. With a GC epoch (and
 * @addrs->gc_count), a name is given only when the object at @iseq is
 * known to be the sample's (read in the sample's GC epoch, or read before
 * it and found unchanged since): else -ESTALE. Without, cached names are
 * trusted for RB_ISEQ_RECHECK_NS. Returns 0 and fills *@out, or
 * -ESRCH/-EFAULT (not readable), -EINVAL (not an iseq, or malformed),
 * -ESTALE (the pc does not lie in the iseq's instructions, or the object
 * may have been replaced since the sample), -EAGAIN (budget spent, or a
 * GC started during the read: not cached), -ETIMEDOUT, -ENOMEM. Other
 * failures are cached like successes.
 */
int rb_iseq_name(struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		 const struct rb_offsets *off, const struct rb_proc_addrs *addrs,
		 uint64_t iseq, uint64_t w1, uint64_t now_ns, size_t *budget,
		 struct rb_frame_name *out);

/*
 * rb_method_frame_name - name the Ruby method frame whose
 * ep[VM_ENV_DATA_INDEX_ME_CREF] is @me_or_svar (a method entry, imemo_ment,
 * or an imemo_svar whose cref_or_me holds it) and whose second word is @w1,
 * in process @pid (as rb_iseq_name(), with @addrs the process's
 * addresses): the method's iseq (def type ISEQ: body.iseq.iseqptr) names
 * it as rb_iseq_name() does, its function "Owner#label", or "Owner.label"
 * for a singleton method of a class or module (Ruby's
 * rb_profile_frame_full_label); the label alone when the owner has no
 * readable permanent name (anonymous classes, singletons of other
 * objects, no ID table). Same returns as rb_iseq_name(), -EINVAL when
 * @me_or_svar is not a method entry of a Ruby method.
 */
int rb_method_frame_name(struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
			 const struct rb_offsets *off,
			 const struct rb_proc_addrs *addrs, uint64_t me_or_svar,
			 uint64_t w1, uint64_t now_ns, size_t *budget,
			 struct rb_frame_name *out);

/*
 * rb_cme_name - name the C frame whose method entry is @cme in process
 * @pid (as rb_method_frame_name()): "Owner#method" (or "Owner.method"),
 * the method name (def->original_id) read through the ID table; the
 * method name alone when the owner's cannot be read; RB_CFUNC_UNNAMED
 * (returning 0, counted) when the method name cannot be (@addrs has no ID
 * table, or the ID is not in it). file "", lines 0. Same returns as
 * rb_iseq_name(), -EINVAL when @cme is not a method entry of a C method.
 */
int rb_cme_name(struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		const struct rb_offsets *off, const struct rb_proc_addrs *addrs,
		uint64_t cme, uint64_t w1, uint64_t now_ns, size_t *budget,
		struct rb_frame_name *out);

/*
 * rb_iseq_forget - drop the entries of the processes whose generation is
 * one of @gens (@n of them, sorted ascending): they exited.
 */
void rb_iseq_forget(struct rb_iseq_cache *c, const uint64_t *gens, size_t n);

struct rb_iseq_stats {
	uint64_t reads;		/* objects read from processes */
	uint64_t errors;	/* names refused: read failed, malformed, stale */
	uint64_t hits;		/* names from the cache without a read */
	uint64_t rechecks;	/* cached objects found unchanged */
	uint64_t unnamed;	/* C frames named RB_CFUNC_UNNAMED */
	uint64_t timeouts;	/* reads that timed out (the process's memory hung) */
	uint64_t evictions;	/* entries dropped for room (LRU) */
	uint64_t entries;	/* gauge */
	uint64_t bytes;		/* gauge: heap held */
};

/* rb_iseq_stats - counters and sizes (reader thread). */
void rb_iseq_stats(struct rb_iseq_cache *c, struct rb_iseq_stats *out);

#endif /* PROFD_RUBY_ISEQ_H */
