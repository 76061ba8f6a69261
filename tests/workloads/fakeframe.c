/*
 * fakeframe.c - a leaf whose frame pointer leads to frames that are not
 * true (issue 16: no wrong frames). Built without unwind tables
 * (-fno-asynchronous-unwind-tables -fno-unwind-tables -fomit-frame-pointer),
 * so profd walks the leaf by frame pointer; spin_fake (hand-written, no
 * CFI) points rbp at a fake frame and spins. Three threads, each named
 * for what its fake frame holds where a return address would be:
 *
 *   fake-comment  0x2a2a2a2a2a2a2a2a (a source comment's "*****..."),
 *                 saved rbp the same
 *   fake-data     the address of a data buffer, then a frame whose
 *                 return address is fake_ra_code
 *   fake-code     fake_ra_code: executable, but after 16 nops, not after
 *                 a call
 *
 * None of them may show up as a caller: each stack must end right after
 * spin_fake, in [truncated]. Runs argv[1] seconds (default 30).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void spin_fake(uint64_t *fake_rbp, long iterations);
extern char fake_ra_code[];

__asm__(".text\n"
	".globl spin_fake\n"
	".type spin_fake,@function\n"
	"spin_fake:\n"
	"	push %rbp\n"
	"	mov %rdi, %rbp\n"
	"1:	dec %rsi\n"
	"	jnz 1b\n"
	"	pop %rbp\n"
	"	ret\n"
	"	.rept 16\n"
	"	nop\n"
	"	.endr\n"
	".globl fake_ra_code\n"
	"fake_ra_code:\n"
	"	ret\n"
	".size spin_fake, .-spin_fake\n");

static char data_buffer[256];
/* frames grow upwards: a walk goes on only while saved rbp > rbp */
static uint64_t comment_frame[2];
static uint64_t data_frames[4];
static uint64_t code_frame[2];

struct fake {
	const char *name;
	uint64_t *frame;
};

static void *spin(void *arg)
{
	const struct fake *f = arg;

	pthread_setname_np(pthread_self(), f->name);
	for (;;)
		spin_fake(f->frame, 1L << 40);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct fake fakes[] = {
		{ "fake-comment", comment_frame },
		{ "fake-data", data_frames },
		{ "fake-code", code_frame },
	};
	pthread_t t;

	memset(comment_frame, 0x2a, sizeof(comment_frame));
	memset(data_buffer, 0x2a, sizeof(data_buffer));
	data_frames[0] = (uint64_t)&data_frames[2];
	data_frames[1] = (uint64_t)&data_buffer[64];
	data_frames[2] = 0;
	data_frames[3] = (uint64_t)fake_ra_code;
	code_frame[0] = 0;
	code_frame[1] = (uint64_t)fake_ra_code;
	for (size_t i = 0; i < sizeof(fakes) / sizeof(fakes[0]); i++)
		pthread_create(&t, NULL, spin, &fakes[i]);
	sleep(argc > 1 ? (unsigned int)atoi(argv[1]) : 30);
	return 0;
}
