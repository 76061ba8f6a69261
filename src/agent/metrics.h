/* SPDX-License-Identifier: GPL-2.0 */
/*
 * metrics.h - the agent's self-metrics: /metrics (Prometheus text format
 * 0.0.4) and /healthz on --http-address, served by src/metrics/.
 */
#ifndef PROFD_AGENT_METRICS_H
#define PROFD_AGENT_METRICS_H

struct agent;

/*
 * agent_metrics_start - listen on ag->cfg->http_address (HOST:PORT) and
 * serve /metrics and /healthz from a thread of its own until
 * agent_metrics_stop(). May be called before the tracer is loaded (the
 * metrics then say so). Returns 0, or -1 after printing one
 * "profd: error: --http-address ..." line (bad address, port in use).
 */
int agent_metrics_start(struct agent *ag);

/* agent_metrics_stop - stop serving and free the server. Safe when not started. */
void agent_metrics_stop(struct agent *ag);

#endif /* PROFD_AGENT_METRICS_H */
