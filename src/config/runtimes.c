// SPDX-License-Identifier: GPL-2.0
/*
 * runtimes.c - which language runtimes a run walks, from its settings.
 *
 * Owns: the --tracers names (generated from PROFD_RUNTIMES in
 * bpf/runtime.h: a runtime's name there is its registry name, so a runtime
 * that registers is a valid --tracers name with no change here) and the
 * mapping of --tracers and the per-runtime switches (--no-python-unwinding)
 * to the runtime ids of bpf/runtime.h, so the agent asks by id and names
 * no runtime.
 */
#include <string.h>

#include "config/options.h"
#include "config/runtimes.h"

#define TRACER_NAME_(ID, name, a, b, c) [PROFD_RUNTIME_##ID] = #name,
static const char *const tracer_names[PROFD_RUNTIME_END] = {
	[PROFD_RUNTIME_NONE] = "native",
	PROFD_RUNTIMES(TRACER_NAME_, _, _, _)
};

/* Runtime ids are bits of a 32-bit mask (and 5 bits of a frame token). */
_Static_assert(PROFD_RUNTIME_END <= 32, "too many runtimes for the tracer mask");

const char *config_tracer_name(unsigned int id)
{
	return id < PROFD_RUNTIME_END ? tracer_names[id] : NULL;
}

int config_tracer_id(const char *name, size_t len)
{
	for (unsigned int id = 0; id < PROFD_RUNTIME_END; id++)
		if (strlen(tracer_names[id]) == len && !memcmp(tracer_names[id], name, len))
			return (int)id;
	return -1;
}

uint32_t config_tracers_all(void)
{
	return (uint32_t)((1ULL << PROFD_RUNTIME_END) - 1);
}

bool config_runtime_enabled(const struct agent_config *cfg, unsigned int id)
{
	if (!id || id >= PROFD_RUNTIME_END || !(cfg->tracers & (1u << id)))
		return false;
	switch (id) {
	case PROFD_RUNTIME_CPYTHON:	/* the switch from before --tracers */
		return cfg->python_unwinding;
	default:
		return true;
	}
}
