/* SPDX-License-Identifier: GPL-2.0 */
/*
 * runtimes.h - which language runtimes a run walks (runtimes.c).
 */
#ifndef PROFD_CONFIG_RUNTIMES_H
#define PROFD_CONFIG_RUNTIMES_H

#include <stdbool.h>

struct agent_config;

/*
 * config_runtime_enabled - whether runtime @id (enum profd_runtime_id,
 * bpf/runtime.h) is walked in this run: its --no-NAME-unwinding option is
 * not given. False for an id no runtime has.
 */
bool config_runtime_enabled(const struct agent_config *cfg, unsigned int id);

#endif /* PROFD_CONFIG_RUNTIMES_H */
