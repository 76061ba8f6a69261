// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_scopes.c - the scopes around an address in a unit's DIE tree,
 * and a unit's function index (see dwarf_scopes.h).
 *
 * Owns: the descent from a DIE to the subprogram and inlined
 * subroutines holding an address, and the sorted ranges of a unit's
 * outermost functions. The index keeps, per range, the largest end of
 * it and every range sorted before it (maxhi), so a lookup steps back
 * from the last range starting at or below the address only while some
 * range before could still hold it; overlapping ranges (a hostile file,
 * or a function's cold part inside another's range list) are settled by
 * DIE order, as the walk settles them, and past FIND_SCAN_MAX steps the
 * lookup hands back to the walk (-ERANGE) rather than scan on.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <dwarf.h>

#include "symbol/dwarf_scopes.h"
#include "symbol/dwarf_split.h"

/*
 * Ranges an index keeps at most, 10 MiB (40 bytes each): a unit with more
 * gets no index (its lookups walk its DIEs), so a hostile unit cannot
 * make one past that.
 */
#define FN_RANGES_MAX	(1u << 18)
/* Ranges a lookup steps back over before handing back to the walk. */
#define FIND_SCAN_MAX	64

/* One live range of an outermost function DIE. */
struct fn_range {
	uint64_t lo, hi;	/* [lo, hi) */
	uint64_t maxhi;		/* largest hi of this range and those sorted before */
	uint64_t off;		/* the DIE's offset in .debug_info */
	uint32_t order;		/* the DIE's place in the unit's DIE order */
};

struct dwarf_fn_index {
	struct fn_range *r;	/* sorted by lo, then order */
	uint32_t n, cap;
	uint32_t dies;		/* DIEs indexed so far (the next one's order) */
};

/* dwarf_haspc() over @die's live ranges only (dwarf_range_live()). */
static bool haspc_live(Dwarf_Die *die, uint64_t vaddr)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t o = 0;

	while ((o = dwarf_ranges(die, o, &base, &lo, &hi)) > 0)
		if (dwarf_range_live(lo, hi) && lo <= vaddr && vaddr < hi)
			return true;
	return false;
}

/* dwarf_scope_walk - see dwarf_scopes.h. */
int dwarf_scope_walk(Dwarf_Die *parent, uint64_t vaddr, Dwarf_Die *chain,
		     int *n, int max, int depth, struct dwarf_split *split)
{
	bool bad = false;
	Dwarf_Die child;
	int more;

	if (depth > SCOPE_DEPTH_MAX)
		return -E2BIG;
	more = dwarf_child(parent, &child);
	if (more)
		return more < 0 ? -EINVAL : 0;	/* -1: a DIE libdw could not read */
	do {
		int tag = dwarf_tag(&child), ret;

		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
			if (split ? !dwarf_split_haspc(split, &child, vaddr, &bad) :
				    !haspc_live(&child, vaddr)) {
				if (bad)
					return -EINVAL;
				break;
			}
			if (tag != DW_TAG_lexical_block) {
				if (*n == max)
					return -E2BIG;
				chain[(*n)++] = child;
			}
			/* the one scope holding @vaddr at this level */
			return dwarf_scope_walk(&child, vaddr, chain, n, max,
						depth + 1, split);
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type: {
			int before = *n;

			ret = dwarf_scope_walk(&child, vaddr, chain, n, max,
					       depth + 1, split);
			if (ret || *n > before)
				return ret;
			break;
		}
		default:
			break;
		}
	} while ((more = dwarf_siblingof(&child, &child)) == 0);
	return more < 0 ? -EINVAL : 0;
}

/* Add @die's live ranges to @x (a range libdw cannot read: none, as the walk). */
static int index_push(struct dwarf_fn_index *x, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t o = 0;
	uint32_t order = x->dies++;

	while ((o = dwarf_ranges(die, o, &base, &lo, &hi)) > 0) {
		if (!dwarf_range_live(lo, hi))
			continue;
		if (x->n == x->cap) {
			uint32_t ncap = x->cap ? x->cap * 2 : 64;
			struct fn_range *r;

			if (ncap > FN_RANGES_MAX)
				return -E2BIG;
			r = realloc(x->r, (size_t)ncap * sizeof(*r));
			if (!r)
				return -ENOMEM;
			x->r = r;
			x->cap = ncap;
		}
		x->r[x->n++] = (struct fn_range){ .lo = lo, .hi = hi,
						  .off = dwarf_dieoffset(die),
						  .order = order };
	}
	return 0;
}

/* The outermost functions below @parent, in the walk's order. */
static int index_walk(struct dwarf_fn_index *x, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;
	int more, ret = 0;

	if (depth > SCOPE_DEPTH_MAX)
		return -E2BIG;
	more = dwarf_child(parent, &child);
	if (more)
		return more < 0 ? -EINVAL : 0;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
			ret = index_push(x, &child);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			ret = index_walk(x, &child, depth + 1);
			break;
		default:
			break;
		}
		if (ret)
			return ret;
	} while ((more = dwarf_siblingof(&child, &child)) == 0);
	return more < 0 ? -EINVAL : 0;
}

static int fn_range_cmp(const void *a, const void *b)
{
	const struct fn_range *p = a, *q = b;

	if (p->lo != q->lo)
		return p->lo < q->lo ? -1 : 1;
	return p->order < q->order ? -1 : p->order > q->order;
}

/* dwarf_fn_index_build - see dwarf_scopes.h. */
int dwarf_fn_index_build(Dwarf_Die *cu, struct dwarf_fn_index **out,
			 uint64_t *bytes)
{
	struct dwarf_fn_index *x = calloc(1, sizeof(*x));
	uint64_t maxhi = 0;
	int ret;

	*out = NULL;
	*bytes = 0;
	if (!x)
		return -ENOMEM;
	ret = index_walk(x, cu, 1);
	if (ret) {
		dwarf_fn_index_free(x);
		return ret;
	}
	if (x->n)
		qsort(x->r, x->n, sizeof(*x->r), fn_range_cmp);
	for (uint32_t i = 0; i < x->n; i++) {
		if (x->r[i].hi > maxhi)
			maxhi = x->r[i].hi;
		x->r[i].maxhi = maxhi;
	}
	*out = x;
	*bytes = sizeof(*x) + (uint64_t)x->cap * sizeof(*x->r);
	return 0;
}

/* dwarf_fn_index_find - see dwarf_scopes.h. */
int dwarf_fn_index_find(const struct dwarf_fn_index *x, uint64_t vaddr,
			uint64_t *die_off)
{
	uint32_t lo = 0, hi = x->n, steps = 0, best = UINT32_MAX;

	while (lo < hi) {	/* first range with lo > vaddr */
		uint32_t mid = lo + (hi - lo) / 2;

		if (x->r[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t i = lo; i-- > 0 && x->r[i].maxhi > vaddr;) {
		const struct fn_range *r = &x->r[i];

		if (++steps > FIND_SCAN_MAX)
			return -ERANGE;
		if (vaddr < r->hi && (best == UINT32_MAX || r->order < x->r[best].order))
			best = i;
	}
	if (best == UINT32_MAX)
		return -ENOENT;
	*die_off = x->r[best].off;
	return 0;
}

/* dwarf_fn_index_free - see dwarf_scopes.h. */
void dwarf_fn_index_free(struct dwarf_fn_index *x)
{
	if (!x)
		return;
	free(x->r);
	free(x);
}
