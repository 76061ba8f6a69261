// SPDX-License-Identifier: GPL-2.0
/*
 * test_flamegraph_screen.c - flame graph pages of known shapes for the
 * screenshot test (tests/test_flamegraph_screen.py) and the page-open
 * benchmark (bench/flamegraph_open.sh); checks what the writer put in
 * them (totals, the deep stack, the empty view's note escaped).
 *
 * Usage:
 *   test_flamegraph_screen [DIR]
 *     Writes DIR/shallow.html (one service, stacks 4-9 frames deep),
 *     DIR/tower.html (a whole machine: 60 processes of shallow stacks and
 *     one 200-frame recursion) and DIR/empty.html (a CPU view without
 *     samples and a note saying why, EMPTY_NOTE). Without DIR, a
 *     temporary directory is used and removed.
 *   test_flamegraph_screen --big STACKS HTML_OUT
 *     A whole-machine hour: STACKS distinct stacks of 300 processes,
 *     10-63 frames deep with shared prefixes, Zipf-like weights, merged
 *     as 360 ten-second profiles into a tree of the default node bound.
 *     Prints the frames the stacks need (their distinct prefixes), the
 *     bound, the total, the frames folded and the samples cut at the
 *     bound.
 * Prints one line per check; exits 1 if any failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/flamegraph.h"
#include "profile/profile.h"
#include "util/hash.h"

#include "check.h"

#define TOWER_DEPTH	200	/* the deep stack: _start, main, 198 x walk */
#define TOWER_COMM	"recurse"
/* empty.html's note, as an agent would word it; <PID> & co stay text. */
#define EMPTY_NOTE	"No CPU samples in 3 s: the processes of --pid <PID> " \
			"did not run. Run a workload while profd records, " \
			"or `profd exec -- COMMAND` & wait."

/* xorshift64*: the same pages on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, n). */
static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)((rnd() >> 32) % n);
}

/* A profile of samples, with a user and a kernel mapping. */
struct gen {
	struct profile *p;
	uint32_t user_map, kernel_map;
};

static void gen_init(struct gen *g)
{
	g->p = profile_new();
	if (!g->p) {
		CHECK(false, "profile_new");
		exit(1);
	}
	profile_add_sample_type(g->p, "samples", "count");
	g->user_map = profile_add_mapping(g->p, 0x400000, 0x7fffffffffff, 0,
					  "/usr/lib/app", "");
	g->kernel_map = profile_add_mapping(g->p, 0xffffffff81000000,
					    0xffffffffff000000, 0,
					    "[kernel.kallsyms]", "");
}

/* The location of function @name, in the kernel's mapping if @kernel. */
static uint32_t loc(struct gen *g, const char *name, bool kernel)
{
	uint32_t f = profile_function_id(g->p, name, NULL, "");

	/* One address per function: the location deduplicates on it. */
	return profile_location_id(g->p, kernel ? g->kernel_map : g->user_map,
				   (kernel ? 0xffffffff81000000ULL : 0x400000) + f * 16,
				   f, 0);
}

/* Add a sample of @n frames (@ids leaf first) of process @comm. */
static void sample(struct gen *g, const uint32_t *ids, uint32_t n,
		   const char *comm, int64_t w)
{
	struct profile_label l = { .key = "comm", .str = comm };

	if (profile_add_sample(g->p, ids, n, &w, &l, 1)) {
		CHECK(false, "profile_add_sample");
		exit(1);
	}
}

/*
 * The name of a frame at call path @h of process @comm: half of the
 * frames are in libraries every process shares (20000 functions), half
 * in the program's own code (300 functions per process).
 */
static void frame_name(char *buf, size_t len, const char *comm, uint64_t h)
{
	static const char *const libs[] = {
		"libc.so.6", "libstdc++", "libpython3.11", "libssl", "libz",
		"libglib-2.0", "libjvm", "libv8",
	};

	h ^= h >> 29;
	if (h & 1)
		snprintf(buf, len, "%s::ns%u::Object%u::method_%u",
			 libs[(h >> 1) % 8], (unsigned int)(h >> 4) % 40,
			 (unsigned int)(h >> 10) % 50, (unsigned int)(h >> 16) % 10);
	else
		snprintf(buf, len, "%s::handler%u::step_%u", comm,
			 (unsigned int)(h >> 1) % 30, (unsigned int)(h >> 8) % 10);
}

