/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvtx_internal.h - the NVTX tracer's state, shared by its files:
 *
 *   nvtx.c		the tracer: queue, thread, public API, ids
 *   nvtx_proc.c	per-process tables and the NVTX semantics (ranges,
 *			marks, names, the budget, expiry, process exit)
 *   nvtx_strings.c	the per-process string table (LRU, bounded)
 *   nvtx_emit.c	ranges and marks as OTLP spans, span events, logs
 *   nvtx_idmap.c	the u64 -> pointer hash table under all of them
 *
 * Everything below the queue lock's members belongs to the tracer's
 * thread alone.
 */
#ifndef PROFD_NVTX_INTERNAL_H
#define PROFD_NVTX_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/gpu_events.h"
#include "bpf/nvtx_events.h"
#include "counters/counters.h"
#include "nvtx/nvtx.h"
#include "nvtx/nvtx_idmap.h"
#include "util/clock.h"

/* Bounds: per process unless said otherwise; beyond, counted tables_full. */
#define NVTX_MAX_PROCS		4096		/* processes (all) */
#define NVTX_MAX_STRINGS	65536		/* defined strings (LRU beyond) */
#define NVTX_MAX_STRING_BYTES	(16u << 20)	/* their text (LRU beyond) */
#define NVTX_MAX_ALL_STR_BYTES	(256ULL << 20)	/* all processes' string text */
#define NVTX_MAX_DEPTH		1024		/* open ranges started on one thread */
#define NVTX_MAX_RANGES		65536		/* open ranges, push and start */
#define NVTX_MAX_THREADS	65536		/* threads (idle ones evicted beyond) */
#define NVTX_MAX_MARKS		65536		/* marks held by open ranges */
#define NVTX_MAX_SPAN_EVENTS	1024		/* marks on one span */
#define NVTX_MAX_EARLY_ENDS	65536		/* ends waiting for their start */
#define NVTX_MAX_DOMAINS	4096
#define NVTX_MAX_CATEGORIES	65536		/* named (domain, category) pairs */
#define NVTX_MAX_RESOURCES	65536		/* named resources */

/*
 * A start whose end came first is held open on its thread until an event
 * of that thread at or after the end time (so ranges opened inside it
 * still become its children), at most this long after it started.
 */
#define NVTX_KNOWN_END_WAIT_NS	(1000ULL * 1000 * 1000)
#define NVTX_TICK_NS		(100ULL * 1000 * 1000)
#define NVTX_FREE_RANGES_KEEP	4096	/* recycled range structs kept */

#define NVTX_DEFAULT_SCOPE	"profd.nvtx"
#define NVTX_UNNAMED		"(unnamed)"
#define NVTX_UNKNOWN_STRING	"[nvtx: unknown string]"

/* A defined string (or a name): refcounted, its text valid UTF-8. */
/* Text one attribute set needs: "#rrggbb" at 0, a u64 payload at 8. */
#define NVTX_ATTR_BUF 32

struct nvtx_str {
	struct nvtx_str *lru_prev, *lru_next;	/* its table's LRU; head: newest */
	const char *text;			/* NUL-terminated */
	uint32_t refs;		/* the table's (while in it) + holders' */
	uint32_t id;
	uint32_t len;		/* bytes of text */
	bool in_table;
	bool is_static;		/* never freed, never counted */
	char buf[];		/* the text of a defined string */
};

extern struct nvtx_str nvtx_str_unknown;	/* "[nvtx: unknown string]" */

struct nvtx_strtab {
	struct idmap ids;			/* id -> struct nvtx_str */
	struct nvtx_str *lru_head, *lru_tail;	/* head: most recently used */
	size_t bytes;				/* text bytes in the table */
};

/* A mark held by an open range until it ends (then a span event). */
struct nvtx_mark {
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	uint64_t payload;
	struct nvtx_str *name;	/* ref; NULL: no message */
	uint32_t domain, category, color;
	uint8_t payload_type, flags;
};

struct nvtx_proc;
struct nvtx_thread;

