// SPDX-License-Identifier: GPL-2.0
/*
 * maps.c - the sizes of profd's BPF maps and the ringbufs' fill levels.
 *
 * Owns: --bpf-map-scale-factor N. The agent's sizes (the two ringbufs,
 * the per-process tables) are scaled by tracer_scale_opts(); the maps the
 * tracer sizes itself (runtime_threads: one entry per thread of processes
 * a language runtime walks; dl_events: one per process that loads libraries;
 * exec_times: one per process that exec'd) are scaled here. Per-CPU scratch arrays, counters, program arrays, the shard array
 * and the PID filter keep their sizes.
 *
 * A scaled map is created here, before the skeleton loads, so that a size
 * the kernel refuses (BPF memory is charged to the memory cgroup: ENOMEM;
 * or too large: E2BIG) can be halved down to the unscaled size instead
 * of failing the whole load (see tracer_maps_create() for the order); the
 * skeleton then takes the map over with bpf_map__reuse_fd(). Those maps
 * carry no BTF (bpftool dumps them as hex); at factor 0 libbpf creates
 * every map as before.
 *
 * Without a memory cgroup limit the kernel refuses nothing short of the
 * whole machine's memory, so the growth is also capped here: all the
 * scaled maps together grow by at most half of MemAvailable (read while
 * the unscaled maps and the headroom are held), in the same order. Under
 * a memory cgroup limit (profd's own, util/memcg.h) they grow by at most
 * half of the cgroup's room left after what the rest of profd may take
 * (tracer_opts.memcg_reserve_bytes): a cgroup filled up to its limit by
 * maps the kernel still took OOM-kills profd on its next page fault.
 *
 * The fill level of a ringbuf is producer position - consumer position,
 * read from read-only mappings of the ringbuf's first two pages (libbpf
 * 1.1 has no ring__ API for it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "profd.skel.h"
#include "util/memcg.h"
#include "tracer/tracer_internal.h"

/*
 * Memory held back for the rest of profd while the scaled maps' sizes are
 * chosen (bytes): its programs, unwind shards and own pages. A quiet
 * machine's profd uses ~40 MiB at factor 0, 16 of them ringbufs.
 */
#define TRACER_MAP_HEADROOM	(64u << 20)
/* Per-entry overhead of a hash map element (struct htab_elem, rounded up). */
#define HASH_ELEM_OVERHEAD	64u
/* Largest scaled entry count of a hash map. */
#define SCALED_ENTRIES_MAX	(1u << 26)

static uint32_t scale_u32(uint32_t v, unsigned int factor, uint32_t max)
{
	uint64_t r = (uint64_t)v << factor;

	if (v >= max)
		return v;
	return r > max ? max : (uint32_t)r;
}

void tracer_scale_opts(struct tracer_opts *o, unsigned int factor,
		       bool scale_processes)
{
	if (factor > TRACER_MAP_SCALE_MAX)
		factor = TRACER_MAP_SCALE_MAX;
	o->map_scale_factor = factor;
	o->ringbuf_bytes = scale_u32(o->ringbuf_bytes, factor, TRACER_RINGBUF_MAX);
	o->gpu_ringbuf_bytes = scale_u32(o->gpu_ringbuf_bytes, factor,
					 TRACER_RINGBUF_MAX);
	o->max_processes_scaled = scale_processes && o->max_processes;
	if (o->max_processes_scaled)
		o->max_processes = scale_u32(o->max_processes, factor,
					     SCALED_ENTRIES_MAX);
}

/* A ringbuf size the kernel takes: a power of two, at least a page. */
static uint32_t ringbuf_size(uint32_t v)
{
	uint32_t page = sysconf(_SC_PAGESIZE), r = page;

	while (r < v && r < TRACER_RINGBUF_MAX)
		r <<= 1;
	return r;
}

