// SPDX-License-Identifier: GPL-2.0
/*
 * discover.c - finding copies of the injection library in running
 * processes (see gpu_discover_libraries() in gpu.h).
 *
 * BPF reports a process mapping the library (PROFD_EVENT_LIB_MAPPED) and
 * the agent looks at that process; the maps re-read on samples and a slow
 * scan of every process cover kernels where that probe is missing. Only
 * /proc/PID/maps lines naming the library are looked at.
 */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

/* The library's files in @pid's maps, one call each. */
static unsigned int scan_pid(pid_t pid, gpu_library_fn fn, void *ctx)
{
	char path[64], line[PATH_MAX + 256], last[PATH_MAX] = "";
	unsigned int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *nl;

		if (!file)
			continue;
		nl = strchr(file, '\n');
		if (nl)
			*nl = '\0';
		/* the file's name, not a directory on its path */
		if (!strstr(strrchr(file, '/'), GPU_INJECT_LIBRARY_NAME))
			continue;
		if (!strcmp(file, last))
			continue;
		snprintf(last, sizeof(last), "%s", file);
		fn(ctx, pid, file);
		found++;
	}
	fclose(f);
	return found;
}

unsigned int gpu_discover_libraries(pid_t pid, gpu_library_fn fn, void *ctx)
{
	unsigned int found = 0;
	struct dirent *de;
	DIR *d;

	if (pid > 0)
		return scan_pid(pid, fn, ctx);
	d = opendir("/proc");
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0]))
			found += scan_pid(atoi(de->d_name), fn, ctx);
	closedir(d);
	return found;
}
