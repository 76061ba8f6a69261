// SPDX-License-Identifier: GPL-2.0
/*
 * memory.c - profd's own heap (see memory.h).
 */
#include <malloc.h>

#include "agent/memory.h"

static uint64_t last_trim_ns;
static uint64_t trims;

/*
 * A fixed mmap threshold: blocks of AGENT_MMAP_THRESHOLD or more (a big
 * binary's symbol table or CFI rows while they are built, kallsyms) get
 * their own mapping and go back to the kernel when freed. glibc's default
 * raises the threshold to the size of every such block freed (up to 32
 * MiB), after which the next ones come from the arenas and stay resident
 * until the next trim.
 */
#define AGENT_MMAP_THRESHOLD (1 << 20)

void agent_memory_init(void)
{
	mallopt(M_ARENA_MAX, 2);
	mallopt(M_MMAP_THRESHOLD, AGENT_MMAP_THRESHOLD);
}

void agent_memory_tick(uint64_t now_ns)
{
	if (now_ns - last_trim_ns < AGENT_TRIM_EVERY_NS)
		return;
	last_trim_ns = now_ns;
	malloc_trim(0);
	__atomic_add_fetch(&trims, 1, __ATOMIC_RELAXED);
}

void agent_memory_budgets(unsigned int limit_mib, unsigned int symbol_cache_mib,
			  bool lines, struct agent_budgets *out)
{
	uint64_t share, rest;

	if (limit_mib < AGENT_MEMORY_MIN_MIB)
		limit_mib = AGENT_MEMORY_MIN_MIB;
	rest = limit_mib - AGENT_MEMORY_BASE_MIB;
	out->lines = 0;
	if (lines && rest > AGENT_LINES_FROM_MIB)
		out->lines = rest - AGENT_LINES_FROM_MIB < AGENT_LINES_MIB ?
			     rest - AGENT_LINES_FROM_MIB : AGENT_LINES_MIB;
	share = (rest - out->lines) << 20;
	out->lines <<= 20;
	/* + its pending slack (1/4 of the tables' part): half */
	out->symbols = share * 2 / 5 + out->lines;
	if (out->symbols > (uint64_t)symbol_cache_mib << 20) {
		out->symbols = (uint64_t)symbol_cache_mib << 20;
		out->lines = 0;
	}
	out->flamegraph = share / 4;
	out->runtimes = share / 8;
	out->export_queue = share / 16;
	out->nvtx_queue = share / 32;
}

void agent_memory_read(struct agent_memory_stats *out)
{
	struct mallinfo2 mi = mallinfo2();

	out->heap_in_use = mi.uordblks + mi.hblkhd;
	out->heap_free = mi.fordblks;
	out->heap_mmapped = mi.hblkhd;
	out->trims = __atomic_load_n(&trims, __ATOMIC_RELAXED);
}