/* Add @map at @want entries, @floor unscaled, to @out[*n]. */
static void plan(struct tracer_map_size *out, unsigned int *n,
		 struct bpf_map *map, uint32_t want, uint32_t floor)
{
	if (bpf_map__type(map) == BPF_MAP_TYPE_RINGBUF) {
		want = ringbuf_size(want);
		floor = ringbuf_size(floor);
	}
	if (!floor)
		floor = 1;
	if (floor > want)
		floor = want;
	bpf_map__set_max_entries(map, want);
	out[*n] = (struct tracer_map_size){ .map = map, .want = want, .floor = floor };
	(*n)++;
}

unsigned int tracer_maps_plan(struct profd_bpf *skel, const struct tracer_opts *o,
			      struct tracer_map_size *out)
{
	unsigned int f = o->map_scale_factor > TRACER_MAP_SCALE_MAX ?
			 TRACER_MAP_SCALE_MAX : o->map_scale_factor, n = 0;
	struct bpf_map *self_sized[] = { skel->maps.runtime_threads,
					 skel->maps.dl_events,
					 skel->maps.exec_times };
	struct bpf_map *m;
	uint32_t v;

	/* the order of creation: what a tight memory budget goes to first */
	m = skel->maps.events;
	v = o->ringbuf_bytes ? o->ringbuf_bytes : bpf_map__max_entries(m);
	plan(out, &n, m, v, o->ringbuf_bytes ? v >> f : v);
	m = skel->maps.cupti_events;
	v = o->gpu_ringbuf_bytes ? o->gpu_ringbuf_bytes : bpf_map__max_entries(m);
	plan(out, &n, m, v, o->gpu_ringbuf_bytes ? v >> f : v);
	for (size_t i = 0; i < sizeof(self_sized) / sizeof(self_sized[0]); i++) {
		v = bpf_map__max_entries(self_sized[i]);
		plan(out, &n, self_sized[i], scale_u32(v, f, SCALED_ENTRIES_MAX), v);
	}
	v = o->max_processes;
	if (v) {
		uint32_t floor = o->max_processes_scaled ? v >> f : v;

		plan(out, &n, skel->maps.unwind_procs, v, floor);
		plan(out, &n, skel->maps.runtime_procs, v, floor);
	}
	return n;
}

void tracer_maps_unscaled(struct tracer_map_size *v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		bpf_map__set_max_entries(v[i].map, v[i].floor);
}

/* "512 MiB", "64 KiB" for a ringbuf, "16384 entries" otherwise. */
static const char *size_str(const struct bpf_map *m, uint32_t n, char *buf,
			    size_t len)
{
	if (bpf_map__type(m) != BPF_MAP_TYPE_RINGBUF)
		snprintf(buf, len, "%u entries", n);
	else if (n % (1u << 20) == 0)
		snprintf(buf, len, "%u MiB", n >> 20);
	else
		snprintf(buf, len, "%u KiB", n >> 10);
	return buf;
}

static int create_map(const struct bpf_map *m, uint32_t entries)
{
	LIBBPF_OPTS(bpf_map_create_opts, co, .map_flags = bpf_map__map_flags(m));

	return bpf_map_create(bpf_map__type(m), bpf_map__name(m),
			      bpf_map__key_size(m), bpf_map__value_size(m),
			      entries, &co);
}

/*
 * The largest size from @s->want down (halving) to @min that the kernel
 * creates: a map fd and *@size, or a negative errno. *@refused: the
 * errno of the first refusal, 0 if none.
 */
static int create_largest(const struct tracer_map_size *s, uint32_t min,
			  uint32_t *size, int *refused)
{
	uint32_t n = s->want;
	int fd;

	*refused = 0;
	for (;;) {
		fd = create_map(s->map, n);
		if (fd >= 0) {
			*size = n;
			return fd;
		}
		if (!*refused)
			*refused = -fd;
		if ((fd != -ENOMEM && fd != -E2BIG) || n / 2 < min)
			return fd;
		n /= 2;
	}
}

