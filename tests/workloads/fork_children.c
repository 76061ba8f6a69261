/*
 * fork_children.c - a parent that forks short-lived children without
 * exec: each child spins MS milliseconds (CPU time) in a known chain,
 * main -> spawn -> child_work -> child_leaf, and _exit()s; the parent
 * waits for it and forks the next, for SECONDS. The children are gone
 * long before a profiler's reader reads /proc/CHILD/maps.
 * With EXEC (a path), each child execs EXEC (no arguments) at once,
 * without child_work: no sample of a child may carry child_work's or
 * child_leaf's names.
 * Usage: fork_children SECONDS MS PIDFILE [EXEC]
 * (PIDFILE: the parent's PID, written after its warm-up.)
 * Build: -O2 -g -fno-omit-frame-pointer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void child_leaf(void)
{
	for (int i = 0; i < 200000; i++)
		sink += i;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void child_work(double ms)
{
	double end = cpu_now() + ms / 1e3;

	while (cpu_now() < end)
		child_leaf();
	__asm__ volatile("" ::: "memory");
}

/* The parent's own CPU before the storm: profd reads its maps then. */
__attribute__((noinline)) static void parent_warm(double ms)
{
	double end = cpu_now() + ms / 1e3;

	while (cpu_now() < end)
		for (int i = 0; i < 20000; i++)
			sink += i;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int spawn(double ms, const char *exec)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (!pid) {
		if (exec)
			execl(exec, exec, (char *)NULL);
		else
			child_work(ms);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	__asm__ volatile("" ::: "memory");
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec ts;
	double end, ms;
	const char *exec;
	FILE *f;
	long n = 0;

	if (argc < 4)
		return 2;
	ms = atof(argv[2]);
	exec = argc > 4 ? argv[4] : NULL;
	parent_warm(300);
	f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + atof(argv[1]);
	do {
		if (spawn(ms, exec))
			return 1;
		n++;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
	printf("%ld children\n", n);
	return 0;
}
