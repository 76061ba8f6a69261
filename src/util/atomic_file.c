// SPDX-License-Identifier: GPL-2.0
/*
 * atomic_file.c - files that appear complete or not at all (see atomic_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/atomic_file.h"

int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int atomic_file_begin(struct atomic_file *af, const char *path)
{
	int err;

	af->path = path;
	af->fd = -1;
	if (asprintf(&af->tmp, "%s.tmpXXXXXX", path) < 0) {
		af->tmp = NULL;
		return -ENOMEM;
	}
	af->fd = mkostemp(af->tmp, O_CLOEXEC);
	if (af->fd < 0 || fchmod(af->fd, 0644)) {
		err = -errno;
		if (af->fd >= 0) {
			close(af->fd);
			unlink(af->tmp);
		}
		free(af->tmp);
		af->tmp = NULL;
		return err;
	}
	return 0;
}

int atomic_file_commit(struct atomic_file *af, int err)
{
	/* Data on disk before the rename makes it visible. */
	if (!err && fsync(af->fd))
		err = -errno;
	if (close(af->fd) && !err)
		err = -errno;
	if (!err && rename(af->tmp, af->path))
		err = -errno;
	if (err)
		unlink(af->tmp);
	free(af->tmp);
	af->tmp = NULL;
	af->fd = -1;
	return err;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	struct atomic_file af;
	int err = atomic_file_begin(&af, path);

	if (err)
		return err;
	return atomic_file_commit(&af, write_all(af.fd, data, len));
}
