// SPDX-License-Identifier: GPL-2.0
/*
 * export.c - the agent's OTLP side (see export.h).
 *
 * Threads: agent_export_nvtx() runs on the reader thread and only queues;
 * the NVTX tracer's thread calls the span/log/tick callbacks below, which
 * feed the batcher; the OTLP profiles sink (src/export/otlp_sink.c) queues
 * each interval's profiles on the exporter from the main thread. The
 * exporter's sender thread does all network I/O.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/export.h"
#include "bpf/gpu_events.h"
#include "bpf/nvtx_events.h"
#include "export/otlp.h"
#include "export/otlp_traces.h"
#include "export/resource.h"
#include "nvtx/nvtx.h"
#include "util/clock.h"

/* A process's resource is kept this long after it exits (late spans). */
#define FORGET_AFTER_NS (30ULL * 1000 * 1000 * 1000)
#define MAX_EXITED 4096

struct exited {
	pid_t pid;
	uint64_t at_ns;
};

struct agent_export {
	struct otlp_config otlp;
	struct otlp_exporter *exporter;	/* NULL: no endpoint */
	struct otlp_batcher *batcher;	/* NULL: no endpoint */
	struct otlp_resources *resources;
	struct nvtx_tracer *nvtx;	/* NULL: no NVTX */
	bool stopped;			/* what is still queued will never be sent */
	char last_warned[sizeof(((struct otlp_stats *)0)->last_error)];

	pthread_mutex_t lock;		/* guards exited */
	struct exited exited[MAX_EXITED];
	unsigned int nexited;
	pid_t last_pid;			/* reader thread: last record's pid */
};

/* NVTX tracer thread */

/* The resource spans/logs of @pid go under; NULL: nothing is exported. */
static const struct otlp_resource *resource_of(struct agent_export *x, pid_t pid)
{
	return x->batcher ? otlp_resources_get(x->resources, pid, NULL) : NULL;
}

static void on_span(void *ctx, pid_t pid, const struct otlp_scope *scope,
		    const struct otlp_span *s, uint64_t now_ns)
{
	struct agent_export *x = ctx;
	const struct otlp_resource *r = resource_of(x, pid);

	if (r)
		otlp_batcher_add_span(x->batcher, r, scope, s, now_ns);
}

static void on_log(void *ctx, pid_t pid, const struct otlp_scope *scope,
		   const struct otlp_log *l, uint64_t now_ns)
{
	struct agent_export *x = ctx;
	const struct otlp_resource *r = resource_of(x, pid);

	if (r)
		otlp_batcher_add_log(x->batcher, r, scope, l, now_ns);
}

/* Batches due, and resources of processes long gone forgotten. */
static void on_tick(void *ctx, uint64_t now_ns)
{
	struct agent_export *x = ctx;
	unsigned int i = 0;

	if (x->batcher)
		otlp_batcher_tick(x->batcher, now_ns);
	pthread_mutex_lock(&x->lock);
	while (i < x->nexited) {
		if (now_ns - x->exited[i].at_ns < FORGET_AFTER_NS) {
			i++;
			continue;
		}
		otlp_resources_forget(x->resources, x->exited[i].pid);
		x->exited[i] = x->exited[--x->nexited];
	}
	pthread_mutex_unlock(&x->lock);
}

/* set-up */

static int configure(const struct agent_export_config *c, struct otlp_config *o,
		     char *err, size_t errlen)
{
	int ret = otlp_config_from_env(o, err, errlen);

	if (ret)
		return ret;
	if (c->endpoint) {
		free(o->endpoint);
		o->endpoint = strdup(c->endpoint);
		if (!o->endpoint)
			return -ENOMEM;
		/* the flag names the collector: it beats per-signal env URLs */
		for (int s = 0; s < OTLP_SIGNAL_MAX; s++) {
			free(o->signal_endpoint[s]);
			o->signal_endpoint[s] = NULL;
		}
	}
	if (c->protocol && otlp_parse_protocol(c->protocol, &o->protocol)) {
		snprintf(err, errlen, "--otlp-protocol: '%s' is not grpc or http/protobuf",
			 c->protocol);
		return -EINVAL;
	}
	if (c->insecure)
		o->insecure = true;
	return 0;
}