/* An open range (push/pop or start/end). */
struct nvtx_range {
	struct nvtx_range *prev, *next;		/* its thread's open ranges, innermost last */
	struct nvtx_range *push_prev;		/* PUSH: the push it was pushed on */
	struct nvtx_range *ke_prev, *ke_next;	/* end_known: the tracer's wait list */
	struct nvtx_thread *thread;		/* the thread it started on */
	struct nvtx_str *name, *scope;		/* refs; NULL: none / default domain */
	struct nvtx_mark *marks;		/* owned, kept when recycled */
	uint32_t nmarks, marks_cap;
	uint64_t id;				/* START: the range id */
	uint64_t start_ns, end_ns;		/* CLOCK_MONOTONIC */
	uint64_t ke_deadline_ns;		/* tracer's clock */
	uint64_t payload;
	uint32_t domain, category, color;
	uint8_t trace_id[16], span_id[8], parent_id[8];
	uint8_t kind, payload_type, flags;
	bool dropped;				/* its trace is over the budget */
	bool end_known;				/* its END came before its START */
};

struct nvtx_thread {
	struct nvtx_thread *idle_prev, *idle_next;	/* on the idle list when depth == 0 */
	struct nvtx_proc *proc;
	struct nvtx_range *head, *tail;		/* open ranges started here */
	struct nvtx_range *push_top;		/* innermost open push */
	struct nvtx_str *name;			/* NAME_THREAD (ref) */
	uint32_t tid;
	uint32_t depth;			/* ranges on head..tail */
	uint32_t phantom;		/* refused pushes whose pops are still due */
	uint32_t nknown_end;		/* of them end_known */
	uint8_t comm_state;		/* 0: unread, 1: comm read, 2: unreadable */
	char comm[16];
};

/* An END whose START has not arrived (yet). */
struct nvtx_early_end {
	struct nvtx_early_end *prev, *next;	/* the tracer's FIFO (one delay) */
	struct nvtx_proc *proc;
	uint64_t id, end_ns, deadline_ns;
};

struct nvtx_proc {
	pid_t pid;
	struct nvtx_strtab strings;
	struct idmap threads;		/* tid -> struct nvtx_thread */
	struct idmap ranges;		/* open START range id -> struct nvtx_range */
	struct idmap early;		/* range id -> struct nvtx_early_end */
	struct idmap domains;		/* domain id -> struct nvtx_str (ref) */
	struct idmap categories;	/* domain << 32 | category -> struct nvtx_str (ref) */
	struct idmap resources;		/* handle << 3 | kind -> struct nvtx_str (ref) */
	struct nvtx_thread *idle_head, *idle_tail;	/* head: idle longest */
	struct nvtx_thread *last_thread;	/* lookup cache */
	uint32_t nranges;		/* open ranges */
	uint32_t nmarks;		/* marks held by them */
	double tokens;			/* the span budget's bucket */
	uint64_t tokens_ns;		/* event time it was last filled */
};

/* A process exit waiting out its grace. */
struct nvtx_exit {
	struct nvtx_exit *next;
	pid_t pid;
	uint64_t deadline_ns;
};

struct nvtx_tracer {
	struct nvtx_output out;
	unsigned int max_spans_per_sec;
	struct clock_sync own_clock;
	struct clock_sync *clock;	/* &own_clock or the caller's */

	/* under lock: the queue, shared with nvtx_record()/nvtx_process_exit() */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	uint8_t *q;			/* ring of items (nvtx.c), mmapped */
	size_t qcap;			/* bytes, a multiple of the page size */
	size_t qpage;			/* the page size */
	uint64_t qhead;			/* bytes ever written */
	uint64_t qread;			/* bytes the tracer consumed */
	uint64_t qtail;			/* bytes producers may reuse: whole pages
					 * given back to the kernel, <= qread */
	struct nvtx_exit *exits_overflow;	/* exits that found the queue full */
	bool waiting, stopping, started;
	uint64_t queue_full;
	struct nvtx_stats pub;		/* st as of the last drained chunk */
	pthread_t thread;
	pthread_mutex_t stop_lock;	/* serializes nvtx_stop() */
	bool joined;

