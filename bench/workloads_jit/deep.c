/* bench/workloads_jit/deep.c - a native program whose main thread is
 * DEPTH frames of its own deep nearly all the time, the scale for
 * bench/jit_bpf_cost.sh (issue 19): main -> rec x (DEPTH - 2) -> leaf, the
 * leaf a loop of ~0.2 ms of arithmetic; built with frame pointers (bench/
 * lib.sh's WORKLOAD_CFLAGS). Usage: deep DEPTH SECONDS. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long leaf(unsigned long x)
{
	for (int i = 0; i < 200000; i++)
		x = (x * 31 + i) ^ (x >> 7);
	return x;
}

__attribute__((noinline)) static unsigned long rec(int n, unsigned long x)
{
	unsigned long r;

	r = n == 0 ? leaf(x) : rec(n - 1, x);
	__asm__ volatile("" : "+r"(r));	/* no tail call, no loop */
	return r + 1;
}

int main(int argc, char **argv)
{
	unsigned long sink = 0;
	double end;

	if (argc != 3) {
		fprintf(stderr, "usage: deep DEPTH SECONDS\n");
		return 2;
	}
	end = now() + atof(argv[2]);
	while (now() < end)
		sink += rec(atoi(argv[1]) - 3, sink);	/* main + rec(depth-3..0) + leaf */
	printf("%lu\n", sink & 1);
	return 0;
}