/*
 * Append the frames of a plausible stack of process @comm to @ids (root
 * first; the caller reverses): _start, __libc_start_main, main, then
 * @depth frames of a per-process call tree. Above the last 2 frames a
 * stack takes the usual callee 199 times in 200, else one of 2 others
 * (so stacks share long prefixes); each of the last 2 frames is one of
 * 16. Every third stack ends in a syscall. Returns the frame count.
 */
static uint32_t plausible(struct gen *g, uint32_t *ids, const char *comm,
			  uint32_t proc, uint32_t depth)
{
	static const char *const sys[] = {
		"__x64_sys_read", "__x64_sys_write", "__x64_sys_epoll_wait",
		"__x64_sys_futex", "__x64_sys_openat", "__x64_sys_sendmsg",
	};
	char name[160];
	uint64_t path = proc * 1000003ULL + 1;
	uint32_t n = 0;

	ids[n++] = loc(g, "_start", false);
	ids[n++] = loc(g, "__libc_start_main", false);
	snprintf(name, sizeof(name), "%s::main", comm);
	ids[n++] = loc(g, name, false);
	for (uint32_t d = 0; d < depth; d++) {
		uint32_t choice;

		if (d + 2 < depth)
			choice = rnd_below(200) ? 0 : 1 + rnd_below(2);
		else
			choice = rnd_below(16);
		path = (path + choice + 1) * 0x100000001b3ULL;
		frame_name(name, sizeof(name), comm, path);
		ids[n++] = loc(g, name, false);
	}
	if (rnd_below(3) == 0) {
		ids[n++] = loc(g, "entry_SYSCALL_64", true);
		ids[n++] = loc(g, "do_syscall_64", true);
		ids[n++] = loc(g, sys[rnd_below(6)], true);
	}
	return n;
}

static void reverse(uint32_t *ids, uint32_t n)
{
	for (uint32_t i = 0, j = n - 1; i < j; i++, j--) {
		uint32_t t = ids[i];

		ids[i] = ids[j];
		ids[j] = t;
	}
}

static const char *const comms[] = {
	"systemd", "sshd", "bash", "python3", "postgres", "nginx", "java",
	"containerd", "dockerd", "kubelet", "node", "redis-server", "chrome",
	"Xorg", "gnome-shell", "pulseaudio", "rsyslogd", "cron", "journald",
	"udevd", "kworker/0:1", "kworker/1:2", "ksoftirqd/0", "rcu_sched",
	"irqbalance", "snapd", "containerd-shim", "etcd", "prometheus",
	"grafana", "envoy", "haproxy", "memcached", "mysqld", "mongod",
	"elasticsearch", "kafka", "zookeeper", "rustc", "cc1", "ld", "make",
	"git", "vim", "tmux", "htop", "top", "ssh-agent", "dbus-daemon",
	"NetworkManager", "polkitd", "cupsd", "avahi-daemon", "chronyd",
	"firewalld", "auditd", "agetty", "login", "sudo", "rsync",
};
#define NCOMMS (sizeof(comms) / sizeof(comms[0]))

/* A web service: a few stacks 4-9 frames deep, no process beside it. */
static struct flamegraph *shallow(void)
{
	static const char *const leaves[] = {
		"parse_request", "route", "render_template", "json_encode",
		"gzip_compress", "write", "read", "epoll_wait",
	};
	struct flamegraph *fg = flamegraph_new(0);
	struct gen g;
	uint32_t ids[16], n;

	gen_init(&g);
	for (uint32_t i = 0; i < 8; i++) {
		n = 0;
		ids[n++] = loc(&g, "_start", false);
		ids[n++] = loc(&g, "main", false);
		ids[n++] = loc(&g, "serve_forever", false);
		if (i >= 2)
			ids[n++] = loc(&g, "handle_connection", false);
		if (i >= 4)
			ids[n++] = loc(&g, "handle_request", false);
		ids[n++] = loc(&g, leaves[i], false);
		if (i >= 5) {
			ids[n++] = loc(&g, "entry_SYSCALL_64", true);
			ids[n++] = loc(&g, "do_syscall_64", true);
		}
		reverse(ids, n);
		sample(&g, ids, n, "webserver", 40 + 37 * (i % 5));
	}
	CHECK(fg && flamegraph_add_profile(fg, g.p, 0) == 0,
	      "shallow: merge the profile");
	profile_free(g.p);
	return fg;
}

