/*
 * uf_libc.c - bench/unnamed_frames.sh: a program whose CPU time is in
 * libc's internal functions (qsort's merge sort and its comparator
 * calls, printf's and strtod's number formatting and parsing, malloc and
 * free), the frames that only libc's debug file names.
 *
 * Usage: uf_libc (runs until killed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static __attribute__((noinline)) double format_round(double *v, size_t n)
{
	char buf[64];
	double s = 0;

	for (size_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%.17g", v[i] * 1.000001);
		s += strtod(buf, NULL);
	}
	return s;
}

static __attribute__((noinline)) void sort_round(double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (double)((i * 2654435761u) % 100003) / 7.0;
	qsort(v, n, sizeof(*v), cmp_double);
}

static __attribute__((noinline)) size_t alloc_round(void)
{
	char *p[256];
	size_t t = 0;

	for (int i = 0; i < 256; i++) {
		p[i] = malloc(16 + (size_t)(i * 37) % 2000);
		memset(p[i], i, 16);
		t += (size_t)p[i][0];
	}
	for (int i = 0; i < 256; i++)
		free(p[i]);
	return t;
}

int main(void)
{
	static double v[N];
	volatile double sink = 0;

	for (;;) {
		sort_round(v, N);
		sink = sink + format_round(v, N / 8) + (double)alloc_round();
	}
}
