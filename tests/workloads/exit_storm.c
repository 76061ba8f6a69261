/*
 * exit_storm.c - a fork/exec storm of short-lived processes that work in
 * their exit: each child execs this program again, touches MIB MiB of
 * memory, burns MS milliseconds of CPU and exits, so the kernel frees the
 * memory in do_exit() (samples taken after sched_process_exit on kernels
 * that fire it before the memory is torn down). Two children at a time.
 * Usage: exit_storm SECONDS [MS [MIB [PIDFILE]]] (PIDFILE: the children's
 * PIDs, one a line); the child: exit_storm -c MS MIB
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void storm_burn(double ms)
{
	double end = now(CLOCK_PROCESS_CPUTIME_ID) + ms / 1e3;

	while (now(CLOCK_PROCESS_CPUTIME_ID) < end)
		for (int i = 0; i < 20000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	static char self[4096];
	FILE *pids = NULL;
	double end;
	int running = 0;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return 1;
	self[n] = '\0';

	if (argc == 4 && !strcmp(argv[1], "-c")) {
		size_t len = (size_t)atoi(argv[3]) << 20;
		char *mem = malloc(len);

		if (mem)
			memset(mem, 1, len);
		storm_burn(atof(argv[2]));
		return 0;	/* the kernel frees mem in do_exit() */
	}
	if (argc < 2)
		return 2;
	if (argc > 4 && !(pids = fopen(argv[4], "w")))
		return 1;
	end = now(CLOCK_MONOTONIC) + atof(argv[1]);
	while (now(CLOCK_MONOTONIC) < end) {
		while (running < 2) {
			pid_t pid = fork();

			if (pid == 0) {
				execl(self, argv[0], "-c", argc > 2 ? argv[2] : "20",
				      argc > 3 ? argv[3] : "64", (char *)NULL);
				_exit(127);
			}
			running += pid > 0;
			if (pid > 0 && pids)
				fprintf(pids, "%d\n", (int)pid);
		}
		if (wait(NULL) > 0)
			running--;
	}
	while (running-- > 0)
		wait(NULL);
	if (pids)
		fclose(pids);
	return 0;
}
