// SPDX-License-Identifier: GPL-2.0
/*
 * detect.c - is this ELF object a CPython interpreter, and which one?
 * (see detect.h).
 *
 * Owns: nothing past one call. Each call opens a libelf handle on the
 * descriptor with ELF_C_READ (libelf reads what it is asked for with
 * pread: no mapping, so a file truncated under us is a read error, not
 * a SIGBUS, and the descriptor's offset is left alone) and closes it.
 *
 * Speed: profd asks this of every distinct file any process maps, and
 * nearly all of them are not Python. A file that is not a regular ELF
 * file costs an fstat and a 4-byte pread. An ELF file costs its section
 * headers and the string tables of its symbol tables (.dynstr, and
 * .strtab when there is a .symtab), searched with memmem for
 * "_PyRuntime": only when one holds it are the symbols walked. The
 * .strtab is searched even when .dynstr misses, so an interpreter linked
 * without exporting its symbols (a static build) is still found.
 *
 * Symbols: defined (st_shndx != SHN_UNDEF) symbols only, so an extension
 * module that imports _PyRuntime is not an interpreter. .dynsym is read
 * first, .symtab then fills what it lacks (the local
 * _PyEval_EvalFrameDefault.cold, where gcc split the function, is only
 * there).
 *
 * Version, 3.11+: Py_Version, a `const unsigned long` holding
 * PY_VERSION_HEX (Include/patchlevel.h: 0xMMmmuuLS), read from the file
 * image of the section that holds it.
 *
 * Version, before 3.11: the PY_VERSION string ("3.9.18", "3.10.0rc2",
 * Debian's "3.9.2+"). Searching .rodata for it is not enough, on the
 * binaries of this very machine:
 *  - pyenv's builds have no standalone "\0" "3.9.18\0": the linker
 *    merges string literals that are the tail of another, and PY_VERSION
 *    is the tail of the install prefix ".../versions/3.9.18";
 *  - Debian's python3.11 has two standalone candidates, "3.11.2" and
 *    "3.2.0" (unicodedata's UCD 3.2.0 database version).
 * So the string is found the way CPython itself uses it: Py_GetVersion()
 * formats "%.80s (%.80s) %.80s" with PY_VERSION, and on x86-64 its code
 * loads the string's address with a rip-relative `lea` (PIC) or a
 * `mov $imm32` (non-PIE). Every such address in its first bytes is
 * tried; the one that holds a version string wins (a byte pattern that
 * is not really an instruction points at no version string, so scanning
 * bytes rather than decoding instructions is safe). Where that fails
 * (another architecture, Py_GetVersion stripped), .rodata is scanned for
 * "3.N.M[suffix]\0" not preceded by a digit or a dot, and the version is
 * taken only when every candidate agrees; otherwise it is -ENOTSUP.
 *
 * Input is untrusted: sizes and offsets from the file are only used
 * through libelf's checked accessors (gelf_getsym, elf_getdata,
 * elf_getdata_rawchunk, which refuse data past the end of the file) and
 * checked again before any access here.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "python/detect.h"
#include "runtime/elf_detect.h"
#include "runtime/elf_syms.h"
#include "util/elf_section.h"

enum py_sym {
	SYM_RUNTIME,
	SYM_EVAL,
	SYM_EVAL_COLD,
	SYM_CODE_TYPE,
	SYM_UNICODE_TYPE,
	SYM_BYTES_TYPE,
	SYM_PY_VERSION,
	SYM_GET_VERSION,
	NSYMS
};

/* What find_symbols() looks up, by enum py_sym. */
static const char *const sym_names[NSYMS] = {
	[SYM_RUNTIME]		= "_PyRuntime",
	[SYM_EVAL]		= "_PyEval_EvalFrameDefault",
	[SYM_EVAL_COLD]		= "_PyEval_EvalFrameDefault.cold",
	[SYM_CODE_TYPE]		= "PyCode_Type",
	[SYM_UNICODE_TYPE]	= "PyUnicode_Type",
	[SYM_BYTES_TYPE]	= "PyBytes_Type",
	[SYM_PY_VERSION]	= "Py_Version",
	[SYM_GET_VERSION]	= "Py_GetVersion",
};

/* Bytes of Py_GetVersion searched for the address of PY_VERSION. */
#define GETVERSION_SCAN	256
/* Longest version string read: "3.NNN.NNNrcNNN+" and its NUL. */
#define VERSION_MAX	24

/* ---- symbols ---------------------------------------------------------- */

/*
 * Fill @syms from .dynsym, then .symtab. A table is only walked when its
 * string table holds "_PyRuntime": the cheap reject of everything else.
 */
