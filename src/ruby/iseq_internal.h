// SPDX-License-Identifier: GPL-2.0
/*
 * iseq_internal.h - what iseq.c (decoding CRuby objects, composing frame
 * names) and iseq_cache.c (the cache of decoded objects and when an
 * entry may name a sample: GC epochs) share. Not a public interface.
 */
#ifndef PROFD_RUBY_ISEQ_INTERNAL_H
#define PROFD_RUBY_ISEQ_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ruby/iseq.h"
#include "ruby/rvalue.h"
#include "runtime/addr_cache.h"

enum kind {
	K_ISEQ = 1,	/* rb_iseq_t: label, path, lines */
	K_ME,		/* a method entry (or the svar holding it) */
	K_ID,		/* an ID: its name */
	K_CLASS,	/* a class or module: its path ("" when it has none) */
};

#define NPRINT		10	/* fields compared on a recheck */
#define IMEMO_HDR	24	/* rb_iseq_t {flags, wrapper, body} */
#define BODY_MAX	256
#define ME_HDR		40	/* rb_callable_method_entry_t, vm_svar */
#define DEF_HDR		48
#define SUCC_MAX	(128u << 10)	/* bytes of a succinct line table read */

struct entry {
	struct addr_entry ae;	/* first: key (pid, gen, kind, address), links */
	uint64_t checked_ns;
	/* ISEQ, ME with GC epochs: this content was found by reads from
	 * t_first (the first one's end) to t_hi (the last one's start); the
	 * latest run of them within one GC epoch, run_epoch, from t_lo (its
	 * first's end). CLOCK_MONOTONIC ns; t_first 0: decoded without
	 * epochs; run_epoch NO_EPOCH: the last read saw a GC start */
	uint64_t t_first, run_epoch, t_lo, t_hi;
	/* the object at its address is this entry's from sure_from until GC
	 * cycle sure_epoch + 1 sweeps (NO_EPOCH: not known for any) */
	uint64_t sure_epoch, sure_from;
	int failed;		/* < 0: decoding failed (cached like a success) */
	uint64_t print[NPRINT];	/* what it was decoded from */
	char *name;		/* ISEQ: label; ME: cfunc: its full name, method:
				 * the owner prefix ("Foo#", "Foo.", ""); ID: the
				 * name; CLASS: the path */
	char *path;		/* ISEQ: location path */
	int first_line;		/* ISEQ */
	bool singleton;		/* CLASS: a singleton of a class or module
				 * (name is then the attached one's path) */
	bool unnamed;		/* ME: a C method named RB_CFUNC_UNNAMED */
	uint8_t def_type;	/* ME: rb_method_type_t */
	uint64_t encoded;	/* ISEQ: iseq_encoded */
	uint32_t iseq_size;	/* ISEQ: in VALUEs */
	uint64_t iseq;		/* ME of a Ruby method: its iseq */
	bool eval;		/* ISEQ: eval'd code, or a block in it (in_eval()) */
	struct rv_lines lines;	/* ISEQ: its line table */
};

struct rb_iseq_cache {
	struct addr_cache *lru;
	struct remote_reader *remote;	/* borrowed */
	struct rb_iseq_stats st;
	/* the last GC count read, reused for the frames of one sample */
	pid_t gc_pid;
	uint64_t gc_gen, gc_now, gc_count;
	char fn[2 * RB_NAME_MAX + 4];	/* a method frame's composed name */
};

#define NO_EPOCH	UINT64_MAX

/* One naming call: where reads go, what the decoders need. */
struct ctx {
	struct rb_iseq_cache *c;
	pid_t pid;
	uint64_t gen, now;
	uint64_t epoch;		/* the sample's GC count; NO_EPOCH: none */
	uint64_t epoch_now;	/* the process's GC count when naming began */
	bool quiet;		/* no GC marked or ran at the sample (PROFD_RB_GC_QUIET) */
	bool marking;		/* a GC cycle was marking (PROFD_RB_GC_MARKING) */
	bool epoch_lost;	/* the process has GC epochs, but not this sample */
	const struct rb_offsets *off;
	const struct rb_proc_addrs *addrs;	/* NULL: none (no ID table) */
	struct rv_reader rv;
};

/*
 * rb_obj_decode - decode object @addr of kind @k into @e's fields (and
 * e->print). 0, or a negative errno: -EAGAIN/-ENOMEM are not the
 * object's (not cached); others are (cached as e->failed).
 */
int rb_obj_decode(struct ctx *x, enum kind k, uint64_t addr, struct entry *e);

/*
 * rb_iseq_header / rb_me_header - read the header of the iseq (its body
 * into @body) or method entry at @addr and fill @print with what a name
 * is decoded from (compared on a recheck). 0 or a negative errno
 * (-EINVAL: not such an object).
 */
int rb_iseq_header(struct ctx *x, uint64_t iseq, uint8_t body[BODY_MAX],
		   uint64_t print[NPRINT]);
int rb_me_header(struct ctx *x, uint64_t addr, uint8_t cme[ME_HDR],
		 uint8_t def[DEF_HDR], uint64_t print[NPRINT]);

/* rb_iseq_strings - the label and path (malloc'd, caller frees) of the
 * iseq whose body header rb_iseq_header() read into @body. */
int rb_iseq_strings(struct ctx *x, const uint8_t *body, char **label, char **path);

/*
 * rb_obj_get - the cache entry of object @addr of kind @k (iseq_cache.c),
 * decoded now if needed, and, under GC epochs, only when it is known to
 * name what the sample saw; NULL and *@err (a negative errno) if not.
 * The entry is the cache's, valid until the next rb_obj_get().
 */
struct entry *rb_obj_get(struct ctx *x, enum kind k, uint64_t addr, int *err);

/*
 * rb_ctx_init - a naming call's context: @w1 is the frame's second word
 * (bpf/unwind_ruby.h: the pc and the sample's GC epoch), @now the
 * sample's time (CLOCK_MONOTONIC ns), *@budget the bytes it may read.
 */
void rb_ctx_init(struct ctx *x, struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		 const struct rb_offsets *off, const struct rb_proc_addrs *addrs,
		 uint64_t w1, uint64_t now, size_t *budget);

#endif /* PROFD_RUBY_ISEQ_INTERNAL_H */
