/*
 * syscalls.c - syscall-heavy loop: main -> sys_loop -> do_syscall, which
 * enters the kernel with an inline `syscall` instruction (so the user
 * frames have frame pointers all the way; libc's wrappers have none).
 * Each call reads 64 KiB from /dev/zero. Usage: syscalls SECONDS
 */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <sys/syscall.h>

static char buf[65536];
static volatile long calls;

__attribute__((noinline)) void note_call(long ret)
{
	calls += ret > 0;
}

/*
 * Not a leaf (it calls note_call), so GCC sets up its frame pointer even
 * without -mno-omit-leaf-frame-pointer.
 */
__attribute__((noinline)) long do_syscall(long nr, long a, long b, long c)
{
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "a"(nr), "D"(a), "S"(b), "d"(c)
		     : "rcx", "r11", "memory");
	note_call(ret);
	return ret;
}

__attribute__((noinline)) void sys_loop(int fd, double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100; i++)
			do_syscall(SYS_read, fd, (long)buf, sizeof(buf));
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

int main(int argc, char **argv)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	sys_loop(fd, argc > 1 ? atof(argv[1]) : 5);
	return 0;
}
