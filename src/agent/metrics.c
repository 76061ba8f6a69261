// SPDX-License-Identifier: GPL-2.0
/*
 * metrics.c - /metrics and /healthz (see metrics.h). STUB: being written.
 */
#include <stdio.h>

#include "agent/agent_internal.h"
#include "agent/metrics.h"

int agent_metrics_start(struct agent *ag)
{
	fprintf(stderr, "profd: error: --http-address %s: not implemented yet\n",
		ag->cfg->http_address);
	return -1;
}

void agent_metrics_stop(struct agent *ag)
{
}
