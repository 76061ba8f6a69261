/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memory.h - profd's own heap: glibc malloc settings, returning freed
 * memory to the kernel, and the figures /metrics shows.
 *
 * Owns: the malloc arena limit and a fixed mmap threshold (set once at
 * start: blocks of 1 MiB or more are returned when freed), a malloc_trim() every
 * AGENT_TRIM_EVERY_NS from the reader thread (memory freed when processes
 * and their symbol tables go stays in glibc's free lists otherwise: RSS
 * kept the high-water mark of every burst of big binaries), and
 * mallinfo2() figures.
 */
#ifndef PROFD_AGENT_MEMORY_H
#define PROFD_AGENT_MEMORY_H

#include <stdint.h>

#define AGENT_TRIM_EVERY_NS (10ULL * 1000 * 1000 * 1000)

/*
 * The RSS ceiling (--memory-limit) and its parts: a fixed base (BPF ring
 * buffers and maps profd mmaps, its code, the fixed heap, what is bounded
 * by count: measured ~60 MiB), then the share, split between every cache
 * and queue that grows with what the host does: half for the symbolizer
 * (its budget two fifths, at most --symbol-cache-limit, plus the quarter
 * more it keeps for tables and DWARF whose samples wait to be named), a quarter for the CPU flame graph tree
 * and a 32nd for the GPU one, an eighth for the language runtimes (code
 * objects read from processes and the frame tables), a 16th for the OTLP export queue
 * (a dead endpoint) and a 32nd for the NVTX tracer's queue (bursts). The
 * parts add up to the share; the queues are empty but in bursts and
 * outages, the caches full after a while on a busy host.
 */
#define AGENT_MEMORY_BASE_MIB	64u
#define AGENT_MEMORY_MIN_MIB	80u

struct agent_budgets {
	uint64_t symbols;	/* bytes */
	uint64_t flamegraph;	/* bytes: CPU tree, the GPU one gets 1/8 more */
	uint64_t runtimes;	/* bytes: the language runtimes' caches (code
				 * objects, frame tables), split among them */
	uint64_t export_queue;	/* bytes: OTLP requests waiting or in flight */
	uint64_t nvtx_queue;	/* bytes: NVTX events waiting for the tracer */
};

/*
 * agent_memory_budgets - split @limit_mib (--memory-limit) as above;
 * @symbol_cache_mib (--symbol-cache-limit) caps the symbolizer's part.
 */
void agent_memory_budgets(unsigned int limit_mib, unsigned int symbol_cache_mib,
			  struct agent_budgets *out);

struct agent_memory_stats {
	uint64_t heap_in_use;	/* bytes malloc handed out (arenas + mmapped) */
	uint64_t heap_free;	/* bytes free in the arenas, not returned */
	uint64_t heap_mmapped;	/* bytes in chunks mmapped on their own */
	uint64_t trims;		/* malloc_trim() calls */
};

/*
 * agent_memory_init - before any thread starts: at most 2 malloc arenas
 * (glibc makes up to 8 per CPU; each keeps its own free memory).
 */
void agent_memory_init(void);

/*
 * agent_memory_tick - at @now_ns (CLOCK_MONOTONIC): malloc_trim(0) when
 * AGENT_TRIM_EVERY_NS have passed since the last one. One thread only.
 */
void agent_memory_tick(uint64_t now_ns);

/* agent_memory_read - current figures (mallinfo2: locks every arena). */
void agent_memory_read(struct agent_memory_stats *out);

#endif /* PROFD_AGENT_MEMORY_H */
