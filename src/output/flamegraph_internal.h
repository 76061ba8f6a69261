/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flamegraph_internal.h - the merged call tree, shared by the files of the
 * flame graph (internal to src/output/; flamegraph.h is the interface):
 * flamegraph.c builds and bounds the tree, flamegraph_html.c writes it
 * into the page. Only the builder changes it; the writer reads it.
 */
#ifndef PROFD_OUTPUT_FLAMEGRAPH_INTERNAL_H
#define PROFD_OUTPUT_FLAMEGRAPH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "output/flamegraph.h"

/* Frame kinds, as the page's KINDS array numbers them. */
enum fg_kind {
	FG_ROOT = 0,
	FG_PROCESS = 1,
	FG_USER = 2,
	FG_KERNEL = 3,
	FG_CUDA = 4,
	FG_INTERP = 5,		/* a language runtime's frame (src/runtime/) */
	FG_INLINED = 6,		/* a native function inlined into its caller (DWARF) */
	FG_THREAD = 7,		/* a thread of its process (flamegraph_set_threads) */
};

struct fg_node {
	uint64_t value;		/* weight of this frame and everything above */
	uint32_t name;		/* index into fg->names */
	uint32_t first_child;	/* 0 = none: the root is never a child */
	uint32_t next_sibling;
	uint32_t parent;
	uint8_t kind;		/* enum fg_kind */
};

/* Open-addressing table of 0-based indices; slots hold index + 1. */
struct fg_slots {
	uint32_t *slots;
	uint32_t cap;		/* power of two */
	uint32_t n;
};

struct flamegraph {
	struct fg_node *nodes;
	uint32_t nnodes, cap_nodes;
	uint32_t max_nodes;		/* bound on memory over a long run */
	uint64_t truncated;		/* samples whose path was cut at the bound */
	uint64_t pruned;		/* frames folded into their callers */
	struct fg_slots children;	/* (parent, name, kind) -> node */

	char **names;
	uint32_t nnames, cap_names;
	struct fg_slots name_set;	/* name -> index */
	uint64_t name_bytes;		/* strdup()ed bytes of names[] */
	uint64_t name_budget;		/* prune when name_bytes pass it; 0: none */
	bool threads;			/* a thread frame under each process */
};

#endif /* PROFD_OUTPUT_FLAMEGRAPH_INTERNAL_H */
