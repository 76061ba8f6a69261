// SPDX-License-Identifier: GPL-2.0
/*
 * test_otlp_export.c - drives the OTLP exporter (src/export/) against a
 * receiver: known spans, span events and log records through the batcher,
 * and a known struct profile through the profiles encoder, then flushes
 * and prints the exporter's counters as one JSON line on stdout
 * ("stats: {...}"). tests/test_otlp_export.py runs it against
 * ../shared/tools/otlp-sink and checks what the sink decoded; the inputs
 * here are restated there.
 *
 * Usage:
 *   test_otlp_export [options] ENDPOINT grpc|http/protobuf
 *     --no-gzip            send uncompressed (default: gzip)
 *     --timeout-ms N       per attempt (default 2000)
 *     --max-retry-ms N     retry budget per request (default 3000)
 *     --flush-ms N         how long to wait for the queue to drain (5000)
 *     --repeat N           send the spans N times (default 1) ...
 *     --interval-ms N      ... this far apart (default 0)
 *     --no-profile         skip the profile
 *     --queue-bytes N      the exporter's queue bound (default 64 MiB)
 *     --bench N            time N spans through batcher + encoder instead
 *   test_otlp_export --print-config
 *     the OTEL_* environment as otlp_config_from_env() read it, as JSON
 *   test_otlp_export --selfcheck
 *     bad and edge inputs, no network: "ok"/"FAIL" lines (check.h)
 *
 * The OTEL_* environment is read first (otlp_config_from_env), so headers,
 * resource attributes and the service name come from there; ENDPOINT and
 * the protocol override it. Exits 0 when the queue drained, 1 when it did
 * not (or a call failed), 2 on a configuration error (one line on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "export/otlp.h"
#include "export/otlp_profiles.h"
#include "export/otlp_traces.h"
#include "export/resource.h"
#include "profile/profile.h"

/* The inputs; tests/test_otlp_export.py restates them. */
#define T0		1700000000000000000ull	/* Unix ns */
#define SYN_KEY		42
#define PERIOD_NS	10000000

