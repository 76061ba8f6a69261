// SPDX-License-Identifier: GPL-2.0
/*
 * elf_detect.h - what every runtime's detector does first with a mapped
 * file: open it as ELF, if it is one, without reading anything else.
 */
#ifndef PROFD_RUNTIME_ELF_DETECT_H
#define PROFD_RUNTIME_ELF_DETECT_H

#include <libelf.h>

/*
 * runtime_elf_begin - an ELF handle (read with pread, ELF_C_READ) for the
 * file open on @fd (not taken over), only if it is a regular file (a
 * mapped device must never be read) starting with the ELF magic. Returns
 * 1 and *@out (the caller elf_end()s it), 0 when it is not such a file,
 * or a negative errno (-ENOSYS: libelf unusable, -ENOEXEC: libelf
 * refused it, or fstat's/pread's error).
 */
int runtime_elf_begin(int fd, Elf **out);

#endif /* PROFD_RUNTIME_ELF_DETECT_H */
