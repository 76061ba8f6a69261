/*
 * cpuwork.c - deterministic CPU-bound benchmark for bench/slowdown.sh.
 *
 * Each worker does a fixed amount of work: ROUNDS rounds of an integer
 * hash/table-lookup loop over a 64 KiB table (fits L2, so profiler cache
 * pollution shows), reached through a 6-deep frame-pointer call chain
 * (main -> run_worker -> stage_a -> stage_b -> stage_c -> kernel_loop).
 * The amount of work is fixed, so the elapsed time measures how much CPU
 * the worker was left with.
 *
 * Usage: cpuwork ROUNDS [JOBS]
 * Forks JOBS workers (default 1), waits for all, and prints
 *   wall_s=<seconds from fork of the first to exit of the last>
 *   cpu_s=<user+system CPU seconds of all workers> checksum=<x>
 * The checksum is the same on every run for the same ROUNDS and JOBS.
 * Build: gcc -O2 -fno-omit-frame-pointer -o cpuwork cpuwork.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define TABLE_WORDS (64 * 1024 / sizeof(uint64_t))
#define ROUND_ITERS 1000000

static uint64_t table[TABLE_WORDS];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double tv_s(const struct timeval *tv)
{
	return tv->tv_sec + tv->tv_usec / 1e6;
}

__attribute__((noinline)) uint64_t kernel_loop(uint64_t x)
{
	for (int i = 0; i < ROUND_ITERS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		x += table[x % TABLE_WORDS];
		table[(x >> 20) % TABLE_WORDS] ^= x;
	}
	return x;
}

__attribute__((noinline)) uint64_t stage_c(uint64_t x) { return kernel_loop(x) + 1; }
__attribute__((noinline)) uint64_t stage_b(uint64_t x) { return stage_c(x) ^ 3; }
__attribute__((noinline)) uint64_t stage_a(uint64_t x) { return stage_b(x) * 5; }

__attribute__((noinline)) uint64_t run_worker(long rounds)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < TABLE_WORDS; i++)
		table[i] = i * 0x2545f4914f6cdd1dULL;
	for (long r = 0; r < rounds; r++)
		x = stage_a(x);
	return x;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000;
	int jobs = argc > 2 ? atoi(argv[2]) : 1;
	uint64_t sum = 0;
	double start;
	int status;

	if (rounds < 1 || jobs < 1) {
		fprintf(stderr, "usage: cpuwork ROUNDS [JOBS]\n");
		return 64;
	}
	start = now();
	if (jobs == 1) {
		sum = run_worker(rounds);
	} else {
		for (int j = 0; j < jobs; j++) {
			pid_t p = fork();

			if (p < 0) {
				perror("fork");
				return 1;
			}
			if (p == 0) {
				uint64_t x = run_worker(rounds);

				_exit((int)(x & 0x7f));
			}
		}
		for (int j = 0; j < jobs; j++) {
			if (wait(&status) < 0 || !WIFEXITED(status)) {
				fprintf(stderr, "cpuwork: a worker failed\n");
				return 1;
			}
			sum += WEXITSTATUS(status);
		}
	}
	double wall = now() - start;
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	printf("wall_s=%.4f cpu_s=%.4f checksum=%llx\n", wall,
	       tv_s(&self.ru_utime) + tv_s(&self.ru_stime) +
	       tv_s(&kids.ru_utime) + tv_s(&kids.ru_stime),
	       (unsigned long long)sum);
	return 0;
}
