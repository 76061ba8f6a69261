// SPDX-License-Identifier: GPL-2.0
/*
 * vdso.c - profd's own vDSO image (see vdso.h).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>

#include "proc/maps.h"
#include "proc/vdso.h"

int own_vdso(uintptr_t *base, size_t *size)
{
	uintptr_t b = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	const struct proc_mapping *m;
	struct proc_maps maps;
	int ret;

	if (!b)
		return -ENOENT;
	ret = proc_maps_read(getpid(), &maps);
	if (ret)
		return ret;
	m = proc_maps_find(&maps, b);
	if (!m || m->start != b || strcmp(m->path, "[vdso]")) {
		proc_maps_free(&maps);
		return -ENOENT;
	}
	*base = b;
	*size = m->end - m->start;
	proc_maps_free(&maps);
	return 0;
}
