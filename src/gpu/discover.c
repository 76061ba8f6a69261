// SPDX-License-Identifier: GPL-2.0
/*
 * discover.c - finding copies of the injection library in running
 * processes (see gpu_discover_libraries() in gpu.h).
 *
 * The maps re-read on a process's samples finds a library a busy process
 * loads; this scan also finds it in processes that sleep between launches
 * and are rarely sampled. Only /proc/PID/maps lines naming the library
 * are looked at.
 */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

unsigned int gpu_discover_libraries(gpu_library_fn fn, void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned int found = 0;
	char path[300], line[PATH_MAX + 256];

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		FILE *f;
		char last[PATH_MAX] = "";

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/maps", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char *file = strchr(line, '/'), *nl;

			if (!file || !strstr(file, GPU_INJECT_LIBRARY_NAME))
				continue;
			nl = strchr(file, '\n');
			if (nl)
				*nl = '\0';
			if (!strcmp(file, last))
				continue;
			snprintf(last, sizeof(last), "%s", file);
			fn(ctx, atoi(de->d_name), file);
			found++;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}
