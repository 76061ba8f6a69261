// SPDX-License-Identifier: GPL-2.0
/*
 * elf_detect.c - opening a mapped file as ELF for a runtime's detector
 * (see elf_detect.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "runtime/elf_detect.h"

int runtime_elf_begin(int fd, Elf **out)
{
	unsigned char magic[SELFMAG];
	struct stat st;
	ssize_t n;

	*out = NULL;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return 0;
	n = pread(fd, magic, sizeof(magic), 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(magic) || memcmp(magic, ELFMAG, SELFMAG))
		return 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	*out = elf_begin(fd, ELF_C_READ, NULL);
	return *out ? 1 : -ENOEXEC;
}
