/*
 * libhot.c - the shared library dlopen.c loads (built -fPIC -shared
 * -fomit-frame-pointer): lib_entry -> lib_leaf (spins). lib_leaf is static,
 * so the call is direct (no PLT).
 */
#include "common.h"

static NOINL void lib_leaf(double end) { SPIN_UNTIL(end); }

NOINL void lib_entry(double end)
{
	lib_leaf(end);
	sink++;
}
