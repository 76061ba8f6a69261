/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bpf_log.h - libbpf's messages and the kernel verifier's log.
 *
 * Owns: where libbpf's messages go (stderr, by -v level), holding them
 * back while a BPF object loads so that a successful load prints nothing
 * new, and printing the verifier log of a program that failed to load at
 * the level --bpf-verifier-log-level asks for. Used by tracer.c for
 * profd's skeleton and by tests/unit/test_verifier_log.c for a program
 * the verifier rejects.
 */
#ifndef PROFD_TRACER_BPF_LOG_H
#define PROFD_TRACER_BPF_LOG_H

struct bpf_object;

/*
 * Size of the buffer a level-2 verifier log is written into (bytes). The
 * kernel (6.4+) keeps the end of a longer log, which is where the error
 * is; older kernels keep the start.
 */
#define TRACER_VERIFIER_LOG_BYTES	(64u << 20)

/*
 * tracer_libbpf_setup - route libbpf's messages to stderr from now on:
 * warnings with @verbose >= 1, everything (its debug log included) with
 * @verbose >= 2 or PROFD_LIBBPF_DEBUG set in the environment. Process-wide
 * (libbpf has one print callback).
 */
void tracer_libbpf_setup(int verbose);

/* How to load an object, and how to load one of its programs again. */
struct tracer_loader {
	/* load the object (e.g. profd_bpf__load()): 0 or a negative errno */
	int (*load)(void *ctx);
	/*
	 * open a fresh copy configured like the first and load only program
	 * @prog at verifier log level @level: tracer_load_only(). 0 or a
	 * negative errno. NULL: no level-2 log.
	 */
	int (*load_one)(void *ctx, const char *prog, unsigned int level);
	void *ctx;
};

/*
 * tracer_load_logged - run @l->load with libbpf's warnings held back.
 * Success: they are printed as before (with -v) and nothing else.
 * Failure: with @log_level 0 they are printed with -v only (the caller
 * prints its one-line error); with @log_level >= 1 they are printed, and
 * with them the verifier log of the program that failed: at level 1 the
 * log of libbpf's own retry of that program (libbpf loads a failing
 * program again at BPF_LOG_LEVEL1 and reports its log), at level 2 the
 * log of @l->load_one at BPF_LOG_LEVEL2 instead. Call on one thread while
 * no other thread uses libbpf. Returns @l->load's result.
 */
int tracer_load_logged(const struct tracer_loader *l, unsigned int log_level);

/*
 * tracer_load_only - load @obj (opened, not loaded) with only its program
 * named @prog, at verifier log level @level (1 or 2), the log going to a
 * TRACER_VERIFIER_LOG_BYTES buffer that is printed to stderr afterwards,
 * framed by "profd: verifier log of ..." lines, whether the load failed or
 * not. Returns 0, -ENOENT (no program @prog), -ENOMEM, or the load's
 * negative errno.
 */
int tracer_load_only(struct bpf_object *obj, const char *prog,
		     unsigned int level);

#endif /* PROFD_TRACER_BPF_LOG_H */
