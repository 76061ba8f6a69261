/* SPDX-License-Identifier: GPL-2.0 */
/*
 * frames.h - the interned table of a language runtime's frames
 * (function, file, line), and its two generations.
 *
 * Owns: one id per distinct (function, file, line, first line) a sample
 * showed, so aggregated stacks carry a runtime frame as one 64-bit token
 * (the runtime's tag | the generation bit | id, see runtime.h) beside
 * native addresses, and the profile writer can name it after the process
 * and its code are gone. Each runtime describes its table with a struct
 * rt_frames_kind: its token tag, its fixed frames (ids 1..nfixed, names
 * given by the runtime, e.g. "[python: truncated]"), the one that stands
 * for a frame a full table refused, and its own "frames full" counter
 * (declared by the runtime: python_frames_full, ruby_frames_full).
 * Entries are never removed while a table lives; a table is bounded by
 * count (RT_FRAMES_MAX) and by heap bytes (its strings with malloc's
 * overhead, entries and hash slots): new frames past either map to the
 * runtime's "table full" frame, counted. Thread-safe: the reader thread
 * adds, writers read.
 *
 * struct rt_frame_gens is the two generations a runtime embeds: new
 * frames go to the current table; at interval starts a half-full or old
 * table is replaced by a fresh one (rt_frame_gens_new_interval()), so a
 * long run never fills it for good and frames no process shows any more
 * are freed within two renewals.
 */
#ifndef PROFD_RUNTIME_FRAMES_H
#define PROFD_RUNTIME_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* In a frame token: the id is of the second table generation (one of the
 * bits a runtime's tokens keep for themselves, runtime.h). */
#define RT_FRAME_GEN	(1ULL << 61)
_Static_assert((RT_FRAME_GEN & RUNTIME_IP_OWN_MASK) == RT_FRAME_GEN,
	       "RT_FRAME_GEN is a runtime's own bit");
#ifndef RT_FRAMES_MAX	/* a build may set it lower, to test the rotation */
#define RT_FRAMES_MAX	(1u << 18)
#endif
#define RT_FRAMES_MAX_BYTES	(64ULL << 20)	/* per table, when given none */
/* intervals after which a table that holds frames is renewed */
#define RT_FRAMES_RENEW_INTERVALS	60

struct counter_def;

/* What one runtime's frame tables are: static, shared by its tables. */
struct rt_frames_kind {
	uint64_t tag;			/* its tokens' runtime bits: runtime_ip_tag(id) */
	const char *const *fixed;	/* names of the fixed frames by id: [1..nfixed] */
	uint32_t nfixed;
	uint32_t full_id;		/* the fixed frame of a frame a full table refused */
	struct counter_def *full;	/* counts those refusals (the runtime's) */
};

struct rt_frame {
	const char *function;	/* CPython: co_qualname (co_name before 3.11) */
	const char *file;	/* CPython: co_filename; "" when unknown */
	int line;		/* executing line, 0 if unknown */
	int first_line;		/* the function's first line, 0 if unknown */
};

struct rt_frames;

/*
 * rt_frames_new - an empty table of @kind holding its fixed frames, that
 * holds at most @max_bytes of heap (0: RT_FRAMES_MAX_BYTES). NULL on OOM.
 */
struct rt_frames *rt_frames_new(const struct rt_frames_kind *kind, uint64_t max_bytes);

/* rt_frames_free - free the table and its strings. NULL is fine. */
void rt_frames_free(struct rt_frames *t);

/*
 * rt_frames_intern - the id of (@function, @file, @line, @first_line),
 * added (strings copied) if new. Returns the kind's full_id when the
 * table is full or memory ran out (counted: rt_frames_stats() and the
 * kind's counter).
 */
uint32_t rt_frames_intern(struct rt_frames *t, const char *function,
			  const char *file, int line, int first_line);

