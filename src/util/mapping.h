/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mapping.h - one mapping of a process's address space.
 *
 * Owns: struct proc_mapping, the type both the process table's maps
 * parser (src/proc/maps.c, which fills it from a /proc/PID/maps line) and
 * the symbolizer (src/symbol/, which opens the file behind it) use. It
 * lives below both so that src/symbol/ needs nothing from src/proc/: the
 * process table calls the symbolizer, never the other way round.
 */
#ifndef PROFD_UTIL_MAPPING_H
#define PROFD_UTIL_MAPPING_H

#include <stdbool.h>
#include <stdint.h>

struct proc_mapping {
	uint64_t start;		/* [start, end) virtual addresses */
	uint64_t end;
	uint64_t offset;	/* file offset mapped at start */
	uint32_t dev_major;
	uint32_t dev_minor;
	uint64_t inode;		/* 0 for anonymous and special mappings */
	bool readable, writable, executable, shared;
	bool deleted;		/* path ended in " (deleted)" (suffix stripped) */
	bool special;		/* "[vdso]", "[stack]", ... */
	char *path;		/* owned; "" for anonymous */
};

#endif /* PROFD_UTIL_MAPPING_H */
