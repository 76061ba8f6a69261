/*
 * fake_ruby.c [SECONDS] - a program that only looks like CRuby, for
 * tests/test_ruby.py (test_fake_ruby_process): built with -rdynamic, it
 * exports the symbols a Ruby interpreter is recognised by
 * (ruby_current_vm_ptr, rb_vm_exec, ruby_version "3.1.2"), but its "VM" is
 * junk: the main ractor points back into the VM, the thread list is a
 * cycle through itself, every other word is a bogus pointer or a small
 * number. It spins under rb_vm_exec for SECONDS (default 3) and exits.
 * profd must neither crash nor show a Ruby frame for it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

const char ruby_version[] = "3.1.2";
static uint64_t fake_vm[512];
void *ruby_current_vm_ptr = fake_vm;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t rb_vm_exec(void *ec, double until)
{
	volatile uint64_t x = (uintptr_t)ec;

	while (now() < until)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;

	for (size_t i = 0; i < 512; i++)
		fake_vm[i] = i % 3 == 0 ? (uintptr_t)&fake_vm[(i * 7 + 5) % 512] :
			     i % 3 == 1 ? 0x4141414141414141ULL : i;
	fake_vm[4] = (uintptr_t)fake_vm;	/* vm->ractor.main_ractor (32) */
	fake_vm[38] = (uintptr_t)&fake_vm[38];	/* ractor->threads.set: a cycle */
	fake_vm[39] = (uintptr_t)&fake_vm[38];
	return (int)(rb_vm_exec(fake_vm, now() + secs) & 0);
}
