// SPDX-License-Identifier: GPL-2.0
/*
 * kernel_notes.c - the running kernel's GNU build ID from the ELF notes
 * the kernel exports in /sys/kernel/notes (Elf64_Nhdr records, 4-byte
 * aligned name and descriptor, as in the ELF gABI "Note Section").
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "symbol/kernel_notes.h"

#define ALIGN4(x) (((x) + 3u) & ~3u)

int kernel_build_id(const char *notes_path, char *out, size_t len)
{
	unsigned char buf[4096];
	ssize_t n;
	size_t off = 0;
	int fd;

	if (len)
		out[0] = '\0';
	fd = open(notes_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return -errno;
	while (off + sizeof(Elf64_Nhdr) <= (size_t)n) {
		Elf64_Nhdr nh;
		size_t name_off, desc_off;

		memcpy(&nh, buf + off, sizeof(nh));
		name_off = off + sizeof(nh);
		desc_off = name_off + ALIGN4((size_t)nh.n_namesz);
		if (nh.n_namesz > (size_t)n || nh.n_descsz > (size_t)n ||
		    desc_off + nh.n_descsz > (size_t)n)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(buf + name_off, "GNU", 4)) {
			if (len < 2 * (size_t)nh.n_descsz + 1)
				return -ENOSPC;
			for (size_t i = 0; i < nh.n_descsz; i++)
				sprintf(out + 2 * i, "%02x", buf[desc_off + i]);
			return 0;
		}
		off = desc_off + ALIGN4((size_t)nh.n_descsz);
	}
	return -ENOENT;
}
