// SPDX-License-Identifier: GPL-2.0
/*
 * flamegraph.c - the flame graph's merged call tree (see flamegraph.h).
 *
 * Owns: the merged call tree: merging profiles into it, its name table,
 * its bounds and folding (fg_prune). The page that draws it is
 * flamegraph_html.c.
 *
 * The tree: nodes live in one array (node 0 is the root "all"), linked
 * parent -> first child -> next sibling. A child is found by one hash
 * table keyed on (parent, name, kind), so merging a sample costs O(depth).
 * Names are interned in the tree's own string table, because the
 * profiles merged into it are freed long before the page is written.
 * At the node bound the lightest frames are folded into their callers
 * (fg_prune), so a long run keeps the heaviest paths whenever they
 * first appear.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/flamegraph_internal.h"
#include "util/hash.h"
#include "runtime/runtime.h"

#define KERNEL_MAPPING	"[kernel.kallsyms]"
#define CUDA_MAPPING	"[cuda]"		/* GPU kernels (src/gpu/build.c) */

static uint64_t name_hash(const char *s)
{
	return fnv1a_str(s);
}

static uint64_t child_hash(uint32_t parent, uint32_t name, uint8_t kind)
{
	uint64_t h = fnv1a(&parent, sizeof(parent), FNV1A_SEED);

	h = fnv1a(&name, sizeof(name), h);
	return fnv1a(&kind, sizeof(kind), h);
}

static uint64_t slot_hash(const struct flamegraph *fg, struct fg_slots *set,
			  uint32_t idx)
{
	const struct fg_node *n;

	if (set == &fg->name_set)
		return name_hash(fg->names[idx]);
	n = &fg->nodes[idx];
	return child_hash(n->parent, n->name, n->kind);
}

/* Double @set's capacity when it is 3/4 full. Returns 0 or -ENOMEM. */
static int slots_reserve(struct flamegraph *fg, struct fg_slots *set)
{
	uint32_t cap, *slots;

	if ((set->n + 1) * 4 < set->cap * 3)
		return 0;
	cap = set->cap ? set->cap * 2 : 1024;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < set->cap; i++) {
		uint32_t j;

		if (!set->slots[i])
			continue;
		j = slot_hash(fg, set, set->slots[i] - 1) & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = set->slots[i];
	}
	free(set->slots);
	set->slots = slots;
	set->cap = cap;
	return 0;
}