static bool has_endpoint(const struct otlp_config *o)
{
	if (o->endpoint && *o->endpoint)
		return true;
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++)
		if (o->signal_endpoint[s] && *o->signal_endpoint[s])
			return true;
	return false;
}

int agent_export_new(const struct agent_export_config *c, struct agent_export **out,
		     char *err, size_t errlen)
{
	struct agent_export *x = calloc(1, sizeof(*x));
	int ret;

	*out = NULL;
	if (!x)
		return -ENOMEM;
	pthread_mutex_init(&x->lock, NULL);
	ret = configure(c, &x->otlp, err, errlen);
	if (ret)
		goto fail;
	if (!has_endpoint(&x->otlp) && !c->nvtx) {
		agent_export_free(x);
		return 0;
	}
	x->resources = otlp_resources_new(&x->otlp);
	if (!x->resources) {
		ret = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < c->nlabels; i++) {
		ret = otlp_resources_add_label(x->resources, c->labels[i].key,
					       c->labels[i].value);
		if (ret) {
			snprintf(err, errlen, "--label %s: %s", c->labels[i].key,
				 ret == -ENOSPC ? "too many labels" : strerror(-ret));
			goto fail;
		}
	}
	if (has_endpoint(&x->otlp)) {
		/* within --memory-limit's share (never above the default) */
		if (c->export_queue_bytes && c->export_queue_bytes < x->otlp.max_queue_bytes)
			x->otlp.max_queue_bytes = c->export_queue_bytes;
		x->exporter = otlp_exporter_new(&x->otlp, err, errlen);
		if (!x->exporter) {
			ret = -EINVAL;
			goto fail;
		}
		x->batcher = otlp_batcher_new(x->exporter);
		if (!x->batcher) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	if (c->nvtx) {
		struct nvtx_opts no = {
			.max_spans_per_sec = c->nvtx_max_spans_per_sec,
			.queue_bytes = c->nvtx_queue_bytes,
			.out = { .ctx = x, .span = on_span, .log = on_log, .tick = on_tick },
		};

		x->nvtx = nvtx_new(&no);
		if (!x->nvtx) {
			ret = errno ? -errno : -ENOMEM;
			snprintf(err, errlen, "cannot start the NVTX tracer: %s", strerror(-ret));
			goto fail;
		}
	}
	*out = x;
	return 0;
fail:
	if (ret == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of memory");
	agent_export_free(x);
	return ret;
}

const char *agent_export_endpoint(const struct agent_export *x)
{
	if (!x || !x->exporter)
		return "";
	if (x->otlp.endpoint)
		return x->otlp.endpoint;
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++)
		if (x->otlp.signal_endpoint[s])
			return x->otlp.signal_endpoint[s];
	return "";
}

/* reader thread */

int agent_export_nvtx(struct agent_export *x, const void *data, size_t size)
{
	const struct profd_gpu_batch *b = data;
	struct nvtx_process_info info;
	bool said;

	if (!x || !x->nvtx)
		return 0;
	if (size < sizeof(*b))
		return -EINVAL;
	/*
	 * Read the process's resource (exe, command line, environment)
	 * while it lives: its spans may be sent after it exited. A session
	 * begins with what the process says of itself, which stands in for
	 * what /proc no longer tells when a short program is gone already.
	 */
	said = nvtx_batch_process_info(data, size, &info) > 0;
	if (said || (pid_t)b->pid != x->last_pid) {
		struct otlp_process_hint hint = {
			.exe_path = info.exe_path,
			.command_line = info.command_line,
			.service_name = info.service_name,
		};

		x->last_pid = b->pid;
		otlp_resources_get(x->resources, b->pid, said ? &hint : NULL);
	}
	return nvtx_record(x->nvtx, data, size);
}

void agent_export_process_exit(struct agent_export *x, pid_t pid)
{
	if (!x)
		return;
	if (x->nvtx)
		nvtx_process_exit(x->nvtx, pid);
	if (x->last_pid == pid)
		x->last_pid = 0;
	pthread_mutex_lock(&x->lock);
	if (x->nexited < MAX_EXITED)
		x->exited[x->nexited++] = (struct exited){ pid, clock_mono_ns() };
	else
		otlp_resources_forget(x->resources, pid);
	pthread_mutex_unlock(&x->lock);
}

/* main thread */

void agent_export_otlp(struct agent_export *x, struct otlp_exporter **exporter,
		       struct otlp_resources **resources)
{
	*exporter = x ? x->exporter : NULL;
	*resources = x && x->exporter ? x->resources : NULL;
}

void agent_export_stats(struct agent_export *x, struct agent_export_stats *out)
{
	struct nvtx_stats ns = { 0 };
	struct otlp_stats os = { 0 };

	memset(out, 0, sizeof(*out));
	if (!x)
		return;
	if (x->nvtx)
		nvtx_get_stats(x->nvtx, &ns);
	if (x->exporter)
		otlp_exporter_stats(x->exporter, &os);
	out->nvtx_spans = ns.spans;
	out->nvtx_logs = ns.logs;
	out->nvtx_spans_dropped_budget = ns.spans_dropped_budget;
	out->nvtx_queue_full = ns.queue_full;
	out->nvtx_pops_unmatched = ns.pops_unmatched;
	out->nvtx_ends_unknown = ns.ends_unknown;
	out->nvtx_strings_unknown = ns.strings_unknown;
	out->nvtx_unfinished = ns.unfinished;
	out->nvtx_library_dropped = ns.library_dropped;
	out->nvtx_unseen = ns.unseen;
	out->nvtx_tables_full = ns.tables_full;
	out->nvtx_queue_bytes = ns.queue_bytes;
	out->nvtx_queue_budget = ns.queue_cap;
	out->otlp_queue_bytes = os.bytes_queued;
	out->otlp_queue_budget = os.max_queue_bytes;
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++)
		out->otlp_items_sent += os.items_sent[s];
	/* profiles not encoded are in items_dropped (otlp_sink.c) */
	out->otlp_items_dropped = os.items_dropped + (x->stopped ? os.items_queued : 0);
	out->otlp_retries = os.retries;
	out->otlp_items_queued = x->stopped ? 0 : os.items_queued;
	out->otlp_requests_sent = 0;
	for (int s = 0; s < OTLP_SIGNAL_MAX; s++)
		out->otlp_requests_sent += os.requests_sent[s];
	out->otlp_requests_dropped = os.requests_dropped;
	out->otlp_bytes_sent = os.bytes_sent;
}

