// SPDX-License-Identifier: GPL-2.0
/*
 * pingpong.c - a context-switch-heavy workload for bench/offcpu_cost.sh:
 * two threads bounce one byte over two pipes ROUNDS times. Each round
 * blocks each thread once in pipe_read (two blocking switch-outs, and as
 * many switch-ins), so it runs at whatever rate the machine switches.
 *
 *   pingpong ROUNDS    prints "wall_s=S cpu_s=C switches_per_s=R"
 *                      (S: CLOCK_MONOTONIC over the rounds; C: the
 *                      process's user + system time; R: 2 ROUNDS / S, the
 *                      blocking switches of the two threads)
 */
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long rounds;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *ponger(void *arg)
{
	char c;

	for (long i = 0; i < rounds; i++)
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			exit(1);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	struct rusage ru;
	double t0, s;
	char c = 'x';

	if (argc != 2 || (rounds = atol(argv[1])) <= 0)
		return 2;
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, ponger, NULL))
		return 1;
	t0 = now_s();
	for (long i = 0; i < rounds; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 1;
	s = now_s() - t0;
	pthread_join(t, NULL);
	getrusage(RUSAGE_SELF, &ru);
	printf("wall_s=%.4f cpu_s=%.4f switches_per_s=%.0f\n", s,
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6, 2 * rounds / s);
	return 0;
}
