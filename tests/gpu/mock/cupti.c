// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cupti.c - the mock libcupti.so (SONAME libcupti.so.13, tests only).
 *
 * Owns: the exported CUPTI entry points the injection library dlopens.
 * Each forwards to __mock_<name> in the mock libcuda.so.1 (cupti_core.c),
 * which holds the CUPTI state next to the driver it observes.
 */
#include "mock_internal.h"

#define MOCK_FORWARD(name, proto, args) \
	MOCK_EXPORT CUptiResult CUPTIAPI name proto { return __mock_##name args; }
MOCK_CUPTI_FUNCS(MOCK_FORWARD)
