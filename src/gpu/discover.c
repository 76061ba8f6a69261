// SPDX-License-Identifier: GPL-2.0
/*
 * discover.c - finding copies of the injection library in running
 * processes (see gpu_discover_libraries() in gpu.h).
 *
 * BPF reports a process mapping the library (PROFD_EVENT_LIB_MAPPED) and
 * the agent looks at that process; the maps re-read on samples and a slow
 * scan of every process cover kernels where that probe is missing. One
 * filter, gpu_library_mappings(), serves the maps the agent reads anyway
 * and the ones read here.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

unsigned int gpu_library_mappings(pid_t pid, const struct proc_maps *maps,
				  gpu_library_fn fn, void *ctx)
{
	const char *last = NULL;
	unsigned int found = 0;

	for (size_t i = 0; i < maps->n; i++) {
		const char *path = maps->v[i].path, *base = strrchr(path, '/');

		/* the file's name, not a directory on its path; once per file */
		if (!base || !strstr(base, GPU_INJECT_LIBRARY_NAME) ||
		    (last && !strcmp(last, path)))
			continue;
		last = path;
		fn(ctx, pid, path);
		found++;
	}
	return found;
}

static unsigned int scan_pid(pid_t pid, gpu_library_fn fn, void *ctx)
{
	struct proc_maps maps;
	unsigned int found;

	if (proc_maps_read(pid, &maps))
		return 0;
	found = gpu_library_mappings(pid, &maps, fn, ctx);
	proc_maps_free(&maps);
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
