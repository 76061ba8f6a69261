/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wait.h - kinds of waits that parts of profd name from a blocked
 * thread's stack (off-CPU samples get the label wait=<kind>).
 *
 * The profile builder knows no part: it asks every class in
 * wait_class_registry[] (wait.c) about the functions on an off-CPU stack;
 * a part (the GPU module: a thread blocked under a CUDA synchronize call
 * waits on the GPU) defines its struct wait_class next to its own code.
 */
#ifndef PROFD_AGGREGATE_WAIT_H
#define PROFD_AGGREGATE_WAIT_H

#include <stdbool.h>

/* One kind of wait. */
struct wait_class {
	const char *name;	/* the label's value: "gpu" */
	/* true: a thread blocked with @function (a symbol name, demangled)
	 * on its stack waits for this kind of thing */
	bool (*match)(const char *function);
};

/* The classes, NULL-terminated; the first match wins. */
extern const struct wait_class *const wait_class_registry[];

/*
 * wait_class_of - the name of the first class in the registry matching
 * @function (static storage), or NULL when none does or @function is
 * NULL/empty.
 */
const char *wait_class_of(const char *function);

#endif /* PROFD_AGGREGATE_WAIT_H */
