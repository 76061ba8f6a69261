/* SPDX-License-Identifier: GPL-2.0 */
/*
 * debuginfo.h - finding an object's separate debug file.
 *
 * Owns: the search for the file that holds the .symtab and the DWARF a
 * stripped object lost (Debian's libc6-dbg, *-dbgsym packages, objcopy
 * --only-keep-debug; `strip -g` keeps the .symtab and loses the DWARF
 * alone), in the places GDB looks:
 *   1. /usr/lib/debug/.build-id/<first 2 hex>/<rest>.debug  (build ID)
 *   2. the .gnu_debuglink name in the object's directory,
 *   3. ... in its .debug/ subdirectory,
 *   4. ... in /usr/lib/debug/<the object's directory>/,
 * each under the process's root first and the host's root second. A
 * candidate is accepted only when its build ID equals the object's;
 * debuglink candidates must also match the CRC32 the link records.
 */
#ifndef PROFD_SYMBOL_DEBUGINFO_H
#define PROFD_SYMBOL_DEBUGINFO_H

#include <stddef.h>

struct elf_file;

#define DEBUGINFO_DIR "/usr/lib/debug"

/*
 * debuginfo_attach - find the debug file of @f and attach it with
 * elf_file_set_debug(). Does nothing for an object that has both a
 * .symtab and DWARF (.debug_info) of its own.
 * @root: the process's root as a path ("/proc/PID/root"), searched
 *	before the host's own root; NULL or "" to search the host only.
 *	Paths under it are resolved as if it were "/" (openat2
 *	RESOLVE_IN_ROOT where the kernel has it).
 * @obj_path: the object's absolute path as the process sees it, for the
 *	.gnu_debuglink places; NULL or relative: build ID only.
 * @found: if non-NULL, receives the path of the file attached (under
 *	@root if found there; truncated to @found_len bytes), "" otherwise.
 * Returns 0 when a debug file was attached, -EEXIST when @f has a .symtab
 * and DWARF, or a debug file, already, -ENOENT when no acceptable file was found,
 * -ENOMEM. Costs a few failed open()s for an object without one; a
 * debuglink candidate is read whole once for its CRC.
 */
int debuginfo_attach(struct elf_file *f, const char *root,
		     const char *obj_path, char *found, size_t found_len);

#endif /* PROFD_SYMBOL_DEBUGINFO_H */
