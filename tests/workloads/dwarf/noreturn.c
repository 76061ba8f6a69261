/*
 * noreturn.c - a call to a noreturn function is its caller's last
 * instruction: main -> nr_outer -> die_in -> spin_forever (spins, then
 * exits). The return address die_in leaves on the stack is the first byte
 * after die_in, the first instruction of after_die_in (different CFA, see
 * below). Unwinding or symbolizing that address as is (not address - 1)
 * gives the wrong row and the wrong name.
 * Usage: noreturn SECONDS
 */
#include <unistd.h>

#include "common.h"

__attribute__((noreturn)) NOINL void spin_forever(double end)
{
	SPIN_UNTIL(end);
	_exit(0);
}

/* sub $8,%rsp; call spin_forever - nothing after the call. */
NOINL void die_in(double end)
{
	spin_forever(end);
}

/*
 * Laid out right after die_in (same section, 1-byte function alignment):
 * its first instruction, where die_in's return address points, has
 * CFA = rsp + 8, while die_in's call site has CFA = rsp + 16.
 */
__attribute__((aligned(1))) NOINL void after_die_in(double end)
{
	if (end < 0)
		die_in(end);
	sink++;
}

NOINL void nr_outer(double end)
{
	die_in(end);
	sink++;		/* not a tail call */
}

int main(int argc, char **argv)
{
	double end = now() + arg_seconds(argc, argv);

	if (argc > 2)
		after_die_in(end);
	nr_outer(end);
}
