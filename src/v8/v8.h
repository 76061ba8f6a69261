/* SPDX-License-Identifier: GPL-2.0 */
/*
 * v8.h - V8 (Node) as a runtime of the seam (src/runtime/runtime.h):
 * what v8_runtime.c's hooks call. See v8.c (processes, runtime_procs
 * entries) and merge.c (JS frames named and merged into native stacks).
 *
 * Threads: v8_maps_read() and v8_removed() on the object loader;
 * v8_merge_stack(), v8_new_interval() on the reader; v8_frame() and
 * v8_stats() on any.
 */
#ifndef PROFD_V8_V8_H
#define PROFD_V8_V8_H

#include <stdint.h>
#include <sys/types.h>

#include "runtime/frames.h"

struct proc_maps;
struct v8;

/* v8_new - an instance writing runtime_procs @procs_fd (-1: none), whose
 * caches hold at most @budget bytes (0: 32 MiB). NULL on OOM. */
struct v8 *v8_new(int procs_fd, uint64_t budget, int verbose);

/* v8_free - free it all; NULL is fine. */
void v8_free(struct v8 *v);

/* v8_maps_read - @pid's maps were read: recognise V8, write its entry. */
void v8_maps_read(struct v8 *v, pid_t pid, const struct proc_maps *maps);

/* v8_removed - @pid is gone: forget it, delete its entry. */
void v8_removed(struct v8 *v, pid_t pid);

/* v8_merge_stack - runtime_ops.merge_stack (bpf/unwind_v8.h's frames). */
uint32_t v8_merge_stack(struct v8 *v, pid_t pid, uint32_t flags,
			const uint64_t *user, uint32_t nuser,
			const uint64_t *frames, uint32_t nframes,
			uint64_t *out, uint32_t cap);

/* v8_frame - the frame of token @token: 0, or -ENOENT. */
int v8_frame(struct v8 *v, uint64_t token, struct rt_frame *out);

/* v8_new_interval - renew the frame tables as due, forget exited processes' names. */
void v8_new_interval(struct v8 *v);

/* v8_processes - V8 processes known now. */
uint64_t v8_processes(struct v8 *v);

/* v8_cache_stats - heap bytes, cached names and evictions of the caches. */
void v8_cache_stats(struct v8 *v, uint64_t *bytes, uint64_t *objects, uint64_t *evictions);

#endif /* PROFD_V8_V8_H */
