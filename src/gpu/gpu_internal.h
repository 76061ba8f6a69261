/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpu_internal.h - the state the files of src/gpu/ share. Not for use outside
 * src/gpu/ (the API is gpu.h).
 *
 * Lifetimes: stall-reason strings are interned for the life of struct
 * gpu; names and launching stacks are interned and reference counted
 * (only the reader thread takes references; the reader thread frees
 * unreferenced ones in gpu_tick()); intervals hold references to the
 * stacks and names their entries use. Bounds: names a process may intern
 * over its life (GPU_PROC_MAX_NAMES, GPU_PROC_MAX_NAME_BYTES), all names
 * (GPU_MAX_NAMES, GPU_MAX_NAME_BYTES), stack bytes
 * (GPU_MAX_STACK_BYTES), cubins (GPU_MAX_CUBINS, GPU_MAX_CUBIN_SYM_BYTES),
 * so a hostile process's records cost bounded memory.
 */
#ifndef PROFD_GPU_GPU_INTERNAL_H
#define PROFD_GPU_GPU_INTERNAL_H

#include <pthread.h>

#include "bpf/gpu_events.h"
#include "bpf/profd.h"
#include "counters/counters.h"
#include "gpu/gpu.h"
#include "proc/remote.h"

/* gpu_stack.flags beyond PROFD_SAMPLE_*: why there is no CPU stack */
#define GPU_STACK_NOT_CAPTURED	(1u << 30)	/* library's token bucket was empty */
#define GPU_STACK_UNKNOWN	(1u << 31)	/* the launch never came */

#define GPU_MAX_NAMES		(1u << 20)	/* interned names, all processes */
#define GPU_MAX_NAME_BYTES	(256ULL << 20)	/* their strings */
#define GPU_PROC_MAX_NAMES	65536		/* name ids per process */
#define GPU_PROC_MAX_NAME_BYTES	(8u << 20)	/* their string bytes per process */
#define GPU_MAX_STACK_BYTES	(128ULL << 20)	/* interned launch stacks */
#define GPU_MAX_CUBINS		4096
#define GPU_MAX_CUBIN_SYM_BYTES	(256ULL << 20)	/* parsed symbols, all cubins */
#define GPU_MAX_KERNEL_NS	(3600ULL * 1000000000ULL) /* longer: a bogus record */
#define GPU_MAX_DEVICES		64
#define GPU_MAX_STALL_REASONS	256		/* per process and device */
#define GPU_MAX_CUBIN_BYTES	(256ULL << 20)

/*
 * A kernel or SASS function name, interned and reference counted: held by
 * the process tables that name it, waiting kernels and interval entries;
 * the reader thread frees unreferenced ones (gpu_tick).
 */
struct gpu_name {
	uint64_t hash;
	uint32_t refs;		/* atomic */
	uint32_t bytes;		/* of its strings */
	char *mangled;
	char *demangled;	/* == mangled when not a C++ name */
	struct gpu_name *next;
};

/* A launching CPU stack, interned: launches from one call site share it. */
struct gpu_stack {
	uint64_t hash;
	uint32_t refs;			/* atomic */
	pid_t pid;
	pid_t tid;
	char comm[16];
	char thread_name[16];
	struct proc_snapshot *snap;	/* ref held; may be NULL */
	uint32_t flags;			/* PROFD_SAMPLE_* | GPU_STACK_* */
	uint16_t nkernel;
	uint16_t nuser;
	struct gpu_stack *next;
	uint64_t ips[];
};

/* A list of correlation entries in expiry order (constant delay each). */
struct gpu_list {
	struct gpu_corr *head, *tail;
	uint64_t delay_ns;
	uint64_t n;
};

/* A kernel record waiting for its launch. */
struct gpu_pending {
	struct profd_gpu_kernel k;
	const struct gpu_name *name;
	struct gpu_pending *next;
};

/*
 * One (pid, correlation id): its launch's stack once known, and the kernel
 * records that came before it. In exactly one expiry list: `launches`
 * (stack known, no kernel yet), `matched`/`graph_matched` (joined) or
 * `pending` (kernels waiting, no launch yet).
 */
struct gpu_corr {
	pid_t pid;
	bool matched;			/* a kernel joined the launch */
	uint64_t correlation_id;
	uint64_t expires_ns;
	struct gpu_stack *stack;	/* ref held; NULL until the launch comes */
	struct gpu_pending *kernels;	/* waiting for the launch, newest first */
	struct gpu_list *list;
	struct gpu_corr *hnext;
	struct gpu_corr *prev, *next;
};

struct gpu_stall {
	uint32_t device;
	uint32_t index;
	const char *name;
};

/* Per-process tables: name ids and stall reasons are per process. */
struct gpu_proc {
	pid_t pid;
	uint64_t exited_ns;		/* CLOCK_MONOTONIC, 0 while alive */
	struct { uint32_t id; const struct gpu_name *name; } *ids;
	uint32_t ids_cap, ids_n;	/* open addressing, power of two */
	uint32_t names_interned;	/* names it had interned, ever */
	uint64_t name_bytes;		/* their string bytes, ever */
	struct { pid_t tid; char name[16]; } threads[16];	/* thread names seen */
	uint32_t nthreads;
	struct gpu_stall *stalls;
	uint32_t nstalls;
	char comm[16];
	struct gpu_proc *next;
};

