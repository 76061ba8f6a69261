/*
 * server.c - the native half of `make run`'s demo: a pretend request
 * handler that burns CPU in a known tree of functions, so the first
 * profile a new user records shows real stacks even on an idle machine.
 *
 *   main -> serve -> handle_request -> parse_request  -> tokenize   (~30 %)
 *                                   -> render_response -> deflate_block (~50 %)
 *                                   -> checksum                      (~20 %)
 *
 * Built -O2 -fomit-frame-pointer (as distributions build): only the
 * DWARF unwind tables give the callers. Usage: server SECONDS
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burn about @units of work, in the caller's frame. */
static inline void work(uint64_t units, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (uint64_t i = 0; i < units * 1000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink += x;
}

NOINLINE void tokenize(uint64_t n) { work(3 * n, 1); }
NOINLINE void parse_request(uint64_t n) { tokenize(n); sink++; }
NOINLINE void deflate_block(uint64_t n) { work(5 * n, 2); }
NOINLINE void render_response(uint64_t n) { deflate_block(n); sink++; }
NOINLINE void checksum(uint64_t n) { work(2 * n, 3); }

NOINLINE void handle_request(uint64_t n)
{
	parse_request(n);
	render_response(n);
	checksum(n);
}

NOINLINE void serve(double end)
{
	while (now() < end)
		handle_request(20);
}

int main(int argc, char **argv)
{
	serve(now() + (argc > 1 ? atof(argv[1]) : 10));
	return 0;
}