static int grow(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	uint32_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	if (*cap >= UINT32_MAX / 2)
		return -ENOMEM;
	ncap = *cap ? *cap * 2 : 256;
	na = realloc(*arr, (size_t)ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/* Index of @s in the name table, adding a copy if new; -ENOMEM. */
static int64_t fg_intern(struct flamegraph *fg, const char *s)
{
	struct fg_slots *set = &fg->name_set;
	uint32_t j;

	if (slots_reserve(fg, set))
		return -ENOMEM;
	for (j = name_hash(s) & (set->cap - 1); set->slots[j];
	     j = (j + 1) & (set->cap - 1)) {
		if (strcmp(fg->names[set->slots[j] - 1], s) == 0)
			return set->slots[j] - 1;
	}
	if (grow((void **)&fg->names, &fg->cap_names, fg->nnames,
		 sizeof(*fg->names)))
		return -ENOMEM;
	fg->names[fg->nnames] = strdup(s);
	if (!fg->names[fg->nnames])
		return -ENOMEM;
	fg->name_bytes += strlen(s) + 1;
	set->slots[j] = ++fg->nnames;
	set->n++;
	return fg->nnames - 1;
}

/* The child of @parent called @name of @kind, created if new; -ENOMEM. */
static int64_t fg_child(struct flamegraph *fg, uint32_t parent, uint32_t name,
			uint8_t kind)
{
	struct fg_slots *set = &fg->children;
	struct fg_node *n;
	uint32_t j;

	if (slots_reserve(fg, set))
		return -ENOMEM;
	for (j = child_hash(parent, name, kind) & (set->cap - 1);
	     set->slots[j]; j = (j + 1) & (set->cap - 1)) {
		n = &fg->nodes[set->slots[j] - 1];
		if (n->parent == parent && n->name == name && n->kind == kind)
			return set->slots[j] - 1;
	}
	if (fg->nnodes >= fg->max_nodes)
		return -ENOSPC;
	if (grow((void **)&fg->nodes, &fg->cap_nodes, fg->nnodes,
		 sizeof(*fg->nodes)))
		return -ENOMEM;
	n = &fg->nodes[fg->nnodes];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->kind = kind;
	n->parent = parent;
	n->next_sibling = fg->nodes[parent].first_child;
	fg->nodes[parent].first_child = fg->nnodes;
	set->slots[j] = ++fg->nnodes;
	set->n++;
	return fg->nnodes - 1;
}

struct flamegraph *flamegraph_new(uint32_t max_nodes)
{
	struct flamegraph *fg = calloc(1, sizeof(*fg));

	if (!fg)
		return NULL;
	fg->max_nodes = max_nodes ? max_nodes : FLAMEGRAPH_DEFAULT_MAX_NODES;
	/* Node 0: the root, named "all" (name index 0). */
	if (fg_intern(fg, "all") != 0 ||
	    grow((void **)&fg->nodes, &fg->cap_nodes, 0, sizeof(*fg->nodes))) {
		flamegraph_free(fg);
		return NULL;
	}
	memset(&fg->nodes[0], 0, sizeof(fg->nodes[0]));
	fg->nodes[0].kind = FG_ROOT;
	fg->nnodes = 1;
	return fg;
}

void flamegraph_free(struct flamegraph *fg)
{
	if (!fg)
		return;
	for (uint32_t i = 0; i < fg->nnames; i++)
		free(fg->names[i]);
	free(fg->names);
	free(fg->name_set.slots);
	free(fg->nodes);
	free(fg->children.slots);
	free(fg);
}

uint64_t flamegraph_total(const struct flamegraph *fg)
{
	return fg->nodes[0].value;
}

uint64_t flamegraph_truncated(const struct flamegraph *fg)
{
	return fg->truncated;
}

uint64_t flamegraph_pruned(const struct flamegraph *fg)
{
	return fg->pruned;
}

void flamegraph_set_budget(struct flamegraph *fg, uint64_t bytes)
{
	uint64_t n = bytes / FLAMEGRAPH_BYTES_PER_NODE;

	if (n < 4096)
		n = 4096;
	if (n < fg->max_nodes)
		fg->max_nodes = n;
	fg->name_budget = bytes / 4;
}

uint64_t flamegraph_bytes(const struct flamegraph *fg, uint64_t *names)
{
	if (!fg) {
		*names = 0;
		return 0;
	}
	*names = fg->nnames;
	return sizeof(*fg) + (uint64_t)fg->cap_nodes * sizeof(*fg->nodes) +
	       (uint64_t)(fg->children.cap + fg->name_set.cap) * sizeof(uint32_t) +
	       (uint64_t)fg->cap_names * sizeof(*fg->names) + fg->name_bytes;
}

/*
 * Free the names no node uses any more (after fg_prune), renumbering the
 * rest; name 0 ("all") stays. Without this the name table kept every
 * frame name ever seen: under process churn ("[unknown] 0x..." names of
 * short-lived binaries) it grew for the whole run.
 */
static void fg_compact_names(struct flamegraph *fg)
{
	struct fg_slots *set = &fg->name_set;
	uint32_t *map = calloc(fg->nnames, sizeof(*map)), k = 1;

	if (!map)
		return;		/* names stay: correct, only not shed */
	map[0] = 1;
	for (uint32_t i = 1; i < fg->nnodes; i++)
		map[fg->nodes[i].name] = 1;
	for (uint32_t i = 1; i < fg->nnames; i++) {
		if (!map[i]) {
			fg->name_bytes -= strlen(fg->names[i]) + 1;
			free(fg->names[i]);
			continue;
		}
		map[i] = k;
		fg->names[k++] = fg->names[i];
	}
	map[0] = 0;
	fg->nnames = k;
	for (uint32_t i = 1; i < fg->nnodes; i++)
		fg->nodes[i].name = map[fg->nodes[i].name];
	free(map);
	memset(set->slots, 0, set->cap * sizeof(*set->slots));
	set->n = 0;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t j = name_hash(fg->names[i]) & (set->cap - 1);

		while (set->slots[j])
			j = (j + 1) & (set->cap - 1);
		set->slots[j] = i + 1;
		set->n++;
	}
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * Make room in a full tree: fold the lightest frames into their callers
 * until at most 3/4 of max_nodes are used. A folded frame's weight is
 * already in its caller's value, where it becomes self weight, so the
 * total and every kept frame's value stay exact; only detail below the
 * lightest frames goes. A frame never weighs more than its caller, so
 * the kept frames form a tree (frames of the weight at the cut all go).
 * Node indices change: no caller may hold one across this call. Names
 * stay interned. Returns 0 or -ENOMEM (the tree is then unchanged).
 */
static int fg_prune(struct flamegraph *fg, uint32_t keep)
{
	uint32_t n = fg->nnodes, j = 1;
	struct fg_slots *set = &fg->children;
	uint64_t *vals, cut;
	uint32_t *map;

	if (n <= keep || keep < 1)
		return 0;
	vals = malloc((size_t)(n - 1) * sizeof(*vals));
	map = malloc((size_t)n * sizeof(*map));
	if (!vals || !map) {
		free(vals);
		free(map);
		return -ENOMEM;
	}
	for (uint32_t i = 1; i < n; i++)
		vals[i - 1] = fg->nodes[i].value;
	qsort(vals, n - 1, sizeof(*vals), cmp_desc);
	/* Keep frames heavier than the keep-th heaviest (root excluded). */
	cut = vals[keep - 1];
	free(vals);
	/* A caller comes before its callees in the array, and stays so. */
	map[0] = 0;
	fg->nodes[0].first_child = 0;
	for (uint32_t i = 1; i < n; i++) {
		struct fg_node *c = &fg->nodes[i];

		if (c->value <= cut)
			continue;
		map[i] = j;
		fg->nodes[j] = *c;
		fg->nodes[j].parent = map[c->parent];
		fg->nodes[j].first_child = 0;
		j++;
	}
	free(map);
	memset(set->slots, 0, set->cap * sizeof(*set->slots));
	set->n = 0;
	for (uint32_t i = 1; i < j; i++) {
		struct fg_node *c = &fg->nodes[i];
		uint32_t k = child_hash(c->parent, c->name, c->kind) & (set->cap - 1);

		c->next_sibling = fg->nodes[c->parent].first_child;
		fg->nodes[c->parent].first_child = i;
		while (set->slots[k])
			k = (k + 1) & (set->cap - 1);
		set->slots[k] = i + 1;
		set->n++;
	}
	fg->pruned += n - j;
	fg->nnodes = j;
	fg_compact_names(fg);
	return 0;
}

static bool is_kernel_mapping(const struct profile_mapping *m)
{
	return m && m->filename &&
	       strncmp(m->filename, KERNEL_MAPPING,
		       sizeof(KERNEL_MAPPING) - 1) == 0;
}

static bool is_cuda_mapping(const struct profile_mapping *m)
{
	return m && m->filename && strcmp(m->filename, CUDA_MAPPING) == 0;
}

static uint8_t mapping_kind(const struct profile_mapping *m)
{
	if (is_kernel_mapping(m))
		return FG_KERNEL;
	if (m && runtimes_is_mapping(m->filename))
		return FG_INTERP;
	return is_cuda_mapping(m) ? FG_CUDA : FG_USER;
}

/*
 * Name index and kind of location @id, interned on first use and cached
 * in @cache (name + 1, 0 = not yet) and @kinds. Returns the name index or
 * -ENOMEM.
 */
static int64_t location_frame(struct flamegraph *fg, const struct profile *p,
			      uint32_t id, uint32_t *cache, uint8_t *kinds)
{
	const struct profile_location *loc = profile_location(p, id);
	const struct profile_mapping *m;
	const struct profile_function *f;
	char buf[4200];
	const char *name = NULL;
	int64_t idx;

	if (loc && cache[id])
		return cache[id] - 1;
	m = loc ? profile_mapping(p, loc->mapping_id) : NULL;
	f = loc ? profile_function(p, loc->function_id) : NULL;
	if (f && f->name && *f->name)
		name = f->name;
	else if (f && f->system_name && *f->system_name)
		name = f->system_name;
	else if (m && m->filename && m->filename[0] == '/' &&
		 loc->address >= m->start && loc->address < m->limit)
		/* by file offset: one name in every process, whatever ASLR did */
		snprintf(buf, sizeof(buf), "[unknown] %s+0x%" PRIx64,
			 strrchr(m->filename, '/') + 1,
			 loc->address - m->start + m->offset);
	else if (m && m->filename && *m->filename)
		snprintf(buf, sizeof(buf), "[unknown] 0x%" PRIx64 " (%s)",
			 loc->address, m->filename);
	else
		snprintf(buf, sizeof(buf), "[unknown] 0x%" PRIx64,
			 loc ? loc->address : 0);
	idx = fg_intern(fg, name ? name : buf);
	if (idx >= 0 && loc) {
		cache[id] = idx + 1;
		kinds[id] = mapping_kind(m);
	}
	return idx;
}

/*
 * The frames of @s's locations: one per location plus one per function
 * inlined at it (each its own frame in the graph).
 */
static uint32_t sample_frames(const struct profile *p,
			      const struct profile_sample *s)
{
	uint32_t n = s->nlocations;

	for (uint32_t j = 0; j < s->nlocations; j++) {
		const struct profile_location *l = profile_location(p, s->location_ids[j]);

		if (l && l->function_id)
			n += l->ninlined;
	}
	return n;
}

/*
 * The frames of the functions inlined at location @id, below @node
 * (outermost first: the caller's frame is @node), kind FG_INLINED; each
 * node appended to @path. Returns the last node, or < 0 (-ENOSPC: the
 * tree is full; -ENOMEM).
 */
static int64_t inlined_frames(struct flamegraph *fg, const struct profile *p,
			      uint32_t id, int64_t node, uint32_t *path,
			      uint32_t *depth)
{
	const struct profile_location *l = profile_location(p, id);

	if (!l || !l->function_id)
		return node;
	for (uint32_t k = l->ninlined; k-- > 0;) {
		const struct profile_function *f =
			profile_function(p, l->inlined[k].function_id);
		int64_t idx = fg_intern(fg, f && f->name && *f->name ? f->name :
					"[inlined]");

		if (idx < 0)
			return -ENOMEM;
		node = fg_child(fg, node, idx, FG_INLINED);
		if (node < 0)
			return node;
		path[(*depth)++] = node;
	}
	return node;
}

/* The sample's label @key: its string (NULL if none), its number in *@num. */
static const char *sample_label(const struct profile_sample *s, const char *key,
				int64_t *num)
{
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const struct profile_label *l = &s->labels[i];

		if (l->key && strcmp(l->key, key) == 0) {
			if (num)
				*num = l->num;
			return l->str && *l->str ? l->str : NULL;
		}
	}
	return NULL;
}

static const char *sample_comm(const struct profile_sample *s)
{
	return sample_label(s, "comm", NULL);
}

/*
 * The thread frame's name of @s into @buf: "THREAD_NAME [TID]" from its
 * thread_name and tid labels; NULL when it has no tid.
 */
static const char *sample_thread(const struct profile_sample *s, char *buf, size_t len)
{
	int64_t tid = 0;
	const char *name = sample_label(s, "thread_name", NULL);

	sample_label(s, "tid", &tid);
	if (!tid)
		return NULL;
	snprintf(buf, len, "%s [%lld]", name ? name : "?", (long long)tid);
	return buf;
}

void flamegraph_set_threads(struct flamegraph *fg, bool on)
{
	fg->threads = on;
}

int flamegraph_add_profile(struct flamegraph *fg, const struct profile *p,
			   uint32_t value_index)
{
	uint32_t *cache = NULL, *path = NULL, maxdepth = 0;
	uint8_t *kinds = NULL;
	int err = 0;

	if (value_index >= p->nsample_types)
		return -EINVAL;
	for (uint32_t i = 0; i < p->nsamples; i++)
		if (sample_frames(p, &p->samples[i]) > maxdepth)
			maxdepth = sample_frames(p, &p->samples[i]);
	cache = calloc(p->nlocations + 1, sizeof(*cache));
	kinds = calloc(p->nlocations + 1, sizeof(*kinds));
	/* Nodes of one sample's path: comm, thread + one per frame. */
	path = calloc((size_t)maxdepth + 2, sizeof(*path));
	if (!cache || !kinds || !path) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const char *comm = sample_comm(s);
		int64_t w = s->values[value_index], idx, node = 0;
		uint32_t depth = 0, nframes = sample_frames(p, s);

		if (w <= 0)
			continue;
		/*
		 * A full tree makes room by folding its lightest frames (when
		 * that frees enough for this path), so a heavy stack seen late
		 * still gets its frames; else the path is cut at the bound.
		 */
		if (fg->nnodes + nframes + 1 > fg->max_nodes &&
		    nframes + 1 <= fg->max_nodes / 4) {
			err = fg_prune(fg, fg->max_nodes / 4 * 3);
			if (err)
				goto out;
			/* names were renumbered: forget the cached ones */
			memset(cache, 0, (p->nlocations + 1) * sizeof(*cache));
		}
		if (fg->name_budget && fg->name_bytes > fg->name_budget &&
		    fg->nnodes > 64) {
			/* long names (C++): half the frames go, lightest first */
			err = fg_prune(fg, fg->nnodes / 2);
			if (err)
				goto out;
			/* names were renumbered: forget the cached ones */
			memset(cache, 0, (p->nlocations + 1) * sizeof(*cache));
		}
		/* Find or create the whole path first, then add the weight:
		 * the process, its thread (flamegraph_set_threads), frames */
		for (int level = 0; level < 2; level++) {
			char tname[64];
			const char *name = !level ? comm :
					   fg->threads ? sample_thread(s, tname, sizeof(tname)) :
					   NULL;

			if (!name)
				continue;
			idx = fg_intern(fg, name);
			if (idx >= 0)
				node = fg_child(fg, node, idx, level ? FG_THREAD : FG_PROCESS);
			if (node == -ENOSPC) {
				fg->truncated++;
				goto add;
			}
			if (idx < 0 || node < 0) {
				err = -ENOMEM;
				goto out;
			}
			path[depth++] = node;
		}
		for (uint32_t j = s->nlocations; j-- > 0;) {
			uint32_t id = s->location_ids[j];

			if (id > p->nlocations)
				continue;
			idx = location_frame(fg, p, id, cache, kinds);
			if (idx >= 0)
				node = fg_child(fg, node, idx,
						kinds[id] ? kinds[id] : FG_USER);
			if (node == -ENOSPC) {
				/* Tree full: the weight stays on the known prefix. */
				fg->truncated++;
				break;
			}
			if (idx < 0 || node < 0) {
				err = -ENOMEM;
				goto out;
			}
			path[depth++] = node;
			node = inlined_frames(fg, p, id, node, path, &depth);
			if (node == -ENOSPC) {
				fg->truncated++;
				break;
			}
			if (node < 0) {
				err = -ENOMEM;
				goto out;
			}
		}
add:
		fg->nodes[0].value += w;
		for (uint32_t j = 0; j < depth; j++)
			fg->nodes[path[j]].value += w;
	}
out:
	free(path);
	free(kinds);
	free(cache);
	return err;
}