/* A ringbuf of up to TRACER_MAP_HEADROOM bytes, or -1. */
static int hold_headroom(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, co);
	uint32_t page = sysconf(_SC_PAGESIZE);
	int fd = -1;

	for (uint32_t n = TRACER_MAP_HEADROOM; n >= page && fd < 0; n /= 2)
		fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "profd_headroom", 0, 0,
				    n, &co);
	return fd < 0 ? -1 : fd;
}

static bool scaled(const struct tracer_map_size *s)
{
	return s->want > s->floor;
}

/* Bytes of memory @m takes at @entries (an estimate for hash maps). */
static uint64_t map_bytes(const struct bpf_map *m, uint32_t entries)
{
	if (bpf_map__type(m) == BPF_MAP_TYPE_RINGBUF)
		return entries;
	return (uint64_t)entries * (((bpf_map__key_size(m) + 7) & ~7u) +
				    ((bpf_map__value_size(m) + 7) & ~7u) +
				    HASH_ELEM_OVERHEAD);
}

/* Half of MemAvailable of /proc/meminfo (bytes); UINT64_MAX if unknown. */
static uint64_t half_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	uint64_t kib = 0;
	char line[128];
	bool found = false;

	if (!f)
		return UINT64_MAX;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1;
	fclose(f);
	return found ? (kib << 10) / 2 : UINT64_MAX;
}

/*
 * The bytes all scaled maps may grow by: the lesser of half of
 * MemAvailable and half of the memory cgroup's room beyond @reserve.
 * *@what: the bound that holds, for the warning.
 */
static uint64_t growth_budget(uint64_t reserve, const char **what)
{
	uint64_t mem = half_available(), room = memcg_room(), cg;

	*what = "half of MemAvailable";
	if (room == UINT64_MAX)
		return mem;
	cg = room > reserve ? (room - reserve) / 2 : 0;
	if (cg < mem)
		*what = "half of the memory cgroup's room beyond --memory-limit "
			"and --unwind-memory-limit";
	return cg < mem ? cg : mem;
}

/*
 * The largest size from @s->want down (halving) to twice its floor whose
 * growth over the floor fits in *@budget, taken from it; @s->floor if
 * none does.
 */
static uint32_t budget_size(const struct tracer_map_size *s, uint64_t *budget)
{
	uint64_t base = map_bytes(s->map, s->floor);
	uint32_t n = s->want;

	while (n / 2 >= s->floor * 2 && map_bytes(s->map, n) - base > *budget)
		n /= 2;
	if (map_bytes(s->map, n) - base > *budget)
		return s->floor;
	*budget -= map_bytes(s->map, n) - base;
	return n;
}

/*
 * Each scaled map is first created at its unscaled size, so that what
 * profd needs is there before anything grows; then, with
 * TRACER_MAP_HEADROOM held back for the rest of profd (programs, unwind
 * shards, its own memory: BPF memory and profd's pages share the cgroup's
 * budget), as large as it fits, replacing the small one, the growth of
 * all of them within half of MemAvailable. So a tight budget shrinks the
 * maps, in this order, rather than failing the load or leaving profd (or
 * the machine) no memory to run in.
 */
