/*
 * libspin.c - a shared library that spins, and a program that calls it.
 *
 * Built twice by tests/test_hung_files.py:
 *   gcc -shared -fPIC -o libspin.so libspin.c          (the library)
 *   gcc -DSPIN_MAIN -o spin libspin.c -L. -lspin ...   (the program)
 * Usage: spin SECONDS - calls spin_in_lib() for SECONDS of wall time.
 */
#include <stdlib.h>
#include <time.h>

double spin_in_lib(double end);

#ifndef SPIN_MAIN
static volatile unsigned long sink;

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double spin_in_lib(double secs)
{
	double end = wall_now() + secs;

	while (wall_now() < end)
		for (int i = 0; i < 20000; i++)
			sink += i;
	return end;
}
#else
int main(int argc, char **argv)
{
	spin_in_lib(argc > 1 ? atof(argv[1]) : 5);
	return 0;
}
#endif
