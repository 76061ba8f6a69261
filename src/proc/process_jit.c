// SPDX-License-Identifier: GPL-2.0
/*
 * process_jit.c - when a process's JIT symbol files are looked for and
 * read (see process_jit.h); the files themselves are src/symbol/jit_*.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "bpf/profd.h"
#include "proc/process_jit.h"
#include "util/clock.h"

/* Runtime frame tokens among the IPs (src/runtime/runtime.h): not addresses. */
#define IP_RUNTIME_TOKEN	(1ULL << 62)

bool proc_mapping_anon_exec(const struct proc_mapping *m)
{
	return m->executable && !m->inode &&
	       (!m->path[0] || !strncmp(m->path, "[anon:", 6));
}

uint32_t process_jit_bin(struct process_table *pt, struct process *p,
			 const uint64_t *ips, uint32_t n, uint64_t sample_ns,
			 uint64_t now)
{
	struct proc_snapshot *s = p->snap;
	bool anon = false, outside = false;

	if (!s || s->pid != p->pid)
		return 0;	/* none, or a forked child's view of its parent's */
	for (uint32_t i = 0; i < n && !anon; i++) {
		uint64_t ip = ips[i] & ~PROFD_IP_EXACT;
		const struct proc_mapping *m;

		if (ips[i] & IP_RUNTIME_TOKEN)
			continue;
		m = proc_maps_find(&s->maps, i && !(ips[i] & PROFD_IP_EXACT) ? ip - 1 : ip);
		if (!m)
			outside = true;
		else if (proc_mapping_anon_exec(m))
			anon = true;
	}
	if (!anon && !(outside && jit_syms_found(p->jit)))
		return 0;
	if (!p->jit) {
		if (p->jit_probe_ns && now - p->jit_probe_ns < PROCESS_JIT_PROBE_NS)
			return 0;
		p->jit = jit_syms_new(p->pid);
		if (!p->jit)
			return 0;
	}
	if (!__atomic_load_n(&s->jit, __ATOMIC_ACQUIRE))
		__atomic_store_n(&s->jit, jit_syms_get(p->jit), __ATOMIC_RELEASE);
	if (!jit_syms_found(p->jit)) {
		/* no file yet: look again now and then (a JIT opens it late) */
		if (!p->jit_probe_ns || now - p->jit_probe_ns >= PROCESS_JIT_PROBE_NS) {
			p->jit_probe_ns = now;
			process_queue_jit(pt, s);
		}
		return 0;
	}
	if (sample_ns >= jit_syms_read_ns(p->jit) &&
	    now - p->jit_read_ns >= PROCESS_JIT_READ_NS) {
		p->jit_read_ns = now;
		process_queue_jit(pt, s);
	}
	return (uint32_t)(sample_ns >> JIT_TIME_BIN_SHIFT) + 1;
}

static int by_jit(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)proc_snapshot_jit(*(struct proc_snapshot *const *)a);
	uintptr_t y = (uintptr_t)proc_snapshot_jit(*(struct proc_snapshot *const *)b);

	return x < y ? -1 : x > y;
}

size_t process_jit_read_all(struct process_table *pt, struct proc_snapshot **snaps,
			    size_t n)
{
	size_t queued = 0;

	qsort(snaps, n, sizeof(*snaps), by_jit);
	for (size_t i = 0; i < n; i++) {
		struct jit_syms *js = proc_snapshot_jit(snaps[i]);

		if (!js || (i && proc_snapshot_jit(snaps[i - 1]) == js))
			continue;	/* none, or its table's read is queued */
		if (!process_queue_jit(pt, snaps[i]))
			queued++;
	}
	return queued;
}

/* The basename of @path is "jit-<digits>.dump" (jit_syms checks the pid). */
static bool maybe_dump(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t len;

	b = b ? b + 1 : path;
	len = strlen(b);
	return len > 9 && !strncmp(b, "jit-", 4) && !strcmp(b + len - 5, ".dump");
}

void process_jit_read(struct proc_snapshot *s)
{
	struct jit_syms *js = __atomic_load_n(&s->jit, __ATOMIC_ACQUIRE);
	uint64_t starts[4], ends[4], now = clock_mono_ns();
	struct proc_maps maps = { 0 };
	const char *paths[4];
	size_t n = 0;

	if (!js)
		return;
	/* the maps as of now: a jitdump is mapped when the JIT starts it,
	 * maybe after the snapshot was read */
	if (proc_maps_read(s->pid, &maps))
		maps = s->maps;
	for (size_t i = 0; i < maps.n && n < 4; i++) {
		const struct proc_mapping *m = &maps.v[i];

		if (m->inode && maybe_dump(m->path)) {
			paths[n] = m->path;
			starts[n] = m->start;
			ends[n++] = m->end;
		}
	}
	jit_syms_refresh(js, paths, starts, ends, n, now);
	if (maps.v != s->maps.v)
		proc_maps_free(&maps);
}
