/*
 * fork_children.c - a parent that forks short-lived children without
 * exec: each child spins MS milliseconds (CPU time) in a known chain,
 * main -> spawn -> child_work -> child_leaf, and _exit()s; the parent
 * waits for it and forks the next, for SECONDS. The children are gone
 * long before a profiler's reader reads /proc/CHILD/maps.
 * With EXEC (a path), each child spins MS in child_work first, then
 * execs EXEC with EXEC_MS (its spin, in milliseconds) as its argument:
 * a child's samples before the exec are in child_work and child_leaf of
 * this file, those after it in EXEC's own functions.
 * Usage: fork_children SECONDS MS PIDFILE [EXEC [EXEC_MS]]
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

__attribute__((noinline)) static int spawn(double ms, const char *exec,
					  const char *exec_ms)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (!pid) {
		child_work(ms);
		if (exec)
			execl(exec, exec, exec_ms, (char *)NULL);
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
	const char *exec, *exec_ms;
	FILE *f;
	long n = 0;

	if (argc < 4)
		return 2;
	ms = atof(argv[2]);
	exec = argc > 4 ? argv[4] : NULL;
	exec_ms = argc > 5 ? argv[5] : "2";
	parent_warm(300);
	f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + atof(argv[1]);
	do {
		if (spawn(ms, exec, exec_ms))
			return 1;
		n++;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
	printf("%ld children\n", n);
	return 0;
}
