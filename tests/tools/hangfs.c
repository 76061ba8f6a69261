// SPDX-License-Identifier: GPL-2.0
/*
 * hangfs.c - a FUSE file system of one file whose reads can hang.
 *
 * Usage: hangfs SRC TRIGGER MOUNTPOINT [fuse options]
 *
 * Serves /prog, a read-only copy of SRC (mode 0755, read into memory at
 * start), and the same bytes as /prog1, /prog2, ... and
 * /libprofd_inject.so (files of their own, each its own inode, all on
 * this one file system; the last one a file profd takes for a copy of
 * its CUDA/NVTX injection library). While the file TRIGGER exists, every read at or past offset
 * HANG_FROM (1 MiB) waits until TRIGGER is removed; reads below it are
 * served at once. Pages are kept cached across opens (keep_cache), so a
 * program exec'd from /prog keeps running from its first megabyte while
 * whatever reads its section headers (at the end of a file padded past
 * 1 MiB) blocks like on a FUSE server that stopped answering.
 *
 * Built by tests/test_hung_files.py with libfuse3 (Debian: libfuse3-dev).
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HANG_FROM	(1 << 20)

static char *data;
static size_t size;
static const char *trigger;

/* "/prog", "/prog" + digits or "/libprofd_inject.so" */
static bool is_prog(const char *path)
{
	if (!strcmp(path, "/libprofd_inject.so"))
		return true;
	if (strncmp(path, "/prog", 5))
		return false;
	for (path += 5; *path; path++)
		if (*path < '0' || *path > '9')
			return false;
	return true;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (!is_prog(path))
		return -ENOENT;
	st->st_mode = S_IFREG | 0755;
	st->st_nlink = 1;
	st->st_size = size;
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "prog", NULL, 0, 0);
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	if (!is_prog(path))
		return -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	fi->keep_cache = 1;
	return 0;
}

static int fs_read(const char *path, char *buf, size_t len, off_t off,
		   struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	while (off + (off_t)len > HANG_FROM && !access(trigger, F_OK))
		usleep(20 * 1000);
	if ((size_t)off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	memcpy(buf, data + off, len);
	return len;
}

static const struct fuse_operations ops = {
	.getattr = fs_getattr,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
};

int main(int argc, char **argv)
{
	FILE *f;
	long n;

	if (argc < 4) {
		fprintf(stderr, "usage: hangfs SRC TRIGGER MOUNTPOINT [fuse options]\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		perror(argv[1]);
		return 1;
	}
	size = n;
	data = malloc(size ? size : 1);
	if (!data || fread(data, 1, size, f) != size) {
		perror(argv[1]);
		return 1;
	}
	fclose(f);
	trigger = argv[2];
	/* fuse_main(MOUNTPOINT -f [options]): argv[0] stays the program's */
	argv[2] = argv[0];
	return fuse_main(argc - 2, argv + 2, &ops, NULL);
}
