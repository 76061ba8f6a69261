/* SPDX-License-Identifier: GPL-2.0 */
/*
 * go_elf.h - finding a Go executable's tables in its ELF image, for
 * both readers of the pclntab: the unwinder (src/unwind/go.c: pcsp frame
 * sizes) and the symbolizer (src/symbol/go_symtab.c: names, lines,
 * inlined frames).
 *
 * Owns: where the pclntab is (its section: .gopclntab, or a PIE's
 * .data.rel.ro.gopclntab; else, in an image without section headers or
 * a Go executable whose linker merged the table into another section
 * (an externally linked PIE: .data.rel.ro), by its magic in a read-only
 * segment or the RELRO part of a writable one), the checks a table found
 * must pass (src/util/gopclntab.c's header and offsets, the function
 * table sorted and inside one executable segment, its first and last
 * _func), the text start a PIE's header may leave to a relocation,
 * runtime.firstmoduledata (the data word that points at the table, its
 * slices checked against the header: the table's exact end and
 * moduledata.gofunc, where Go 1.18+ keeps funcdata), a PIE's words as
 * its R_X86_64_RELATIVE relocations (PT_DYNAMIC's DT_RELA) give them,
 * and the Go version in the build info (.go.buildinfo, or its magic in
 * a writable segment). Spec: Go's src/runtime/symtab.go
 * (pcHeader, moduledata), cmd/link/internal/ld (symtab.go, data.go),
 * debug/buildinfo.
 *
 * The image is read through libelf by segment, or a section's range
 * alone (elf_getdata_rawchunk): what is returned points into @elf's
 * bytes and lives until elf_end().
 * Input is untrusted: every read is inside a PT_LOAD's file data, a scan
 * is bounded (size, tables checked in full).
 */
#ifndef PROFD_UTIL_GO_ELF_H
#define PROFD_UTIL_GO_ELF_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/gopclntab.h"

/* A pclntab found in an ELF image (go_elf_pclntab()). */
struct go_elf_pclntab {
	struct gopclntab pt;	/* parsed and checked; its bytes are @elf's */
	uint64_t vaddr;		/* the table's link-time address */
	bool by_magic;		/* found by its magic, not by a section */
	bool moduledata;	/* runtime.firstmoduledata found (asked for): pt.n is exact */
	uint64_t gofunc;	/* moduledata.gofunc (1.18+), 0 when unknown */
	const uint8_t *gofunc_p;/* go:func.* from gofunc on (@elf's bytes), or NULL */
	size_t gofunc_n;	/* its bytes: to the table or its segment's file end */
};

/*
 * go_elf_pclntab - find, check and parse @elf's pclntab into *@out
 * (its bytes borrowed from @elf: valid until elf_end()). A table found
 * by section must pass its checks; a scan takes the first table that
 * passes them. @funcdata: also find runtime.firstmoduledata (the table's
 * exact end, gofunc and go:func.*), which reads the writable segments and
 * the read-only one go:func.* is in; else pt.n is the section's size (the
 * segment's rest when found by magic). Returns 0; -ENOENT none (not a Go
 * executable, or not an x86-64 one); -EPROTONOSUPPORT a pclntab of an
 * unknown Go version; -EINVAL one that fails its checks, or moduledata
 * disagrees with it; -ENOMEM.
 */
int go_elf_pclntab(Elf *elf, bool funcdata, struct go_elf_pclntab *out);

/*
 * go_elf_version - the Go version ("go1.19.8") from @elf's build info
 * (Go 1.18+'s inline-string format), NUL-terminated into @buf of @n
 * bytes. Returns 0; -ENOENT no build info of that format; -ERANGE
 * longer than @buf.
 */
int go_elf_version(Elf *elf, char *buf, size_t n);

#endif /* PROFD_UTIL_GO_ELF_H */
