/*
 * dlhold.c - load a library, spin in our own code while it is mapped,
 * exit: a big library passing through the machine (profd builds its
 * unwind table on this process's first sample). The unwind-table
 * eviction tests run a copy of a big system library through it.
 * Usage: dlhold SECONDS LIBRARY
 */
#include <dlfcn.h>
#include <stdio.h>

#include "common.h"

NOINL void hold_spin(double end) { SPIN_UNTIL(end); }

int main(int argc, char **argv)
{
	void *lib;

	if (argc < 3)
		return 2;
	lib = dlopen(argv[2], RTLD_LAZY | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlhold: %s\n", dlerror());
		return 1;
	}
	hold_spin(now() + arg_seconds(argc, argv));
	dlclose(lib);
	return 0;
}
