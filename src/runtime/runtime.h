/* SPDX-License-Identifier: GPL-2.0 */
/*
 * runtime.h - the seam language runtimes (CPython, CRuby; HotSpot,
 * V8 next) plug into, on the user-space side.
 *
 * Owns: struct runtime_ops, what one runtime's module offers the hub, and
 * struct runtimes, the set of every registered runtime (registry.c) that
 * the hub (agent, aggregate, tracer) calls without naming any of them.
 *
 * A runtime's BPF walker appends its own frames to a sample and sets
 * sample.runtime (bpf/runtime.h). User space hands those frames to the
 * same runtime's merge_stack(), which splices them into the native stack
 * as runtime frame tokens: RUNTIME_IP_FRAME, the runtime's id, and bits
 * of the runtime's own (an id in its frame table). Writers name a token
 * through runtimes_frame(), under the runtime's pprof mapping name.
 *
 * Threads: maps_read() and removed() run on the object loader's thread
 * (in the order of the maps reads and removals); merge_stack(),
 * new_interval() and tick() on the reader; frame() and stats() on any.
 */
#ifndef PROFD_RUNTIME_RUNTIME_H
#define PROFD_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/runtime.h"
#include "proc/maps.h"

/*
 * A runtime frame token among the IPs of a merged stack: user addresses
 * are below 2^47, so bit 62 marks a runtime frame, bits 56-60 carry the
 * runtime's id; bits 0-55 and 61 are the runtime's own.
 */
#define RUNTIME_IP_FRAME	(1ULL << 62)
#define RUNTIME_IP_ID_SHIFT	56
#define RUNTIME_IP_ID_MASK	0x1fULL
#define RUNTIME_IP_OWN_MASK	((1ULL << 56) - 1 + (1ULL << 61))

/* runtime_ip_tag - the token bits of runtime @id: OR the runtime's own bits in. */
static inline uint64_t runtime_ip_tag(unsigned int id)
{
	return RUNTIME_IP_FRAME | ((uint64_t)id & RUNTIME_IP_ID_MASK) << RUNTIME_IP_ID_SHIFT;
}

/* runtime_ip_id - the runtime id of token @ip, 0 when it is a native IP. */
static inline unsigned int runtime_ip_id(uint64_t ip)
{
	return (ip & RUNTIME_IP_FRAME) ?
	       (unsigned int)((ip >> RUNTIME_IP_ID_SHIFT) & RUNTIME_IP_ID_MASK) : 0;
}

/* What a runtime is given when the run starts. */
struct runtime_env {
	int procs_fd;		/* the runtime_procs BPF map; -1: no BPF (tests) */
	uint64_t budget;	/* bytes of heap it may hold (its caches) */
	int verbose;		/* > 0: log each process found */
};

/* A named runtime frame (strings owned by the runtime, valid until its
 * frame table generation is renewed twice: two intervals). */
struct runtime_frame {
	const char *function;
	const char *file;	/* NULL or "" when unknown */
	int line;		/* 0 if unknown */
};

/* Gauges and sizes of one runtime, for /metrics and the reader's pace. */
struct runtime_stats {
	uint64_t processes;	/* processes of this runtime known now */
	uint64_t bytes;		/* heap of its caches */
	uint64_t objects;	/* objects cached (CPython: code objects) */
	uint64_t evictions;	/* cached objects dropped for room */
};

/*
 * struct runtime_ops - one runtime's module. Every hook gets the instance
 * create() returned; all are required but new_interval, tick and stats. Counters of loss and error are the runtime's own:
 * declared next to the code that counts (the counter registry).
 */
struct runtime_ops {
	const char *name;	/* "python": labels, --debug-pid, flag names */
	unsigned int id;	/* enum profd_runtime_id */
	const char *mapping;	/* pprof mapping of its frames: "[python]" */
	const char *objects;	/* /metrics name of what it caches: "python_code_objects" */
	/*
	 * fast_poll: its frames name objects that may be freed soon after
	 * the sample (short-lived code): while it knows a process, the
	 * reader polls the ringbuf every 20 ms, not 100.
	 */
	bool fast_poll;
	/* create - an instance, or NULL (OOM: printed by the hub). */
	void *(*create)(const struct runtime_env *env);
	void (*destroy)(void *rt);
	/*
	 * maps_read - process @pid's mappings were (re-)read (every runtime
	 * sees every process): recognise the runtime in them and add or
	 * update its runtime_procs entry, or remove an entry it wrote
	 * before (never one of another runtime: the map has one entry per
	 * process, shared by all runtimes).
	 */
	void (*maps_read)(void *rt, pid_t pid, const struct proc_maps *maps);
	/* removed - @pid left the process table: forget it. */
	void (*removed)(void *rt, pid_t pid);
	/*
	 * merge_stack - splice a sample's @nframes runtime frames (two words
	 * each, the runtime's BPF format) into its @nuser native user IPs
	 * (leaf first); @flags are the sample's PROFD_SAMPLE_* flags.
	 * Writes at most @cap IPs and frame tokens to @out, returns the
	 * count. A process it does not know gets its native stack back.
	 * @now_ns is the sample's time (bpf_ktime_get_ns(), CLOCK_MONOTONIC).
	 */
	uint32_t (*merge_stack)(void *rt, pid_t pid, uint32_t flags,
				const uint64_t *user, uint32_t nuser,
				const uint64_t *frames, uint32_t nframes,
				uint64_t *out, uint32_t cap, uint64_t now_ns);
	/* frame - name token @token (one of its own). 0, or -ENOENT. */
	int (*frame)(void *rt, uint64_t token, struct runtime_frame *out);
	/*
	 * new_interval - an aggregation interval starts (reader, before
	 * its first merge_stack()); tokens of the interval before last
	 * may be freed from now on. NULL: nothing to do.
	 */
	void (*new_interval)(void *rt);
	/* tick - the reader between polls (e.g. forget exited processes). NULL: none. */
	void (*tick)(void *rt);
	/* stats - gauges (/metrics, fast_poll). NULL: all zero. */
	void (*stats)(void *rt, struct runtime_stats *out);
};

