/* SPDX-License-Identifier: GPL-2.0 */
/*
 * plt.h - x86-64 PLT stubs named "symbol@plt" from their relocations
 * (internal to src/symbol; elf_symtab.c adds them as synthetic symbols).
 *
 * Owns: decoding the stubs of .plt, .plt.sec and .plt.got, the GOT slot
 * each one jumps through, and the relocation (R_X86_64_JUMP_SLOT in
 * .rela.plt, R_X86_64_GLOB_DAT in .rela.dyn, R_X86_64_IRELATIVE) whose
 * r_offset is that slot, which names the stub after its .dynsym symbol,
 * as perf does (IRELATIVE: after the IFUNC its addend resolves).
 */
#ifndef PROFD_SYMBOL_PLT_H
#define PROFD_SYMBOL_PLT_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* One PLT stub whose GOT slot matched a named relocation. */
struct plt_stub {
	uint64_t addr;		/* ELF virtual address of the stub's first byte */
	uint64_t size;		/* bytes: the section's entry size */
	const char *name;	/* .dynsym name, inside libelf's data of the
				 * Elf handle read (valid until its elf_end) */
};

struct plt_stubs {
	struct plt_stub *v;	/* by section, then address */
	size_t n;
	size_t unmatched;	/* stubs decoded whose slot matched no named
				 * relocation: left unnamed */
};

/*
 * plt_stubs_read - the named PLT stubs of @elf (an x86-64 ELFCLASS64
 * object with its section headers; any other object has none) into @out
 * (free with plt_stubs_free()). A stub is named only when it decodes as
 * [endbr64] [bnd] jmp *disp32(%rip) and the GOT slot it jumps through is
 * the r_offset of exactly one R_X86_64_JUMP_SLOT or R_X86_64_GLOB_DAT
 * relocation of a .dynsym symbol with a name, or of an
 * R_X86_64_IRELATIVE relocation whose addend (the IFUNC resolver's
 * address) is the value of a defined STT_GNU_IFUNC .dynsym symbol (a
 * library's calls to its own memcpy: "memcpy@plt"; of aliases the name
 * with the fewest leading underscores, GLOBAL before WEAK): no name from
 * the entry's index alone. IBT lazy-binding .plt entries (endbr64; push $index) are
 * named when relocation number index of .rela.plt points to a GOT slot
 * whose file contents hold that entry's address (the lazy-binding
 * target). Specs: System V ABI AMD64 supplement 1.0, sections 5.2
 * ("Procedure Linkage Table") and 4.4 (relocation types); binutils'
 * elf_x86_64 PLT layouts (lazy, IBT .plt.sec, .plt.got).
 * Input is untrusted: every read is bounded by libelf's section data.
 * Returns 0 (@out may be empty), or -ENOMEM (@out left empty).
 */
int plt_stubs_read(Elf *elf, struct plt_stubs *out);

/* plt_stubs_free - free @s's array and leave it empty. */
void plt_stubs_free(struct plt_stubs *s);

#endif /* PROFD_SYMBOL_PLT_H */
