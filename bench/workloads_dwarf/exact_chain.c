/*
 * exact_chain.c - a workload whose every busy sample has one known stack
 * (issue 16 benchmarks: bench/exact_share.sh, bench/first_exact_latency.sh).
 *
 * Built -O2 -fomit-frame-pointer with -DP=NAME -DDEPTH=N (1-12): the chain
 * main -> NAME_l1 -> NAME_l2 ... -> NAME_lN, the leaf spinning in its own
 * frame, under libc's __libc_start_call_main, __libc_start_main, _start.
 * Each program of a run gets its own P (and SALT, a number main adds to
 * a counter: two builds with the same DEPTH must not have the same code,
 * hence the same GNU build id, which profd and perf key symbols by), so the
 * exact expected stack of each is known and no two share a function name. No function keeps a
 * frame pointer: only .eh_frame gives the callers.
 *
 * The leaf never calls out (no clock_gettime, no vDSO frame): a SIGALRM
 * (setitimer) after MS milliseconds sets a flag it polls. At the start of
 * main it prints "PID MONO_NS" (CLOCK_MONOTONIC) to stdout.
 * Usage: exact_chain MS
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef P
#define P ec
#endif
#ifndef DEPTH
#define DEPTH 4
#endif
#ifndef SALT
#define SALT 0
#endif

#define NOINL __attribute__((noipa))
#define CAT2(a, b) a##_l##b
#define CAT(a, b) CAT2(a, b)
#define F(j) CAT(P, j)

static volatile sig_atomic_t stop;
static volatile unsigned long sink;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

/* Level j calls level j + 1 until DEPTH; the leaf spins (own frame). */
#define LEVEL(j, next)                                          \
	NOINL void F(j)(void)                                   \
	{                                                       \
		if ((j) >= DEPTH) {                             \
			while (!stop)                           \
				for (int i_ = 0; i_ < 100000; i_++) \
					sink += i_;             \
		} else {                                        \
			next();                                 \
		}                                               \
		sink++;                                         \
	}

NOINL void F(13)(void) { sink++; }
LEVEL(12, F(13))
LEVEL(11, F(12))
LEVEL(10, F(11))
LEVEL(9, F(10))
LEVEL(8, F(9))
LEVEL(7, F(8))
LEVEL(6, F(7))
LEVEL(5, F(6))
LEVEL(4, F(5))
LEVEL(3, F(4))
LEVEL(2, F(3))
LEVEL(1, F(2))

int main(int argc, char **argv)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	struct timespec ts;
	long ms = argc > 1 ? atol(argv[1]) : 3000;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("%d %lld\n", (int)getpid(), (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	fflush(stdout);
	signal(SIGALRM, on_alarm);
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = (ms % 1000) * 1000;
	setitimer(ITIMER_REAL, &it, NULL);
	sink += SALT;
	F(1)();
	return 0;
}
