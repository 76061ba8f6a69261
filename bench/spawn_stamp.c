/*
 * spawn_stamp.c - start programs and say when (issue 16 benchmarks).
 *
 * Starts each PROG with the one argument ARG (posix_spawn), all at once or
 * (-s) one after another, each waited for before the next, and prints one
 * line per program, "PID SPAWN_MONO_NS PROG": CLOCK_MONOTONIC in ns read
 * just before its posix_spawn() (the exec follows within a millisecond),
 * the clock of bpf_ktime_get_ns() and of `perf record -k mono`.
 * Usage: spawn_stamp [-s] ARG PROG...
 * Build: gcc -O2 -o spawn_stamp spawn_stamp.c
 */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int serial = 0, first = 1, n;
	long long t0[4096];
	pid_t pid[4096];

	if (argc > 1 && !strcmp(argv[1], "-s")) {
		serial = 1;
		first = 2;
	}
	if (argc < first + 2) {
		fprintf(stderr, "usage: spawn_stamp [-s] ARG PROG...\n");
		return 2;
	}
	n = argc - first - 1;
	if (n > 4096)
		n = 4096;
	for (int i = 0; i < n; i++) {
		char *av[] = { argv[first + 1 + i], argv[first], NULL };

		t0[i] = mono_ns();
		if (posix_spawn(&pid[i], av[0], NULL, NULL, av, environ)) {
			perror(av[0]);
			pid[i] = -1;
			continue;
		}
		if (serial)
			waitpid(pid[i], NULL, 0);
	}
	if (!serial)
		for (int i = 0; i < n; i++)
			if (pid[i] > 0)
				waitpid(pid[i], NULL, 0);
	for (int i = 0; i < n; i++)
		printf("%d %lld %s\n", (int)pid[i], t0[i], argv[first + 1 + i]);
	return 0;
}
