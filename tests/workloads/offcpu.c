// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu.c - a program that blocks in known chains and measures, with
 * clock_gettime() around each blocking call, how long it waited in each
 * (tests/test_offcpu.py; built -O2 -fomit-frame-pointer, so only DWARF
 * unwinding walks it).
 *
 *   offcpu SECONDS FILE    the four chains for SECONDS, then prints
 *                          "CHAIN NS" per chain:
 *     sleep_chain  a_sleep -> b_sleep -> sleep_chain -> nanosleep (20 ms)
 *     pipe_wait    pipe_reader -> pipe_wait -> read() of a pipe another
 *                  thread writes 15 ms later
 *     lock_wait    lock_thread -> lock_wait -> pthread_mutex_lock of a
 *                  mutex another thread holds for 25 ms
 *     fault_touch  fault_thread -> fault_touch: the first read of each
 *                  page of FILE mapped MAP_PRIVATE after its page cache
 *                  was dropped (MADV_RANDOM: one read per fault)
 *   offcpu long SECONDS    one nanosleep of SECONDS in long_chain -> long_sleep,
 *                          prints "long_sleep NS"
 *   offcpu exit MS         a thread blocks in exit_chain -> exit_wait
 *                          (read of a pipe nobody writes) while main
 *                          sleeps MS then exits the process: prints
 *                          "exit_wait NS" (the time up to the exit) first
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile int stop;
static uint64_t t_sleep, t_pipe, t_lock, t_fault;
static int pfd[2];
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static volatile int held;
static const char *fault_file;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

NOINLINE void sleep_chain(void)
{
	struct timespec ts = { 0, 20 * 1000000L };
	uint64_t t0 = now_ns();

	nanosleep(&ts, NULL);
	t_sleep += now_ns() - t0;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void b_sleep(void)
{
	sleep_chain();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void a_sleep(void)
{
	b_sleep();
	__asm__ volatile("" ::: "memory");
}

static void *sleeper(void *arg)
{
	while (!stop)
		a_sleep();
	return NULL;
}

NOINLINE void pipe_wait(void)
{
	char c;
	uint64_t t0 = now_ns();

	if (read(pfd[0], &c, 1) != 1)
		stop = 1;
	t_pipe += now_ns() - t0;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void *pipe_reader(void *arg)
{
	while (!stop)
		pipe_wait();
	return NULL;
}

static void *pipe_feeder(void *arg)
{
	while (!stop) {
		sleep_ms(15);
		if (write(pfd[1], "x", 1) != 1)
			break;
	}
	return NULL;
}

NOINLINE void lock_wait(void)
{
	uint64_t t0;

	while (!held && !stop)
		sched_yield();
	t0 = now_ns();
	pthread_mutex_lock(&mtx);
	t_lock += now_ns() - t0;
	pthread_mutex_unlock(&mtx);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void *lock_thread(void *arg)
{
	while (!stop)
		lock_wait();
	return NULL;
}

static void *lock_holder(void *arg)
{
	while (!stop) {
		pthread_mutex_lock(&mtx);
		held = 1;
		sleep_ms(25);
		held = 0;
		pthread_mutex_unlock(&mtx);
		sleep_ms(2);
	}
	return NULL;
}

NOINLINE int fault_touch(volatile const char *p)
{
	uint64_t t0 = now_ns();
	int v = p[0];

	t_fault += now_ns() - t0;
	__asm__ volatile("" ::: "memory");
	return v;
}

NOINLINE void *fault_thread(void *arg)
{
	long pg = sysconf(_SC_PAGESIZE);

	while (!stop) {
		int fd = open(fault_file, O_RDONLY);
		struct stat st;
		char *m;

		if (fd < 0 || fstat(fd, &st))
			return NULL;
		/* the file's pages out of the page cache: each first touch reads */
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			return NULL;
		madvise(m, st.st_size, MADV_RANDOM);
		for (off_t o = 0; o < st.st_size && !stop; o += 16 * pg)
			fault_touch(m + o);
		munmap(m, st.st_size);
		sleep_ms(5);
	}
	return NULL;
}

NOINLINE void long_sleep(long s)
{
	struct timespec ts = { s, 0 };
	uint64_t t0 = now_ns();

	nanosleep(&ts, NULL);
	printf("long_sleep %llu\n", (unsigned long long)(now_ns() - t0));
	__asm__ volatile("" ::: "memory");
}

NOINLINE void long_chain(long s)
{
	long_sleep(s);
	__asm__ volatile("" ::: "memory");
}

static uint64_t exit_t0;

NOINLINE void exit_wait(void)
{
	char c;

	exit_t0 = now_ns();
	if (read(pfd[0], &c, 1) == 1)
		exit_t0 = 0;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void *exit_chain(void *arg)
{
	exit_wait();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[7];

	if (argc == 3 && !strcmp(argv[1], "long")) {
		long_chain(atol(argv[2]));
		return 0;
	}
	if (pipe(pfd))
		return 1;
	if (argc == 3 && !strcmp(argv[1], "exit")) {
		pthread_create(&t[0], NULL, exit_chain, NULL);
		sleep_ms(atol(argv[2]));
		printf("exit_wait %llu\n", (unsigned long long)(now_ns() - exit_t0));
		fflush(stdout);
		_exit(0);	/* the thread is still blocked in read() */
	}
	if (argc != 3)
		return 2;
	fault_file = argv[2];
	pthread_create(&t[0], NULL, sleeper, NULL);
	pthread_create(&t[1], NULL, pipe_reader, NULL);
	pthread_create(&t[2], NULL, pipe_feeder, NULL);
	pthread_create(&t[3], NULL, lock_thread, NULL);
	pthread_create(&t[4], NULL, lock_holder, NULL);
	pthread_create(&t[5], NULL, fault_thread, NULL);
	sleep_ms(atol(argv[1]) * 1000);
	stop = 1;
	if (write(pfd[1], "x", 1) != 1)
		return 1;
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	printf("sleep_chain %llu\npipe_wait %llu\nlock_wait %llu\nfault_touch %llu\n",
	       (unsigned long long)t_sleep, (unsigned long long)t_pipe,
	       (unsigned long long)t_lock, (unsigned long long)t_fault);
	return 0;
}
