/* SPDX-License-Identifier: GPL-2.0 */
/*
 * runtimes.h - which language runtimes a run walks (runtimes.c): the
 * --tracers names (native and every runtime of PROFD_RUNTIMES in
 * bpf/runtime.h, never a list of its own) and the per-runtime switches.
 */
#ifndef PROFD_CONFIG_RUNTIMES_H
#define PROFD_CONFIG_RUNTIMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/runtime.h"

struct agent_config;

/* "native,python,...": every --tracers name, a string literal (--help). */
#define CONFIG_TRACER_NAME_(ID, name, a, b, c) "," #name
#define CONFIG_TRACER_NAMES "native" PROFD_RUNTIMES(CONFIG_TRACER_NAME_, _, _, _)

/*
 * config_runtime_enabled - whether runtime @id (enum profd_runtime_id,
 * bpf/runtime.h) is walked in this run: --tracers names it (or is not
 * given) and its --no-NAME-unwinding switch, where it has one, is not
 * given. False for an id no runtime has.
 */
bool config_runtime_enabled(const struct agent_config *cfg, unsigned int id);

/*
 * config_tracer_name - the --tracers name of tracer @id: "native" for 0
 * (PROFD_RUNTIME_NONE), the runtime's registry name for a runtime id;
 * NULL past the registry.
 */
const char *config_tracer_name(unsigned int id);

/*
 * config_tracer_id - the id of the tracer named by the @len bytes at
 * @name (exact, lower case): 0 for "native", a runtime id, or -1.
 */
int config_tracer_id(const char *name, size_t len);

/* config_tracers_all - the mask (1 << id) of every tracer, native included. */
uint32_t config_tracers_all(void);

#endif /* PROFD_CONFIG_RUNTIMES_H */