/* Every runtime of the registry, in PROFD_RUNTIMES order, NULL-terminated. */
extern const struct runtime_ops *const runtime_registry[];

struct runtimes;

/*
 * runtimes_new - an instance of each registered runtime whose bit
 * (1 << id) is set in @enabled, each given @env with an equal share of
 * @env->budget; the others are left out of every call below. NULL on OOM
 * (printed).
 */
struct runtimes *runtimes_new(const struct runtime_env *env, uint32_t enabled);

/* runtimes_free - destroy every instance; NULL is a no-op. */
void runtimes_free(struct runtimes *rts);

/* runtimes_maps_read - runtime_ops.maps_read() of every runtime. */
void runtimes_maps_read(struct runtimes *rts, pid_t pid, const struct proc_maps *maps);

/* runtimes_removed - runtime_ops.removed() of every runtime. */
void runtimes_removed(struct runtimes *rts, pid_t pid);

/*
 * runtimes_merge_stack - runtime @id's merge_stack() (see runtime_ops);
 * an unknown @id copies the native stack. Reader thread.
 */
uint32_t runtimes_merge_stack(struct runtimes *rts, unsigned int id, pid_t pid,
			      uint32_t flags, const uint64_t *user, uint32_t nuser,
			      const uint64_t *frames, uint32_t nframes,
			      uint64_t *out, uint32_t cap, uint64_t now_ns);

/*
 * runtimes_frame - name runtime frame token @token (runtime_ip_id() != 0)
 * by its runtime. Returns 0, or -ENOENT (unknown runtime or frame).
 */
int runtimes_frame(struct runtimes *rts, uint64_t token, struct runtime_frame *out);

/*
 * runtimes_new_interval - the interval @gen starts: new_interval() of
 * every runtime, once per @gen (later calls with the same or an older
 * @gen do nothing). Reader thread.
 */
void runtimes_new_interval(struct runtimes *rts, uint64_t gen);

/* runtimes_tick - tick() of every runtime. Reader thread. */
void runtimes_tick(struct runtimes *rts);

/* runtimes_ops - the registered runtime of id @id, NULL if none. */
const struct runtime_ops *runtimes_ops(unsigned int id);

/*
 * runtime_ip_ops - the runtime whose frame token @ip is, NULL when @ip is
 * a native IP. A native IP is never one (user addresses are below 2^56);
 * a bogus one a broken walk recorded may look like one of an unknown
 * runtime: it stays native (written unsymbolized, never dropped).
 */
static inline const struct runtime_ops *runtime_ip_ops(uint64_t ip)
{
	return runtime_ip_id(ip) ? runtimes_ops(runtime_ip_id(ip)) : NULL;
}

/*
 * runtimes_stats - stats() of runtime registry entry @i (< runtimes_count())
 * into @out, with its budget in *@budget (zeros when it is not enabled).
 * Any thread.
 */
void runtimes_stats(struct runtimes *rts, unsigned int i, struct runtime_stats *out,
		    uint64_t *budget);

/* runtimes_instance - the instance of runtime @id (create()'s), NULL if none
 * (unknown or not enabled). */
void *runtimes_instance(struct runtimes *rts, unsigned int id);

/* runtimes_count - how many runtimes are registered. */
unsigned int runtimes_count(void);

/*
 * runtimes_is_mapping - whether @name is the pprof mapping a registered
 * runtime's frames are written under (runtime_ops.mapping: "[python]").
 */
bool runtimes_is_mapping(const char *name);

/*
 * runtimes_fast_poll - whether a fast_poll runtime knows a process, by
 * @st: runtimes_stats() of every registered runtime, in registry order
 * (the figures the reader just published). Sets the reader's polling pace.
 */
bool runtimes_fast_poll(const struct runtime_stats *st);

#endif /* PROFD_RUNTIME_RUNTIME_H */
