/* SPDX-License-Identifier: GPL-2.0 */
/*
 * retention.h - output-directory retention (--output-retention): profd's
 * own profile files beyond an age or a total size are deleted, oldest
 * first, so a long-running profd never fills the disk.
 */
#ifndef PROFD_OUTPUT_RETENTION_H
#define PROFD_OUTPUT_RETENTION_H

#include <stddef.h>
#include <stdint.h>

struct retention_result {
	uint64_t files_removed;
	uint64_t bytes_removed;
	uint64_t files_kept;	/* profd's profiles left in the directory */
	uint64_t bytes_kept;
	uint64_t flamegraph_bytes;	/* flamegraph.html: in the size limit, kept */
};

/*
 * retention_apply - in directory @dir, delete profd's profile files
 * (KIND-<UTC>[-N].pb.gz for each profile kind of sink.h: cpu, gpu,
 * gpu-pc, as pprof_sink.c names them; regular files only; temporary
 * NAME.tmpXXXXXX files, flamegraph.html, symlinks and everything else are never touched) modified more than
 * @max_age_s seconds before @now_s (Unix seconds; 0: no age limit),
 * then, oldest first (by modification time, then name), until the rest
 * and @dir/flamegraph.html (a regular file; it is rewritten every
 * interval and never deleted) take at most @max_bytes (file sizes,
 * st_size; 0: no size limit). The newest profile is never deleted for
 * size, even when the flame graph alone is larger. @out (may be NULL)
 * gets the counts. Returns 0 (also for an empty directory), -EINVAL for an empty
 * @dir, or a negative errno when @dir cannot be opened or read (-ENOENT,
 * -ENOTDIR, -EACCES, -ENOMEM); a file that cannot be deleted is skipped
 * and counted as kept.
 */
int retention_apply(const char *dir, uint64_t max_age_s, uint64_t max_bytes,
		    uint64_t now_s, struct retention_result *out);

/*
 * retention_parse - parse an --output-retention value: AGE, SIZE or
 * AGE,SIZE (either order, spaces around the comma allowed), each a whole
 * number greater than 0 with a unit: AGE s, m, h, d or w (lower case
 * only), SIZE B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB (powers of 1024;
 * any case, except that a lone "m" is minutes: "5m" is 5 minutes, "5M"
 * 5 MiB). Sets *@age_s (seconds) and *@bytes (0 for the part not given).
 * Returns 0, or -EINVAL with a one-line reason in @err (the value and
 * what is wrong with it: no unit, unknown unit, 0, sign, fraction,
 * overflow, two ages or sizes); @err may be NULL.
 */
int retention_parse(const char *s, uint64_t *age_s, uint64_t *bytes,
		    char *err, size_t errlen);

#endif /* PROFD_OUTPUT_RETENTION_H */
