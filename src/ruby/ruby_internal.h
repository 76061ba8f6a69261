/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ruby_internal.h - the state ruby.c (process table, attach) and merge.c
 * (naming, frame tables, the merge) share. Not for other folders.
 */
#ifndef PROFD_RUBY_RUBY_INTERNAL_H
#define PROFD_RUBY_RUBY_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/frames.h"
#include "ruby/detect.h"
#include "ruby/iseq.h"
#include "ruby/ruby.h"
#include "runtime/file_cache.h"

#define RB_BUCKETS		1024
#define RB_DEAD_GENS_MAX	1024	/* exited generations awaiting rb_iseq_forget() */
#define RB_RETRY_MAX		64	/* PENDING processes tried per round */

/* Tag of a Ruby frame token (src/runtime/runtime.h); the id of the second
 * frame table generation carries RT_FRAME_GEN too. */
#define RB_IP_FRAME	(RUNTIME_IP_FRAME | \
			 (uint64_t)PROFD_RUNTIME_CRUBY << RUNTIME_IP_ID_SHIFT)

/* Ids of the fixed frames each frame table generation holds. */
enum rb_fixed_frame {
	RB_FRAME_UNREADABLE = 1,	/* "[ruby: unreadable frame]": the walk ended on a read error */
	RB_FRAME_TRUNCATED = 2,		/* "[ruby: truncated]": more frames than kept */
	RB_FRAME_UNKNOWN = 3,		/* "[ruby: unknown frame]": could not be named or verified */
	RB_FRAME_TABLE_FULL = 4,	/* "[ruby: frame table full]" */
	RB_FIXED_FRAMES = 4,
};

/* One file, by (device, inode): is it an interpreter, and its PT_LOADs. */
struct rb_detected {
	struct rt_file f;		/* first: the cache's (result: rb_detect_fd()) */
	struct rb_binary bin;
};

enum rbproc_state {
	RBP_UNSUPPORTED,	/* no layout for its version: never walked */
	RBP_PENDING,		/* to be checked against its memory */
	RBP_REFUSED,		/* its memory contradicted the layout */
	RBP_ATTACHED,		/* its runtime_procs entry is ours */
};

/* One CRuby process. */
struct rbproc {
	pid_t pid;
	enum rbproc_state state;
	uint64_t ident;			/* new for each (re)initialisation */
	uint64_t gen;			/* new for each attach: the naming key */
	uint32_t dev_major, dev_minor;
	uint64_t inode, bias;
	struct rb_binary bin;		/* ELF addresses, version */
	const struct rb_offsets *off;
	uint64_t vm_ptr_addr;		/* runtime address of ruby_current_vm_ptr */
	uint64_t exec_start, exec_end;	/* rb_vm_exec, runtime */
	struct rb_proc_addrs addrs;	/* for naming, runtime */
	uint64_t gc_flags_addr;		/* rb_objspace.flags; 0: none */
	uint64_t vm;			/* the VM attached to */
	bool stale_main_tid;		/* a forked child: PROFD_RB_PROC_STALE_MAIN_TID */
	uint64_t retry_ns;		/* PENDING: no retry before */
	uint64_t pending_since;		/* PENDING: since (CLOCK_MONOTONIC ns) */
	pid_t parent;			/* forked from (same interpreter, same place) */
	uint64_t parent_gen;
	struct rbproc *next;
};

struct ruby {
	int procs_fd;
	int verbose;
	struct rt_file_cache det;	/* the object loader's */
	pthread_mutex_t lock;		/* procs, idents, gens, dead_gens, entries */
	struct rbproc *procs[RB_BUCKETS];
	uint64_t next_gen, next_ident;
	uint64_t nprocs, nattached;	/* atomics */
	struct remote_reader *loader_reader;	/* the object loader's attaches */
	struct remote_reader *reader;	/* the reader thread's: names, tick attaches */
	struct rb_iseq_cache *names;	/* the reader's */
	/* the retry thread: attaches PENDING processes (lock, cond) */
	pthread_t retry_thread;
	pthread_cond_t retry_cond;
	bool retry_started, retry_wanted, stopping;
	struct remote_reader *retry_reader;	/* the retry thread's */
	struct rt_frame_gens frames;	/* interned frames, two generations */
	uint64_t dead_gens[RB_DEAD_GENS_MAX];
	uint32_t ndead;
};

/* rb_proc_slot - where @pid's entry is or would go. Lock held. */
struct rbproc **rb_proc_slot(struct ruby *rb, pid_t pid);

/* rb_frames_init - both frame table generations with CRuby's fixed frames,
 * each bounded by @max_bytes. 0 or -ENOMEM. */
int rb_frames_init(struct ruby *rb, uint64_t max_bytes);

/* rb_frames_bytes - heap of both generations; *@frames: those in the current one. */
uint64_t rb_frames_bytes(struct ruby *rb, uint64_t *frames);

#endif /* PROFD_RUBY_RUBY_INTERNAL_H */
