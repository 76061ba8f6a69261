/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flamegraph.h - self-contained HTML flame graph.
 *
 * Owns: a merged call tree of every profile of a run (root -> process
 * name -> outermost frame -> ... -> leaf) and its rendering as one HTML
 * file with inline CSS/JS: no network access, zoom on click, search with
 * highlighting and the matched share.
 */
#ifndef PROFD_OUTPUT_FLAMEGRAPH_H
#define PROFD_OUTPUT_FLAMEGRAPH_H

#include <stdint.h>

#include "profile/profile.h"

struct flamegraph;

/* Frames kept by default: about 8 MiB of tree, whatever the run's length. */
#define FLAMEGRAPH_DEFAULT_MAX_NODES (256u * 1024)

/*
 * flamegraph_new - an empty tree of at most @max_nodes frames (0: the
 * default). Once full, a sample whose path needs a new frame adds its
 * weight to the part of the path that exists (counted, see
 * flamegraph_truncated). NULL on out of memory.
 */
struct flamegraph *flamegraph_new(uint32_t max_nodes);

void flamegraph_free(struct flamegraph *fg);

/*
 * flamegraph_add_profile - merge every sample of @p into the tree, using
 * sample value @value_index as the weight. The first frame under the root
 * is the sample's "comm" label (process name) when present. Frame names:
 * the function name, else "[unknown] 0xADDR (file)"; kernel frames keep
 * their names and are marked so the page colours them apart.
 * Returns 0, -EINVAL if @value_index >= p->nsample_types, or -ENOMEM.
 */
int flamegraph_add_profile(struct flamegraph *fg, const struct profile *p,
			   uint32_t value_index);

/*
 * flamegraph_write_html - write the page to @path atomically. @title shows
 * at the top; @unit names the weight ("samples"). Returns 0 or -errno.
 */
int flamegraph_write_html(const struct flamegraph *fg, const char *path,
			  const char *title, const char *unit);

/* flamegraph_total - sum of weights merged so far. */
uint64_t flamegraph_total(const struct flamegraph *fg);

/* flamegraph_truncated - samples whose path was cut at the node bound. */
uint64_t flamegraph_truncated(const struct flamegraph *fg);

#endif /* PROFD_OUTPUT_FLAMEGRAPH_H */
