/*
 * signal.c - time spent in a signal handler.
 * main -> sig_a -> sig_b -> sig_c spins; an ITIMER_PROF timer (every 40 ms
 * of CPU time) interrupts sig_c anywhere in its loop and the SIGPROF
 * handler on_prof -> handler_spin spins 30 ms of CPU time: about 3/4 of
 * the samples are in the handler, however busy the machine is. Their expected stack is
 *   handler_spin, on_prof, [__restore_rt], sig_c, sig_b, sig_a, main
 * (__restore_rt: the sa_restorer the kernel's signal frame returns to).
 * Usage: signal SECONDS [altstack]   (altstack: the handler runs on a
 * sigaltstack, SA_ONSTACK)
 */
#include <signal.h>
#include <string.h>
#include <sys/time.h>

#include "common.h"

/* CPU time of this thread (a syscall: called once per 200000 iterations). */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINL void handler_spin(double until)
{
	while (cpu_now() < until)
		SPIN_N(200000);
}

NOINL void on_prof(int sig)
{
	(void)sig;
	handler_spin(cpu_now() + 0.030);
	sink++;
}

NOINL void sig_c(double end) { SPIN_UNTIL(end); }
NOINL void sig_b(double end) { sig_c(end); sink++; }
NOINL void sig_a(double end) { sig_b(end); sink++; }

int main(int argc, char **argv)
{
	double end = now() + arg_seconds(argc, argv);
	struct itimerval it = { { 0, 40000 }, { 0, 40000 } };
	struct sigaction sa;
	stack_t ss;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (argc > 2 && !strcmp(argv[2], "altstack")) {
		ss.ss_sp = malloc(1 << 16);
		ss.ss_size = 1 << 16;
		ss.ss_flags = 0;
		if (!ss.ss_sp || sigaltstack(&ss, NULL))
			return 1;
		sa.sa_flags |= SA_ONSTACK;
	}
	if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &it, NULL))
		return 1;
	sig_a(end);
	return 0;
}
