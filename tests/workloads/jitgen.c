// SPDX-License-Identifier: GPL-2.0
/*
 * jitgen.c - a tiny "JIT" for tests/test_jitmap.py: it writes x86-64
 * code into anonymous PROT_EXEC memory, runs it in hot loops, and tells
 * perf's JIT interfaces about it, as a real JIT does.
 *
 *   jitgen map SECONDS    one function, "jitgen_map_fn", announced in
 *                         /tmp/perf-PID.map; run SECONDS
 *   jitgen dump SECONDS   jit-PID.dump in the cwd, mmapped PROT_EXEC:
 *                         phase 1 (thread "jitA"): "jitgen_code_A" at X;
 *                         phase 2 (thread "jitB"): A unloaded, the memory
 *                         unmapped and mapped again, "jitgen_code_B" loaded
 *                         at the same X (a new LOAD record);
 *                         phase 3 (thread "jitM"): B moved to Y (a MOVE
 *                         record), X unmapped; SECONDS each
 *   jitgen entry SECONDS  two functions with frame pointers, announced in
 *                         /tmp/perf-PID.map: "jitgen_outer" calls
 *                         "jitgen_leaf" (push rbp; mov rbp,rsp; pop rbp;
 *                         ret) 20 million times a call, so most samples
 *                         in the leaf are at its first instructions or
 *                         its return, where rbp is still the caller's
 *   jitgen anon SECONDS   code in anonymous memory, no file written (the
 *                         test writes /tmp/perf-PID.map itself)
 *   jitgen late SECONDS   a buffering JIT (V8's jitdump is a stdio stream
 *                         flushed when full): "jitgen_code_L" is loaded
 *                         (its LOAD stamped then) and runs on thread
 *                         "jitL" for SECONDS; only after it stopped and
 *                         1 s more is the record written; then it lives
 *                         3 x SECONDS more running no JIT code
 *   jitgen flood SECONDS  a perf map past profd's budget: "jitgen_flood_A"
 *                         at X runs on thread "jitA"; then 400 000 lines of
 *                         other code are appended (the budget fills), X is
 *                         mapped again with new code, "jitgen_flood_B" is
 *                         appended for it (dropped by a full table) and it
 *                         runs on thread "jitB"; SECONDS each
 * Prints "ready PID ADDR" once the code is ready; with a third argument
 * GO, waits until file GO exists before running it (the profiler is up).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CODE_SIZE 64

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* mov ecx, 20000000; 1: dec ecx; jnz 1b; ret — padded with int3 */
static void emit(unsigned char *p)
{
	static const unsigned char code[] = {
		0xb9, 0x00, 0x2d, 0x31, 0x01,	/* mov ecx, 20000000 */
		0xff, 0xc9,			/* dec ecx */
		0x75, 0xfc,			/* jnz -4 */
		0xc3,				/* ret */
	};

	memset(p, 0xcc, CODE_SIZE);
	memcpy(p, code, sizeof(code));
}

/*
 * jitgen_outer at @p, jitgen_leaf at @p + CODE_SIZE: the outer function
 * keeps a frame pointer and calls the leaf in a loop; the leaf is only
 * its prologue and epilogue.
 */
static void emit_entry(unsigned char *p)
{
	static const unsigned char outer[] = {
		0x55,				/* push rbp */
		0x48, 0x89, 0xe5,		/* mov rbp, rsp */
		0xb9, 0x00, 0x2d, 0x31, 0x01,	/* mov ecx, 20000000 */
		0xe8, CODE_SIZE - 14, 0, 0, 0,	/* 9: call leaf (p + CODE_SIZE) */
		0xff, 0xc9,			/* 14: dec ecx */
		0x75, 0xf7,			/* jnz 9 */
		0x5d,				/* pop rbp */
		0xc3,				/* ret */
	};
	static const unsigned char leaf[] = {
		0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3,	/* push; mov; pop; ret */
	};

	memset(p, 0xcc, 2 * CODE_SIZE);
	memcpy(p, outer, sizeof(outer));
	memcpy(p + CODE_SIZE, leaf, sizeof(leaf));
}

static int entry_code;	/* map_code() writes emit_entry()'s functions */

