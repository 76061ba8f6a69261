// SPDX-License-Identifier: GPL-2.0
/*
 * vdso.c - profd's own vDSO image (see vdso.h).
 *
 * Owns: finding the [vdso] mapping that starts at AT_SYSINFO_EHDR in
 * /proc/self/maps. Only that one line matters, so the line is read with
 * sscanf() here rather than by the full parser (src/proc/maps.c), which
 * lives above the symbolizer that needs this.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "util/vdso.h"

int own_vdso(uintptr_t *base, size_t *size)
{
	uintptr_t b = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	uint64_t start, end;
	size_t cap = 0;
	char *line = NULL;
	int ret = -ENOENT;
	FILE *f;

	if (!b)
		return -ENOENT;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *path;
		int n = 0;

		/* start-end perms offset major:minor inode<spaces>pathname */
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %*s %n",
			   &start, &end, &n) < 2 || !n || start != b)
			continue;
		path = line + n;
		path[strcspn(path, "\n")] = '\0';
		if (!strcmp(path, "[vdso]") && end > start) {
			*base = b;
			*size = end - start;
			ret = 0;
		}
		break;
	}
	free(line);
	fclose(f);
	return ret;
}
