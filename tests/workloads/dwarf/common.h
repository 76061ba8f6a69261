/*
 * common.h - shared helpers of the DWARF-unwinding workloads.
 *
 * Every workload is built -O2 -fomit-frame-pointer: no function keeps a
 * frame pointer, so only .eh_frame tables give the caller chain. NOINL
 * (noipa: no inlining, no cloning such as foo.isra.0/foo.constprop.0, no
 * interprocedural changes) keeps each function a real frame with the
 * exact symbol name the tests expect.
 *
 * The spin loops check the clock only every 200000 iterations, so the
 * time spent in the vDSO (a frame the tests do not expect) is < 0.1 %.
 */
#ifndef DWARF_WORKLOAD_COMMON_H
#define DWARF_WORKLOAD_COMMON_H

#include <stdlib.h>
#include <time.h>

#define NOINL __attribute__((noipa))

static volatile unsigned long sink;

static inline __attribute__((always_inline)) double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The run time: argv[1] seconds (default 5). */
static inline double arg_seconds(int argc, char **argv)
{
	return argc > 1 ? atof(argv[1]) : 5;
}

/* Spin (in the calling function's own frame) until @end. */
#define SPIN_UNTIL(end)                                       \
	do {                                                  \
		while (now() < (end))                         \
			for (int i_ = 0; i_ < 200000; i_++)   \
				sink += i_;                   \
	} while (0)

/* Spin @n iterations (in the calling function's own frame). */
#define SPIN_N(n)                                             \
	do {                                                  \
		for (int i_ = 0; i_ < (n); i_++)              \
			sink += i_;                           \
	} while (0)

#endif
