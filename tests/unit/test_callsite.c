// SPDX-License-Identifier: GPL-2.0
/*
 * test_callsite.c - unit tests of the x86-64 call-site decoder
 * (src/unwind/callsite.c: callsite_x86_after_call()).
 *
 * Without arguments: each call encoding (E8 rel32; FF /2 register,
 * [reg], [reg+disp8], [reg+disp32], SIB with and without base and
 * displacement, RIP-relative; with REX, notrack and bnd prefixes) ends
 * where its return address is; far calls, jumps, a comment's bytes and
 * a direct call whose target is not code do not verify. Then
 * callsite_verify() on this process itself (its maps, its code from
 * memory and from its file): a true caller stays, a comment's bytes, a
 * data address and code after NOPs end the stack, runtime tokens and
 * exact IPs in code are left, the leaf is never judged.
 *
 * With FILE LIST: real sites of an ELF file, as tests/test_callsite.py
 * gathers them from `objdump -d -w`: LIST holds lines "x LO HI" (an
 * executable section's virtual addresses), then "c VADDR FILEOFF" (the
 * end of a near call) and "n VADDR FILEOFF" (the end of any other
 * instruction). Each end is checked on the file's bytes before it, with a
 * direct call's target required in an executable section. Prints
 * "calls N rejected R" and "noncalls M accepted A (P%)": every call must
 * verify; the others give the false-accept rate (printed, not judged
 * here). Exit status 1 on any failure.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/profd.h"
#include "check.h"
#include "proc/process.h"
#include "python/python.h"
#include "symbol/symbolizer.h"
#include "unwind/callsite.h"

/* The code bytes @s (hex pairs) placed right before return address @ra. */
static bool verifies(const char *hex, uint64_t ra, callsite_target_fn ok)
{
	uint8_t b[CALLSITE_WINDOW + 8];
	size_t n = 0;

	for (const char *p = hex; p[0] && p[1] && n < sizeof(b); ) {
		unsigned int v;

		if (*p == ' ') {
			p++;
			continue;
		}
		sscanf(p, "%2x", &v);
		b[n++] = (uint8_t)v;
		p += 2;
	}
	return callsite_x86_after_call(b, n, ra, ok, NULL);
}

static bool low_code(void *ctx, uint64_t target)
{
	return target >= 0x1000 && target < 0x100000;
}

#define RA 0x2000ULL

static const char *const calls[] = {
	"e8 00 f0 ff ff",		/* call 0x1000 (rel32 -0x1000) */
	"f2 e8 00 f0 ff ff",		/* bnd call */
	"ff d0",			/* call *%rax */
	"41 ff d3",			/* call *%r11 */
	"ff 10",			/* call *(%rax) */
	"41 ff 17",			/* call *(%r15) */
	"ff 50 08",			/* call *0x8(%rax) */
	"41 ff 55 00",			/* call *0x0(%r13) */
	"ff 90 88 00 00 00",		/* call *0x88(%rax) */
	"ff 14 24",			/* call *(%rsp) */
	"ff 54 24 08",			/* call *0x8(%rsp) */
	"ff 94 24 00 01 00 00",		/* call *0x100(%rsp) */
	"ff 14 c3",			/* call *(%rbx,%rax,8) */
	"42 ff 14 e0",			/* call *(%rax,%r12,8) */
	"ff 54 c3 10",			/* call *0x10(%rbx,%rax,8) */
	"ff 14 c5 40 10 00 00",		/* call *0x1040(,%rax,8) */
	"ff 15 f2 2f 00 00",		/* call *0x2ff2(%rip) */
	"3e ff d0",			/* notrack call *%rax */
	"3e ff 14 c3",			/* notrack call *(%rbx,%rax,8) */
	"90 90 90 90 90 90 90 90 90 e8 00 f0 ff ff", /* a call after padding */
};

