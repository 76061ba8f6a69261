// C half of tests/workloads/gocgo (see main.go): Go calls cOuter, which
// calls cInner, which calls an exported Go function back, forever; the
// nested path's Go callback (goNest) calls cDeep, which calls goDeep back,
// forever. The functions are not inlined and make no tail calls, so each
// keeps its frame on the thread's system stack (g0) under the Go callback.
#include "_cgo_export.h"

volatile int c_sink;

__attribute__((noinline)) void cInner(int which)
{
	for (;;) {
		if (which == 2)
			goNest();
		else if (which)
			goAlloc();
		else
			goSpin();
		c_sink++;	/* not a tail call */
	}
}

__attribute__((noinline)) void cOuter(int which)
{
	cInner(which);
	c_sink++;
}

__attribute__((noinline)) void cDeep(void)
{
	for (;;) {
		goDeep();
		c_sink++;
	}
}
