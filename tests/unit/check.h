/*
 * check.h - the CHECK macro of profd's unit test programs: print one
 * "ok  " / "FAIL" line per check and count failures in `failures`, which
 * each program reports in its exit status.
 */
#ifndef PROFD_TESTS_CHECK_H
#define PROFD_TESTS_CHECK_H

#include <stdbool.h>
#include <stdio.h>

static int failures;

#define CHECK(cond, ...)						\
	do {								\
		bool ok_ = (cond);					\
		printf("%s: ", ok_ ? "ok  " : "FAIL");			\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		if (!ok_)						\
			failures++;					\
	} while (0)

#endif /* PROFD_TESTS_CHECK_H */
