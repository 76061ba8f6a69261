/*
 * dlopen.c - the hot leaf is in a library loaded with dlopen():
 * main -> dl_a -> dl_b -> lib_entry (libhot.so) -> lib_leaf (spins).
 * With a third argument WAIT, main first spins WAIT seconds in
 * pre_spin (so a profiler already knows the process and its mappings),
 * then loads the library.
 * Usage: dlopen SECONDS LIBRARY [WAIT]
 */
#include <dlfcn.h>
#include <stdio.h>

#include "common.h"

NOINL void pre_spin(double end) { SPIN_UNTIL(end); }

NOINL void dl_b(void (*fn)(double), double end)
{
	fn(end);
	sink++;
}

NOINL void dl_a(void (*fn)(double), double end)
{
	dl_b(fn, end);
	sink++;
}

int main(int argc, char **argv)
{
	double start = now(), wait = argc > 3 ? atof(argv[3]) : 0;
	void *lib;
	void (*fn)(double);

	if (argc < 3)
		return 2;
	if (wait > 0)
		pre_spin(start + wait);
	lib = dlopen(argv[2], RTLD_NOW);
	fn = lib ? (void (*)(double))dlsym(lib, "lib_entry") : NULL;
	if (!fn) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	dl_a(fn, now() + arg_seconds(argc, argv));
	return 0;
}
