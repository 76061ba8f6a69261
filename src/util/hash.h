/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hash.h - the FNV-1a hash used by profd's in-memory tables.
 */
#ifndef PROFD_UTIL_HASH_H
#define PROFD_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FNV1A_SEED 0xcbf29ce484222325ULL

/* fnv1a - FNV-1a of @len bytes of @data, continuing from @h. */
static inline uint64_t fnv1a(const void *data, size_t len, uint64_t h)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* fnv1a_str - FNV-1a of the NUL-terminated string @s. */
static inline uint64_t fnv1a_str(const char *s)
{
	return fnv1a(s, strlen(s), FNV1A_SEED);
}

#endif /* PROFD_UTIL_HASH_H */
