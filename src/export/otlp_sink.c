// SPDX-License-Identifier: GPL-2.0
/*
 * otlp_sink.c - the OTLP profiles sink (see src/output/sink.h).
 *
 * Owns: turning each finished profile into an OTLP profiles request
 * (otlp_profiles_encode(), resources per process from the agent's
 * otlp_resources) and queueing it on the exporter (otlp_export()); the
 * exporter's sender thread does the network I/O, so nothing here blocks.
 * Open only with an OTLP endpoint (struct sink_setup's exporter). A
 * profile that cannot be encoded is counted as dropped items on the
 * exporter (its samples), without a warning line.
 */
#include <errno.h>
#include <stdlib.h>

#include "export/otlp.h"
#include "export/otlp_profiles.h"
#include "output/sink.h"

struct otlp_profile_sink {
	struct otlp_exporter *exporter;		/* borrowed: the agent's */
	struct otlp_resources *resources;	/* borrowed */
};

static int otlp_sink_open(const struct sink_setup *st, void **out)
{
	struct otlp_profile_sink *s;

	if (!st->exporter)
		return 0;	/* no endpoint */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->exporter = st->exporter;
	s->resources = st->resources;
	*out = s;
	return 0;
}

/* Queue @fp (also when another sink failed to write it). */
static void otlp_sink_consume(void *sink, const struct finished_profile *fp,
			      struct sink_result *res)
{
	struct otlp_profile_sink *s = sink;
	const struct profile *p = fp->profile;
	void *body = NULL;
	size_t len = 0;
	uint64_t n = 0;

	if (!p || !p->nsamples)
		return;
	if (otlp_profiles_encode(p, s->resources, &body, &len, &n)) {
		otlp_exporter_drop(s->exporter, p->nsamples, NULL);
		return;
	}
	otlp_export(s->exporter, OTLP_SIGNAL_PROFILES, body, len, n);
}

static void otlp_sink_close(void *sink)
{
	free(sink);
}

const struct profile_sink_ops otlp_profile_sink_ops = {
	.name = "otlp",
	.open = otlp_sink_open,
	.consume = otlp_sink_consume,
	.close = otlp_sink_close,
};
