/*
 * cold.c - a function split by GCC into a hot part and a .cold part
 * (-freorder-blocks-and-partition, on at -O2): the branch of split_work
 * that starts with a call to the cold function cold_report() is predicted
 * never taken, so its blocks - the spin loop included - go to
 * split_work.cold (a separate FUNC symbol in .text.unlikely, with its own
 * FDE whose first row already has split_work's frame). The workload takes
 * that branch all the time:
 *   main -> cold_a -> cold_b -> split_work [.cold] -> cold_leaf
 * Half of each round spins in split_work.cold itself, half in cold_leaf
 * (called from the .cold part).
 * Usage: cold SECONDS
 */
#include "common.h"

__attribute__((cold)) NOINL void cold_report(int n) { sink += n; }

NOINL void cold_leaf(void) { SPIN_N(2000000); }

NOINL void split_work(double end, int rare)
{
	volatile char pad[64];

	pad[rare & 63] = 1;
	if (rare) {
		cold_report(pad[0]);
		while (now() < end) {
			SPIN_N(2000000);
			cold_leaf();
		}
	}
	sink += pad[1];
}

NOINL void cold_b(double end, int rare) { split_work(end, rare); sink++; }
NOINL void cold_a(double end, int rare) { cold_b(end, rare); sink++; }

int main(int argc, char **argv)
{
	cold_a(now() + arg_seconds(argc, argv), argc > 0);
	return 0;
}
