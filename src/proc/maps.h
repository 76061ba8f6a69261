/* SPDX-License-Identifier: GPL-2.0 */
/*
 * maps.h - /proc/PID/maps parsing.
 *
 * Owns: turning the text of /proc/PID/maps into a sorted array of
 * mappings, and looking an address up in it. Follows proc(5) "maps":
 *   start-end perms offset major:minor inode   pathname
 * Pathnames may contain spaces, end in " (deleted)", or be special
 * ("[vdso]", "[stack]", "[heap]", "[anon:name]", "" for anonymous).
 */
#ifndef PROFD_PROC_MAPS_H
#define PROFD_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/mapping.h"

struct proc_maps {
	struct proc_mapping *v;	/* sorted by start, non-overlapping */
	size_t n;
	uint64_t read_ns;	/* CLOCK_MONOTONIC ns the read began (0: parsed) */
};

/*
 * proc_maps_parse - parse maps text of @len bytes into @out (which the
 * caller frees with proc_maps_free). Malformed lines are skipped and
 * counted in *@bad_lines if non-NULL. Returns 0 or -ENOMEM.
 */
int proc_maps_parse(const char *text, size_t len, struct proc_maps *out,
		    size_t *bad_lines);

/*
 * proc_maps_read - read and parse /proc/@pid/maps, with the paths under
 * the process's root made relative to it (as the process sees them, and
 * /proc/@pid/root/PATH finds them, also when it is chrooted). Returns 0,
 * -ENOENT if the process is gone, or another negative errno.
 */
int proc_maps_read(pid_t pid, struct proc_maps *out);

/* proc_maps_free - release @m's contents (not @m itself). */
void proc_maps_free(struct proc_maps *m);

/* proc_maps_find - the mapping containing @addr, or NULL. O(log n). */
const struct proc_mapping *proc_maps_find(const struct proc_maps *m,
					  uint64_t addr);

#endif /* PROFD_PROC_MAPS_H */