static const char *const others[] = {
	"2a 2a 2a 2a 2a 2a 2a 2a 2a 2a 2a 2a 2a 2a 2a", /* a source comment */
	"ff 18",			/* lcall *(%rax): far */
	"ff 5c 24 08",			/* lcall *0x8(%rsp): far */
	"ff e0",			/* jmp *%rax */
	"ff 25 f2 2f 00 00",		/* jmp *0x2ff2(%rip) */
	"e9 fb ef ff ff",		/* jmp 0x1000 */
	"48 89 e5",			/* mov %rsp,%rbp */
	"5d c3",			/* pop %rbp; ret */
	"0f 1f 44 00 00",		/* nopl */
	"e8 00 00 00 40",		/* a call to 0x40002000: not code */
	"ff 14",			/* FF /2 needing a SIB byte past the end */
	"",				/* no bytes at all */
};

/* A file's real sites: see the top comment. */
struct xrange {
	uint64_t lo, hi;
};
static struct xrange *xr;
static size_t nxr;

static bool in_exec(void *ctx, uint64_t target)
{
	for (size_t i = 0; i < nxr; i++)
		if (target >= xr[i].lo && target < xr[i].hi)
			return true;
	return false;
}

static int real_sites(const char *file, const char *list)
{
	FILE *f = fopen(list, "r");
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	uint64_t ncalls = 0, rejected = 0, nother = 0, accepted = 0;
	char kind, line[256];

	if (!f || fd < 0) {
		perror("open");
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t a, b;
		uint8_t buf[CALLSITE_WINDOW];
		uint64_t from;
		ssize_t n;

		if (sscanf(line, "%c %" SCNx64 " %" SCNx64, &kind, &a, &b) != 3)
			continue;
		if (kind == 'x') {
			xr = realloc(xr, (nxr + 1) * sizeof(*xr));
			xr[nxr++] = (struct xrange){ a, b };
			continue;
		}
		from = b > CALLSITE_WINDOW ? b - CALLSITE_WINDOW : 0;
		n = pread(fd, buf, b - from, (off_t)from);
		if (n != (ssize_t)(b - from))
			continue;
		bool ok = callsite_x86_after_call(buf, (size_t)n, a, in_exec, NULL);

		if (kind == 'c') {
			ncalls++;
			if (!ok) {
				rejected++;
				if (rejected <= 10)
					printf("call end 0x%" PRIx64 " rejected\n", a);
			}
		} else {
			nother++;
			accepted += ok;
		}
	}
	fclose(f);
	close(fd);
	printf("calls %" PRIu64 " rejected %" PRIu64 "\n", ncalls, rejected);
	printf("noncalls %" PRIu64 " accepted %" PRIu64 " (%.2f%%)\n", nother,
	       accepted, nother ? 100.0 * (double)accepted / (double)nother : 0.0);
	CHECK(ncalls > 0 && rejected == 0, "%s: every call end verifies", file);
	return failures ? 1 : 0;
}

/* code that follows no call: 16 NOPs, then the label */
extern char after_nops[];
__asm__(".text\n"
	"	.rept 16\n"
	"	nop\n"
	"	.endr\n"
	".globl after_nops\n"
	"after_nops:\n"
	"	ret\n");

static char data_word[64];

/* A true return address: where called_once() returns to in main(). */
__attribute__((noinline)) static uint64_t called_once(void)
{
	__asm__ volatile("" ::: "memory");
	return (uint64_t)__builtin_return_address(0);
}

/*
 * callsite_verify() on this very process: its maps, its code read from
 * memory (no object) and from the file (the symbolizer's object), the
 * leaf, runtime tokens, exact IPs, no snapshot.
 */
