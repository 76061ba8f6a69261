/* SPDX-License-Identifier: GPL-2.0 */
/*
 * heap_cost.h - the heap a malloc() block really takes, for byte budgets.
 */
#ifndef PROFD_UTIL_HEAP_COST_H
#define PROFD_UTIL_HEAP_COST_H

#include <stddef.h>
#include <stdint.h>

/*
 * heap_cost - bytes glibc's malloc(@n) holds: the chunk with its 8-byte
 * header, in 16-byte steps, 32 at least (a budget that counts only @n
 * under-counts small strings by up to half).
 */
static inline uint64_t heap_cost(size_t n)
{
	uint64_t c = ((uint64_t)n + 8 + 15) & ~15ULL;

	return c < 32 ? 32 : c;
}

#endif /* PROFD_UTIL_HEAP_COST_H */
