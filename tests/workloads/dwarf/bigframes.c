/*
 * bigframes.c - 20 nested frames of 2 KiB locals each (~41 KiB of stack
 * between the leaf and main, more than the 8 KiB perf copies by default):
 * main -> big_frame (x 20) -> big_leaf (spins).
 * The arrays are written through volatile, so they stay on the stack.
 * Usage: bigframes SECONDS
 */
#include "common.h"

#define FRAMES 20

NOINL void big_leaf(double end) { SPIN_UNTIL(end); }

NOINL void big_frame(int n, double end)
{
	volatile char buf[2048];

	for (int i = 0; i < (int)sizeof(buf); i += 64)
		buf[i] = (char)(n + i);
	if (n <= 1)
		big_leaf(end);
	else
		big_frame(n - 1, end);
	sink += buf[n * 64 % sizeof(buf)];
}

int main(int argc, char **argv)
{
	big_frame(FRAMES, now() + arg_seconds(argc, argv));
	return 0;
}
