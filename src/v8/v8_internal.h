/* SPDX-License-Identifier: GPL-2.0 */
/*
 * v8_internal.h - the V8 runtime's state shared by v8.c (the process
 * table, runtime_procs entries) and merge.c (naming and the merge).
 *
 * One struct v8 per run (the runtime instance), one struct v8proc per
 * process whose mapped files hold V8's metadata: its layout, the
 * interpreter's address ranges (by ELF address of the V8 object), and a
 * copy of its mappings (kind and file offset) to tell, for a pc, JIT
 * code from the interpreter and from other code. The lock guards the
 * table: maps_read/removed (object loader) against merge_stack (reader).
 */
#ifndef PROFD_V8_INTERNAL_H
#define PROFD_V8_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/addr_cache.h"
#include "runtime/file_cache.h"
#include "runtime/frames.h"
#include "v8/code.h"
#include "v8/frames.h"
#include "v8/metadata.h"

#define V8_BUCKETS		256
#define V8_RANGES_MAX		16	/* interpreter ranges of one V8 object */
#define V8_MAPS_MAX		8192	/* mappings of one process kept */
#define V8_DEAD_GENS_MAX	1024

/* What the code at a pc is (v8_classify()). */
enum v8_pc_kind {
	V8_PC_OTHER = 0,	/* builtins, native code, unmapped: keeps its native name */
	V8_PC_JIT,		/* an anonymous mapping: V8's JIT code */
	V8_PC_TRAMPOLINE,	/* the interpreter's entry trampolines */
	V8_PC_HANDLER,		/* a bytecode handler: the offset register is live */
};

/* An interpreter range of the V8 object, ELF addresses. */
struct v8_range {
	uint64_t start, end;
	enum v8_pc_kind kind;
};

/* The detector's record of one file (rt_file_cache): its layout, ranges. */
struct v8_binary {
	struct rt_file f;	/* first: the cache's part */
	struct v8_layout l;
	uint32_t nranges;
	struct v8_range ranges[V8_RANGES_MAX];
};

/* A mapping as merge needs it. */
struct v8_map {
	uint64_t start, end;
	uint64_t offset;	/* file offset at start (V8 object mappings) */
	uint8_t anon;		/* no file: JIT code when a pc is in it */
	uint8_t exec;		/* executable at the maps read */
	uint8_t v8obj;		/* a mapping of the V8 object's file */
};

struct v8proc {
	struct v8proc *next;
	pid_t pid;
	uint64_t gen;		/* a new one per attach: the name cache's key */
	uint64_t dev_major, dev_minor, inode;	/* the V8 object */
	struct v8_binary bin;	/* a copy: the file cache may drop its own */
	struct v8_map *maps;	/* sorted by start */
	size_t nmaps;
	struct v8_code_cache *code_cache;	/* code.c's (owned; NULL: no memory) */
};

struct v8 {
	pthread_mutex_t lock;
	int procs_fd;
	int verbose;
	struct rt_file_cache det;	/* object loader thread only */
	struct v8proc *procs[V8_BUCKETS];
	uint64_t nprocs;		/* atomic: stats() */
	uint64_t next_gen;
	uint64_t dead_gens[V8_DEAD_GENS_MAX];	/* exited: the cache forgets them */
	size_t ndead;
	struct remote_reader *reader;	/* the reader thread's (merge) */
	struct addr_cache *names;	/* SharedFunctionInfo -> name, file */
	struct rt_frame_gens frames;
};

/* v8_proc_slot - where process @pid's record is (or goes) in the table. Lock held. */
struct v8proc **v8_proc_slot(struct v8 *v, pid_t pid);

/* v8_classify - what the code at @pc of @p is. Lock held. */
enum v8_pc_kind v8_classify(const struct v8proc *p, uint64_t pc);

/* v8_exec_addr - whether @addr lay in an executable mapping of @p. Lock held. */
bool v8_exec_addr(const struct v8proc *p, uint64_t addr);

/* v8_own_code - whether @addr lay in V8's code: an executable anonymous mapping
 * (JIT code) or one of the V8 object's (builtins, the runtime). Lock held. */
bool v8_own_code(const struct v8proc *p, uint64_t addr);

/* merge.c: the name cache and frame tables (0 or -ENOMEM), their end. */
int v8_merge_init(struct v8 *v, uint64_t budget);
void v8_merge_fini(struct v8 *v);

#endif /* PROFD_V8_INTERNAL_H */