static void verify_own_process(uint64_t ra)
{
	struct proc_snapshot snap = { .pid = getpid() };
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct callsite_cache *c = callsite_cache_new(1024);
	const uint64_t token = PY_IP_FRAME | PY_FRAME_TRUNCATED;
	const uint64_t comment = 0x2a2a2a2a2a2a2a2aULL;
	struct symbolizer *sym = symbolizer_new();
	const struct proc_mapping *m;
	struct sym_object *o;
	int err = 0;

	CHECK(c && sym && !proc_maps_read(getpid(), &snap.maps), "own maps read");
	snap.objs = calloc(snap.maps.n, sizeof(*snap.objs));
	snap.obj_state = calloc(snap.maps.n, 1);
	snap.sym_lock = &lock;
	for (int pass = 0; pass < 2; pass++) {
		const char *how = pass ? "file" : "memory";
		uint64_t ips[4] = { ra, ra, comment, ra };

		CHECK(callsite_verify(c, &snap, snap.pid, ips, 2, false) == 2, "%s: a true caller stays", how);
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 4, false) == 2,
		      "%s: 0x2a2a... ends the stack, its callers go", how);
		ips[1] = (uint64_t)&data_word[8];
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 2, false) == 1, "%s: a data address is cut", how);
		ips[1] = (uint64_t)after_nops;
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 2, false) == 1,
		      "%s: code not after a call is cut", how);
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 2, true) == 2,
		      "%s: a bottom frame the tables call outermost needs no call", how);
		ips[1] = (uint64_t)&data_word[8];
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 2, true) == 1,
		      "%s: an outermost frame in data is cut", how);
		ips[1] = token;
		ips[2] = ra;
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 3, false) == 3, "%s: a runtime token is left alone", how);
		ips[1] = (uint64_t)after_nops | PROFD_IP_EXACT;
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 3, false) == 3,
		      "%s: an exact IP in code needs no call", how);
		ips[1] = (uint64_t)&data_word[8] | PROFD_IP_EXACT;
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 3, false) == 1,
		      "%s: an exact IP in data is cut", how);
		ips[0] = comment;
		ips[1] = ra;
		CHECK(callsite_verify(c, &snap, snap.pid, ips, 2, false) == 2, "%s: the leaf is never judged", how);
		if (pass)
			break;
		/* the second pass reads this binary's file through its object */
		m = proc_maps_find(&snap.maps, ra - 1);
		o = m ? symbolizer_get(sym, getpid(), m, &err) : NULL;
		CHECK(o != NULL, "object of %s opened (%d)", m ? m->path : "?", err);
		if (!o)
			break;
		snap.objs[m - snap.maps.v] = o;
		snap.obj_state[m - snap.maps.v] = PROC_OBJ_DONE;
		callsite_cache_free(c);
		c = callsite_cache_new(1024);	/* no verdicts from the memory pass */
	}
	{
		uint64_t ips[3] = { ra, comment, comment };

		CHECK(callsite_verify(c, NULL, getpid(), ips, 3, false) == 3, "no snapshot: nothing can be cut");
	}
	for (size_t i = 0; i < snap.maps.n; i++)
		sym_object_put(snap.objs[i]);
	free(snap.objs);
	free(snap.obj_state);
	proc_maps_free(&snap.maps);
	callsite_cache_free(c);
	symbolizer_free(sym);
}

int main(int argc, char **argv)
{
	if (argc == 3)
		return real_sites(argv[1], argv[2]);
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		CHECK(verifies(calls[i], RA, low_code), "call \"%s\" verifies", calls[i]);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		CHECK(!verifies(others[i], RA, low_code), "\"%s\" does not", others[i]);
	CHECK(verifies("e8 00 00 00 40", RA, NULL),
	      "without a target check, any E8 rel32 verifies");
	/* more than the window: only the last CALLSITE_WINDOW bytes count */
	CHECK(verifies("ff d0 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90 e8 00 f0 ff ff",
		       RA, low_code), "a long buffer: its end decides");
	verify_own_process(called_once());
	if (!failures)
		printf("all passed\n");
	return failures ? 1 : 0;
}
