/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flamegraph.h - self-contained HTML flame graph.
 *
 * Owns: a merged call tree of every profile of a run (root -> process
 * name -> outermost frame -> ... -> leaf) and its rendering as one HTML
 * file with inline CSS/JS: no network access, an icicle (the root under
 * the header, callees below) that opens on its widest frames, zoom on
 * click, search with highlighting and the matched share. One page may
 * hold several trees ("views", e.g. CPU samples and GPU kernel time),
 * one tab each; an empty view says why it is empty.
 */
#ifndef PROFD_OUTPUT_FLAMEGRAPH_H
#define PROFD_OUTPUT_FLAMEGRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"

struct flamegraph;

/* Frames kept by default: about 8 MiB of tree, whatever the run's length. */
#define FLAMEGRAPH_DEFAULT_MAX_NODES (256u * 1024)

/*
 * flamegraph_new - an empty tree of at most @max_nodes frames (0: the
 * default). When a sample's path does not fit, the tree first folds its
 * lightest frames into their callers until a quarter of @max_nodes is
 * free (their weight stays in the callers, as self weight; counted, see
 * flamegraph_pruned), so the heaviest paths stay whenever they first
 * appear. A path longer than a quarter of @max_nodes that does not fit
 * adds its weight to the part that exists (counted, see
 * flamegraph_truncated). NULL on out of memory.
 */
struct flamegraph *flamegraph_new(uint32_t max_nodes);

void flamegraph_free(struct flamegraph *fg);

/*
 * flamegraph_add_profile - merge every sample of @p into the tree, using
 * sample value @value_index as the weight. The first frame under the root
 * is the sample's "comm" label (process name) when present; with
 * flamegraph_set_threads() the next is its thread, "THREAD_NAME [TID]"
 * from the thread_name and tid labels (a sample without tid has none).
 * Frame names:
 * the function name, else "[unknown] FILE+0xOFFSET" (the file's base
 * name and the file offset, the same in every process whatever its
 * load address), or "[unknown] 0xADDR (mapping)" in a mapping without a
 * file ("[anon]", JIT code). Kernel frames
 * (mapping "[kernel.kallsyms]") and GPU kernels (mapping "[cuda]", the
 * leaves of a GPU kernel-time profile) keep their names and are marked
 * so the page colours each apart.
 * Returns 0, -EINVAL if @value_index >= p->nsample_types, or -ENOMEM.
 */
int flamegraph_add_profile(struct flamegraph *fg, const struct profile *p,
			   uint32_t value_index);

/*
 * What an empty view says when its caller has nothing better: that no
 * samples were recorded, and how to get some.
 */
#define FLAMEGRAPH_EMPTY_NOTE \
	"No samples were recorded for this view. Record while the workload " \
	"runs (a longer --duration), or profile one command with " \
	"`profd exec -- COMMAND`."

/* One tab of a page: a tree and how to label it. Nothing here is owned. */
struct flamegraph_view {
	const char *name;		/* tab label, e.g. "CPU" or "GPU kernel time" */
	const struct flamegraph *fg;	/* its tree */
	const char *unit;		/* weight unit: "samples" or "ns" (NULL: "samples") */
	/*
	 * Shown instead of the graph while the tree is empty (total 0): why
	 * it is empty and what to run, as plain text (escaped by the writer;
	 * any bytes are safe). NULL: FLAMEGRAPH_EMPTY_NOTE.
	 */
	const char *empty_note;
};

/*
 * flamegraph_write_views - write one page with a tab per view to @path
 * atomically (a temporary file renamed into place; none is left behind
 * on error). The first view is shown first; a single view gets no tab
 * bar. A view whose tree is empty (total 0) still gets its tab, which
 * shows the view's empty_note (FLAMEGRAPH_EMPTY_NOTE if NULL) where the
 * graph would be. A weight in "ns" (or "nanoseconds") is shown as a
 * duration ("12.3 ms", "1.20 s"), any other unit as a count ("1,234
 * samples"). @title (NULL: "profd flame graph") shows at the top. Each
 * tree keeps its own node bound (flamegraph_new). The views and trees
 * are only read; the caller keeps them.
 * Returns 0, -EINVAL if @views is NULL, @nviews is 0 or a view has no
 * name or no tree, -ENOMEM, or the -errno of writing the file.
 */
int flamegraph_write_views(const char *path, const char *title,
			   const struct flamegraph_view *views,
			   unsigned int nviews);

/*
 * flamegraph_write_html - flamegraph_write_views() with one view: @fg
 * weighted in @unit (NULL: "samples"), no tab bar. Returns 0 or -errno.
 */
int flamegraph_write_html(const struct flamegraph *fg, const char *path,
			  const char *title, const char *unit);

/* flamegraph_total - sum of weights merged so far. */
uint64_t flamegraph_total(const struct flamegraph *fg);

/* flamegraph_truncated - samples whose path was cut at the node bound. */
uint64_t flamegraph_truncated(const struct flamegraph *fg);

/* flamegraph_pruned - frames folded into their callers at the node bound. */
uint64_t flamegraph_pruned(const struct flamegraph *fg);

/*
 * flamegraph_set_budget - bound @fg's heap to about @bytes: at most
 * @bytes / FLAMEGRAPH_BYTES_PER_NODE frames (not fewer than 4096, not
 * more than flamegraph_new's bound), and names at most @bytes / 4 (past
 * it the lighter half of the frames is folded into their callers). Call
 * before the first flamegraph_add_profile().
 */
#define FLAMEGRAPH_BYTES_PER_NODE 160
void flamegraph_set_budget(struct flamegraph *fg, uint64_t bytes);

/*
 * flamegraph_set_threads - with @on, a frame per thread under each
 * process (a per-thread view such as wall-clock time, where each
 * thread's width is its own time). Call before the first
 * flamegraph_add_profile().
 */
void flamegraph_set_threads(struct flamegraph *fg, bool on);

/*
 * flamegraph_bytes - heap bytes of @fg (nodes, hash slots, name table and
 * names; 0 for NULL), its name count in *@names. Kept on insert/prune:
 * no walk. Not thread-safe against flamegraph_add_profile().
 */
uint64_t flamegraph_bytes(const struct flamegraph *fg, uint64_t *names);

#endif /* PROFD_OUTPUT_FLAMEGRAPH_H */
