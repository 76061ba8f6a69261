// SPDX-License-Identifier: GPL-2.0
/*
 * elf_syms.c - named symbols of an ELF object for runtime detectors
 * (see elf_syms.h).
 */
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/elf_syms.h"

/* runtime_elf_sym_strings - see elf_syms.h. */
Elf_Data *runtime_elf_sym_strings(Elf *elf, const GElf_Shdr *sh)
{
	Elf_Scn *scn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr ssh;
	Elf_Data *d;

	if (!scn || !gelf_getshdr(scn, &ssh) || ssh.sh_type != SHT_STRTAB)
		return NULL;
	d = elf_getdata(scn, NULL);
	return d && d->d_buf && d->d_size ? d : NULL;
}

/*
 * The piece of a string table read at a time by runtime_elf_strings_hold(),
 * and the longest needle it looks for (longer: -EINVAL).
 */
#define HOLD_PIECE	(64u << 10)
#define HOLD_NEEDLE_MAX	256u

/* runtime_elf_strings_hold - see elf_syms.h. */
int runtime_elf_strings_hold(Elf *elf, int fd, const GElf_Shdr *sh, const char *needle)
{
	size_t len = strlen(needle) + 1, keep = 0;
	Elf_Scn *scn = elf_getscn(elf, sh->sh_link);
	uint64_t off, end;
	GElf_Shdr ssh;
	int ret = 0;
	char *buf;

	if (len > HOLD_NEEDLE_MAX)
		return -EINVAL;
	if (!scn || !gelf_getshdr(scn, &ssh) || ssh.sh_type != SHT_STRTAB ||
	    ssh.sh_flags & SHF_COMPRESSED)
		return -EINVAL;
	off = ssh.sh_offset;
	if (__builtin_add_overflow(off, ssh.sh_size, &end) || end > INT64_MAX)
		return -EINVAL;
	/* on the heap: a thread-local buffer this size took the static TLS
	 * small thread stacks have no room for */
	if (!(buf = malloc(HOLD_NEEDLE_MAX + HOLD_PIECE)))
		return -ENOMEM;
	while (off < end) {
		size_t want = end - off < HOLD_PIECE ? end - off : HOLD_PIECE;
		ssize_t n = pread(fd, buf + keep, want, (off_t)off);

		if (n <= 0) {
			/* n == 0: shorter than its header says */
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		if (memmem(buf, keep + n, needle, len)) {
			ret = 1;
			break;
		}
		/* the needle's first len - 1 bytes may end this piece */
		if (keep + n >= len - 1) {
			memmove(buf, buf + keep + n - (len - 1), len - 1);
			keep = len - 1;
		} else {
			keep += n;
		}
		off += n;
	}
	free(buf);
	return ret;
}

static size_t scan(Elf *elf, Elf_Scn *scn, const Elf_Data *strs, const char *const *names,
		   size_t n, struct runtime_elf_sym *out, size_t found)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const char *str = strs->d_buf;
	size_t strsz = strs->d_size, entsz, count;

	entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!d || !entsz)
		return found;
	count = d->d_size / entsz;
	if (count > INT_MAX)
		count = INT_MAX;
	for (size_t i = 1; i < count && found < n; i++) {
		const char *name;
		size_t room;
		GElf_Sym sym;

		if (!gelf_getsym(d, (int)i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || sym.st_name >= strsz)
			continue;
		name = str + sym.st_name;
		room = strsz - sym.st_name;
		for (size_t k = 0; k < n; k++) {
			size_t len = strlen(names[k]);

			if (out[k].found || room < len + 1 || memcmp(name, names[k], len + 1))
				continue;
			out[k] = (struct runtime_elf_sym){ sym.st_value, sym.st_size, true };
			found++;
			break;
		}
	}
	return found;
}

size_t runtime_elf_find_syms(Elf *elf, int fd, const char *const *names, size_t n,
			     struct runtime_elf_sym *out, const char *needle)
{
	Elf_Scn *scn = NULL, *tabs[2] = { NULL, NULL };
	GElf_Shdr shs[2], sh;
	size_t found = 0;
	Elf_Data *strs;

	memset(out, 0, n * sizeof(*out));
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM && !tabs[0]) {
			tabs[0] = scn;
			shs[0] = sh;
		} else if (sh.sh_type == SHT_SYMTAB && !tabs[1]) {
			tabs[1] = scn;
			shs[1] = sh;
		}
	}
	for (int t = 0; t < 2 && found < n; t++)
		if (tabs[t] && (!needle || fd < 0 ||
				runtime_elf_strings_hold(elf, fd, &shs[t], needle) != 0) &&
		    (strs = runtime_elf_sym_strings(elf, &shs[t])) &&
		    (!needle || memmem(strs->d_buf, strs->d_size, needle, strlen(needle) + 1)))
			found = scan(elf, tabs[t], strs, names, n, out, found);
	return found;
}