/* Anonymous executable memory at @want (0: anywhere) holding the loop. */
static unsigned char *map_code(void *want)
{
	unsigned char *p = mmap(want, 4096, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | (want ? MAP_FIXED_NOREPLACE : 0),
				-1, 0);

	if (p == MAP_FAILED || (want && p != want)) {
		perror("mmap code");
		exit(1);
	}
	if (entry_code)
		emit_entry(p);
	else
		emit(p);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		exit(1);
	}
	return p;
}

static void run_for(void (*fn)(void), double seconds)
{
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);

	while (mono_ns() < end)
		fn();
}

struct run_arg {
	void (*fn)(void);
	double seconds;
	const char *name;
};

static void *runner(void *a)
{
	struct run_arg *r = a;

	prctl(PR_SET_NAME, r->name);
	run_for(r->fn, r->seconds);
	return NULL;
}

/* Run @fn on a thread named @name for @seconds, and wait for it. */
static void phase(void *fn, double seconds, const char *name)
{
	struct run_arg r = { .fn = (void (*)(void))fn, .seconds = seconds, .name = name };
	pthread_t t;

	pthread_create(&t, NULL, runner, &r);
	pthread_join(t, NULL);
}

/* jitdump (tools/perf/Documentation/jitdump-specification.txt) */
struct rec_header {
	uint32_t id, total_size;
	uint64_t timestamp;
};

static FILE *dump;

static void dump_open(void)
{
	char path[64];
	struct {
		uint32_t magic, version, total_size, elf_mach, pad1, pid;
		uint64_t timestamp, flags;
	} h = { 0x4A695444, 1, sizeof(h), 62 /* EM_X86_64 */, 0, (uint32_t)getpid(),
		mono_ns(), 0 };

	snprintf(path, sizeof(path), "jit-%d.dump", getpid());
	dump = fopen(path, "w+");
	if (!dump) {
		perror(path);
		exit(1);
	}
	fwrite(&h, sizeof(h), 1, dump);
	fflush(dump);
	/* the JIT's announcement: the file mapped executable */
	if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(dump), 0) == MAP_FAILED) {
		perror("mmap dump");
		exit(1);
	}
}

static void dump_debug(uint64_t addr, const char *file, uint32_t line)
{
	struct rec_header r = { 2, 0, mono_ns() };
	uint64_t head[2] = { addr, 2 };
	struct { uint64_t addr; uint32_t line, discrim; } e1 = { addr, line, 0 },
							  e2 = { addr + 5, line + 1, 0 };
	const char same[2] = { (char)0xff, 0 };

	r.total_size = (uint32_t)(sizeof(r) + sizeof(head) + sizeof(e1) + strlen(file) + 1 +
				  sizeof(e2) + sizeof(same));
	fwrite(&r, sizeof(r), 1, dump);
	fwrite(head, sizeof(head), 1, dump);
	fwrite(&e1, sizeof(e1), 1, dump);
	fwrite(file, strlen(file) + 1, 1, dump);
	fwrite(&e2, sizeof(e2), 1, dump);
	fwrite(same, sizeof(same), 1, dump);
	fflush(dump);
}

static void dump_load_at(uint64_t addr, const char *name, uint64_t index, uint64_t ts)
{
	struct rec_header r = { 0, 0, ts };
	struct { uint32_t pid, tid; uint64_t vma, code_addr, code_size, code_index; } l = {
		(uint32_t)getpid(), (uint32_t)syscall(SYS_gettid), addr, addr, CODE_SIZE, index };

	r.total_size = (uint32_t)(sizeof(r) + sizeof(l) + strlen(name) + 1 + CODE_SIZE);
	fwrite(&r, sizeof(r), 1, dump);
	fwrite(&l, sizeof(l), 1, dump);
	fwrite(name, strlen(name) + 1, 1, dump);
	fwrite((void *)addr, CODE_SIZE, 1, dump);
	fflush(dump);
}

static void dump_load(uint64_t addr, const char *name, uint64_t index)
{
	dump_load_at(addr, name, index, mono_ns());
}

static void dump_move(uint64_t from, uint64_t to, uint64_t index)
{
	struct rec_header r = { 1, 0, mono_ns() };
	struct { uint32_t pid, tid; uint64_t vma, old_addr, new_addr, size, index; } m = {
		(uint32_t)getpid(), (uint32_t)syscall(SYS_gettid), to, from, to, CODE_SIZE, index };

	r.total_size = sizeof(r) + sizeof(m);
	fwrite(&r, sizeof(r), 1, dump);
	fwrite(&m, sizeof(m), 1, dump);
	fflush(dump);
}

