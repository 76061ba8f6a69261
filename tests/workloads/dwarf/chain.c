/*
 * chain.c - a 5-deep call chain, no frame pointers:
 * main -> d_chain_a -> d_chain_b -> d_chain_c -> d_chain_d -> d_chain_e (spins).
 * The callers keep their stack aligned (sub $8,%rsp) and do work after the
 * call, so every frame has its own CFA rule and none is a tail call.
 * Usage: chain SECONDS
 */
#include "common.h"

NOINL void d_chain_e(double end) { SPIN_UNTIL(end); }
NOINL void d_chain_d(double end) { d_chain_e(end); sink++; }
NOINL void d_chain_c(double end) { d_chain_d(end); sink++; }
NOINL void d_chain_b(double end) { d_chain_c(end); sink++; }
NOINL void d_chain_a(double end) { d_chain_b(end); sink++; }

int main(int argc, char **argv)
{
	d_chain_a(now() + arg_seconds(argc, argv));
	return 0;
}
