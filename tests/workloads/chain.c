/*
 * chain.c - CPU-bound workload with a known 5-deep call chain:
 * main -> chain_a -> chain_b -> chain_c -> chain_d -> chain_e (spins).
 * Usage: chain SECONDS
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void chain_e(double end)
{
	while (now() < end)
		for (int i = 0; i < 200000; i++)
			sink += i;
}

__attribute__((noinline)) void chain_d(double end) { chain_e(end); sink++; }
__attribute__((noinline)) void chain_c(double end) { chain_d(end); sink++; }
__attribute__((noinline)) void chain_b(double end) { chain_c(end); sink++; }
__attribute__((noinline)) void chain_a(double end) { chain_b(end); sink++; }

int main(int argc, char **argv)
{
	chain_a(now() + (argc > 1 ? atof(argv[1]) : 5));
	return 0;
}
