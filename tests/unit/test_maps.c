// SPDX-License-Identifier: GPL-2.0
/*
 * test_maps.c - proc_maps_parse on hand-written maps text covering every
 * kind of line proc(5) describes, then proc_maps_read on this process.
 * Prints one line per check; exits 1 if any failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/maps.h"

#include "check.h"

static const char maps_text[] =
	/* a library, read-only first segment */
	"7f0a1c000000-7f0a1c028000 r--p 00000000 08:01 1311234                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	/* its text */
	"7f0a1c028000-7f0a1c1bd000 r-xp 00028000 08:01 1311234                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	/* malformed: bad perms */
	"7f0a1c1bd000-7f0a1c215000 rz-p 001bd000 08:01 1311234                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	/* path with spaces, hex device numbers, shared */
	"7f0a1d000000-7f0a1d001000 rw-s 00001000 fd:1a 42                         /home/u/My Files/a  b.so\n"
	/* deleted file */
	"7f0a1e000000-7f0a1e002000 r-xp 00003000 00:2f 987654                     /tmp/jit code.so (deleted)\n"
	/* malformed: start > end */
	"7f0a1f000000-7f0a1e000000 r--p 00000000 00:00 0 \n"
	/* anonymous, with the padding older kernels leave */
	"7f0a20000000-7f0a20021000 rw-p 00000000 00:00 0 \n"
	/* anonymous named */
	"7f0a21000000-7f0a21001000 rw-p 00000000 00:00 0                          [anon:foo bar]\n"
	/* malformed: no inode */
	"7f0a22000000-7f0a22001000 rw-p 00000000 00:00\n"
	/* anonymous, no padding at all */
	"7f0a23000000-7f0a23001000 ---p 00000000 00:00 0\n"
	/* malformed: garbage */
	"hello world\n"
	/* special mappings */
	"7ffc5d2e1000-7ffc5d302000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffc5d3b8000-7ffc5d3bc000 r--p 00000000 00:00 0                          [vvar]\n"
	"7ffc5d3bc000-7ffc5d3be000 r-xp 00000000 00:00 0                          [vdso]\n"
	/* out of order: [heap] is the lowest address, so it sorts first */
	"55d0c2a1e000-55d0c2a3f000 rw-p 00000000 00:00 0                          [heap]\n"
	/* malformed: overlaps [heap] */
	"55d0c2a20000-55d0c2a21000 rw-p 00000000 00:00 0\n"
	/* last line without a newline */
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

struct want {
	uint64_t start, end, offset;
	uint32_t maj, min;
	uint64_t inode;
	const char *perms;	/* "rwxs" with '-' */
	bool deleted, special;
	const char *path;
};

/* In address order, as proc_maps_parse must return them. */
static const struct want wants[] = {
	{ 0x55d0c2a1e000, 0x55d0c2a3f000, 0, 0, 0, 0, "rw-p", false, true, "[heap]" },
	{ 0x7f0a1c000000, 0x7f0a1c028000, 0, 8, 1, 1311234, "r--p", false, false,
	  "/usr/lib/x86_64-linux-gnu/libc.so.6" },
	{ 0x7f0a1c028000, 0x7f0a1c1bd000, 0x28000, 8, 1, 1311234, "r-xp", false, false,
	  "/usr/lib/x86_64-linux-gnu/libc.so.6" },
	{ 0x7f0a1d000000, 0x7f0a1d001000, 0x1000, 0xfd, 0x1a, 42, "rw-s", false, false,
	  "/home/u/My Files/a  b.so" },
	{ 0x7f0a1e000000, 0x7f0a1e002000, 0x3000, 0, 0x2f, 987654, "r-xp", true, false,
	  "/tmp/jit code.so" },
	{ 0x7f0a20000000, 0x7f0a20021000, 0, 0, 0, 0, "rw-p", false, false, "" },
	{ 0x7f0a21000000, 0x7f0a21001000, 0, 0, 0, 0, "rw-p", false, true, "[anon:foo bar]" },
	{ 0x7f0a23000000, 0x7f0a23001000, 0, 0, 0, 0, "---p", false, false, "" },
	{ 0x7ffc5d2e1000, 0x7ffc5d302000, 0, 0, 0, 0, "rw-p", false, true, "[stack]" },
	{ 0x7ffc5d3b8000, 0x7ffc5d3bc000, 0, 0, 0, 0, "r--p", false, true, "[vvar]" },
	{ 0x7ffc5d3bc000, 0x7ffc5d3be000, 0, 0, 0, 0, "r-xp", false, true, "[vdso]" },
	{ 0xffffffffff600000, 0xffffffffff601000, 0, 0, 0, 0, "--xp", false, true,
	  "[vsyscall]" },
};