/* A cubin by CRC, its function symbols sorted by name. */
struct gpu_cubin_sym {
	const char *name;		/* points into the cubin's string copy */
	uint64_t offset;		/* file offset of the function's first byte */
	uint64_t size;
};

struct gpu_cubin {
	uint64_t crc;
	int state;			/* 0: not read yet, 1: parsed, -errno: failed */
	pid_t pid;			/* a process holding the library's copy */
	uint64_t image_ptr, size;
	struct gpu_cubin_sym *syms;
	uint32_t nsyms;
	char *strings;
	struct gpu_cubin *next;
};

/* Interval entries. */
struct gpu_kernel_entry {
	struct gpu_stack *stack;	/* ref held */
	const struct gpu_name *name;
	uint32_t device, stream, graph;
	uint64_t count;
	uint64_t total_ns;
	struct gpu_kernel_entry *next;
};

struct gpu_pc_entry {
	pid_t pid;
	char comm[16];
	uint64_t crc;
	const struct gpu_name *function;	/* NULL: unknown */
	uint64_t pc_offset;
	uint64_t address;		/* offset in the cubin file, 0 if unresolved */
	bool resolved;
	const char *stall;		/* interned, "" if unknown */
	uint32_t device;
	uint64_t samples;
	struct gpu_pc_entry *next;
};

struct gpu_interval {
	struct gpu_kernel_entry **kbuckets;
	uint32_t nkbuckets;
	uint64_t nkentries;
	uint64_t kernels;
	uint64_t time_ns;
	struct gpu_pc_entry **pbuckets;
	uint32_t npbuckets;
	uint64_t npentries;
	uint64_t pc_samples;
};

struct gpu {
	struct gpu_opts o;
	pthread_mutex_t lock;		/* cur, devices */
	struct gpu_interval *cur;
	struct gpu_stats st;		/* updated with GPU_STAT_ADD */
	struct profd_gpu_device devices[GPU_MAX_DEVICES];
	bool device_seen[GPU_MAX_DEVICES];

	/* reader thread only */
	struct gpu_name **names;
	uint32_t names_cap;
	uint32_t nnames;
	uint64_t name_bytes;
	struct gpu_stack **stacks;
	uint32_t stacks_cap;
	uint32_t nstacks;
	uint64_t stack_bytes;		/* of interned stacks, GPU_MAX_STACK_BYTES */
	struct gpu_corr **corr;
	uint32_t corr_cap;
	uint64_t ncorr;
	struct gpu_list launches;	/* waiting for their first kernel */
	struct gpu_list matched;	/* joined; kept for late records of the same id */
	struct gpu_list graph_matched;	/* joined by graph kernels: kept longer */
	struct gpu_list pending;	/* ids with kernels waiting for their launch */
	uint64_t npending;		/* kernels waiting, all ids */
	struct gpu_proc **procs;
	uint32_t procs_cap;
	struct gpu_cubin **cubins;
	uint32_t cubins_cap;
	uint32_t ncubins;
	uint64_t cubin_sym_bytes;
	char **stall_names;		/* interned stall reason names */
	uint32_t nstall_names;
	struct remote_reader *remote;
	uint64_t last_sweep_ns;
	unsigned int warnings;		/* library errors printed */
};

#define GPU_STAT_ADD(g, field, n) \
	__atomic_fetch_add(&(g)->st.field, (n), __ATOMIC_RELAXED)

/* gpu_mix - a 64-bit finalizer (murmur3's) for hash-table buckets. */
static inline uint64_t gpu_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}
/*
 * GPU_COUNT - GPU_STAT_ADD() of a field that is also a reported counter:
 * counter_NAME (declared in gpu.c) counts it for the status line, the
 * profile comments and /metrics; the field stays for gpu_stats().
 */
#define GPU_COUNT(g, field, name, n) do {				\
	GPU_STAT_ADD(g, field, n);					\
	counter_add(&counter_##name, (n));				\
} while (0)

COUNTER_EXTERN(gpu_kernels);
COUNTER_EXTERN(gpu_launches_no_stack);
COUNTER_EXTERN(gpu_kernels_no_launch);
COUNTER_EXTERN(gpu_launches_unmatched);
COUNTER_EXTERN(gpu_correlation_evicted);
COUNTER_EXTERN(gpu_records_dropped);
COUNTER_EXTERN(gpu_library_errors);
COUNTER_EXTERN(gpu_names_unknown);
COUNTER_EXTERN(gpu_pc_samples);
COUNTER_EXTERN(gpu_pc_unresolved);
COUNTER_EXTERN(gpu_cubin_errors);
COUNTER_EXTERN(gpu_kernels_bogus);
COUNTER_EXTERN(gpu_launch_stacks_dropped);

