/*
 * recursion.c - deep recursion: main -> rec (x DEPTH) -> rec_leaf (spins).
 * rec(n) calls rec(n - 1) down to rec(1), which calls rec_leaf: DEPTH rec
 * frames. Usage: recursion SECONDS DEPTH
 */
#include "common.h"

NOINL void rec_leaf(double end) { SPIN_UNTIL(end); }

NOINL void rec(int n, double end)
{
	if (n <= 1)
		rec_leaf(end);
	else
		rec(n - 1, end);
	sink++;		/* not a tail call */
}

int main(int argc, char **argv)
{
	int depth = argc > 2 ? atoi(argv[2]) : 200;

	rec(depth, now() + arg_seconds(argc, argv));
	return 0;
}
