/*
 * burner.c - short-lived CPU burner: main -> burn_outer -> burn_inner
 * spins for MS milliseconds of CPU time, then exits. Usage: burner MS
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn_inner(double end)
{
	while (cpu_now() < end)
		for (int i = 0; i < 20000; i++)
			sink += i;
}

__attribute__((noinline)) void burn_outer(double end)
{
	burn_inner(end);
	sink++;
}

int main(int argc, char **argv)
{
	burn_outer(cpu_now() + (argc > 1 ? atof(argv[1]) : 50) / 1000.0);
	return 0;
}