int tracer_maps_create(struct tracer_map_size *v, unsigned int n, uint64_t reserve)
{
	const char *bound = "half of MemAvailable";
	int fds[TRACER_SIZED_MAPS], held = -1, err = 0;
	uint64_t budget = UINT64_MAX;
	char a[32], b[32];
	unsigned int i;

	for (i = 0; i < n; i++)
		fds[i] = -1;
	for (i = 0; i < n; i++) {
		if (!scaled(&v[i]))
			continue;	/* unscaled: libbpf creates it */
		fds[i] = create_map(v[i].map, v[i].floor);
		if (fds[i] < 0) {
			err = fds[i];
			fprintf(stderr, "profd: error: BPF map %s: %s cannot be created (%s)\n",
				bpf_map__name(v[i].map),
				size_str(v[i].map, v[i].floor, a, sizeof(a)), strerror(-err));
			goto out;
		}
		v[i].got = v[i].floor;
	}
	for (i = 0; i < n && held < 0; i++)
		if (scaled(&v[i])) {
			held = hold_headroom();
			budget = growth_budget(reserve, &bound);
		}
	for (i = 0; i < n; i++) {
		struct tracer_map_size s;
		uint32_t size = 0;
		int fd, refused = 0;

		if (!scaled(&v[i]))
			continue;
		s = v[i];
		s.want = budget_size(&v[i], &budget);
		if (s.want >= s.floor * 2) {
			fd = create_largest(&s, s.floor * 2, &size, &refused);
			if (fd >= 0) {
				close(fds[i]);
				fds[i] = fd;
				v[i].got = size;
			}
		}
		if (v[i].got != v[i].want && !refused)
			fprintf(stderr, "profd: warning: BPF map %s: %s is over the memory "
				"budget (%s); using %s\n", bpf_map__name(v[i].map),
				size_str(v[i].map, v[i].want, a, sizeof(a)), bound,
				size_str(v[i].map, v[i].got, b, sizeof(b)));
		else if (v[i].got != v[i].want)
			fprintf(stderr, "profd: warning: BPF map %s: %s cannot be created "
				"(%s); using %s\n", bpf_map__name(v[i].map),
				size_str(v[i].map, v[i].want, a, sizeof(a)),
				strerror(refused),
				size_str(v[i].map, v[i].got, b, sizeof(b)));
		err = bpf_map__reuse_fd(v[i].map, fds[i]);
		if (err) {
			fprintf(stderr, "profd: error: BPF map %s: cannot hand it to the "
				"skeleton: %s\n", bpf_map__name(v[i].map), strerror(-err));
			goto out;
		}
	}
out:
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);	/* the skeleton holds its own copy */
	if (held >= 0)
		close(held);
	return err;
}

static void map_view(struct tracer_rb_view *v, const struct bpf_map *m)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = bpf_map__fd(m);
	void *c, *p;

	if (fd < 0)
		return;
	/* page 0: consumer position; page 1: producer position */
	c = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED)
		return;
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, page);
	if (p == MAP_FAILED) {
		munmap(c, page);
		return;
	}
	v->consumer_pos = c;
	v->producer_pos = p;
	v->size = bpf_map__max_entries(m);
}

void tracer_ringbufs_map(struct tracer *t)
{
	map_view(&t->rb_views[0], t->skel->maps.events);
	map_view(&t->rb_views[1], t->skel->maps.cupti_events);
}

void tracer_ringbufs_unmap(struct tracer *t)
{
	long page = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < 2; i++) {
		struct tracer_rb_view *v = &t->rb_views[i];

		if (!v->consumer_pos)
			continue;
		munmap((void *)v->consumer_pos, page);
		munmap((void *)v->producer_pos, page);
		*v = (struct tracer_rb_view){ 0 };
	}
}

int tracer_ringbuf_usage(struct tracer *t, bool gpu, struct tracer_ringbuf_usage *out)
{
	const struct tracer_rb_view *v = &t->rb_views[gpu ? 1 : 0];
	uint64_t cons, prod;

	out->size = out->used = 0;
	if (!v->consumer_pos)
		return -ENODEV;
	/* consumer first: the producer is never behind it */
	cons = __atomic_load_n(v->consumer_pos, __ATOMIC_ACQUIRE);
	prod = __atomic_load_n(v->producer_pos, __ATOMIC_ACQUIRE);
	out->size = v->size;
	out->used = prod > cons ? prod - cons : 0;
	if (out->used > out->size)
		out->used = out->size;
	return 0;
}