/*
 * rt_frames_get - copy frame @id into *@out (strings stay owned by the
 * table, valid while it lives). Returns 0, or -ENOENT for an unknown id.
 */
int rt_frames_get(struct rt_frames *t, uint32_t id, struct rt_frame *out);

/* rt_frames_stats - frames interned (fixed ones not counted), and interns
 * refused (table full). */
void rt_frames_stats(struct rt_frames *t, uint64_t *frames, uint64_t *full);

/* rt_frames_bytes - heap bytes @t holds: its entries, slots and strings. */
uint64_t rt_frames_bytes(struct rt_frames *t);

/* rt_frames_half_full - the table holds half of its count or byte bound. */
bool rt_frames_half_full(struct rt_frames *t);

/* rt_frames_empty - the table holds its fixed frames only. */
bool rt_frames_empty(struct rt_frames *t);

/*
 * struct rt_frame_gens - a runtime's two generations of tables. Tokens
 * of the second carry RT_FRAME_GEN. The reader thread interns and renews;
 * any thread names and reads the stats.
 */
struct rt_frame_gens {
	const struct rt_frames_kind *kind;
	struct rt_frames *t[2];
	int cur;			/* the generation new frames go to */
	uint64_t max_bytes;		/* bound of each generation */
	uint32_t since_renewal;		/* rt_frame_gens_new_interval() calls */
	uint64_t full_before;		/* refusals of retired generations (atomic) */
};

/* rt_frame_gens_init - both (empty) generations of @kind, each bounded by
 * @max_bytes (0: RT_FRAMES_MAX_BYTES). 0, or -ENOMEM (then
 * rt_frame_gens_fini() frees what was made). */
int rt_frame_gens_init(struct rt_frame_gens *g, const struct rt_frames_kind *kind,
		       uint64_t max_bytes);

/* rt_frame_gens_fini - free both generations; a zeroed @g is fine. */
void rt_frame_gens_fini(struct rt_frame_gens *g);

/* rt_frame_gens_tag - the token bits of the current generation's frames:
 * OR an id of rt_frame_gens_intern() in to make its token. Reader. */
static inline uint64_t rt_frame_gens_tag(const struct rt_frame_gens *g)
{
	return g->kind->tag | (g->cur ? RT_FRAME_GEN : 0);
}

/* rt_frame_gens_intern - rt_frames_intern() into the current generation. Reader. */
static inline uint32_t rt_frame_gens_intern(struct rt_frame_gens *g, const char *function,
					    const char *file, int line, int first_line)
{
	return rt_frames_intern(g->t[g->cur], function, file, line, first_line);
}

/*
 * rt_frame_gens_get - the frame token @token (the id in its low 32 bits,
 * maybe RT_FRAME_GEN) stands for. Any thread. 0, or -ENOENT.
 */
int rt_frame_gens_get(struct rt_frame_gens *g, uint64_t token, struct rt_frame *out);

/*
 * rt_frame_gens_new_interval - an aggregation interval starts: if the
 * current table is half full (count or bytes), or has not been renewed
 * for RT_FRAMES_RENEW_INTERVALS calls and either generation holds
 * frames, new frames go to a fresh table from now on (replacing the
 * other generation, whose ids only the interval before last used).
 * Returns whether it renewed (the runtime counts it). Call once per
 * interval on the reader, before its first intern, and only once the
 * profile of the interval before last has been built.
 */
bool rt_frame_gens_new_interval(struct rt_frame_gens *g);

/* rt_frame_gens_stats - frames interned in the current generation, and
 * interns refused by every generation so far. Any thread. */
void rt_frame_gens_stats(struct rt_frame_gens *g, uint64_t *frames, uint64_t *full);

/* rt_frame_gens_bytes - heap of both generations. Any thread. */
uint64_t rt_frame_gens_bytes(struct rt_frame_gens *g);

#endif /* PROFD_RUNTIME_FRAMES_H */
