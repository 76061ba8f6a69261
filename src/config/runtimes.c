// SPDX-License-Identifier: GPL-2.0
/*
 * runtimes.c - which language runtimes a run walks, from its settings.
 *
 * Owns: the mapping of the per-runtime options (--no-python-unwinding) to
 * the runtime ids of bpf/runtime.h, so the agent asks by id and names no
 * runtime.
 */
#include "bpf/runtime.h"
#include "config/options.h"
#include "config/runtimes.h"

bool config_runtime_enabled(const struct agent_config *cfg, unsigned int id)
{
	switch (id) {
	case PROFD_RUNTIME_CPYTHON:
		return cfg->python_unwinding;
	default:
		return id && id < PROFD_RUNTIME_END;
	}
}