void agent_export_quiesce(struct agent_export *x)
{
	if (x && x->nvtx)
		nvtx_stop(x->nvtx);	/* closes open ranges: spans to the batcher */
	if (x && x->batcher)
		otlp_batcher_flush(x->batcher);
}

void agent_export_stop(struct agent_export *x, unsigned int timeout_ms)
{
	struct otlp_stats os;

	if (!x)
		return;
	agent_export_quiesce(x);
	if (x->exporter && otlp_exporter_flush(x->exporter, timeout_ms)) {
		otlp_exporter_stats(x->exporter, &os);
		fprintf(stderr, "profd: warning: OTLP endpoint %s did not take everything "
			"in %u ms%s%s\n", agent_export_endpoint(x), timeout_ms,
			os.last_error[0] ? ": " : "", os.last_error);
		memcpy(x->last_warned, os.last_error, sizeof(x->last_warned));
	}
	x->stopped = true;
	if (x->exporter) {
		/* what is still queued will never be sent */
		otlp_exporter_stats(x->exporter, &os);
		counter_add(&counter_otlp_items_dropped, os.items_queued);
	}
	agent_export_warn(x);
}

void agent_export_warn(struct agent_export *x)
{
	struct otlp_stats os;

	if (!x || !x->exporter)
		return;
	otlp_exporter_stats(x->exporter, &os);
	if (!os.last_error[0] || !strcmp(os.last_error, x->last_warned))
		return;
	memcpy(x->last_warned, os.last_error, sizeof(x->last_warned));
	fprintf(stderr, "profd: warning: OTLP: %s\n", os.last_error);
}

void agent_export_free(struct agent_export *x)
{
	if (!x)
		return;
	nvtx_free(x->nvtx);
	otlp_batcher_free(x->batcher);
	otlp_exporter_free(x->exporter);
	otlp_resources_free(x->resources);
	otlp_config_free(&x->otlp);
	pthread_mutex_destroy(&x->lock);
	free(x);
}
