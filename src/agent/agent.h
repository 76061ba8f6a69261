/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent.h - one profd run: the run loop (its configuration, struct
 * agent_config, is config/config.h's).
 *
 * Owns: the wiring of tracer -> reader thread -> process table ->
 * aggregation -> profile building -> writers, the interval clock, signal
 * handling (SIGINT/SIGTERM flush what was collected) and the status line.
 */
#ifndef PROFD_AGENT_AGENT_H
#define PROFD_AGENT_AGENT_H

#include "config/config.h"
#include "util/version.h"

/*
 * agent_run - run profd with @cfg until the duration ends, every --pid
 * process exited, the `profd exec` command exited, or SIGINT/SIGTERM
 * arrives; every interval writes OUTPUT_DIR/cpu-<UTC time>.pb.gz, when
 * CUDA kernels ran OUTPUT_DIR/gpu-<UTC time>.pb.gz (and gpu-pc-... with
 * PC sampling), and OUTPUT_DIR/flamegraph.html.
 * Returns the process exit code: 0 on success, 1 on an error already
 * printed as one line; with exec_argv, the command's exit status when
 * profd itself succeeded (128 + signal if it was killed).
 */
int agent_run(const struct agent_config *cfg);

#endif /* PROFD_AGENT_AGENT_H */
