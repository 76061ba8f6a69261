/* SPDX-License-Identifier: GPL-2.0 */
/*
 * build_lane.h - one lane for the working memory of big builds: what
 * reading a big file's tables costs while it runs (runtime detection's
 * symbol tables, an unwind table's parsed rows beside the table written
 * from them, a symbol table's candidates), freed when the build ends.
 *
 * Owns: who is in the lane. That memory is in no cache's share: it lives
 * in --memory-limit's base, whose slack holds one such build, not two
 * at once (node's unwind table and its V8 detection at the same moment
 * took profd 15 MiB past --memory-limit 80). A build of a file of
 * BUILD_LANE_FROM bytes or more enters the lane; the worker threads
 * (object loader, unwind loader: build_lane_may_wait()) wait for it to
 * be free, counted (stat.build_lane_waits); any other thread (the
 * reader, which must never block) enters at once, counted when another
 * build is in it (stat.build_lane_overlaps). Nested builds on one thread
 * are one entry.
 */
#ifndef PROFD_UTIL_BUILD_LANE_H
#define PROFD_UTIL_BUILD_LANE_H

#include <stdbool.h>
#include <stdint.h>

/* Files this big (bytes) or bigger are built in the lane. */
#define BUILD_LANE_FROM	(16ULL << 20)

/* build_lane_may_wait - the calling thread (a worker) waits for the lane. */
void build_lane_may_wait(void);

/*
 * build_lane_enter - before building from a file of @file_bytes: enter
 * the lane if the file is big (waiting for it on a worker thread).
 * Returns whether it entered: pass it to build_lane_leave().
 */
bool build_lane_enter(uint64_t file_bytes);

/* build_lane_leave - after the build; @entered: build_lane_enter()'s. */
void build_lane_leave(bool entered);

/* build_lane_enter_fd - build_lane_enter() with the size fstat() gives @fd (none: 0). */
bool build_lane_enter_fd(int fd);

#endif /* PROFD_UTIL_BUILD_LANE_H */