static const uint8_t trace_id[16] = {
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void span_id(uint8_t out[8], uint8_t n)
{
	memset(out, 0, 8);
	out[0] = 0xa0;
	out[7] = n;
}

/*
 * One trace of three spans under the process's resource, scope
 * "profd.nvtx" (root "train", child "epoch 0" with an event, grandchild
 * "step" with a non-UTF-8 name), one span under a synthetic resource
 * and scope "domainA" 1.2, and two log records. @round goes into the
 * span ids' byte 6 so repeats differ.
 */
static int send_items(struct otlp_batcher *b, const struct otlp_resource *proc,
		      uint8_t round)
{
	static const struct otlp_attr syn_attrs[] = {
		{ .key = "service.name", .type = OTLP_VALUE_STRING, .str = "synthetic" },
		{ .key = "custom.int", .type = OTLP_VALUE_INT, .i = 7 },
	};
	const struct otlp_resource syn = { .key = SYN_KEY, .attrs = syn_attrs, .nattrs = 2 };
	const struct otlp_scope nvtx = { .name = "profd.nvtx" };
	const struct otlp_scope dom = { .name = "domainA", .version = "1.2" };
	const struct otlp_attr attrs[] = {
		{ .key = "thread.id", .type = OTLP_VALUE_INT, .i = 1234 },
		{ .key = "thread.name", .type = OTLP_VALUE_STRING, .str = "worker" },
		{ .key = "nvtx.payload", .type = OTLP_VALUE_DOUBLE, .d = 2.5 },
		{ .key = "nvtx.unfinished", .type = OTLP_VALUE_BOOL, .b = true },
	};
	const struct otlp_attr ev_attrs[] = {
		{ .key = "nvtx.color", .type = OTLP_VALUE_STRING, .str = "#ff0000" },
	};
	const struct otlp_span_event ev = {
		.time_unix_ns = T0 + 1500, .name = "checkpoint",
		.attrs = ev_attrs, .nattrs = 1,
	};
	struct otlp_span s[4];
	struct otlp_log l[2];
	uint64_t now = mono_ns();
	int err = 0;

	memset(s, 0, sizeof(s));
	for (int i = 0; i < 4; i++) {
		memcpy(s[i].trace_id, trace_id, 16);
		span_id(s[i].span_id, i + 1);
		s[i].span_id[6] = round;
	}
	s[0].name = "train";
	s[0].start_unix_ns = T0;
	s[0].end_unix_ns = T0 + 10000;
	s[0].attrs = attrs;
	s[0].nattrs = 4;
	s[1].name = "epoch 0";
	memcpy(s[1].parent_span_id, s[0].span_id, 8);
	s[1].start_unix_ns = T0 + 1000;
	s[1].end_unix_ns = T0 + 9000;
	s[1].attrs = attrs;
	s[1].nattrs = 2;
	s[1].events = &ev;
	s[1].nevents = 1;
	s[2].name = "step \xff\xfe";	/* not UTF-8: sent repaired */
	memcpy(s[2].parent_span_id, s[1].span_id, 8);
	s[2].start_unix_ns = T0 + 2000;
	s[2].end_unix_ns = T0 + 3000;
	s[3].name = "synthetic span";
	s[3].start_unix_ns = T0 + 5000;
	s[3].end_unix_ns = T0 + 6000;

	memset(l, 0, sizeof(l));
	l[0].time_unix_ns = T0 + 2500;
	l[0].observed_unix_ns = T0 + 2600;
	l[0].severity_number = 9;
	l[0].severity_text = "INFO";
	l[0].body = "hello log";
	l[0].attrs = ev_attrs;
	l[0].nattrs = 1;
	memcpy(l[0].trace_id, trace_id, 16);
	memcpy(l[0].span_id, s[2].span_id, 8);
	l[1].time_unix_ns = T0 + 7000;
	l[1].body = "outside any span";

	for (int i = 0; i < 3; i++)
		err = err ? err : otlp_batcher_add_span(b, proc, &nvtx, &s[i], now);
	err = err ? err : otlp_batcher_add_span(b, &syn, &dom, &s[3], now);
	err = err ? err : otlp_batcher_add_log(b, proc, &nvtx, &l[0], now);
	err = err ? err : otlp_batcher_add_log(b, &syn, &dom, &l[1], now);
	return err;
}

static void label_num(struct profile_label *l, const char *key, int64_t v)
{
	memset(l, 0, sizeof(*l));
	l->key = key;
	l->num = v;
}

static void label_str(struct profile_label *l, const char *key, const char *v)
{
	memset(l, 0, sizeof(*l));
	l->key = key;
	l->str = v;
}

/*
 * The profile: 2 sample types, a kernel and an app mapping, functions
 * main/compute/do_syscall_64, 4 locations (one unresolved), 4 samples:
 * two of this process (pid label), one of pid 1, one without a pid.
 */
static struct profile *make_profile(void)
{
	struct profile *p = profile_new();
	struct profile_label lb[4];
	uint32_t app, kern, fmain, fcomp, fsys, loc[4], ids[3];
	int64_t v[2];

	if (!p || profile_add_sample_type(p, "samples", "count") ||
	    profile_add_sample_type(p, "cpu", "nanoseconds"))
		return NULL;
	p->period_type.type = profile_intern(p, "cpu");
	p->period_type.unit = profile_intern(p, "nanoseconds");
	p->period = PERIOD_NS;
	p->time_nanos = T0;
	p->duration_nanos = 10000000000ll;
	app = profile_add_mapping(p, 0x400000, 0x500000, 0x1000, "/usr/bin/app",
				  "4f3c2a1b9d8e7f60a1b2c3d4e5f60718293a4b5c");
	kern = profile_add_mapping(p, 0xffffffff81000000, 0xffffffff82000000, 0,
				   "[kernel.kallsyms]", "");
	fmain = profile_function_id(p, "main", NULL, "src/main.c");
	fcomp = profile_function_id(p, "ns::compute(int)", "_ZN2ns7computeEi", "src/compute.cc");
	fsys = profile_function_id(p, "do_syscall_64", NULL, "");
	loc[0] = profile_location_id(p, app, 0x401000, fmain, 42);
	loc[1] = profile_location_id(p, app, 0x402000, fcomp, 7);
	loc[2] = profile_location_id(p, kern, 0xffffffff81001000, fsys, 0);
	loc[3] = profile_location_id(p, app, 0x403000, 0, 0);

	/* compute <- main, this process */
	ids[0] = loc[1];
	ids[1] = loc[0];
	v[0] = 3;
	v[1] = 3 * PERIOD_NS;
	label_num(&lb[0], "pid", getpid());
	label_num(&lb[1], "tid", 1001);
	label_str(&lb[2], "comm", "app");
	label_str(&lb[3], "thread_name", "worker");
	if (profile_add_sample(p, ids, 2, v, lb, 4))
		return NULL;
	/* do_syscall_64 <- compute <- main, this process */
	ids[0] = loc[2];
	ids[1] = loc[1];
	ids[2] = loc[0];
	v[0] = 2;
	v[1] = 2 * PERIOD_NS;
	if (profile_add_sample(p, ids, 3, v, lb, 4))
		return NULL;
	/* unresolved, pid 1 */
	ids[0] = loc[3];
	v[0] = 1;
	v[1] = PERIOD_NS;
	label_num(&lb[0], "pid", 1);
	label_num(&lb[1], "tid", 1);
	if (profile_add_sample(p, ids, 1, v, lb, 2))
		return NULL;
	/* main alone, no pid: the host's resource */
	ids[0] = loc[0];
	v[0] = 5;
	v[1] = 5 * PERIOD_NS;
	label_num(&lb[0], "bytes", 4096);
	lb[0].num_unit = "bytes";
	if (profile_add_sample(p, ids, 1, v, lb, 1))
		return NULL;
	return p;
}

static void print_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_stats(struct otlp_exporter *e, int flushed, double secs)
{
	struct otlp_stats st;

	otlp_exporter_stats(e, &st);
	printf("stats: {\"requests_sent\": [%llu, %llu, %llu], "
	       "\"items_sent\": [%llu, %llu, %llu], \"items_dropped\": %llu, "
	       "\"requests_dropped\": %llu, \"retries\": %llu, \"bytes_sent\": %llu, "
	       "\"items_queued\": %llu, \"flushed\": %s, \"seconds\": %.3f, \"last_error\": ",
	       (unsigned long long)st.requests_sent[0], (unsigned long long)st.requests_sent[1],
	       (unsigned long long)st.requests_sent[2], (unsigned long long)st.items_sent[0],
	       (unsigned long long)st.items_sent[1], (unsigned long long)st.items_sent[2],
	       (unsigned long long)st.items_dropped, (unsigned long long)st.requests_dropped,
	       (unsigned long long)st.retries, (unsigned long long)st.bytes_sent,
	       (unsigned long long)st.items_queued, flushed ? "true" : "false", secs);
	print_json_str(st.last_error);
	printf("}\n");
	fflush(stdout);
}

/* --selfcheck: bad and edge inputs must fail cleanly, never crash. */
static int selfcheck(void)
{
	struct otlp_config c = { .protocol = OTLP_PROTO_HTTP_PROTOBUF, .gzip = true,
				 .timeout_ms = 1000, .max_retry_ms = 100 };
	struct otlp_attr odd[] = {
		{ .key = NULL, .type = OTLP_VALUE_STRING, .str = NULL },
		{ .key = "k", .type = (enum otlp_value_type)99 },
	};
	struct otlp_span sp = { .name = NULL, .attrs = odd, .nattrs = 2 };
	struct otlp_log lg = { .severity_number = 1000, .body = "\xc3(" };
	struct otlp_exporter *e;
	struct otlp_batcher *b;
	struct otlp_stats st;
	struct profile *p;
	uint64_t n;
	size_t len;
	void *body;
	char err[256];

	/* no endpoint at all: requests dropped with a reason, not sent */
	e = otlp_exporter_new(&c, err, sizeof(err));
	CHECK(e != NULL, "exporter without an endpoint starts (%s)", err);
	b = otlp_batcher_new(e);
	CHECK(otlp_batcher_add_span(b, NULL, NULL, &sp, 0) == 0, "span with NULLs and a bad type");
	CHECK(otlp_batcher_add_log(b, NULL, NULL, &lg, 0) == 0, "log with bad UTF-8 and severity");
	CHECK(otlp_batcher_add_span(b, NULL, NULL, NULL, 0) == -EINVAL, "NULL span");
	CHECK(otlp_batcher_add_span(NULL, NULL, NULL, &sp, 0) == -EINVAL, "NULL batcher");
	otlp_batcher_tick(b, 0);
	otlp_batcher_tick(b, 2000000000ull);	/* past the delay: sent */
	CHECK(otlp_exporter_flush(e, 2000) == 0, "flush drains");
	otlp_exporter_stats(e, &st);
	CHECK(st.requests_dropped == 2 && st.items_dropped == 2 &&
	      strstr(st.last_error, "no OTLP endpoint"), "dropped: %s", st.last_error);
	CHECK(otlp_export(NULL, OTLP_SIGNAL_TRACES, malloc(4), 4, 1) == -EINVAL, "NULL exporter");
	CHECK(otlp_export(e, OTLP_SIGNAL_MAX, malloc(4), 4, 1) == -EINVAL, "bad signal");
	otlp_batcher_free(b);
	otlp_exporter_free(e);
	otlp_exporter_free(NULL);
	otlp_batcher_free(NULL);

	/* profiles: empty, then ids out of range */
	p = profile_new();
	CHECK(p && otlp_profiles_encode(p, NULL, &body, &len, &n) == 0 && n == 0,
	      "empty profile encodes (%zu bytes)", len);
	free(body);
	profile_free(p);
	p = make_profile();
	CHECK(p != NULL, "profile built");
	if (p) {
		p->locations[0].mapping_id = 99;
		CHECK(otlp_profiles_encode(p, NULL, &body, &len, &n) == -EINVAL && !body,
		      "mapping id out of range: -EINVAL");
		p->locations[0].mapping_id = 1;
		p->samples[0].location_ids[0] = 1000;
		CHECK(otlp_profiles_encode(p, NULL, &body, &len, &n) == -EINVAL && !body,
		      "location id out of range: -EINVAL");
		p->nsample_types = PROFILE_MAX_VALUES + 1;
		CHECK(otlp_profiles_encode(p, NULL, &body, &len, &n) == -EINVAL,
		      "too many sample types: -EINVAL");
		p->nsample_types = 2;
		p->samples[0].location_ids[0] = 1;
		profile_free(p);
	}
	otlp_resources_free(NULL);
	CHECK(otlp_resources_get(NULL, 1, NULL) == NULL, "NULL cache");
	return failures ? 1 : 0;
}

/* --print-config: @c and @err (otlp_config_from_env's result @rc) as JSON. */
static int print_config(const struct otlp_config *c, int rc, const char *err)
{
	static const char *const sig[] = { "traces", "logs", "profiles" };

	printf("{\"rc\": %d, \"error\": ", rc);
	print_json_str(rc ? err : "");
	printf(", \"endpoint\": ");
	print_json_str(c->endpoint ? c->endpoint : "");
	for (int i = 0; i < OTLP_SIGNAL_MAX; i++) {
		printf(", \"%s_endpoint\": ", sig[i]);
		print_json_str(c->signal_endpoint[i] ? c->signal_endpoint[i] : "");
	}
	printf(", \"protocol\": \"%s\", \"insecure\": %s, \"timeout_ms\": %u, "
	       "\"gzip\": %s, \"service_name\": ",
	       c->protocol == OTLP_PROTO_GRPC ? "grpc" : "http/protobuf",
	       c->insecure ? "true" : "false", c->timeout_ms, c->gzip ? "true" : "false");
	print_json_str(c->service_name ? c->service_name : "");
	printf(", \"headers\": [");
	for (unsigned int i = 0; i < c->nheaders; i++) {
		printf(i ? ", " : "");
		print_json_str(c->headers[i]);
	}
	printf("], \"resource\": [");
	for (unsigned int i = 0; i < c->nresource; i++) {
		printf(i ? ", [" : "[");
		print_json_str(c->resource_keys[i]);
		printf(", ");
		print_json_str(c->resource_values[i]);
		printf("]");
	}
	printf("]}\n");
	return rc ? 2 : 0;
}

/* --bench: @n spans like the root span above, 64 processes, 2 scopes. */
static int bench(struct otlp_exporter *e, unsigned int n, unsigned int flush_ms)
{
	struct otlp_attr attrs[4] = {
		{ .key = "thread.id", .type = OTLP_VALUE_INT },
		{ .key = "thread.name", .type = OTLP_VALUE_STRING, .str = "worker-thread" },
		{ .key = "nvtx.category", .type = OTLP_VALUE_STRING, .str = "compute" },
		{ .key = "nvtx.payload", .type = OTLP_VALUE_DOUBLE, .d = 1.5 },
	};
	struct otlp_attr rattrs[2] = {
		{ .key = "service.name", .type = OTLP_VALUE_STRING, .str = "bench" },
		{ .key = "process.pid", .type = OTLP_VALUE_INT },
	};
	const struct otlp_span_event ev = { .time_unix_ns = T0 + 10, .name = "mark",
					    .attrs = attrs, .nattrs = 1 };
	const struct otlp_scope scopes[2] = { { .name = "profd.nvtx" }, { .name = "training" } };
	struct otlp_batcher *b = otlp_batcher_new(e);
	struct otlp_resource r = { .attrs = rattrs, .nattrs = 2 };
	struct otlp_span s;
	uint64_t t0, t1, t2;
	int err = 0;

	if (!b)
		return 1;
	memset(&s, 0, sizeof(s));
	memcpy(s.trace_id, trace_id, 16);
	s.name = "forward_pass";
	s.attrs = attrs;
	s.nattrs = 4;
	t0 = mono_ns();
	for (unsigned int i = 0; i < n && !err; i++) {
		unsigned int proc = i % 64;

		r.key = (uint64_t)(proc + 100) << 32;
		rattrs[1].i = proc + 100;
		memcpy(s.span_id, &i, sizeof(i));
		memcpy(s.parent_span_id, &proc, sizeof(proc));
		s.start_unix_ns = T0 + i * 1000ull;
		s.end_unix_ns = s.start_unix_ns + 500;
		attrs[0].i = i & 0xffff;
		s.events = i % 4 == 0 ? &ev : NULL;
		s.nevents = i % 4 == 0;
		err = otlp_batcher_add_span(b, &r, &scopes[(i / 1024) & 1], &s, t0);
	}
	otlp_batcher_flush(b);
	t1 = mono_ns();
	err = err == -ENOBUFS ? 0 : err;
	printf("bench: %u spans, batcher+encoder %.3f s = %.0f spans/s\n", n,
	       (t1 - t0) / 1e9, n / ((t1 - t0) / 1e9));
	if (flush_ms) {
		int f = otlp_exporter_flush(e, flush_ms);

		t2 = mono_ns();
		printf("bench: end to end (gzip + send) %.3f s = %.0f spans/s%s\n",
		       (t2 - t0) / 1e9, n / ((t2 - t0) / 1e9), f ? " (not drained)" : "");
		print_stats(e, !f, (t2 - t0) / 1e9);
	}
	otlp_batcher_free(b);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned int flush_ms = 5000, repeat = 1, interval_ms = 0, nbench = 0;
	long queue_bytes = 0;
	bool profile = true;
	struct otlp_config c;
	struct otlp_exporter *e;
	struct otlp_resources *rs = NULL;
	struct otlp_batcher *b = NULL;
	char err[256];
	int i, rc = 0, flushed;
	uint64_t t0 = mono_ns();

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = otlp_config_from_env(&c, err, sizeof(err));
	if (argc == 2 && strcmp(argv[1], "--selfcheck") == 0) {
		otlp_config_free(&c);
		return selfcheck();
	}
	if (argc == 2 && strcmp(argv[1], "--print-config") == 0) {
		rc = print_config(&c, rc, err);
		otlp_config_free(&c);
		return rc;
	}
	if (rc == -EINVAL)
		fprintf(stderr, "test_otlp_export: %s (ignored)\n", err);
	rc = 0;
	c.timeout_ms = 2000;
	c.max_retry_ms = 3000;
	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";

		if (strcmp(a, "--no-gzip") == 0) {
			c.gzip = false;
			continue;
		}
		if (strcmp(a, "--no-profile") == 0) {
			profile = false;
			continue;
		}
		i++;
		if (strcmp(a, "--timeout-ms") == 0)
			c.timeout_ms = atoi(v);
		else if (strcmp(a, "--max-retry-ms") == 0)
			c.max_retry_ms = atoi(v);
		else if (strcmp(a, "--flush-ms") == 0)
			flush_ms = atoi(v);
		else if (strcmp(a, "--repeat") == 0)
			repeat = atoi(v);
		else if (strcmp(a, "--interval-ms") == 0)
			interval_ms = atoi(v);
		else if (strcmp(a, "--bench") == 0)
			nbench = atoi(v);
		else if (strcmp(a, "--queue-bytes") == 0)
			queue_bytes = atol(v);
		else
			goto usage;
	}
	if (argc - i != 2)
		goto usage;
	free(c.endpoint);
	c.endpoint = strdup(argv[i]);
	if (otlp_parse_protocol(argv[i + 1], &c.protocol)) {
		fprintf(stderr, "test_otlp_export: unknown protocol %s\n", argv[i + 1]);
		return 2;
	}
	if (nbench)
		c.max_queue_bytes = 1ull << 30;
	if (queue_bytes > 0)
		c.max_queue_bytes = queue_bytes;
	e = otlp_exporter_new(&c, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "%s\n", err);
		otlp_config_free(&c);
		return 2;
	}
	if (nbench) {
		rc = bench(e, nbench, flush_ms);
		otlp_exporter_free(e);
		otlp_config_free(&c);
		return rc;
	}
	rs = otlp_resources_new(&c);
	b = otlp_batcher_new(e);
	if (!rs || !b) {
		fprintf(stderr, "test_otlp_export: out of memory\n");
		return 1;
	}
	for (unsigned int r = 0; r < repeat; r++) {
		const struct otlp_resource *proc = otlp_resources_get(rs, getpid(),
			&(struct otlp_process_hint){ .comm = "driver" });

		if (send_items(b, proc, r) == -ENOMEM)
			rc = 1;
		otlp_batcher_flush(b);
		if (interval_ms && r + 1 < repeat)
			usleep(interval_ms * 1000);
	}
	if (profile) {
		struct profile *p = make_profile();
		uint64_t nsamples;
		size_t len;
		void *body;

		if (!p || otlp_profiles_encode(p, rs, &body, &len, &nsamples)) {
			fprintf(stderr, "test_otlp_export: profile encoding failed\n");
			rc = 1;
		} else {
			otlp_export(e, OTLP_SIGNAL_PROFILES, body, len, nsamples);
		}
		profile_free(p);
	}
	flushed = otlp_exporter_flush(e, flush_ms) == 0;
	print_stats(e, flushed, (mono_ns() - t0) / 1e9);
	otlp_batcher_free(b);
	otlp_exporter_free(e);
	printf("freed after %.3f s\n", (mono_ns() - t0) / 1e9);
	otlp_resources_free(rs);
	otlp_config_free(&c);
	return rc ? rc : !flushed;
usage:
	fprintf(stderr, "usage: test_otlp_export [--no-gzip] [--timeout-ms N] [--max-retry-ms N] "
		"[--flush-ms N] [--repeat N] [--interval-ms N] [--no-profile] [--queue-bytes N] [--bench N] "
		"ENDPOINT grpc|http/protobuf\n");
	return 2;
}
