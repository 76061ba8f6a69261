// SPDX-License-Identifier: GPL-2.0
/*
 * file_cache.h - which mapped files hold a runtime's interpreter: each
 * runtime's detector runs once per file (device, inode), and the file's
 * PT_LOAD segments give the load bias of a process's mapping of it.
 */
#ifndef PROFD_RUNTIME_FILE_CACHE_H
#define PROFD_RUNTIME_FILE_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_mapping;
struct proc_maps;

#define RT_FILE_MAX_LOADS	16
#define RT_FILE_BUCKETS		1024
#define RT_FILE_CACHE_MAX	16384	/* files; beyond, the cache starts over */

/*
 * One file: the first member of a runtime's own record of it (which adds
 * what its detector found), allocated by the cache at the runtime's size.
 */
struct rt_file {
	struct rt_file *next;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	int result;		/* the detector's: 1 (an interpreter), -ENOTSUP
				 * (one it cannot describe: still found), 0
				 * (not one), or another negative errno */
	uint32_t nloads;
	struct { uint64_t offset, vaddr, filesz; } loads[RT_FILE_MAX_LOADS];
};

/*
 * The detector: fill the runtime's record @f (its first member) from the
 * file open on @fd (not taken over; pread only) and return f->result's
 * value.
 */
typedef int (*rt_detect_fn)(int fd, struct rt_file *f);

/* Not thread-safe: one thread's (the object loader's). */
struct rt_file_cache {
	struct rt_file *bucket[RT_FILE_BUCKETS];
	uint32_t n;
	size_t size;		/* of the runtime's record, >= sizeof(struct rt_file) */
	rt_detect_fn detect;
};

/* rt_file_cache_init - an empty cache of records of @size bytes. */
void rt_file_cache_init(struct rt_file_cache *c, size_t size, rt_detect_fn detect);

/* rt_file_cache_clear - free every record (pointers to them go stale). */
void rt_file_cache_clear(struct rt_file_cache *c);

/*
 * rt_file_find - the record of the first executable file mapping of
 * process @pid in @maps whose detector found an interpreter (result 1 or
 * -ENOTSUP), its mapping in *@found and the mapping's load bias (runtime
 * address = ELF vaddr + bias) in *@bias. A file is opened through
 * /proc/PID/map_files (the process's own file, whatever its path) and
 * detected once; one that cannot be opened now is tried again next time.
 * NULL when none (or its mapping lies in no PT_LOAD). The record is the
 * cache's: valid until the next call (which may clear the cache).
 */
struct rt_file *rt_file_find(struct rt_file_cache *c, pid_t pid,
			     const struct proc_maps *maps,
			     const struct proc_mapping **found, uint64_t *bias);

#endif /* PROFD_RUNTIME_FILE_CACHE_H */
