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

#include <stdbool.h>
#include <stdint.h>

#define AGENT_TRIM_EVERY_NS (10ULL * 1000 * 1000 * 1000)

/*
 * The RSS ceiling (--memory-limit) and its parts: a fixed base (BPF ring
 * buffers and maps profd mmaps, its code, the fixed heap, what is bounded
 * by count: measured ~55-63 MiB at --memory-limit 80 beside a JVM and a
 * node, and the working memory of one build from a big file at a time,
 * util/build_lane.h: node's unwind table, 19 MiB while built; with the
 * former 64 MiB base profd peaked at 83-86 MiB there), then the share, split between every cache
 * and queue that grows with what the host does: half for the symbolizer
 * (its budget two fifths, at most --symbol-cache-limit, plus the quarter
 * more it keeps for tables and DWARF whose samples wait to be named), a quarter for the CPU flame graph tree
 * and a 32nd for the GPU one, an eighth for the language runtimes (code
 * objects read from processes and the frame tables), a 16th for the OTLP export queue
 * (a dead endpoint) and a 32nd for the NVTX tracer's queue (bursts). The
 * parts add up to the share; the queues are empty but in bursts and
 * outages, the caches full after a while on a busy host.
 */
#define AGENT_MEMORY_BASE_MIB	72u
#define AGENT_MEMORY_MIN_MIB	80u

/*
 * With lines on (DWARF read for source lines and inlined frames), what
 * the limit gives past the base and a share of AGENT_LINES_FROM_MIB, up
 * to AGENT_LINES_MIB more, is the symbolizer's for DWARF alone (struct
 * agent_budgets' lines), and DWARF never holds more (budget.c): at the
 * default --memory-limit 160, 28 MiB, which holds libc6-dbg's debug file
 * (8.6 MiB read) beside a -g interpreter's (libpython3.11: 13 MiB) and
 * their line tables, so an ordinary machine's processes keep their
 * lines, and keeps what lines cost within issue 18's +32 MiB with the
 * caches' overhead. A smaller limit gives the lines no part of their
 * own: DWARF then takes at most half of the symbolizer's budget, and
 * only while the budget is full is it shed for that.
 */
#define AGENT_LINES_FROM_MIB	56u
#define AGENT_LINES_MIB		28u

struct agent_budgets {
	uint64_t symbols;	/* bytes: symbol tables, caches and DWARF */
	uint64_t lines;		/* bytes of symbols for DWARF alone; 0: none
				 * of its own (DWARF: at most half of symbols) */
	uint64_t flamegraph;	/* bytes: CPU tree, the GPU one gets 1/8 more */
	uint64_t runtimes;	/* bytes: the language runtimes' caches (code
				 * objects, frame tables), split among them */
	uint64_t export_queue;	/* bytes: OTLP requests waiting or in flight */
	uint64_t nvtx_queue;	/* bytes: NVTX events waiting for the tracer */
};

/*
 * agent_memory_budgets - split @limit_mib (--memory-limit) as above, the
 * lines' part only if @lines (--no-symbolize-lines not given);
 * @symbol_cache_mib (--symbol-cache-limit) caps the symbolizer's part,
 * lines included (cut by it, DWARF has no part of its own).
 */
void agent_memory_budgets(unsigned int limit_mib, unsigned int symbol_cache_mib,
			  bool lines, struct agent_budgets *out);

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