/* gpu.c */
/*
 * gpu_add_kernel - count kernel @k's time (end - start, ns) on (@s, @name,
 * device, stream, graph) in the current interval, under g->lock. The
 * interval entry takes its own references to @s and @name; @name may be
 * NULL (counted as names_unknown). Out of memory: the kernel is lost.
 */
void gpu_add_kernel(struct gpu *g, struct gpu_stack *s, const struct gpu_name *name,
		    const struct profd_gpu_kernel *k);
/* gpu_interval_new - an empty interval (kernel and PC-sample buckets); NULL: no memory. */
struct gpu_interval *gpu_interval_new(void);

/* tables.c (reader thread only) */
/*
 * gpu_tables_init - allocate the process and stack hash tables of @g.
 * Returns 0 or -ENOMEM (what was allocated is freed by gpu_tables_free()).
 */
int gpu_tables_init(struct gpu *g);
/*
 * gpu_tables_sweep - free what nobody references any more: processes
 * that exited over 10 s before @now (CLOCK_MONOTONIC ns), then stacks,
 * then names (in that order: processes and stacks hold names).
 */
void gpu_tables_sweep(struct gpu *g, uint64_t now);
/* gpu_tables_free - free all names, stall reasons, processes and stacks, referenced or not. */
void gpu_tables_free(struct gpu *g);
/*
 * gpu_proc_get - the tables of process @pid; with @create, made (its comm
 * read from /proc) when missing. NULL: not there (or no memory).
 */
struct gpu_proc *gpu_proc_get(struct gpu *g, pid_t pid, bool create);
/*
 * gpu_thread_name - the name of thread @tid of @p, read from /proc once
 * and cached (the last 16 threads). Owned by @p; "" when unreadable.
 */
const char *gpu_thread_name(struct gpu_proc *p, pid_t tid);
/*
 * gpu_proc_name_budget - may @p intern one more name of @len bytes
 * (including its NUL)? Charges it when true: at most GPU_PROC_MAX_NAMES
 * names and GPU_PROC_MAX_NAME_BYTES over the process's life.
 */
bool gpu_proc_name_budget(struct gpu_proc *p, size_t len);
/*
 * gpu_proc_set_name - id @id of @p names @n; takes over the caller's
 * reference to @n (dropped on failure). Returns 0, -EINVAL (id 0) or
 * -ENOMEM. The caller charged gpu_proc_name_budget().
 */
int gpu_proc_set_name(struct gpu_proc *p, uint32_t id, const struct gpu_name *n);
/*
 * gpu_proc_name - the name of id @id in @p (borrowed: the table holds it);
 * if the name probe was missed, read at @ptr in the live process (at most
 * PROFD_GPU_NAME_MAX bytes, through the hang-safe remote reader). NULL:
 * unknown.
 */
const struct gpu_name *gpu_proc_name(struct gpu *g, struct gpu_proc *p,
				     uint32_t id, uint64_t ptr);
/* gpu_name_intern - the interned @s with a reference for the caller; NULL past the bounds. */
const struct gpu_name *gpu_name_intern(struct gpu *g, const char *s);
/* gpu_name_get/put - take/drop a reference; NULL is fine. */
const struct gpu_name *gpu_name_get(const struct gpu_name *n);
void gpu_name_put(const struct gpu_name *n);
/*
 * gpu_stall_intern - stall reason @s interned for the life of @g (at most
 * 4096 strings); NULL past that or without memory.
 */
const char *gpu_stall_intern(struct gpu *g, const char *s);
/*
 * gpu_stack_intern - launch @l's stack with flags l->flags | @extra_flags,
 * interned, with a reference for the caller (gpu_stack_put()). NULL past
 * GPU_MAX_STACK_BYTES (counted as stacks_dropped) or without memory.
 */
struct gpu_stack *gpu_stack_intern(struct gpu *g, const struct gpu_launch_info *l,
				   uint32_t extra_flags);
/* gpu_stack_put - drop a reference; NULL is fine. */
void gpu_stack_put(struct gpu_stack *s);

/* correlate.c */
int gpu_corr_init(struct gpu *g);
void gpu_corr_free(struct gpu *g);
void gpu_corr_launch(struct gpu *g, pid_t pid, uint64_t correlation_id,
		     struct gpu_stack *s, uint64_t now);
void gpu_corr_kernel(struct gpu *g, pid_t pid, const struct profd_gpu_kernel *k,
		     const struct gpu_name *name, uint64_t now);
void gpu_corr_expire(struct gpu *g, uint64_t now, bool all);

/* cubin.c */
void gpu_cubin_seen(struct gpu *g, pid_t pid, const struct profd_gpu_cubin *c);
/*
 * gpu_cubin_resolve - file offset in cubin @crc of @function's byte at
 * @pc_offset; reads and parses the cubin on first use. false when the
 * cubin or the function is unknown.
 */
bool gpu_cubin_resolve(struct gpu *g, uint64_t crc, const char *function,
		       uint64_t pc_offset, uint64_t *address);
void gpu_cubins_free(struct gpu *g);

#endif /* PROFD_GPU_GPU_INTERNAL_H */
