/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aggregate.h - per-interval aggregation of stack samples.
 *
 * Owns: the table of distinct stacks of one interval, keyed by (kind,
 * pid, tid, thread name, process name, mappings snapshot, flags, IPs),
 * each with a count and a value (a kind's measure: off-CPU nanoseconds). The reader thread adds to the current table; at the end of an
 * interval the agent swaps in a fresh one and hands the full one to
 * aggregate_build_profile(), which symbolizes every distinct stack once.
 */
#ifndef PROFD_AGGREGATE_AGGREGATE_H
#define PROFD_AGGREGATE_AGGREGATE_H

#include <pthread.h>
#include <stdint.h>

#include "proc/process.h"
#include "profile/profile.h"
#include "runtime/runtime.h"
#include "symbol/kallsyms.h"

/*
 * What a stack's count and value measure (one profile each), and the
 * views built from several kinds (struct build_opts.kind only).
 */
enum agg_kind {
	AGG_CPU = 0,		/* count: CPU samples; value unused (count x period) */
	AGG_OFF_CPU = 1,	/* count: blocking switches; value: ns blocked */
	AGG_KINDS,		/* the kinds a stack is stored as */
	AGG_WALL = AGG_KINDS,	/* view: CPU + off-CPU stacks as wall-clock ns */
};

struct agg_stack {
	uint64_t hash;
	uint32_t kind;				/* enum agg_kind */
	pid_t pid;
	pid_t tid;
	char comm[PROCESS_COMM_LEN];		/* process name */
	char thread_name[PROCESS_COMM_LEN];
	struct proc_snapshot *snap;		/* ref held; NULL if never read */
	uint32_t flags;				/* PROFD_SAMPLE_* */
	uint32_t time_bin;			/* process_jit_bin(); 0: none */
	uint64_t count;
	uint64_t value;				/* the kind's measure (AGG_OFF_CPU: ns) */
	uint16_t nkernel;
	uint16_t nuser;
	struct agg_stack *next;
	uint64_t ips[];				/* kernel then user, leaf first */
};

struct aggregate {
	struct agg_stack **buckets;
	uint32_t nbuckets;
	uint64_t nstacks;	/* distinct stacks */
	uint64_t max_stacks;	/* bound: new stacks beyond it are dropped (counted) */
	uint64_t nsamples;	/* CPU samples added */
	uint64_t nadded[AGG_KINDS];	/* additions by kind */
	uint64_t dropped;	/* samples lost to the bound or OOM */
	uint64_t start_ns;	/* CLOCK_REALTIME of the interval start */
	uint64_t bytes;		/* heap the table holds: buckets and stacks */
};

/*
 * aggregate_new - an empty table holding at most @max_stacks distinct
 * stacks; @start_ns is the interval's wall-clock start (Unix ns).
 */
struct aggregate *aggregate_new(uint64_t max_stacks, uint64_t start_ns);

/* aggregate_free - free the table and drop its snapshot references. */
void aggregate_free(struct aggregate *a);

/*
 * aggregate_add - count one sample. @ips holds @nkernel kernel then @nuser
 * user addresses, leaf first. @snap may be NULL (a reference is taken).
 * @time_bin: when the sample was taken, for stacks with JIT frames whose
 * names depend on it (src/proc/process_jit.h: JIT_TIME_BIN_NS units + 1;
 * 0: none), part of the stack's identity.
 * Returns 0, or -ENOSPC/-ENOMEM when the sample was dropped (counted).
 */
int aggregate_add(struct aggregate *a, pid_t pid, pid_t tid,
		  const char *comm, const char *thread_name,
		  struct proc_snapshot *snap, uint32_t flags, uint32_t time_bin,
		  const uint64_t *ips, uint16_t nkernel, uint16_t nuser);

/*
 * aggregate_add_value - add @count and @value to the stack of kind @kind
 * (enum agg_kind) with these labels and frames (as aggregate_add()).
 * Returns 0, or -ENOSPC/-ENOMEM when it was dropped (counted).
 */
int aggregate_add_value(struct aggregate *a, uint32_t kind, pid_t pid, pid_t tid,
			const char *comm, const char *thread_name,
			struct proc_snapshot *snap, uint32_t flags, uint32_t time_bin,
			const uint64_t *ips, uint16_t nkernel, uint16_t nuser,
			uint64_t count, uint64_t value);

/*
 * aggregate_snapshots - the distinct process snapshots @a's stacks hold
 * (no references taken: valid while @a lives), in a new array the caller
 * frees, their number in *@n. NULL (*@n 0) when none or out of memory.
 */
struct proc_snapshot **aggregate_snapshots(const struct aggregate *a, size_t *n);

struct build_opts {
	uint32_t kind;			/* enum agg_kind: which stacks, which sample types */
	uint64_t period_ns;		/* 1e9 / sampling frequency */
	double off_cpu_scale;		/* AGG_WALL: off-CPU ns x this (1 / the
					 * probability a switch was recorded) */
	uint64_t end_ns;		/* CLOCK_REALTIME of the interval end */
	const struct kallsyms *ksyms;	/* NULL: kernel frames unresolved */
	const char *kernel_build_id;	/* hex or "" */
	pthread_mutex_t *sym_lock;	/* serializes symbolizer use */
	struct runtimes *rts;		/* names runtime frame tokens; NULL: none */
	const char *const *comments;	/* copied into the profile */
	uint32_t ncomments;
};

/*
 * aggregate_build_profile - the pprof-model profile of @a's stacks of
 * kind @o->kind: AGG_CPU: sample types samples/count and cpu/nanoseconds,
 * period type cpu/nanoseconds; AGG_OFF_CPU: switches/count and
 * off_cpu/nanoseconds, period type off_cpu/nanoseconds; AGG_WALL (the
 * wall-clock view of both): cpu/nanoseconds (CPU samples x @o->period_ns),
 * off_cpu/nanoseconds (blocked ns x @o->off_cpu_scale) and their sum
 * wall/nanoseconds, last so pprof shows it by default, period type
 * wall/nanoseconds; a thread's wall time is then its time on a CPU plus
 * its recorded blocked time (the run-queue wait after a wakeup
 * included, after a preemption in neither). One
 * sample per distinct stack with labels pid, tid (numeric), comm,
 * thread_name (string) and the process's metadata (proc_meta_labels());
 * kernel frames under a "[kernel.kallsyms]"
 * mapping; user frames under their file's mapping, symbolized through the
 * snapshot's ELF objects; a runtime's frames (tokens, see
 * src/runtime/runtime.h) under its mapping (runtime_ops.mapping), with
 * the function, file and line it names; truncated stacks end in a
 * "[truncated]" frame.
 * Returns a new profile (caller frees) or NULL on out of memory.
 */
struct profile *aggregate_build_profile(const struct aggregate *a,
					const struct build_opts *o);

/*
 * The stack symbolizer aggregate_build_profile() uses, for other profiles
 * of the same process stacks (GPU kernels by launching stack).
 * stack_builder_new - a builder adding to @p with @o's symbol sources
 * (period, comments and end time are unused); it adds the kernel
 * mapping and a "[truncated]" location to @p. NULL on out of memory.
 */
struct stack_builder;
struct stack_builder *stack_builder_new(struct profile *p,
					const struct build_opts *o);
void stack_builder_free(struct stack_builder *b);

/* Most labels proc_meta_labels() adds. */
#define PROC_META_LABELS 4

/*
 * proc_meta_labels - string labels of the process metadata of @snap
 * (NULL: none) into @out (PROC_META_LABELS entries): container_id,
 * cgroup, executable (basename), build_id (the executable's, hex), each
 * only when known and non-empty. The strings point into @snap, so the
 * labels are valid while the caller holds its reference (profiles copy
 * them). Returns the number of labels written.
 */
uint32_t proc_meta_labels(const struct proc_snapshot *snap,
			  struct profile_label *out);

/* Most locations one stack can have: merged user frames + [truncated]. */
#define STACK_BUILDER_MAX_LOCATIONS \
	(PROFD_MAX_KERNEL_FRAMES + PROFD_MAX_USER_FRAMES + PROFD_MAX_INTERP_FRAMES + 3)

/*
 * stack_builder_locations - the location ids (leaf first) of a stack laid
 * out as in struct agg_stack (@nkernel kernel then @nuser user IPs, user
 * IPs possibly runtime frame tokens), plus "[truncated]" when @flags has
 * PROFD_SAMPLE_USER_TRUNCATED. Frames in JIT code are named by the code
 * there in @time_bin (agg_stack's; 0: unknown, named only where the
 * address only ever held one piece of code). @locs holds
 * STACK_BUILDER_MAX_LOCATIONS; *@nlocs gets the count. Returns 0 or -ENOMEM.
 */
int stack_builder_locations(struct stack_builder *b, struct proc_snapshot *snap,
			    uint32_t flags, uint32_t time_bin,
			    const uint64_t *ips, uint16_t nkernel,
			    uint16_t nuser, uint32_t *locs, uint32_t *nlocs);

#endif /* PROFD_AGGREGATE_AGGREGATE_H */
