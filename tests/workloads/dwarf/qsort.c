/*
 * qsort.c - a callback from libc: main -> sort_a -> sort_b -> qsort (libc,
 * built without frame pointers) -> ... -> cmp_spin, which spins a little
 * per comparison, so nearly all samples are in cmp_spin below libc's sort
 * internals.
 * Usage: qsort SECONDS
 */
#include "common.h"

#define N 1000

NOINL int cmp_spin(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	SPIN_N(3000);
	return (x > y) - (x < y);
}

NOINL void sort_b(int *v, unsigned *seed)
{
	for (int i = 0; i < N; i++)
		v[i] = (int)((*seed = *seed * 1103515245u + 12345u) >> 8);
	qsort(v, N, sizeof(*v), cmp_spin);
	sink += v[0];
}

NOINL void sort_a(double end)
{
	static int v[N];
	unsigned seed = 1;

	while (now() < end)
		sort_b(v, &seed);
	sink++;
}

int main(int argc, char **argv)
{
	sort_a(now() + arg_seconds(argc, argv));
	return 0;
}
