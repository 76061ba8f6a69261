/*
 * execstorm.c - an exec storm: RATE short-lived processes a second for
 * SECONDS, each exec'ing CHILD (default: this program, which spins
 * CHILD_US microseconds of CPU and exits), at most JOBS at a time.
 * Prints how many ran and the wall time taken.
 * Usage: execstorm RATE SECONDS [CHILD_US [JOBS [CHILD ARGS...]]]
 *        execstorm --child US
 */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

extern char **environ;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void __attribute__((noinline)) child_spin(double us)
{
	double end = now() + us / 1e6;
	volatile unsigned long x = 0;

	while (now() < end)
		for (int i = 0; i < 1000; i++)
			x++;
}

int main(int argc, char **argv)
{
	double rate, secs, start, end;
	char us[32] = "2000";
	char *self_argv[] = { argv[0], "--child", us, NULL };
	char **cargv = self_argv;
	long n = 0, running = 0, jobs = 64;

	if (argc == 3 && !strcmp(argv[1], "--child")) {
		child_spin(atof(argv[2]));
		return 0;
	}
	if (argc < 3)
		return 2;
	rate = atof(argv[1]);
	secs = atof(argv[2]);
	if (argc > 3)
		snprintf(us, sizeof(us), "%s", argv[3]);
	if (argc > 4)
		jobs = atol(argv[4]);
	if (argc > 5)
		cargv = &argv[5];
	start = now();
	end = start + secs;
	while (now() < end) {
		double due = start + n / rate;
		pid_t pid;

		while (running && waitpid(-1, NULL, WNOHANG) > 0)
			running--;
		if (running >= jobs) {
			wait(NULL);
			running--;
			continue;
		}
		if (now() < due - 0.004) {	/* a sleep takes >= ~4 ms here */
			usleep((useconds_t)((due - now()) * 1e6));
			continue;
		}
		if (posix_spawn(&pid, cargv[0], NULL, NULL, cargv, environ) == 0) {
			running++;
			n++;
		}
	}
	while (running-- > 0)
		wait(NULL);
	printf("execs %ld wall_s %.3f rate %.1f\n", n, now() - start, n / (now() - start));
	return 0;
}
