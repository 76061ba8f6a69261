// SPDX-License-Identifier: GPL-2.0
/*
 * wait.c - the registry of wait classes (see wait.h): which parts name
 * the waits on off-CPU stacks, and the lookup the profile builder calls.
 */
#include <stddef.h>

#include "aggregate/wait.h"

extern const struct wait_class gpu_wait_class;	/* src/gpu/wait.c */

const struct wait_class *const wait_class_registry[] = {
	&gpu_wait_class,
	NULL,
};

const char *wait_class_of(const char *function)
{
	if (!function || !*function)
		return NULL;
	for (const struct wait_class *const *c = wait_class_registry; *c; c++)
		if ((*c)->match(function))
			return (*c)->name;
	return NULL;
}
