// SPDX-License-Identifier: GPL-2.0
/*
 * shards.c - the unwind-row shard allocator (see shards.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "unwind/shards.h"

struct free_extent {
	uint32_t first;
	uint32_t n;
};

#define SHARD_BYTES ((size_t)UNWIND_SHARD_ROWS * sizeof(struct unwind_row))

struct shard {
	int fd;
	struct free_extent *free;	/* sorted by first, coalesced */
	uint32_t nfree, cap_free;
};

struct shards {
	int outer_fd;
	uint32_t max_shards;
	struct shard *v;
	uint32_t n;
	uint64_t rows_used;
};

struct shards *shards_new(int outer_fd, uint32_t max_shards)
{
	struct shards *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (max_shards > UNWIND_MAX_SHARDS)
		max_shards = UNWIND_MAX_SHARDS;
	s->outer_fd = outer_fd;
	s->max_shards = max_shards;
	s->v = calloc(max_shards ? max_shards : 1, sizeof(*s->v));
	if (!s->v) {
		free(s);
		return NULL;
	}
	return s;
}

void shards_free(struct shards *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->n; i++) {
		close(s->v[i].fd);
		free(s->v[i].free);
	}
	free(s->v);
	free(s);
}

static int add_free(struct shard *sh, uint32_t first, uint32_t n)
{
	uint32_t i = 0;

	while (i < sh->nfree && sh->free[i].first < first)
		i++;
	/* coalesce with the neighbours */
	if (i > 0 && sh->free[i - 1].first + sh->free[i - 1].n == first) {
		sh->free[i - 1].n += n;
		if (i < sh->nfree && first + n == sh->free[i].first) {
			sh->free[i - 1].n += sh->free[i].n;
			memmove(&sh->free[i], &sh->free[i + 1],
				(sh->nfree - i - 1) * sizeof(*sh->free));
			sh->nfree--;
		}
		return 0;
	}
	if (i < sh->nfree && first + n == sh->free[i].first) {
		sh->free[i].first = first;
		sh->free[i].n += n;
		return 0;
	}
	if (sh->nfree == sh->cap_free) {
		uint32_t ncap = sh->cap_free ? sh->cap_free * 2 : 16;
		struct free_extent *nf = realloc(sh->free, ncap * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		sh->free = nf;
		sh->cap_free = ncap;
	}
	memmove(&sh->free[i + 1], &sh->free[i], (sh->nfree - i) * sizeof(*sh->free));
	sh->free[i].first = first;
	sh->free[i].n = n;
	sh->nfree++;
	return 0;
}

static int new_shard(struct shards *s)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	struct shard *sh = &s->v[s->n];
	uint32_t idx = s->n;
	int err;

	/* one element holding all the rows: see struct unwind_shard in BPF */
	sh->fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "profd_unw_rows", sizeof(__u32),
				SHARD_BYTES, 1, &opts);
	if (sh->fd < 0)
		return -errno;
	if (bpf_map_update_elem(s->outer_fd, &idx, &sh->fd, BPF_ANY)) {
		err = -errno;
		close(sh->fd);
		return err;
	}
	sh->nfree = 0;
	if (add_free(sh, 0, UNWIND_SHARD_ROWS))
		return -ENOMEM;
	s->n++;
	return 0;
}

static int take(struct shards *s, uint32_t i, uint32_t nrows, struct shard_extent *out)
{
	struct shard *sh = &s->v[i];

	for (uint32_t j = 0; j < sh->nfree; j++) {
		if (sh->free[j].n < nrows)
			continue;
		out->shard = i;
		out->first_row = sh->free[j].first;
		out->nrows = nrows;
		sh->free[j].first += nrows;
		sh->free[j].n -= nrows;
		if (!sh->free[j].n) {
			memmove(&sh->free[j], &sh->free[j + 1],
				(sh->nfree - j - 1) * sizeof(*sh->free));
			sh->nfree--;
		}
		s->rows_used += nrows;
		return 0;
	}
	return -ENOSPC;
}

int shards_alloc(struct shards *s, uint32_t nrows, struct shard_extent *out)
{
	int err;

	if (!nrows || nrows > UNWIND_SHARD_ROWS)
		return -EINVAL;
	for (uint32_t i = 0; i < s->n; i++)
		if (!take(s, i, nrows, out))
			return 0;
	if (s->n >= s->max_shards)
		return -ENOSPC;
	err = new_shard(s);
	if (err)
		return err;
	return take(s, s->n - 1, nrows, out);
}

void shards_release(struct shards *s, const struct shard_extent *e)
{
	if (e->shard >= s->n || !e->nrows)
		return;
	if (!add_free(&s->v[e->shard], e->first_row, e->nrows))
		s->rows_used -= e->nrows;
}

int shards_write(struct shards *s, const struct shard_extent *e,
		 const struct unwind_row *rows)
{
	struct unwind_row *map;

	if (e->shard >= s->n || e->first_row + e->nrows > UNWIND_SHARD_ROWS)
		return -EINVAL;
	map = mmap(NULL, SHARD_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		   s->v[e->shard].fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	memcpy(map + e->first_row, rows, (size_t)e->nrows * sizeof(*rows));
	munmap(map, SHARD_BYTES);
	return 0;
}

void shards_stats(const struct shards *s, uint32_t *nshards, uint64_t *rows_used)
{
	*nshards = s->n;
	*rows_used = s->rows_used;
}