static void wait_go(const char *go)
{
	while (go && access(go, F_OK))
		usleep(10000);
}

int main(int argc, char **argv)
{
	const char *go = argc > 3 ? argv[3] : NULL;
	double secs = argc > 2 ? atof(argv[2]) : 5;
	const char *mode = argc > 1 ? argv[1] : "map";
	unsigned char *x, *y;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "entry")) {
		char path[64];
		FILE *f;

		entry_code = 1;
		x = map_code(NULL);
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
		f = fopen(path, "w");
		if (!f) {
			perror(path);
			return 1;
		}
		fprintf(f, "%lx %x jitgen_outer\n%lx %x jitgen_leaf\n", (unsigned long)x,
			CODE_SIZE, (unsigned long)x + CODE_SIZE, CODE_SIZE);
		fclose(f);
		printf("ready %d %lx\n", getpid(), (unsigned long)x);
		wait_go(go);
		phase(x, secs, "jitrun");
		return 0;
	}
	if (!strcmp(mode, "map") || !strcmp(mode, "anon")) {
		x = map_code(NULL);
		if (!strcmp(mode, "map")) {
			char path[64];
			FILE *f;

			snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
			f = fopen(path, "w");
			if (!f) {
				perror(path);
				return 1;
			}
			fprintf(f, "%lx %x jitgen_map_fn\n", (unsigned long)x, CODE_SIZE);
			fclose(f);
		}
		printf("ready %d %lx\n", getpid(), (unsigned long)x);
		wait_go(go);
		phase(x, secs, "jitrun");
		return 0;
	}
	if (!strcmp(mode, "flood")) {
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
		x = map_code(NULL);
		f = fopen(path, "w");
		if (!f) {
			perror(path);
			return 1;
		}
		fprintf(f, "%lx %x jitgen_flood_A\n", (unsigned long)x, CODE_SIZE);
		fflush(f);
		printf("ready %d %lx\n", getpid(), (unsigned long)x);
		wait_go(go);
		phase(x, secs, "jitA");
		for (unsigned long i = 0; i < 400000; i++)
			fprintf(f, "%lx 40 jitgen_flood_filler_%lu\n",
				0x100000000000UL + i * 0x40, i);
		fflush(f);
		usleep(500000);	/* read (and dropped) before B is written */
		munmap(x, 4096);
		if (map_code(x) != x)
			return 1;
		fprintf(f, "%lx %x jitgen_flood_B\n", (unsigned long)x, CODE_SIZE);
		fclose(f);
		phase(x, secs, "jitB");
		printf("done\n");
		return 0;
	}
	if (!strcmp(mode, "late")) {
		uint64_t loaded;

		dump_open();
		x = map_code(NULL);
		loaded = mono_ns();	/* the LOAD's time: before the code runs */
		printf("ready %d %lx\n", getpid(), (unsigned long)x);
		wait_go(go);
		phase(x, secs, "jitL");
		sleep(1);
		dump_load_at((uint64_t)x, "jitgen_code_L", 1, loaded);
		usleep((useconds_t)(3 * secs * 1e6));
		printf("done\n");
		return 0;
	}
	if (strcmp(mode, "dump")) {
		fprintf(stderr, "usage: jitgen map|dump|anon|entry|late|flood SECONDS\n");
		return 2;
	}
	dump_open();
	x = map_code(NULL);
	dump_debug((uint64_t)x, "gen/a.src", 10);
	dump_load((uint64_t)x, "jitgen_code_A", 1);
	printf("ready %d %lx\n", getpid(), (unsigned long)x);
	wait_go(go);
	phase(x, secs, "jitA");
	/* unload A; new code B in the very same place */
	munmap(x, 4096);
	if (map_code(x) != x)
		return 1;
	dump_debug((uint64_t)x, "gen/b.src", 20);
	dump_load((uint64_t)x, "jitgen_code_B", 2);
	phase(x, secs, "jitB");
	/* B moves: copied to Y, X unmapped */
	y = map_code(NULL);
	dump_move((uint64_t)x, (uint64_t)y, 2);
	munmap(x, 4096);
	phase(y, secs, "jitM");
	printf("done\n");
	return 0;
}