#define NWANTS (sizeof(wants) / sizeof(wants[0]))
#define NBAD 5

static void perms_of(const struct proc_mapping *m, char out[5])
{
	out[0] = m->readable ? 'r' : '-';
	out[1] = m->writable ? 'w' : '-';
	out[2] = m->executable ? 'x' : '-';
	out[3] = m->shared ? 's' : 'p';
	out[4] = '\0';
}

static void test_parse(void)
{
	struct proc_maps maps;
	size_t bad = 0, i;
	int err;

	err = proc_maps_parse(maps_text, strlen(maps_text), &maps, &bad);
	CHECK(err == 0, "proc_maps_parse returns 0 (got %d)", err);
	if (err)
		return;
	CHECK(maps.n == NWANTS, "%zu mappings parsed (want %zu)", maps.n,
	      NWANTS);
	CHECK(bad == NBAD, "%zu malformed lines counted (want %d)", bad, NBAD);

	for (i = 0; i < maps.n && i < NWANTS; i++) {
		const struct proc_mapping *m = &maps.v[i];
		const struct want *w = &wants[i];
		char perms[5];

		perms_of(m, perms);
		CHECK(m->start == w->start && m->end == w->end,
		      "[%zu] range %" PRIx64 "-%" PRIx64, i, m->start, m->end);
		CHECK(m->offset == w->offset, "[%zu] offset %" PRIx64, i,
		      m->offset);
		CHECK(m->dev_major == w->maj && m->dev_minor == w->min,
		      "[%zu] dev %x:%x", i, m->dev_major, m->dev_minor);
		CHECK(m->inode == w->inode, "[%zu] inode %" PRIu64, i, m->inode);
		CHECK(!strcmp(perms, w->perms), "[%zu] perms %s", i, perms);
		CHECK(m->deleted == w->deleted, "[%zu] deleted=%d", i,
		      m->deleted);
		CHECK(m->special == w->special, "[%zu] special=%d", i,
		      m->special);
		CHECK(!strcmp(m->path, w->path), "[%zu] path \"%s\"", i, m->path);
	}

	for (i = 0; i < NWANTS; i++) {
		const struct proc_mapping *m;

		m = proc_maps_find(&maps, wants[i].start);
		CHECK(m == &maps.v[i], "find start of [%zu]", i);
		m = proc_maps_find(&maps, wants[i].end - 1);
		CHECK(m == &maps.v[i], "find last byte of [%zu]", i);
	}
	CHECK(!proc_maps_find(&maps, 0x1000), "find below all: NULL");
	CHECK(!proc_maps_find(&maps, 0x7f0a1c1bd000),
	      "find in the malformed line's range: NULL");
	CHECK(!proc_maps_find(&maps, 0x7f0a20021000), "find at an end: NULL");
	proc_maps_free(&maps);
	CHECK(maps.n == 0 && maps.v == NULL, "proc_maps_free empties");

	err = proc_maps_parse("", 0, &maps, &bad);
	CHECK(err == 0 && maps.n == 0 && bad == 0, "empty text");
	proc_maps_free(&maps);
}

static void test_self(void)
{
	uint64_t addr = (uint64_t)(uintptr_t)&test_self;
	const struct proc_mapping *m;
	struct proc_maps maps;
	char exe[PATH_MAX];
	ssize_t n;
	int err;

	err = proc_maps_read(getpid(), &maps);
	CHECK(err == 0, "proc_maps_read(self) returns 0 (got %d)", err);
	if (err)
		return;
	CHECK(maps.n > 5, "self has %zu mappings", maps.n);
	m = proc_maps_find(&maps, addr);
	CHECK(m != NULL, "own function %#" PRIx64 " is mapped", addr);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (m) {
		CHECK(m->executable && m->readable && !m->writable,
		      "its mapping is r-x");
		CHECK(!strcmp(m->path, exe), "its mapping is %s (exe %s)",
		      m->path, exe);
		CHECK(m->inode != 0 && !m->special && !m->deleted,
		      "it has an inode and is a plain file");
	}
	m = proc_maps_find(&maps, (uint64_t)(uintptr_t)&addr);
	/* [stack] normally; valgrind runs us on an anonymous stack. */
	CHECK(m && m->writable && !m->executable &&
	      (!strcmp(m->path, "[stack]") || !m->path[0]),
	      "a local variable is on a writable stack mapping (%s)",
	      m ? m->path : "none");
	proc_maps_free(&maps);

	err = proc_maps_read(-5, &maps);
	CHECK(err == -ENOENT, "proc_maps_read of no process: -ENOENT (got %d)",
	      err);
}

int main(void)
{
	test_parse();
	test_self();
	printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
	return failures ? 1 : 0;
}
