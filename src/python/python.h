/* SPDX-License-Identifier: GPL-2.0 */
/*
 * python.h - CPython processes: finding interpreters, naming their frames,
 * and merging Python frames with native ones.
 *
 * Owns: the table of CPython processes (which object is the interpreter,
 * its load bias, its version's offsets), the `runtime_procs` BPF map
 * entries that tell the unwinder where each process's runtime is, the
 * code-object cache, and CPython's fixed frames and "frames full" counter
 * in the two generations of interned frames (src/runtime/frames.h).
 *
 * Data flow: the process table hands every maps read to
 * python_maps_read() (interpreters are recognised by symbols, see
 * detect.h); the reader thread turns each sample's Python frames into
 * frame ids and splices them into the native stack with
 * python_merge_stack(); the profile writer names the ids with
 * python_frame(). Threads: python_maps_read() and python_removed() are
 * called on the object loader's thread (in the order of the maps reads
 * and removals), python_merge_stack() and python_new_interval() on the
 * reader, python_frame() and python_stats() on any. Detection (the
 * files' ELF symbols, cached per file) is the loader's alone and runs
 * without a lock; the process table and its runtime_procs entries are
 * changed under a lock python_merge_stack() holds while it runs, never
 * while a file is read.
 */
#ifndef PROFD_PYTHON_PYTHON_H
#define PROFD_PYTHON_PYTHON_H

#include <stdint.h>
#include <sys/types.h>

#include "proc/maps.h"
#include "runtime/frames.h"

/* Tag of a user "IP" that is a Python frame id, not an address (a
 * runtime frame token of CPython, see src/runtime/runtime.h). */
#define PY_IP_FRAME	(RUNTIME_IP_FRAME | \
			 (uint64_t)PROFD_RUNTIME_CPYTHON << RUNTIME_IP_ID_SHIFT)
/* With PY_IP_FRAME: the id is of the second table generation. */
#define PY_IP_GEN	RT_FRAME_GEN

/* Ids of the fixed frames every Python frame table has. */
enum py_fixed_frame {
	PY_FRAME_UNREADABLE = 1,	/* "[python: unreadable frame]" */
	PY_FRAME_BAD_CODE = 2,		/* "[python: unknown code object]" */
	PY_FRAME_TRUNCATED = 3,		/* "[python: truncated]" */
	PY_FRAME_TABLE_FULL = 4,	/* "[python: frame table full]" */
	PY_FIXED_FRAMES = 4,
};

struct python;

struct python_stats {
	uint64_t processes;		/* CPython processes known now */
	uint64_t unsupported;		/* interpreters of an unsupported version seen */
	uint64_t code_reads;		/* code objects read from processes */
	uint64_t code_errors;		/* samples with a code object unreadable */
	uint64_t read_timeouts;		/* process memory reads that hung (abandoned) */
	uint64_t frames;		/* distinct Python frames interned (this generation) */
	uint64_t frames_full;		/* frames refused: table full */
	uint64_t frame_rotations;	/* frame tables started afresh */
	uint64_t map_errors;		/* runtime_procs updates that failed */
	uint64_t bytes;			/* gauge: heap of the code cache and the
					 * two frame tables */
	uint64_t code_evictions;	/* code objects dropped for room (LRU) */
	uint64_t code_objects;		/* gauge: code objects cached */
};

/*
 * python_new - an empty table. @procs_fd is the `runtime_procs` map (-1:
 * no BPF, for tests); @budget bounds its heap in bytes (0: 64 MiB): half
 * for the code objects cached (their names, files and line tables; least
 * recently used go first), a quarter for each of the two frame table
 * generations; @verbose > 0 logs each interpreter found. NULL on OOM.
 */
struct python *python_new(int procs_fd, uint64_t budget, int verbose);

void python_free(struct python *py);

/*
 * python_maps_read - process @pid's mappings were (re-)read: find its
 * interpreter (cached per file by device and inode), and add, update or
 * remove its runtime_procs entry. Process memory is not touched here.
 */
void python_maps_read(struct python *py, pid_t pid, const struct proc_maps *maps);

/* python_removed - @pid left the process table: forget it. */
void python_removed(struct python *py, pid_t pid);

/*
 * python_merge_stack - splice a sample's Python frames into its user
 * stack. @user holds @nuser native user IPs (leaf first, as in the
 * sample), @frames @nframes raw Python frames (two words each, see
 * bpf/unwind_python.h), @flags the sample's PROFD_SAMPLE_* flags. Each
 * group of Python frames replaces the _PyEval_EvalFrameDefault frame that
 * ran it, pairing from the root (or, when either walk was cut short,
 * from the leaf). Python frames are written as PY_IP_FRAME | frame id;
 * an unreadable frame chain ends in PY_FRAME_UNREADABLE, a cut one in
 * PY_FRAME_TRUNCATED. Writes at most @cap words to @out and returns the
 * count. A process not known as CPython gets its native stack back.
 */
uint32_t python_merge_stack(struct python *py, pid_t pid, uint32_t flags,
			    const uint64_t *user, uint32_t nuser,
			    const uint64_t *frames, uint32_t nframes,
			    uint64_t *out, uint32_t cap, uint64_t now_ns);

/*
 * python_frame - the frame a Python "IP" stands for (@token: PY_IP_FRAME,
 * maybe PY_IP_GEN, and the id in the low 32 bits). Any thread. Returns 0,
 * or -ENOENT for an unknown id.
 */
int python_frame(struct python *py, uint64_t token, struct rt_frame *out);

/*
 * python_new_interval - a new aggregation interval starts: if the frame
 * table is half full (count or bytes), or has not been renewed for
 * RT_FRAMES_RENEW_INTERVALS calls and holds frames, new frames go to a
 * fresh table from now on (replacing the other generation, whose ids only
 * the interval before last used; rt_frame_gens_new_interval(), counted
 * as python_frame_table_rotations). So the table never fills for good in
 * a long run, and frames no process shows any more are freed within two
 * renewals. Call once per interval on the reader thread, before the
 * interval's first python_merge_stack(), and only once the profile of
 * the interval before last has been built.
 */
void python_new_interval(struct python *py);

/*
 * python_forget_exited - drop the cached code objects of the interpreters
 * python_removed() was told about since the last call (up to 1024; the
 * cache's LRU takes any beyond). On the reader thread, like
 * python_merge_stack(): the code cache is its.
 */
void python_forget_exited(struct python *py);

/* python_stats - counters and sizes (any thread). */
void python_stats(struct python *py, struct python_stats *out);

#endif /* PROFD_PYTHON_PYTHON_H */
