// SPDX-License-Identifier: GPL-2.0
/*
 * wall.c - one thread that alternates a CPU spin and a sleep, each in a
 * known chain, and measures its own time in each (tests/test_wall.py;
 * built -O2 -fomit-frame-pointer, so only DWARF unwinding walks it).
 *
 *   wall SECONDS SPIN_MS SLEEP_MS
 *     for SECONDS the thread "walker" runs, in turn:
 *       spin_outer -> spin_inner: a busy loop of SPIN_MS of its own CPU
 *                                 time (CLOCK_THREAD_CPUTIME_ID)
 *       sleep_outer -> sleep_inner: nanosleep(SLEEP_MS)
 *     then prints "spin NS" (the thread's CPU time in the spins),
 *     "sleep NS" (CLOCK_MONOTONIC around each nanosleep: the time it was
 *     off the CPU, the run-queue wait after its wakeup included) and
 *     "sleeps N" (how many).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static uint64_t t_spin, t_sleep, n_sleeps;
static long spin_ms, sleep_ms;
static volatile uint64_t sink;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

NOINLINE void spin_inner(void)
{
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t;

	do {
		for (int i = 0; i < 20000; i++)
			sink += i * sink + 1;
		t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	} while (t - t0 < (uint64_t)spin_ms * 1000000);
	t_spin += t - t0;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void spin_outer(void)
{
	spin_inner();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void sleep_inner(void)
{
	struct timespec ts = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000L };
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	nanosleep(&ts, NULL);
	t_sleep += clock_ns(CLOCK_MONOTONIC) - t0;
	n_sleeps++;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void sleep_outer(void)
{
	sleep_inner();
	__asm__ volatile("" ::: "memory");
}

static void *walker(void *arg)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)(long)arg * 1000000000ULL;

	pthread_setname_np(pthread_self(), "walker");
	while (clock_ns(CLOCK_MONOTONIC) < end) {
		spin_outer();
		sleep_outer();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc != 4)
		return 2;
	spin_ms = atol(argv[2]);
	sleep_ms = atol(argv[3]);
	if (pthread_create(&t, NULL, walker, (void *)atol(argv[1])))
		return 1;
	pthread_join(t, NULL);
	printf("spin %llu\nsleep %llu\nsleeps %llu\n", (unsigned long long)t_spin,
	       (unsigned long long)t_sleep, (unsigned long long)n_sleeps);
	return 0;
}
