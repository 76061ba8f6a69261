// SPDX-License-Identifier: GPL-2.0
/*
 * discover.c - finding copies of the injection library in running
 * processes (gpu_discover_libraries(), struct gpu_discovery in gpu.h).
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
		fn(ctx, pid, &maps->v[i]);
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

void gpu_discovery_init(struct gpu_discovery *d, bool full_scans,
			gpu_library_fn fn, void *ctx)
{
	memset(d, 0, sizeof(*d));
	d->fn = fn;
	d->ctx = ctx;
	d->full_scans = full_scans;
}

void gpu_discovery_dlopen(struct gpu_discovery *d, pid_t pid, uint64_t now)
{
	for (unsigned int i = 0; i < d->nchecks; i++)
		if (d->checks[i].pid == pid)
			return;
	if (d->nchecks == GPU_DISCOVERY_CHECKS)
		return;
	/* at once: _dl_debug_state also runs after the mapping is made */
	d->checks[d->nchecks].pid = pid;
	d->checks[d->nchecks].due_ns = now;
	d->checks[d->nchecks++].again = true;
}

bool gpu_discovery_tick(struct gpu_discovery *d, uint64_t now)
{
	for (unsigned int i = 0; i < d->nchecks;) {
		if (d->checks[i].due_ns > now) {
			i++;
			continue;
		}
		gpu_discover_libraries(d->checks[i].pid, d->fn, d->ctx);
		if (d->checks[i].again) {
			d->checks[i].again = false;
			d->checks[i].due_ns = now + GPU_DISCOVERY_RECHECK_NS;
			i++;
		} else {
			d->checks[i] = d->checks[--d->nchecks];
		}
	}
	if (!d->full_scans || (d->last_scan_ns && now - d->last_scan_ns < GPU_DISCOVERY_SCAN_NS))
		return false;
	gpu_discover_libraries(-1, d->fn, d->ctx);
	d->last_scan_ns = now;
	return true;
}
