// SPDX-License-Identifier: GPL-2.0
/*
 * vdso_object.c - the vDSO as a symbolizer object (see
 * symbolizer_internal.h).
 *
 * Owns: the one vDSO object, outside the symbolizer's hash. Every
 * process of the running kernel maps the same image, so profd's own
 * copy (getauxval(AT_SYSINFO_EHDR), its size from our [vdso] mapping:
 * proc/vdso.c) is read into memory once and handed out for every
 * "[vdso]" mapping of the same size. Processes of another ABI (ia32,
 * x32) map a different vDSO, below 4 GiB: those are refused rather than
 * misnamed. The vDSO exports a few names in .dynsym; its static
 * functions (vread_pvclock, the chacha block of getrandom) are named by
 * the kernel's unstripped copy when one with the same build ID is
 * installed (/usr/lib/debug/.build-id/, /lib/modules/RELEASE/vdso/,
 * /usr/lib/debug/lib/modules/RELEASE/vdso/), else by where their FDE
 * starts: "[vdso]+0x7a0", one frame per function whatever pc inside it
 * was sampled, never a guess at a nearby symbol.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "symbol/debuginfo.h"
#include "symbol/elf_file.h"
#include "symbol/symbolizer_internal.h"
#include "util/vdso.h"

/*
 * Attach the kernel's unstripped vDSO (same build ID) to @ef, if one is
 * installed: by build ID under /usr/lib/debug (debuginfo.c), else any
 * file in the running kernel's vdso/ folders (vdso64.so.dbg, vdso64.so;
 * elf_file_set_debug() refuses one of another build or without a
 * .symtab). Best effort: without one the .dynsym names and FDE names
 * serve.
 */
static void vdso_attach_debug(struct elf_file *ef)
{
	static const char *const dirs[] = {
		"/lib/modules/%s/vdso", DEBUGINFO_DIR "/lib/modules/%s/vdso",
	};
	struct utsname u;
	char dir[512];

	if (!elf_file_build_id(ef)[0] || uname(&u))
		return;
	if (debuginfo_attach(ef, NULL, NULL, NULL, 0) != -ENOENT)
		return;		/* attached, or has one, or out of memory */
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct dirent *de;
		DIR *d;

		snprintf(dir, sizeof(dir), dirs[i], u.release);
		d = opendir(dir);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			int fd;

			if (de->d_name[0] == '.')
				continue;
			fd = openat(dirfd(d), de->d_name,
				    O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (fd >= 0 && elf_file_set_debug(ef, fd) == 0) {
				closedir(d);
				return;
			}
		}
		closedir(d);
	}
}

/*
 * Read our own vDSO into s->vdso, or set s->vdso_err. The image is
 * copied from our [vdso] mapping, which starts at AT_SYSINFO_EHDR.
 */
static void vdso_load(struct symbolizer *s)
{
	struct sym_object *o;
	uintptr_t base;
	size_t size;
	int ret;

	ret = own_vdso(&base, &size);
	if (ret) {
		s->vdso_err = ret;
		return;
	}
	s->vdso_start = base;
	s->vdso_size = size;

	o = calloc(1, sizeof(*o));
	if (!o) {
		s->vdso_err = -ENOMEM;
		return;
	}
	o->ef = elf_file_open_mem((const void *)base, s->vdso_size, &ret);
	if (!o->ef) {
		free(o);
		s->vdso_err = ret < 0 ? ret : -EIO;
		return;
	}
	vdso_attach_debug(o->ef);
	o->vdso = true;
	o->owner = s;
	o->refs = 1;
	s->vdso = o;
}

/* sym_vdso_get - see symbolizer_internal.h. */
struct sym_object *sym_vdso_get(struct symbolizer *s,
				     const struct proc_mapping *m, int *err)
{
	const uint64_t low = 1ULL << 32;

	if (!s->vdso && !s->vdso_err)
		vdso_load(s);
	if (!s->vdso) {
		*err = s->vdso_err;
		return NULL;
	}
	if (m->end - m->start != s->vdso_size ||
	    (m->end <= low && s->vdso_start >= low)) {
		*err = -ENOEXEC;	/* another ABI's vDSO */
		return NULL;
	}
	return sym_object_get(s->vdso);
}

/* sym_vdso_fde_name - see symbolizer_internal.h. */
const char *sym_vdso_fde_name(struct sym_object *o, uint64_t vaddr,
			      uint64_t *start)
{
	uint64_t end;
	char name[32], **grown;

	if (elf_file_cfi_range(o->ef, vaddr, start, &end))
		return NULL;
	snprintf(name, sizeof(name), "[vdso]+0x%" PRIx64, *start);
	for (uint32_t i = 0; i < o->fde_names_n; i++)
		if (!strcmp(o->fde_names[i], name))
			return o->fde_names[i];
	if (o->fde_names_n >= VDSO_FDE_NAMES_MAX)
		return NULL;
	grown = realloc(o->fde_names, (o->fde_names_n + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	o->fde_names = grown;
	grown[o->fde_names_n] = strdup(name);
	return grown[o->fde_names_n] ? grown[o->fde_names_n++] : NULL;
}