static void find_symbols(Elf *elf, int fd, struct runtime_elf_sym *syms)
{
	runtime_elf_find_syms(elf, fd, sym_names, NSYMS, syms, "_PyRuntime");
}

/* ---- file image ------------------------------------------------------- */

/*
 * Copy up to @len bytes at virtual address @addr from the file image of
 * the allocated section holding @addr, stopping at the section's end.
 * Returns the number of bytes copied (> 0), -ENOENT when no section
 * with file data holds @addr, -EIO when libelf cannot read it.
 */
static ssize_t read_vaddr(Elf *elf, uint64_t addr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		uint64_t rel, off;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    sh.sh_type == SHT_NOBITS)
			continue;
		if (addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size)
			continue;
		rel = addr - sh.sh_addr;
		if (len > sh.sh_size - rel)
			len = sh.sh_size - rel;
		off = sh.sh_offset + rel;
		if (off < sh.sh_offset || off > INT64_MAX)
			return -EIO;
		d = elf_getdata_rawchunk(elf, (int64_t)off, len, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size < len)
			return -EIO;
		memcpy(buf, d->d_buf, len);
		return (ssize_t)len;
	}
	return -ENOENT;
}

static uint32_t get_u32(const unsigned char *p, bool big_endian)
{
	if (big_endian)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		       (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

/* ---- version ---------------------------------------------------------- */

/* 1 to 3 decimal digits at @s[*i], below @n; advances *i. */
static bool parse_num(const char *s, size_t n, size_t *i, unsigned int *v)
{
	size_t start = *i;

	*v = 0;
	while (*i < n && s[*i] >= '0' && s[*i] <= '9' && *i - start < 3)
		*v = *v * 10 + (unsigned int)(s[(*i)++] - '0');
	return *i > start;
}

/*
 * Is @s[0..@n) a PY_VERSION string: "3.<minor>.<micro>", optionally a
 * release level ("a1", "b2", "rc1") and a "+" (Include/patchlevel.h;
 * "+" marks builds past a tag, as Debian's), then a NUL?
 */
static bool parse_version(const char *s, size_t n, unsigned int *minor,
			  unsigned int *micro)
{
	unsigned int serial;
	size_t i = 2;

	if (n < 2 || s[0] != '3' || s[1] != '.')
		return false;
	if (!parse_num(s, n, &i, minor) || i >= n || s[i++] != '.' ||
	    !parse_num(s, n, &i, micro))
		return false;
	if (i < n && (s[i] == 'a' || s[i] == 'b')) {
		i++;
		if (!parse_num(s, n, &i, &serial))
			return false;
	} else if (i + 1 < n && s[i] == 'r' && s[i + 1] == 'c') {
		i += 2;
		if (!parse_num(s, n, &i, &serial))
			return false;
	}
	if (i < n && s[i] == '+')
		i++;
	return i < n && s[i] == '\0';
}

/* Is the string at virtual address @addr a PY_VERSION? */
static bool version_at(Elf *elf, uint64_t addr, struct py_binary *out)
{
	char buf[VERSION_MAX];
	ssize_t n = read_vaddr(elf, addr, buf, sizeof(buf));

	return n > 0 && parse_version(buf, (size_t)n, &out->minor, &out->micro);
}

/* Version from Py_Version (PY_VERSION_HEX). Returns true when valid. */
static bool version_from_hex(Elf *elf, const GElf_Ehdr *eh,
			     const struct runtime_elf_sym *s, struct py_binary *out)
{
	bool be = eh->e_ident[EI_DATA] == ELFDATA2MSB;
	unsigned char buf[8];
	unsigned int level;
	uint32_t hex;

	/* unsigned long: 8 bytes on LP64 (the value is its low half), 4 on ILP32 */
	if (s->size != 4 && s->size != 8)
		return false;
	if (read_vaddr(elf, s->value, buf, s->size) != (ssize_t)s->size)
		return false;
	hex = get_u32(buf + (be && s->size == 8 ? 4 : 0), be);
	if (s->size == 8 && get_u32(buf + (be ? 0 : 4), be))
		return false;
	/* PY_RELEASE_LEVEL_ALPHA 0xA ... PY_RELEASE_LEVEL_FINAL 0xF */
	level = (hex >> 4) & 0xf;
	if (hex >> 24 != 3 || (level != 0xa && level != 0xb && level != 0xc &&
				level != 0xf))
		return false;
	out->major = 3;
	out->minor = (hex >> 16) & 0xff;
	out->micro = (hex >> 8) & 0xff;
	return true;
}

/*
 * Version from the string Py_GetVersion() formats (x86-64): try every
 * address its first GETVERSION_SCAN bytes load, see the file comment.
 */
static bool version_from_getversion(Elf *elf, const GElf_Ehdr *eh,
				    const struct runtime_elf_sym *s, struct py_binary *out)
{
	unsigned char code[GETVERSION_SCAN];
	size_t len = s->size && s->size < sizeof(code) ? s->size : sizeof(code);
	ssize_t got;
	size_t i;

	if (eh->e_machine != EM_X86_64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return false;
	got = read_vaddr(elf, s->value, code, len);
	if (got <= 0)
		return false;
	for (i = 0; i + 5 <= (size_t)got; i++) {
		uint64_t target;

		if (i + 7 <= (size_t)got && (code[i] & 0xfb) == 0x48 &&
		    code[i + 1] == 0x8d && (code[i + 2] & 0xc7) == 0x05) {
			/* lea disp32(%rip), %r64 (REX.W or REX.WR): relative
			 * to the end of the 7-byte instruction */
			target = s->value + i + 7 +
				 (uint64_t)(int64_t)(int32_t)get_u32(code + i + 3, false);
		} else if (eh->e_type == ET_EXEC && code[i] >= 0xb8 &&
			   code[i] <= 0xbf) {
			/* mov $imm32, %r32 (absolute, non-PIE only) */
			target = get_u32(code + i + 1, false);
		} else {
			continue;
		}
		if (version_at(elf, target, out)) {
			out->major = 3;
			return true;
		}
	}
	return false;
}

/*
 * Version from the "3.N.M[suffix]\0" strings of .rodata not preceded by
 * a digit or a dot, when all of them agree. Returns true when found.
 */
static bool version_from_rodata(Elf *elf, struct py_binary *out)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elf_section_by_type(elf, ".rodata", SHT_PROGBITS, &sh);
	unsigned int minor, micro;
	bool found = false;
	Elf_Data *d;
	const char *buf, *p;
	size_t size, pos = 0;

	d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf)
		return false;
	buf = d->d_buf;
	size = d->d_size;
	while (pos < size && (p = memmem(buf + pos, size - pos, "3.", 2))) {
		size_t at = (size_t)(p - buf);

		pos = at + 1;
		if (at > 0 && ((buf[at - 1] >= '0' && buf[at - 1] <= '9') ||
			       buf[at - 1] == '.'))
			continue;
		if (!parse_version(p, size - at, &minor, &micro))
			continue;
		if (found && (minor != out->minor || micro != out->micro))
			return false;	/* ambiguous */
		out->minor = minor;
		out->micro = micro;
		found = true;
	}
	if (found)
		out->major = 3;
	return found;
}

/* ---- entry points ----------------------------------------------------- */

static int detect_elf(Elf *elf, int fd, struct py_binary *out)
{
	struct runtime_elf_sym syms[NSYMS];
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF)
		return 0;
	if (!gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return 0;
	find_symbols(elf, fd, syms);
	if (!syms[SYM_RUNTIME].found || !syms[SYM_EVAL].found)
		return 0;

	out->runtime = syms[SYM_RUNTIME].value;
	out->eval_start = syms[SYM_EVAL].value;
	out->eval_end = out->eval_start + syms[SYM_EVAL].size;
	if (syms[SYM_EVAL_COLD].found) {
		out->eval_cold_start = syms[SYM_EVAL_COLD].value;
		out->eval_cold_end = out->eval_cold_start +
				     syms[SYM_EVAL_COLD].size;
	}
	out->code_type = syms[SYM_CODE_TYPE].value;
	out->unicode_type = syms[SYM_UNICODE_TYPE].value;
	out->bytes_type = syms[SYM_BYTES_TYPE].value;

	if (syms[SYM_PY_VERSION].found &&
	    version_from_hex(elf, &eh, &syms[SYM_PY_VERSION], out))
		return 1;
	out->major = out->minor = out->micro = 0;
	if (syms[SYM_GET_VERSION].found &&
	    version_from_getversion(elf, &eh, &syms[SYM_GET_VERSION], out))
		return 1;
	out->major = out->minor = out->micro = 0;
	if (version_from_rodata(elf, out))
		return 1;
	out->major = out->minor = out->micro = 0;
	return -ENOTSUP;
}

/*
 * py_detect_fd - see detect.h. Only regular files are read (a mapped
 * device must never be read). Cost for a file that is not Python: see
 * the file comment.
 */
int py_detect_fd(int fd, struct py_binary *out)
{
	Elf *elf;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = runtime_elf_begin(fd, &elf);
	if (ret <= 0)
		return ret;
	ret = detect_elf(elf, fd, out);
	elf_end(elf);
	return ret;
}

/* py_detect_path - see detect.h. */
int py_detect_path(const char *path, struct py_binary *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return -errno;
	}
	ret = py_detect_fd(fd, out);
	close(fd);
	return ret;
}