/*
 * A whole machine with one deep stack: 60 processes of 3-10 stacks 1-9
 * frames below main, and "recurse": _start, main, then walk() calling
 * itself down to TOWER_DEPTH frames, holding about 8 % of the samples.
 */
static struct flamegraph *tower(uint64_t *total)
{
	struct flamegraph *fg = flamegraph_new(0);
	uint32_t ids[TOWER_DEPTH + 8], n;
	uint64_t rest = 0;
	struct gen g;

	gen_init(&g);
	for (uint32_t c = 0; c < NCOMMS; c++) {
		uint32_t nstacks = 3 + rnd_below(8);

		for (uint32_t s = 0; s < nstacks; s++) {
			int64_t w = 1 + rnd_below(c < 6 ? 400 : 60);

			n = plausible(&g, ids, comms[c], c, 1 + rnd_below(9));
			reverse(ids, n);
			sample(&g, ids, n, comms[c], w);
			rest += w;
		}
	}
	n = 0;
	ids[n++] = loc(&g, "_start", false);
	ids[n++] = loc(&g, "main", false);
	while (n < TOWER_DEPTH)
		ids[n++] = loc(&g, "walk", false);
	reverse(ids, n);
	sample(&g, ids, n, TOWER_COMM, rest / 12);
	*total = rest + rest / 12;
	CHECK(fg && flamegraph_add_profile(fg, g.p, 0) == 0,
	      "tower: merge the profile");
	profile_free(g.p);
	return fg;
}

/* Write a one-view page of @fg; @note explains an empty view. */
static void write_page(const char *dir, const char *file,
		       const struct flamegraph *fg, const char *title,
		       const char *note)
{
	struct flamegraph_view v = { .name = "CPU", .fg = fg,
				     .unit = "samples", .empty_note = note };
	char path[4200];
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	err = flamegraph_write_views(path, title, &v, 1);
	CHECK(err == 0, "write %s: %d", path, err);
}

/* A set of nonzero 64-bit hashes (open addressing); false when full. */
struct hset {
	uint64_t *slot, cap, n;
};

/* Add @h; true if it was new. */
static bool hset_add(struct hset *s, uint64_t h)
{
	uint64_t j;

	h |= 1;
	for (j = h & (s->cap - 1); s->slot[j]; j = (j + 1) & (s->cap - 1))
		if (s->slot[j] == h)
			return false;
	if (s->n * 4 >= s->cap * 3)
		return false;
	s->slot[j] = h;
	s->n++;
	return true;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL + (h >> 31);
}

/* The name of location @id as a hash: ids differ between profiles. */
static uint64_t name_of(const struct gen *g, uint32_t id)
{
	const struct profile_location *l = profile_location(g->p, id);

	return fnv1a_str(profile_function(g->p, l->function_id)->name);
}

/*
 * --big: @nstacks distinct stacks (distinct paths of the merged tree) of
 * 300 processes (a few busy, many quiet), each 10-63 frames deep. An
 * hour of 10 s intervals is 360 profiles, each merged into a tree of the
 * default bound as the agent does. Counts the frames the stacks need
 * (their distinct prefixes) against the frames the tree kept.
 */