	/* the tracer's thread */
	struct nvtx_stats st;
	struct idmap procs;		/* pid -> struct nvtx_proc */
	uint64_t rng[4];		/* xoshiro256** */
	uint64_t now_ns;		/* CLOCK_MONOTONIC, refreshed per chunk */
	uint64_t last_tick_ns;
	size_t str_bytes;		/* all processes' table text */
	struct nvtx_range *free_ranges;
	uint32_t nfree_ranges;
	struct nvtx_early_end *early_head, *early_tail;
	struct nvtx_range *ke_head, *ke_tail;
	struct nvtx_exit *exit_head, *exit_tail;
	/* scratch for span events */
	struct otlp_span_event *evs;
	struct otlp_attr *evattrs;
	char (*evcolors)[NVTX_ATTR_BUF];
	uint32_t evcap;
};

/* nvtx.c */
void nvtx_new_span_id(struct nvtx_tracer *t, uint8_t id[8]);
void nvtx_new_trace_id(struct nvtx_tracer *t, uint8_t id[16]);

/* nvtx_proc.c */
void nvtx_proc_batch(struct nvtx_tracer *t, const struct profd_gpu_batch *h,
		     const struct profd_nvtx_event *ev, uint32_t n);
void nvtx_proc_exit(struct nvtx_tracer *t, pid_t pid, uint64_t deadline_ns);
void nvtx_proc_expire(struct nvtx_tracer *t, uint64_t now_ns);
uint64_t nvtx_proc_next_deadline(struct nvtx_tracer *t);
void nvtx_proc_close_all(struct nvtx_tracer *t);

/* nvtx_strings.c */
struct nvtx_str *nvtx_str_define(struct nvtx_tracer *t, struct nvtx_proc *p, uint32_t id,
				 const char *text, size_t len);
struct nvtx_str *nvtx_str_lookup(struct nvtx_tracer *t, struct nvtx_proc *p, uint32_t id);
void nvtx_str_put(struct nvtx_str *s);
void nvtx_strtab_free(struct nvtx_tracer *t, struct nvtx_proc *p);
size_t nvtx_utf8_sanitize(char *s, size_t len);

static inline struct nvtx_str *nvtx_str_get(struct nvtx_str *s)
{
	if (s && !s->is_static)
		s->refs++;
	return s;
}

/* nvtx_emit.c */
void nvtx_emit_span(struct nvtx_tracer *t, struct nvtx_proc *p, struct nvtx_range *r,
		    bool unfinished);
void nvtx_emit_log(struct nvtx_tracer *t, struct nvtx_proc *p, struct nvtx_thread *th,
		   const struct profd_nvtx_event *e, uint32_t tid);
void nvtx_emit_free(struct nvtx_tracer *t);
void nvtx_thread_read_comm(pid_t pid, struct nvtx_thread *th);

/*
 * NVTX_COUNT - add @n to stats field @field of tracer @t and to the
 * reported counter_NAME (declared in nvtx.c); the field stays for
 * nvtx_stats().
 */
#define NVTX_COUNT(t, field, name, n) do {				\
	(t)->st.field += (n);						\
	counter_add(&counter_##name, (n));				\
} while (0)

COUNTER_EXTERN(nvtx_spans);
COUNTER_EXTERN(nvtx_logs);
COUNTER_EXTERN(nvtx_spans_dropped_budget);
COUNTER_EXTERN(nvtx_pops_unmatched);
COUNTER_EXTERN(nvtx_ends_unknown);
COUNTER_EXTERN(nvtx_strings_unknown);
COUNTER_EXTERN(nvtx_unfinished);
COUNTER_EXTERN(nvtx_library_dropped);
COUNTER_EXTERN(nvtx_events_unseen);
COUNTER_EXTERN(nvtx_tables_full);

#endif /* PROFD_NVTX_INTERNAL_H */
