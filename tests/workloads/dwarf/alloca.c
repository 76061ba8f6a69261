/*
 * alloca.c - frames whose CFA is rbp-based: a variable-length array makes
 * GCC keep rbp as the frame base even with -fomit-frame-pointer
 * (CFA = rbp + 16, the caller's rbp saved at CFA - 16), mixed with frames
 * whose CFA is rsp-based and which leave rbp alone:
 *   main -> vla_a -> plain_b -> vla_c -> plain_d -> vla_leaf (spins)
 * Unwinding from vla_leaf needs the CFA from rbp, then rbp restored from
 * its save slot before vla_a's CFA can be computed, across plain_* frames
 * that do not touch rbp.
 * Usage: alloca SECONDS
 */
#include "common.h"

NOINL void vla_leaf(double end, int n)
{
	volatile char buf[n];

	buf[0] = 1;
	buf[n - 1] = 2;
	SPIN_UNTIL(end);
	sink += buf[n / 2];
}

NOINL void plain_d(double end, int n) { vla_leaf(end, n + 16); sink++; }

NOINL void vla_c(double end, int n)
{
	volatile char buf[n];

	buf[n - 1] = 3;
	plain_d(end, n + 32);
	sink += buf[n - 1];
}

NOINL void plain_b(double end, int n) { vla_c(end, n + 48); sink++; }

NOINL void vla_a(double end, int n)
{
	volatile char buf[n];

	buf[n - 1] = 4;
	plain_b(end, n + 64);
	sink += buf[n - 1];
}

int main(int argc, char **argv)
{
	vla_a(now() + arg_seconds(argc, argv), argc + 100);
	return 0;
}
