/*
 * fork_exec_target.c - what fork_children's children exec: spins MS
 * milliseconds (CPU time; argv[1], default 2) in exec_target_leaf and
 * exits. Its names are its own: none of fork_children's. exec_target_decoy
 * is never called: 4 KiB of code placed where fork_children's functions
 * lie in their file (both are PIE at the same base under setarch -R), so
 * a sample of fork_children's code named by this file's mappings shows
 * as exec_target_decoy, not as an address outside every function.
 * Build: -O2 -g -fno-omit-frame-pointer.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline, used)) static void exec_target_decoy(void)
{
	__asm__ volatile(".skip 4096, 0x90");
}

__attribute__((noinline)) static void exec_target_leaf(double ms)
{
	struct timespec ts;
	double end;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + ms / 1e3;
	do {
		for (int i = 0; i < 20000; i++)
			sink += i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

int main(int argc, char **argv)
{
	exec_target_leaf(argc > 1 ? atof(argv[1]) : 2);
	return 0;
}
