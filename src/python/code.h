/* SPDX-License-Identifier: GPL-2.0 */
/*
 * code.h - CPython code objects read out of a live process.
 *
 * Owns: reading a code object (name, qualified name, file name, first
 * line, line table) from another process's memory (remote.h: reads that
 * time out rather than hang), checking every object's type against the process's
 * PyCode_Type / PyUnicode_Type / PyBytes_Type and bounding every length
 * (the memory may be torn or hostile), and a bounded LRU cache of the
 * decoded objects keyed by (pid, generation, address). A cached object is
 * re-checked against the process (one small read) at most once per
 * PY_CODE_RECHECK_NS, so a code object freed and replaced at the same
 * address is noticed.
 */
#ifndef PROFD_PYTHON_CODE_H
#define PROFD_PYTHON_CODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/offsets.h"

#define PY_CODE_RECHECK_NS	(1000ULL * 1000 * 1000)
#define PY_NAME_MAX		1024	/* characters kept of a name or file name */
#define PY_LINETABLE_MAX	(64u << 10)	/* bytes of a line table read (the rest: line unknown) */
/* Bytes one sample may read from its process (python_merge_stack()). */
#define PY_READ_BUDGET		(1u << 20)

/* Runtime addresses of the type objects in one process (0: not checked). */
struct py_types {
	uint64_t code;
	uint64_t unicode;
	uint64_t bytes;
};

struct py_code {
	char *name;		/* co_qualname (3.11+) or co_name, UTF-8 */
	char *file;		/* co_filename, UTF-8 */
	int first_line;		/* co_firstlineno */
	int first_traceable;	/* _co_firsttraceable (code units), 0 before 3.11 */
	uint8_t *linetable;
	size_t linetable_len;
};

struct py_code_cache;

/*
 * py_code_cache_new - a cache of at most @max_entries code objects and
 * @max_bytes of their strings and line tables. NULL on OOM.
 */
struct py_code_cache *py_code_cache_new(size_t max_entries, size_t max_bytes);

void py_code_cache_free(struct py_code_cache *c);

/*
 * py_code_forget - drop the entries of the processes whose generation is
 * one of @gens (@n of them, sorted ascending): they exited. One walk of
 * the cache. Same thread as py_code_get().
 */
void py_code_forget(struct py_code_cache *c, const uint64_t *gens, size_t n);

/*
 * py_code_get - the code object at @addr in process @pid (whose
 * interpreter has layout @off and types @types), from the cache or read
 * now. @gen distinguishes successive processes with the same pid;
 * @print_bpf is the object's fingerprint as BPF read it at sample time
 * (profd_py_fingerprint(); 0: none): an entry is only used for the same
 * fingerprint, needs no re-check then, and an object whose fingerprint
 * differs when read (freed and replaced since) is -ESTALE. A process
 * forked from @parent (@parent_gen; 0: none) is named from the parent's
 * copy of the object (cached or read) when its fingerprint matches: fork
 * copied it, so a child that exits in milliseconds is still named.
 * @now_ns is CLOCK_MONOTONIC. *@budget is the bytes the caller may still
 * read from the process; reads are charged to it. Failures are cached like
 * successes (for PY_CODE_RECHECK_NS), so a bad address is not read again
 * each sample. The result is owned by the cache and valid until the next
 * call. Returns NULL and sets *@err: -ESRCH/-EFAULT (not readable),
 * -EINVAL (not a code object, or a malformed one), -ESTALE (replaced
 * since the sample), -EAGAIN (budget spent:
 * not read), -ENOMEM.
 */
const struct py_code *py_code_get(struct py_code_cache *c, pid_t pid,
				  uint64_t gen, pid_t parent, uint64_t parent_gen,
				  uint64_t addr,
				  const struct py_offsets *off,
				  const struct py_types *types, uint32_t print_bpf,
				  uint64_t now_ns, size_t *budget, int *err);

struct py_code_stats {
	uint64_t entries, bytes;	/* now */
	uint64_t reads;			/* code objects read from processes */
	uint64_t hits, rechecks, evictions;
	uint64_t errors;		/* reads that failed (any reason) */
	uint64_t timeouts;		/* reads abandoned: the process's memory hung */
};

void py_code_cache_stats(const struct py_code_cache *c, struct py_code_stats *out);

#endif /* PROFD_PYTHON_CODE_H */
