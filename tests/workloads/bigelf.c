// SPDX-License-Identifier: GPL-2.0
/*
 * bigelf.c - load a big shared object (argv[1], e.g. a copy of
 * libLLVM) and, until killed, spend argv[2] ms of every 100 ms of wall
 * time inside it (LLVMContextCreate/Dispose): profd must open, parse
 * and build the unwind table of that object. Prints "ready" once the
 * object is loaded.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	void *(*create)(void);
	void (*dispose)(void *);
	double busy = (argc > 2 ? atof(argv[2]) : 2.0) / 1000;
	void *h;

	if (argc < 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "bigelf: %s\n", dlerror());
		return 1;
	}
	create = (void *(*)(void))dlsym(h, "LLVMContextCreate");
	dispose = (void (*)(void *))dlsym(h, "LLVMContextDispose");
	if (!create || !dispose) {
		fprintf(stderr, "bigelf: no LLVMContextCreate in %s\n", argv[1]);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		double t = now_s(CLOCK_PROCESS_CPUTIME_ID);

		while (now_s(CLOCK_PROCESS_CPUTIME_ID) - t < busy)
			dispose(create());
		usleep(100000);
	}
}
