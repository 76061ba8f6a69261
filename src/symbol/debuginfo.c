// SPDX-License-Identifier: GPL-2.0
/*
 * debuginfo.c - finding an object's separate debug file (see debuginfo.h).
 *
 * Owns: the candidate paths, opening them inside a process's root, and
 * the .gnu_debuglink CRC32 check (zlib's crc32 is the CRC the link
 * records). Whether a candidate fits (ELF, .symtab, same build ID) is
 * elf_file's call: elf_file_check_debug() / elf_file_set_debug().
 *
 * Candidates come from untrusted places (a container's file system, a
 * name inside a mapped file), so every open is O_NONBLOCK (a FIFO planted
 * at a candidate path must not hang the reader thread) and anything but
 * a regular file is skipped before it is read. Inside a process's root,
 * openat2(RESOLVE_IN_ROOT) keeps absolute symlinks in that root (the
 * fallback on kernels without it, /proc/PID/root/PATH, may follow them
 * out of it; the build ID check still rejects a wrong file).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include "symbol/debuginfo.h"
#include "symbol/elf_file.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define CRC_CHUNK	(64 << 10)	/* bytes read per pread for the CRC */
#define OPEN_FLAGS	(O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

struct search {
	struct elf_file *f;
	const char *root;	/* process root path, or NULL: host only */
	int rootfd;		/* O_PATH fd of @root, or -1 */
	char *found;
	size_t found_len;
};

/* The CRC32 (zlib's, as .gnu_debuglink uses) of all of @fd. */
static int file_crc32(int fd, uint32_t *out)
{
	unsigned char *buf = malloc(CRC_CHUNK);
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r = pread(fd, buf, CRC_CHUNK, off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (!r)
			break;
		crc = crc32(crc, buf, (uInt)r);
		off += r;
	}
	free(buf);
	*out = (uint32_t)crc;
	return ret;
}

/*
 * Open absolute @path inside the process root (pass 0) or on the host
 * (pass 1). Returns a regular file's fd or -errno.
 */
static int open_candidate(const struct search *s, const char *path, int pass)
{
	static bool no_openat2;	/* kernel older than 5.6 */
	struct open_how how = {
		.flags = OPEN_FLAGS,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	char *full;
	int fd = -1;

	if (pass == 1) {
		fd = open(path, OPEN_FLAGS);
	} else {
		if (!no_openat2) {
			fd = (int)syscall(SYS_openat2, s->rootfd, path,
					  &how, sizeof(how));
			if (fd < 0 && errno == ENOSYS)
				no_openat2 = true;
		}
		if (no_openat2) {
			if (asprintf(&full, "%s%s", s->root, path) < 0)
				return -ENOMEM;
			fd = open(full, OPEN_FLAGS);
			free(full);
		}
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	return fd;
}

/*
 * Try @path under the process root, then on the host; @crc is checked
 * when @check_crc. Returns 0 once attached, -ENOENT to go on searching,
 * or a fatal -EEXIST/-ENOMEM.
 */
static int try_candidate(struct search *s, const char *path, bool check_crc,
			 uint32_t crc)
{
	int pass, fd, ret;
	uint32_t got;

	for (pass = s->rootfd >= 0 ? 0 : 1; pass < 2; pass++) {
		fd = open_candidate(s, path, pass);
		if (fd == -ENOMEM)
			return fd;
		if (fd < 0)
			continue;
		ret = elf_file_check_debug(s->f, fd);
		if (!ret && check_crc) {
			ret = file_crc32(fd, &got);
			if (!ret && got != crc)
				ret = -EBADMSG;
		}
		if (ret) {
			close(fd);
			if (ret == -EEXIST || ret == -ENOMEM)
				return ret;
			continue;
		}
		ret = elf_file_set_debug(s->f, fd);
		if (ret)
			return ret == -EEXIST ? ret : -ENOENT;
		if (s->found)
			snprintf(s->found, s->found_len, "%s%s",
				 pass ? "" : s->root, path);
		return 0;
	}
	return -ENOENT;
}

static int try_build_id(struct search *s)
{
	const char *bid = elf_file_build_id(s->f);
	char *path;
	int ret;

	if (strlen(bid) < 4)
		return -ENOENT;
	if (asprintf(&path, DEBUGINFO_DIR "/.build-id/%.2s/%s.debug", bid,
		     bid + 2) < 0)
		return -ENOMEM;
	ret = try_candidate(s, path, false, 0);
	free(path);
	return ret;
}

/* The three .gnu_debuglink places, in GDB's order. */
static int try_debuglink(struct search *s, const char *obj_path)
{
	static const char *const fmts[] = {
		"%s%.*s/%s",
		"%s%.*s/.debug/%s",
		DEBUGINFO_DIR "%s%.*s/%s",
	};
	const char *name, *slash;
	uint32_t crc = 0;
	size_t i;
	int ret = -ENOENT;

	name = elf_file_debuglink(s->f, &crc);
	if (!name || !obj_path || obj_path[0] != '/')
		return -ENOENT;
	slash = strrchr(obj_path, '/');
	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		char *path;

		if (asprintf(&path, fmts[i], "", (int)(slash - obj_path),
			     obj_path, name) < 0)
			return -ENOMEM;
		ret = try_candidate(s, path, true, crc);
		free(path);
		if (ret != -ENOENT)
			break;
	}
	return ret;
}

/* debuginfo_attach - see debuginfo.h. */
int debuginfo_attach(struct elf_file *f, const char *root,
		     const char *obj_path, char *found, size_t found_len)
{
	struct search s = {
		.f = f,
		.root = root,
		.rootfd = -1,
		.found = found_len ? found : NULL,
		.found_len = found_len,
	};
	int ret;

	if (s.found)
		s.found[0] = '\0';
	/* strip -g kept the names: the debug file is looked for its DWARF */
	if ((elf_file_has_symtab(f) && elf_file_has_dwarf(f)) ||
	    elf_file_has_debug(f))
		return -EEXIST;
	/*
	 * Even a root that is the host's "/" is searched twice: the process
	 * may see other mounts there (another mount namespace).
	 */
	if (root && root[0])
		s.rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ret = try_build_id(&s);
	if (ret == -ENOENT)
		ret = try_debuglink(&s, obj_path);
	if (s.rootfd >= 0)
		close(s.rootfd);
	return ret;
}