static int write_big(long nstacks, const char *path)
{
	enum { NPROCS = 300, INTERVALS = 360 };
	struct hset stacks = { 0 }, nodes = { 0 };
	uint64_t want_total = 0;
	struct flamegraph *fg = flamegraph_new(0);
	struct flamegraph_view v = { .name = "CPU", .fg = fg,
				     .unit = "samples" };
	uint32_t ids[80], n;
	char comm[64];
	long made = 0, dups = 0;
	struct gen g;
	int err;

	if (!fg || nstacks <= 0)
		return 1;
	stacks.cap = nodes.cap = 1024;
	while (stacks.cap < (uint64_t)nstacks * 2)
		stacks.cap *= 2;
	while (nodes.cap < (uint64_t)nstacks * 128)
		nodes.cap *= 2;
	stacks.slot = calloc(stacks.cap, sizeof(uint64_t));
	nodes.slot = calloc(nodes.cap, sizeof(uint64_t));
	if (!stacks.slot || !nodes.slot)
		return 1;
	for (int iv = 0; iv < INTERVALS; iv++) {
		long end = nstacks * (iv + 1) / INTERVALS;

		gen_init(&g);
		while (made < end) {
			/* Process k is picked about 1/(k+1) as often as 0. */
			uint32_t proc = rnd_below(NPROCS);
			uint64_t h;
			int64_t w;

			proc = proc * rnd_below(NPROCS) / NPROCS;
			snprintf(comm, sizeof(comm), "%s-%u",
				 comms[proc % NCOMMS], proc);
			n = plausible(&g, ids, comm, proc, 7 + rnd_below(51));
			/* The stack is the path to its leaf: its last prefix. */
			h = mix(0xcbf29ce484222325ULL, proc);
			for (uint32_t k = 0; k < n; k++)
				h = mix(h, name_of(&g, ids[k]));
			if (!hset_add(&stacks, h)) {
				dups++;
				continue;
			}
			h = mix(0xcbf29ce484222325ULL, proc);
			hset_add(&nodes, h);
			for (uint32_t k = 0; k < n; k++)
				hset_add(&nodes, h = mix(h, name_of(&g, ids[k])));
			/* Most stacks are seen a few times, 3 % thousands. */
			w = rnd_below(100) < 97 ? 1 + rnd_below(3) :
			    1 + rnd_below(4000);
			reverse(ids, n);
			sample(&g, ids, n, comm, w);
			want_total += w;
			made++;
		}
		if (flamegraph_add_profile(fg, g.p, 0)) {
			CHECK(false, "big: merge interval %d", iv);
			return 1;
		}
		profile_free(g.p);
	}
	CHECK(flamegraph_total(fg) == want_total,
	      "big: every sample's weight is in the tree");
	err = flamegraph_write_views(path, "profd: a whole machine, 1 hour",
				     &v, 1);
	CHECK(err == 0, "big: write %s: %d", path, err);
	printf("stacks=%ld redrawn=%ld frames_needed=%" PRIu64 " bound=%u "
	       "total=%" PRIu64 " pruned_frames=%" PRIu64 " truncated_samples=%"
	       PRIu64 "\n", made, dups, nodes.n + 1,
	       FLAMEGRAPH_DEFAULT_MAX_NODES, flamegraph_total(fg),
	       flamegraph_pruned(fg), flamegraph_truncated(fg));
	free(stacks.slot);
	free(nodes.slot);
	flamegraph_free(fg);
	return failures ? 1 : 0;
}

/* Does file @dir/@file hold @needle? */
static bool page_has(const char *dir, const char *file, const char *needle)
{
	char path[4200], *buf;
	bool found = false;
	FILE *f;
	long len;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "rb");
	if (!f)
		return false;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = calloc(1, len + 1))) {
		if (fread(buf, 1, len, f) == (size_t)len)
			found = strstr(buf, needle) != NULL;
		free(buf);
	}
	fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	struct flamegraph *sh, *tw, *empty;
	char dir[4096], path[4200];
	uint64_t tower_total = 0;
	bool tmp = argc < 2;

	if (argc == 4 && strcmp(argv[1], "--big") == 0)
		return write_big(strtol(argv[2], NULL, 10), argv[3]);
	if (tmp) {
		snprintf(dir, sizeof(dir), "/tmp/profd-fgscreen-XXXXXX");
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			return 1;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	}
	sh = shallow();
	tw = tower(&tower_total);
	empty = flamegraph_new(0);
	CHECK(sh && tw && empty, "flamegraph_new");
	if (!sh || !tw || !empty)
		return 1;
	CHECK(flamegraph_total(tw) == tower_total,
	      "tower: total %" PRIu64, tower_total);
	write_page(dir, "shallow.html", sh, "profd: webserver", NULL);
	write_page(dir, "tower.html", tw, "profd: a whole machine", NULL);
	write_page(dir, "empty.html", empty, "profd: idle machine", EMPTY_NOTE);
	CHECK(page_has(dir, "tower.html", "\"recurse\""),
	      "tower: the deep stack's process is in the page");
	CHECK(page_has(dir, "empty.html", "\"empty\":\"No CPU samples in 3 s: "
		       "the processes of --pid \\u003cPID\\u003e did not run."),
	      "empty: the note is in the page, its markup escaped");

	flamegraph_free(sh);
	flamegraph_free(tw);
	flamegraph_free(empty);
	if (tmp) {
		static const char *const files[] = {
			"shallow.html", "tower.html", "empty.html",
		};

		for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
			unlink(path);
		}
		rmdir(dir);
	}
	printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
	return failures ? 1 : 0;
}
