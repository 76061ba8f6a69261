/*
 * vdso.c - the hot code is the kernel's vDSO: main -> vd_a -> vd_b, which
 * calls clock_gettime() in a tight loop (to the second after SECONDS) (libc's wrapper -> the vDSO's
 * __vdso_clock_gettime; no system call). Unwinding out of the vDSO needs
 * its .eh_frame, read from the process's memory (the vDSO has no file).
 * Usage: vdso SECONDS
 */
#include "common.h"

NOINL void vd_b(double end)
{
	struct timespec ts;
	time_t end_s = (time_t)end + 1;

	do
		clock_gettime(CLOCK_MONOTONIC, &ts);
	while (ts.tv_sec < end_s);
	sink++;
}

NOINL void vd_a(double end) { vd_b(end); sink++; }

int main(int argc, char **argv)
{
	vd_a(now() + arg_seconds(argc, argv));
	return 0;
}
