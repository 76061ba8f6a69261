/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kernel_notes.h - the running kernel's GNU build ID (/sys/kernel/notes).
 */
#ifndef PROFD_SYMBOL_KERNEL_NOTES_H
#define PROFD_SYMBOL_KERNEL_NOTES_H

#include <stddef.h>

/*
 * kernel_build_id - write the running kernel's build ID as lowercase hex
 * into @out (@len bytes, >= 41 for SHA-1 IDs), reading ELF notes from
 * @notes_path (normally "/sys/kernel/notes"). Returns 0, -ENOENT when no
 * NT_GNU_BUILD_ID note is present, or another negative errno; @out is ""
 * on failure.
 */
int kernel_build_id(const char *notes_path, char *out, size_t len);

#endif /* PROFD_SYMBOL_KERNEL_NOTES_H */
