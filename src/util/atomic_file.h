/* SPDX-License-Identifier: GPL-2.0 */
/*
 * atomic_file.h - files that appear complete or not at all.
 *
 * Owns: writing an output file through a temporary file in the same
 * directory, fsync, and rename(2), so a reader (pprof, a browser, a
 * retention sweep) never sees a half-written profile.
 */
#ifndef PROFD_UTIL_ATOMIC_FILE_H
#define PROFD_UTIL_ATOMIC_FILE_H

#include <stddef.h>

struct atomic_file {
	int fd;		/* write the contents here */
	char *tmp;	/* owned: the temporary path */
	const char *path;
};

/*
 * atomic_file_begin - create "@path.tmpXXXXXX" (mode 0644) for writing.
 * Returns 0 or a negative errno. @path must outlive the commit.
 */
int atomic_file_begin(struct atomic_file *af, const char *path);

/*
 * atomic_file_commit - if @err is 0, fsync and rename the temporary file
 * to its path; otherwise (or if that fails) remove it. Always releases
 * @af. Returns @err, or the first negative errno of the commit.
 */
int atomic_file_commit(struct atomic_file *af, int err);

/* write_all - write all @len bytes, retrying on EINTR. 0 or -errno. */
int write_all(int fd, const void *data, size_t len);

/* write_file_atomic - the three steps above for one buffer. 0 or -errno. */
int write_file_atomic(const char *path, const void *data, size_t len);

#endif /* PROFD_UTIL_ATOMIC_FILE_H */
