/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shards.h - unwind rows in BPF: the shard allocator.
 *
 * Owns: the inner arrays of the `unwind_shards` array-of-maps (created on
 * demand, UNWIND_SHARD_ROWS rows each, written through a short-lived mmap
 * so rows are copied with memcpy and do not stay in profd's RSS), a
 * first-fit free list of row extents per shard, and the memory cap: no
 * more than max_shards shards are ever created.
 */
#ifndef PROFD_UNWIND_SHARDS_H
#define PROFD_UNWIND_SHARDS_H

#include <stdint.h>

#include "bpf/unwind_table.h"

struct shard_extent {
	uint32_t shard;
	uint32_t first_row;
	uint32_t nrows;
};

struct shards;

/*
 * shards_new - an allocator over the outer map @outer_fd, creating at most
 * @max_shards shards (each UNWIND_SHARD_ROWS * 8 bytes). NULL on OOM.
 */
struct shards *shards_new(int outer_fd, uint32_t max_shards);

/* shards_free - unmap and close every shard (the BPF side keeps them until unloaded). */
void shards_free(struct shards *s);

/*
 * shards_alloc - reserve @nrows (<= UNWIND_SHARD_ROWS) contiguous rows.
 * Returns 0 and fills @out, -ENOSPC when the cap is reached and no free
 * extent is large enough, or another negative errno (map creation).
 */
int shards_alloc(struct shards *s, uint32_t nrows, struct shard_extent *out);

/* shards_release - give an extent back. */
void shards_release(struct shards *s, const struct shard_extent *e);

/*
 * shards_write - copy @e->nrows rows from @rows into the BPF array at @e.
 * Returns 0 or a negative errno (mmap).
 */
int shards_write(struct shards *s, const struct shard_extent *e,
		 const struct unwind_row *rows);

/* shards_stats - shards created and rows in use. */
void shards_stats(const struct shards *s, uint32_t *nshards, uint64_t *rows_used);

#endif /* PROFD_UNWIND_SHARDS_H */
