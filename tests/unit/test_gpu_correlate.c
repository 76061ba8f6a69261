// SPDX-License-Identifier: GPL-2.0
/*
 * test_gpu_correlate.c - src/gpu/ through its API (gpu.h) on synthetic
 * cupti_events records (bpf/gpu_events.h) and a fake CLOCK_MONOTONIC.
 *
 * Owns the checks of: the join of launch stacks and kernel records by
 * (pid, correlation id) in either order, graph launches (one id, many
 * kernels, records spread over batches and seconds), aggregation of
 * kernels on one stack, the launch timeout ("[unknown launch]", unmatched
 * launches) and gpu_finish(), the max_launches bound and the pending
 * bound, launches without a stack (gpu_launch_info.no_stack and
 * PROFD_EVENT_GPU_LAUNCHES batches), kernels without a name (and names
 * read from process memory), malformed records and random bytes, interval
 * swaps and the release of the stacks freed intervals held, PC samples
 * with stall reasons, unresolved and resolved against a real ELF "cubin"
 * (build/tests/gpu/apps/fake.cubin) held in this process's own memory.
 * Every number asserted is exact. Prints one line per check; exits 1 if
 * any failed.
 *
 * Argument "--fuzz N": run only the random-record check, N records.
 */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"	/* g->nstacks only: are stacks released? */

#include "check.h"

#define SEC		1000000000ULL
#define T0		(1000 * SEC)	/* fake CLOCK_MONOTONIC at the start */
#define START_NS	1700000000000000000ULL	/* interval start, Unix ns */
#define END_NS		(START_NS + 10 * SEC)

#define PID		4242
#define TID		4243
#define COMM		"trainer"
#define THREAD		"worker-0"

#define MATMUL		"_Z6matmulPKfS0_Pfi"
#define MATMUL_D	"matmul(float const*, float const*, float*, int)"
#define RELU		"_Z4reluPfi"
#define RELU_D		"relu(float*, int)"
#define ID_MATMUL	1
#define ID_RELU		2

#define DEVICE		1
#define STREAM		7

/* A launching stack: one kernel frame, then three user frames (leaf first). */
static const uint64_t stack_a[] = {
	0xffffffff81a01234ULL, 0x401234, 0x402345, 0x403456,
};
#define STACK_A_NK 1
#define STACK_A_NU 3
static const uint64_t stack_b[] = { 0x405000, 0x406000 };

/* --- records ------------------------------------------------------------ */

static struct gpu *gpu_with(uint64_t timeout_ns, uint32_t max_launches)
{
	struct gpu_opts o = {
		.launch_timeout_ns = timeout_ns,
		.max_launches = max_launches,
	};
	struct gpu *g = gpu_new(&o);

	if (!g) {
		fprintf(stderr, "gpu_new failed\n");
		exit(2);
	}
	return g;
}

static struct gpu_stats stats(struct gpu *g)
{
	struct gpu_stats st;

	gpu_stats(g, &st);
	return st;
}

/* A PROFD_EVENT_GPU_NAME record of @s (NUL included). */
static int send_name(struct gpu *g, uint32_t pid, uint32_t id, const char *s)
{
	_Alignas(8) unsigned char buf[sizeof(struct profd_gpu_name) + PROFD_GPU_NAME_MAX];
	struct profd_gpu_name n = {
		.type = PROFD_EVENT_GPU_NAME, .pid = pid, .name_id = id,
		.len = strlen(s) + 1,
	};

	memcpy(buf, &n, sizeof(n));
	memcpy(buf + sizeof(n), s, n.len);
	return gpu_record(g, buf, sizeof(n) + n.len, T0);
}

/* A batch record: struct profd_gpu_batch, then @n structs of @elem bytes. */
static int send_batch(struct gpu *g, uint32_t type, uint32_t pid, const void *v,
		      uint32_t n, size_t elem, uint64_t now)
{
	size_t size = sizeof(struct profd_gpu_batch) + n * elem;
	struct profd_gpu_batch b = {
		.type = type, .pid = pid, .tid = pid + 1, .n = n, .ktime_ns = now,
	};
	unsigned char *buf = malloc(size);
	int ret;

	if (!buf)
		exit(2);
	memcpy(buf, &b, sizeof(b));
	memcpy(buf + sizeof(b), v, n * elem);
	ret = gpu_record(g, buf, size, now);
	free(buf);
	return ret;
}

static int send_kernels(struct gpu *g, uint32_t pid, const struct profd_gpu_kernel *v,
			uint32_t n, uint64_t now)
{
	return send_batch(g, PROFD_EVENT_GPU_KERNELS, pid, v, n, sizeof(*v), now);
}

/* One kernel of launch @corr on DEVICE/STREAM, @dur ns long. */
static struct profd_gpu_kernel kern(uint32_t corr, uint32_t name_id, uint64_t start,
				    uint64_t dur)
{
	return (struct profd_gpu_kernel){
		.start_ns = start, .end_ns = start + dur, .correlation_id = corr,
		.device_id = DEVICE, .stream_id = STREAM, .name_id = name_id,
		.context_id = 1,
	};
}

static int send_kernel(struct gpu *g, uint32_t pid, struct profd_gpu_kernel k,
		       uint64_t now)
{
	return send_kernels(g, pid, &k, 1, now);
}

static void launch_from(struct gpu *g, pid_t pid, uint64_t corr, const uint64_t *ips,
			uint16_t nkernel, uint16_t nuser, uint64_t now)
{
	struct gpu_launch_info l = {
		.pid = pid, .tid = pid == PID ? TID : pid, .comm = COMM,
		.thread_name = THREAD, .correlation_id = corr, .ips = ips,
		.nkernel = nkernel, .nuser = nuser,
	};

	gpu_launch(g, &l, now);
}

static void launch(struct gpu *g, uint64_t corr, uint64_t now)
{
	launch_from(g, PID, corr, stack_a, STACK_A_NK, STACK_A_NU, now);
}

static void names(struct gpu *g, uint32_t pid)
{
	CHECK(send_name(g, pid, ID_MATMUL, MATMUL) == 0 &&
	      send_name(g, pid, ID_RELU, RELU) == 0, "name records of pid %u accepted", pid);
}

/* --- profiles ----------------------------------------------------------- */

static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct build_opts bopts = {
	.period_ns = 0, .end_ns = END_NS, .ksyms = NULL, .kernel_build_id = "",
	.sym_lock = &sym_lock, .rts = NULL,
};

static struct profile *kernel_profile_of(const struct gpu_interval *iv)
{
	struct profile *p = gpu_build_kernel_profile(iv, &bopts, START_NS);

	if (!p) {
		fprintf(stderr, "gpu_build_kernel_profile failed\n");
		exit(2);
	}
	return p;
}

/* Swap out the current interval and build its kernel profile. */
static struct profile *kernel_profile(struct gpu *g)
{
	struct gpu_interval *iv = gpu_swap(g);
	struct profile *p;

	if (!iv)
		exit(2);
	p = kernel_profile_of(iv);
	gpu_interval_free(iv);
	return p;
}

static struct profile *pc_profile(struct gpu *g)
{
	struct gpu_interval *iv = gpu_swap(g);
	struct profile *p = iv ? gpu_build_pc_profile(iv, &bopts, START_NS) : NULL;

	if (!p) {
		fprintf(stderr, "gpu_build_pc_profile failed\n");
		exit(2);
	}
	gpu_interval_free(iv);
	return p;
}

static const struct profile_function *fn_of(const struct profile *p, uint32_t loc)
{
	const struct profile_location *l = profile_location(p, loc);

	return l ? profile_function(p, l->function_id) : NULL;
}

static const char *fn_name(const struct profile *p, uint32_t loc)
{
	const struct profile_function *f = fn_of(p, loc);

	return f ? f->name : NULL;
}

static bool streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/*
 * The sample whose leaf is @leaf and whose second frame is @below (any if
 * NULL); *@n gets how many samples match.
 */
static const struct profile_sample *find(const struct profile *p, const char *leaf,
					 const char *below, unsigned int *n)
{
	const struct profile_sample *found = NULL;

	*n = 0;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];

		if (!s->nlocations || !streq(fn_name(p, s->location_ids[0]), leaf))
			continue;
		if (below && (s->nlocations < 2 ||
			      !streq(fn_name(p, s->location_ids[1]), below)))
			continue;
		if (!found)
			found = s;
		(*n)++;
	}
	return found;
}

static const struct profile_label *label(const struct profile_sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (streq(s->labels[i].key, key))
			return &s->labels[i];
	return NULL;
}

static bool label_str(const struct profile_sample *s, const char *key, const char *want)
{
	const struct profile_label *l = label(s, key);

	return l && streq(l->str, want);
}

static bool label_num(const struct profile_sample *s, const char *key, int64_t want)
{
	const struct profile_label *l = label(s, key);

	return l && !l->str && l->num == want;
}

/* The leaf is @name's kernel frame: mapping "[cuda]", address 0. */
static bool cuda_leaf(const struct profile *p, const struct profile_sample *s,
		      const char *name, const char *system_name)
{
	const struct profile_location *l = profile_location(p, s->location_ids[0]);
	const struct profile_mapping *m = l ? profile_mapping(p, l->mapping_id) : NULL;
	const struct profile_function *f = fn_of(p, s->location_ids[0]);

	return m && streq(m->filename, "[cuda]") && l->address == 0 && f &&
	       streq(f->name, name) && streq(f->system_name, system_name);
}

/* After the leaf: @ips in order, kernel frames under [kernel.kallsyms], user
 * frames unresolved (no snapshot: mapping 0, no function). */
static bool stack_is(const struct profile *p, const struct profile_sample *s,
		     const uint64_t *ips, unsigned int nkernel, unsigned int nuser)
{
	if (s->nlocations != 1 + nkernel + nuser)
		return false;
	for (unsigned int i = 0; i < nkernel + nuser; i++) {
		const struct profile_location *l = profile_location(p, s->location_ids[1 + i]);
		const struct profile_mapping *m;

		if (!l || l->address != ips[i] || l->function_id)
			return false;
		m = profile_mapping(p, l->mapping_id);
		if (i < nkernel ? !m || !streq(m->filename, "[kernel.kallsyms]") : l->mapping_id)
			return false;
	}
	return true;
}

/* A placeholder frame (no mapping, no address) named @what. */
static bool placeholder_at(const struct profile *p, const struct profile_sample *s,
			   uint32_t i, const char *what)
{
	const struct profile_location *l = i < s->nlocations ?
		profile_location(p, s->location_ids[i]) : NULL;

	return l && !l->mapping_id && !l->address && streq(fn_name(p, s->location_ids[i]), what);
}

/* The labels of a sample on a captured launch stack of PID/TID. */
static bool launch_labels(const struct profile_sample *s, const char *device,
			  const char *stream, const char *graph)
{
	return s->nlabels == 7 && label_num(s, "pid", PID) && label_num(s, "tid", TID) &&
	       label_str(s, "comm", COMM) && label_str(s, "thread_name", THREAD) &&
	       label_str(s, "cuda_device", device) && label_str(s, "cuda_stream", stream) &&
	       label_str(s, "cuda_graph", graph);
}

static int64_t total_ns(const struct profile *p)
{
	int64_t t = 0;

	for (uint32_t i = 0; i < p->nsamples; i++)
		t += p->samples[i].values[1];
	return t;
}

/* --- 1, 2: the join, in either order ------------------------------------- */

static void check_matmul_profile(struct profile *p, const char *what)
{
	unsigned int n;
	const struct profile_sample *s = find(p, MATMUL_D, NULL, &n);

	CHECK(p->nsample_types == 2 && streq(p->sample_types[0].type, "kernels") &&
	      streq(p->sample_types[0].unit, "count") &&
	      streq(p->sample_types[1].type, "gpu_kernel_time") &&
	      streq(p->sample_types[1].unit, "nanoseconds") &&
	      streq(p->period_type.type, "gpu_kernel_time") && p->period == 1,
	      "%s: sample types kernels/count, gpu_kernel_time/nanoseconds", what);
	CHECK(p->time_nanos == (int64_t)START_NS &&
	      p->duration_nanos == (int64_t)(END_NS - START_NS),
	      "%s: time %" PRId64 " duration %" PRId64, what, p->time_nanos,
	      p->duration_nanos);
	CHECK(p->nsamples == 1 && n == 1, "%s: one sample (got %u)", what, p->nsamples);
	if (!s)
		return;
	CHECK(s->values[0] == 1 && s->values[1] == 1234,
	      "%s: values {%" PRId64 ", %" PRId64 "} == {1, 1234}", what,
	      s->values[0], s->values[1]);
	CHECK(cuda_leaf(p, s, MATMUL_D, MATMUL),
	      "%s: leaf \"%s\" (system name %s) on [cuda]", what, MATMUL_D, MATMUL);
	CHECK(stack_is(p, s, stack_a, STACK_A_NK, STACK_A_NU),
	      "%s: the launching stack in order after the leaf (%u locations)", what,
	      s->nlocations);
	CHECK(launch_labels(s, "1", "7", "0"),
	      "%s: labels pid=%d tid=%d (numbers), comm, thread_name, cuda_device=1, "
	      "cuda_stream=7, cuda_graph=0 (strings)", what, PID, TID);
}

static void test_launch_then_kernel(void)
{
	struct gpu *g = gpu_with(SEC, 0);
	struct gpu_stats st;
	struct profile *p;

	names(g, PID);
	launch(g, 10, T0);
	CHECK(send_kernel(g, PID, kern(10, ID_MATMUL, 5000, 1234), T0 + 1000) == 0,
	      "launch first: kernel record accepted");
	st = stats(g);
	CHECK(st.launches == 1 && st.kernels == 1 && st.kernels_no_launch == 0 &&
	      st.names_unknown == 0 && st.malformed == 0,
	      "launch first: launches 1, kernels 1, no_launch 0, names_unknown 0");
	p = kernel_profile(g);
	check_matmul_profile(p, "launch first");
	profile_free(p);
	gpu_tick(g, T0 + 100 * SEC);
	st = stats(g);
	CHECK(st.launches_unmatched == 0 && st.kernels_no_launch == 0,
	      "launch first: nothing unmatched after the timeout");
	gpu_free(g);
}

static void test_kernel_then_launch(void)
{
	struct gpu *g = gpu_with(SEC, 0);
	struct gpu_stats st;
	struct profile *p;

	names(g, PID);
	CHECK(send_kernel(g, PID, kern(11, ID_MATMUL, 5000, 1234), T0) == 0,
	      "kernel first: kernel record accepted");
	gpu_tick(g, T0 + SEC - 1);	/* just before the timeout */
	CHECK(stats(g).kernels == 0, "kernel first: the kernel waits for its launch");
	launch(g, 11, T0 + SEC - 1);
	st = stats(g);
	CHECK(st.kernels == 1 && st.kernels_no_launch == 0,
	      "kernel first: joined when the launch came (kernels %" PRIu64
	      ", no_launch %" PRIu64 ")", st.kernels, st.kernels_no_launch);
	p = kernel_profile(g);
	check_matmul_profile(p, "kernel first");
	profile_free(p);
	gpu_tick(g, T0 + 100 * SEC);
	st = stats(g);
	CHECK(st.kernels_no_launch == 0 && st.launches_unmatched == 0,
	      "kernel first: no_launch 0, unmatched 0 after the timeout");
	gpu_free(g);
}

/* --- 3: graphs ------------------------------------------------------------ */

static void test_graph(void)
{
	struct gpu *g = gpu_with(60 * SEC, 0);
	struct profd_gpu_kernel b1[2], b2[1], b3[2];
	const struct profile_sample *sm, *sr;
	struct gpu_stats st;
	struct profile *p;
	unsigned int nm, nr;

	names(g, PID);
	/* durations 100..500: matmul 100+300+500, relu 200+400 */
	b1[0] = kern(20, ID_MATMUL, 1000, 100);
	b1[1] = kern(20, ID_RELU, 2000, 200);
	b2[0] = kern(20, ID_MATMUL, 3000, 300);
	b3[0] = kern(20, ID_RELU, 4000, 400);
	b3[1] = kern(20, ID_MATMUL, 5000, 500);
	for (int i = 0; i < 2; i++) {
		b1[i].graph_id = b3[i].graph_id = 3;
		b1[i].graph_node_id = 100 + i;
		b3[i].graph_node_id = 200 + i;
	}
	b2[0].graph_id = 3;
	b2[0].graph_node_id = 150;

	CHECK(send_kernels(g, PID, b1, 2, T0) == 0, "graph: batch 1 (before the launch)");
	launch(g, 20, T0 + SEC / 2);
	/* past the 2 s a joined plain launch is kept; a graph's stays longer
	 * (joined by kernels that came first or after) */
	gpu_tick(g, T0 + 5 * SEC);
	CHECK(send_kernels(g, PID, b2, 1, T0 + 5 * SEC) == 0,
	      "graph: batch 2, 4.5 s after the launch");
	gpu_tick(g, T0 + 10 * SEC);
	CHECK(send_kernels(g, PID, b3, 2, T0 + 10 * SEC) == 0,
	      "graph: batch 3, 10 s after the launch");
	st = stats(g);
	CHECK(st.kernels == 5 && st.kernels_no_launch == 0 && st.launches == 1,
	      "graph: 5 kernels joined one launch (kernels %" PRIu64 ", no_launch %"
	      PRIu64 ")", st.kernels, st.kernels_no_launch);
	p = kernel_profile(g);
	sm = find(p, MATMUL_D, NULL, &nm);
	sr = find(p, RELU_D, NULL, &nr);
	CHECK(p->nsamples == 2 && nm == 1 && nr == 1,
	      "graph: two samples (one per kernel name), got %u", p->nsamples);
	CHECK(sm && sm->values[0] == 3 && sm->values[1] == 900 &&
	      stack_is(p, sm, stack_a, STACK_A_NK, STACK_A_NU) &&
	      launch_labels(sm, "1", "7", "3"),
	      "graph: matmul {3, 900} on the launch stack, cuda_graph=3");
	CHECK(sr && sr->values[0] == 2 && sr->values[1] == 600 &&
	      stack_is(p, sr, stack_a, STACK_A_NK, STACK_A_NU) &&
	      launch_labels(sr, "1", "7", "3"),
	      "graph: relu {2, 600} on the launch stack, cuda_graph=3");
	CHECK(total_ns(p) == 1500, "graph: total time %" PRId64 " == 1500", total_ns(p));
	profile_free(p);
	gpu_tick(g, T0 + 200 * SEC);
	st = stats(g);
	CHECK(st.launches_unmatched == 0 && st.kernels_no_launch == 0,
	      "graph: nothing unmatched after every timeout");
	gpu_free(g);

	/* the contrast: a plain launch's late record (10 s on) no longer joins */
	g = gpu_with(60 * SEC, 0);
	names(g, PID);
	launch(g, 21, T0);
	send_kernel(g, PID, kern(21, ID_MATMUL, 1000, 100), T0);
	gpu_tick(g, T0 + 10 * SEC);
	send_kernel(g, PID, kern(21, ID_MATMUL, 9000, 100), T0 + 10 * SEC);
	st = stats(g);
	CHECK(st.kernels == 1, "plain launch: a record 10 s late waits (kernels %" PRIu64 ")",
	      st.kernels);
	gpu_tick(g, T0 + 70 * SEC);
	st = stats(g);
	CHECK(st.kernels == 2 && st.kernels_no_launch == 1 && st.launches_unmatched == 0,
	      "plain launch: the late record went to [unknown launch] at its timeout");
	gpu_free(g);
}

/* --- 4: aggregation ------------------------------------------------------- */

static void test_aggregation(void)
{
	struct gpu *g = gpu_with(60 * SEC, 0);
	struct profd_gpu_kernel v[PROFD_GPU_BATCH_MAX];
	const struct profile_sample *s;
	struct gpu_stats st;
	struct profile *p;
	unsigned int n, sent = 0, ok = 0;

	names(g, PID);
	launch(g, 30, T0);
	launch(g, 31, T0 + 1);
	while (sent < 1000) {
		unsigned int m = 1000 - sent < PROFD_GPU_BATCH_MAX ? 1000 - sent :
				 PROFD_GPU_BATCH_MAX;

		for (unsigned int i = 0; i < m; i++)	/* durations 1..1000 */
			v[i] = kern(30 + (sent + i) % 2, ID_MATMUL, 10000 * (sent + i),
				    sent + i + 1);
		ok += send_kernels(g, PID, v, m, T0 + 2) == 0;
		sent += m;
	}
	CHECK(ok == 16, "aggregation: 16 batches accepted");
	CHECK(g->nstacks == 1, "aggregation: both launches share one interned stack (%u)",
	      g->nstacks);
	p = kernel_profile(g);
	s = find(p, MATMUL_D, NULL, &n);
	CHECK(p->nsamples == 1 && s && s->values[0] == 1000 && s->values[1] == 500500 &&
	      stack_is(p, s, stack_a, STACK_A_NK, STACK_A_NU),
	      "aggregation: one sample {1000, 500500} (got %u samples, {%" PRId64 ", %"
	      PRId64 "})", p->nsamples, s ? s->values[0] : -1, s ? s->values[1] : -1);
	profile_free(p);
	gpu_free(g);

	/* 5000 kernels before their launches (table growth), two stacks */
	g = gpu_with(60 * SEC, 0);
	names(g, PID);
	for (unsigned int i = 0; i < 5000; i += 50) {
		for (unsigned int j = 0; j < 50; j++)
			v[j] = kern(1000 + i + j, ID_RELU, 0, 10);
		send_kernels(g, PID, v, 50, T0);
	}
	for (unsigned int i = 0; i < 5000; i++) {
		if (i % 2)
			launch(g, 1000 + i, T0 + 1);
		else
			launch_from(g, PID, 1000 + i, stack_b, 0, 2, T0 + 1);
	}
	st = stats(g);
	CHECK(st.kernels == 5000 && st.kernels_no_launch == 0,
	      "5000 kernels before their launches: all joined (%" PRIu64 ")", st.kernels);
	p = kernel_profile(g);
	s = find(p, RELU_D, NULL, &n);
	CHECK(p->nsamples == 2 && n == 2 && p->samples[0].values[0] == 2500 &&
	      p->samples[1].values[0] == 2500 && total_ns(p) == 50000,
	      "5000 kernels: two samples of 2500, total 50000 ns");
	profile_free(p);
	gpu_finish(g);
	st = stats(g);
	CHECK(st.launches_unmatched == 0 && st.kernels_no_launch == 0,
	      "5000 kernels: nothing unmatched at finish");
	gpu_free(g);
}

/* --- 5: the launch timeout and gpu_finish() --------------------------------- */

static void test_timeout(void)
{
	struct gpu *g = gpu_with(SEC, 0);
	const struct profile_sample *s;
	struct gpu_stats st;
	struct profile *p;
	unsigned int n;

	names(g, PID);
	launch(g, 41, T0);		/* sets the process's comm, never matched */
	send_kernel(g, PID, kern(40, ID_MATMUL, 1000, 777), T0);	/* never launched */
	gpu_tick(g, T0 + SEC - 1);
	st = stats(g);
	CHECK(st.kernels == 0 && st.kernels_no_launch == 0 && st.launches_unmatched == 0,
	      "timeout: 1 ns before it, both still wait");
	gpu_tick(g, T0 + SEC);
	st = stats(g);
	CHECK(st.kernels == 1 && st.kernels_no_launch == 1 && st.launches_unmatched == 1,
	      "timeout: at it, kernels_no_launch 1 (%" PRIu64 "), launches_unmatched 1 (%"
	      PRIu64 ")", st.kernels_no_launch, st.launches_unmatched);
	/* the launch of the expired kernel, late: nothing left to join */
	launch(g, 40, T0 + 2 * SEC);
	p = kernel_profile(g);
	s = find(p, MATMUL_D, "[unknown launch]", &n);
	CHECK(p->nsamples == 1 && n == 1 && s && s->values[0] == 1 && s->values[1] == 777,
	      "timeout: the kernel's time {1, 777} is kept under [unknown launch]");
	CHECK(s && s->nlocations == 2 && cuda_leaf(p, s, MATMUL_D, MATMUL) &&
	      placeholder_at(p, s, 1, "[unknown launch]"),
	      "timeout: stack is leaf + [unknown launch] only");
	CHECK(s && s->nlabels == 5 && label_num(s, "pid", PID) && !label(s, "tid") &&
	      !label(s, "thread_name") && label_str(s, "comm", COMM) &&
	      label_str(s, "cuda_device", "1") && label_str(s, "cuda_stream", "7") &&
	      label_str(s, "cuda_graph", "0"),
	      "timeout: labels pid, comm (the process's), cuda_*; no tid/thread_name");
	profile_free(p);
	gpu_finish(g);
	st = stats(g);
	CHECK(st.launches_unmatched == 2 && st.kernels_no_launch == 1,
	      "timeout: the late launch is unmatched at finish (%" PRIu64 ")",
	      st.launches_unmatched);
	gpu_free(g);

	/* gpu_finish: everything still waiting, at once */
	g = gpu_with(60 * SEC, 0);
	names(g, PID);
	for (uint32_t id = 50; id < 53; id++)
		send_kernel(g, PID, kern(id, ID_RELU, 0, 100), T0);
	launch(g, 60, T0);
	launch(g, 61, T0);
	launch(g, 70, T0);
	send_kernel(g, PID, kern(70, ID_MATMUL, 0, 1234), T0);
	st = stats(g);
	CHECK(st.kernels == 1 && st.kernels_no_launch == 0 && st.launches_unmatched == 0,
	      "finish: before it, 1 kernel joined, the rest waits");
	gpu_finish(g);
	st = stats(g);
	CHECK(st.kernels == 4 && st.kernels_no_launch == 3 && st.launches_unmatched == 2,
	      "finish: kernels 4, kernels_no_launch 3, launches_unmatched 2 (got %" PRIu64
	      ", %" PRIu64 ", %" PRIu64 ")", st.kernels, st.kernels_no_launch,
	      st.launches_unmatched);
	p = kernel_profile(g);
	s = find(p, RELU_D, "[unknown launch]", &n);
	CHECK(p->nsamples == 2 && n == 1 && s && s->values[0] == 3 && s->values[1] == 300,
	      "finish: relu {3, 300} under [unknown launch]");
	s = find(p, MATMUL_D, NULL, &n);
	CHECK(n == 1 && s && s->values[0] == 1 && stack_is(p, s, stack_a, STACK_A_NK, STACK_A_NU),
	      "finish: the joined kernel on its stack");
	profile_free(p);
	gpu_tick(g, T0 + 1000 * SEC);
	st = stats(g);
	CHECK(st.kernels == 4 && st.kernels_no_launch == 3 && st.launches_unmatched == 2,
	      "finish: a tick after it counts nothing twice");
	CHECK(g->nstacks == 0, "finish: every stack released (%u left)", g->nstacks);
	gpu_free(g);
}

/* --- 6: the bounds ---------------------------------------------------------- */

static void test_bound(void)
{
	struct gpu *g = gpu_with(SEC, 100);
	const struct profile_sample *s;
	struct gpu_stats st;
	struct profile *p;
	unsigned int n;

	names(g, PID);
	for (uint32_t id = 1; id <= 150; id++)
		launch(g, id, T0 + id);
	st = stats(g);
	CHECK(st.launches == 150 && st.correlation_evicted == 50,
	      "bound: 150 launches, max 100: correlation_evicted %" PRIu64 " == 50",
	      st.correlation_evicted);
	/* 1 and 50 were evicted (oldest first); 51 and 150 are kept */
	send_kernel(g, PID, kern(1, ID_MATMUL, 0, 10), T0 + 1000);
	send_kernel(g, PID, kern(50, ID_MATMUL, 0, 20), T0 + 1000);
	send_kernel(g, PID, kern(51, ID_MATMUL, 0, 40), T0 + 1000);
	send_kernel(g, PID, kern(150, ID_MATMUL, 0, 80), T0 + 1000);
	st = stats(g);
	CHECK(st.kernels == 2 && st.kernels_no_launch == 0,
	      "bound: kernels of ids 51 and 150 joined, of 1 and 50 wait");
	gpu_tick(g, T0 + 2 * SEC);
	st = stats(g);
	CHECK(st.kernels == 4 && st.kernels_no_launch == 2 && st.launches_unmatched == 98 &&
	      st.correlation_evicted == 50,
	      "bound: after the timeout no_launch 2, unmatched 98 (%" PRIu64 "), evicted 50",
	      st.launches_unmatched);
	p = kernel_profile(g);
	s = find(p, MATMUL_D, "[unknown launch]", &n);
	CHECK(n == 1 && s && s->values[0] == 2 && s->values[1] == 30,
	      "bound: evicted ids' kernels {2, 30} under [unknown launch]");
	n = 0;
	for (uint32_t i = 0; i < p->nsamples; i++)
		if (stack_is(p, &p->samples[i], stack_a, STACK_A_NK, STACK_A_NU)) {
			s = &p->samples[i];
			n++;
		}
	CHECK(p->nsamples == 2 && n == 1 && s->values[0] == 2 && s->values[1] == 120,
	      "bound: newest ids' kernels {2, 120} on the launch stack");
	profile_free(p);
	gpu_free(g);

	/* the pending bound: kernel 101 without a launch is counted at once */
	g = gpu_with(SEC, 100);
	names(g, PID);
	for (uint32_t id = 1; id <= 101; id++)
		send_kernel(g, PID, kern(id, ID_RELU, 0, 5), T0);
	st = stats(g);
	CHECK(st.kernels == 1 && st.kernels_no_launch == 1,
	      "pending bound: the 101st waiting kernel goes to [unknown launch] at once");
	gpu_finish(g);
	st = stats(g);
	CHECK(st.kernels == 101 && st.kernels_no_launch == 101,
	      "pending bound: the 100 others at finish");
	p = kernel_profile(g);
	s = find(p, RELU_D, "[unknown launch]", &n);
	CHECK(p->nsamples == 1 && s && s->values[0] == 101 && s->values[1] == 505,
	      "pending bound: one sample {101, 505}");
	profile_free(p);
	gpu_free(g);
}

/* --- 7: a launch without its stack ----------------------------------------- */

static void test_no_stack(void)
{
	struct gpu *g = gpu_with(SEC, 0);
	struct gpu_launch_info l = {
		.pid = PID, .tid = TID, .comm = COMM, .thread_name = THREAD,
		.no_stack = true, .correlation_id = 90,
	};
	struct profd_gpu_launch_rec lr[2] = {
		{ .correlation_id = 91, .tid = TID },
		{ .correlation_id = 92, .tid = TID },
	};
	const struct profile_sample *s;
	struct gpu_stats st;
	struct profile *p;
	unsigned int n;

	names(g, PID);
	gpu_launch(g, &l, T0);
	send_kernel(g, PID, kern(90, ID_MATMUL, 0, 64), T0);
	st = stats(g);
	CHECK(st.launches == 1 && st.launches_no_stack == 1 && st.kernels == 1,
	      "no stack: launches 1, launches_no_stack 1, kernels 1");
	p = kernel_profile(g);
	s = find(p, MATMUL_D, "[launch stack not captured]", &n);
	CHECK(p->nsamples == 1 && n == 1 && s && s->nlocations == 2 &&
	      placeholder_at(p, s, 1, "[launch stack not captured]") &&
	      s->values[0] == 1 && s->values[1] == 64,
	      "no stack: leaf + [launch stack not captured], {1, 64}");
	CHECK(s && launch_labels(s, "1", "7", "0"), "no stack: the launch's labels");
	profile_free(p);

	/* the same through a PROFD_EVENT_GPU_LAUNCHES batch (no thread name there) */
	CHECK(send_batch(g, PROFD_EVENT_GPU_LAUNCHES, PID, lr, 2, sizeof(lr[0]), T0) == 0,
	      "no stack: a launches batch accepted");
	send_kernel(g, PID, kern(91, ID_MATMUL, 0, 100), T0);
	send_kernel(g, PID, kern(92, ID_MATMUL, 0, 200), T0);
	st = stats(g);
	CHECK(st.launches == 3 && st.launches_no_stack == 3 && st.kernels == 3 &&
	      st.kernels_no_launch == 0,
	      "no stack: launches 3, launches_no_stack 3, kernels 3 (%" PRIu64 ", %" PRIu64
	      ", %" PRIu64 ")", st.launches, st.launches_no_stack, st.kernels);
	p = kernel_profile(g);
	s = find(p, MATMUL_D, "[launch stack not captured]", &n);
	CHECK(p->nsamples == 1 && n == 1 && s && s->nlocations == 2 &&
	      s->values[0] == 2 && s->values[1] == 300 && label_num(s, "pid", PID) &&
	      label_num(s, "tid", TID) && label_str(s, "comm", COMM),
	      "no stack: batched launches' kernels {2, 300} on [launch stack not captured], "
	      "pid, tid, comm of the process");
	profile_free(p);
	gpu_free(g);
}

/* --- 8: names missed -------------------------------------------------------- */

/* A name the "library" interned before profd attached: read from memory. */
static char missed_name[512] = RELU;

static void test_names_missed(void)
{
	struct gpu *g = gpu_with(SEC, 0);
	pid_t self = getpid();
	const struct profile_sample *s;
	struct profd_gpu_kernel k;
	struct gpu_stats st;
	struct profile *p;
	unsigned int n;

	launch(g, 80, T0);
	send_kernel(g, PID, kern(80, 99, 0, 10), T0);	/* id 99 never announced */
	send_kernel(g, PID, kern(80, 0, 0, 20), T0);	/* id 0: library's table full */
	st = stats(g);
	CHECK(st.kernels == 2 && st.names_unknown == 2,
	      "names missed: names_unknown %" PRIu64 " == 2", st.names_unknown);
	p = kernel_profile(g);
	s = find(p, "[unknown kernel]", NULL, &n);
	CHECK(p->nsamples == 1 && n == 1 && s && s->values[0] == 2 && s->values[1] == 30 &&
	      cuda_leaf(p, s, "[unknown kernel]", "[unknown kernel]") &&
	      stack_is(p, s, stack_a, STACK_A_NK, STACK_A_NU),
	      "names missed: leaf [unknown kernel], {2, 30}, on the launch stack");
	profile_free(p);

	/* never announced, but name_ptr points at it in the (live) process */
	launch_from(g, self, 81, stack_b, 0, 2, T0);
	k = kern(81, 77, 0, 5);
	k.name_ptr = (uintptr_t)missed_name;
	send_kernel(g, self, k, T0);
	k.name_ptr = 0;		/* once read, the id is known */
	send_kernel(g, self, k, T0);
	st = stats(g);
	CHECK(st.kernels == 4 && st.names_unknown == 2,
	      "missed name read at name_ptr: names_unknown still 2 (%" PRIu64 ")",
	      st.names_unknown);
	p = kernel_profile(g);
	s = find(p, RELU_D, NULL, &n);
	CHECK(p->nsamples == 1 && n == 1 && s && s->values[0] == 2 && s->values[1] == 10 &&
	      cuda_leaf(p, s, RELU_D, RELU),
	      "missed name read at name_ptr: leaf %s, {2, 10}", RELU_D);
	profile_free(p);
	gpu_free(g);
}

/* --- 9: malformed records, random bytes ---------------------------------- */

static void test_malformed(void)
{
	struct gpu *g = gpu_with(SEC, 0);
	_Alignas(8) unsigned char buf[sizeof(struct profd_gpu_batch) +
				     (PROFD_GPU_BATCH_MAX + 1) * sizeof(struct profd_gpu_kernel)];
	struct profd_gpu_batch *b = (struct profd_gpu_batch *)buf;
	struct profd_gpu_name *nm = (struct profd_gpu_name *)buf;
	struct profd_gpu_kernel *kv = (struct profd_gpu_kernel *)(b + 1);
	struct profd_gpu_device dev = {
		.device_id = 0, .sm_count = 132, .clock_khz = 1980000, .cc_major = 9,
		.total_memory = 80ULL << 30, .name = "NVIDIA H100",
	};
	struct profd_gpu_error errs[2] = {
		{ .code = PROFD_GPU_ERR_RECORDS_DROPPED, .count = 17 },
		{ .code = PROFD_GPU_ERR_CUPTI_INIT, .result = 15, .message = "test: not an error" },
	};
	char comments[4][96];
	uint64_t bad = 0;
	int ret;

	names(g, PID);
	launch(g, 5, T0);
	memset(buf, 0, sizeof(buf));
	b->type = PROFD_EVENT_GPU_KERNELS;
	b->pid = PID;
	for (int i = 0; i <= PROFD_GPU_BATCH_MAX; i++)
		kv[i] = kern(5, ID_MATMUL, 0, 1);

#define BAD(size, what)								\
	do {									\
		ret = gpu_record(g, buf, (size), T0);				\
		bad++;								\
		CHECK(ret == -EINVAL && stats(g).malformed == bad,		\
		      "malformed: %s -> -EINVAL, counted (%d)", what, ret);	\
	} while (0)

	BAD(0, "empty record");
	BAD(3, "3 bytes");
	BAD(sizeof(*b) - 1, "batch header cut");
	b->n = 2;
	BAD(sizeof(*b) + sizeof(*kv) + sizeof(*kv) - 1, "2 kernels, one byte short");
	BAD(sizeof(*b) + sizeof(*kv), "n = 2, one kernel");
	b->n = PROFD_GPU_BATCH_MAX + 1;
	BAD(sizeof(*b) + (PROFD_GPU_BATCH_MAX + 1) * sizeof(*kv), "n > PROFD_GPU_BATCH_MAX");
	b->n = UINT32_MAX;
	BAD(sizeof(buf), "n = UINT32_MAX");
	b->n = 1;
	b->type = PROFD_EVENT_GPU_LAUNCH;
	BAD(sizeof(struct profd_gpu_launch), "type 16 (not gpu_record's)");
	b->type = PROFD_EVENT_SAMPLE;
	BAD(sizeof(*b) + sizeof(*kv), "type 1 (a CPU sample)");
	b->type = 99;
	BAD(sizeof(*b) + sizeof(*kv), "type 99");
	b->type = 0x7fffffff;
	BAD(sizeof(*b) + sizeof(*kv), "type 0x7fffffff");
	b->type = 0;
	BAD(sizeof(*b) + sizeof(*kv), "type 0");
	CHECK(stats(g).kernels == 0, "malformed: no kernel of them counted");

	memset(buf, 'x', sizeof(buf));
	*nm = (struct profd_gpu_name){ .type = PROFD_EVENT_GPU_NAME, .pid = PID,
				       .name_id = 9, .len = 8 };
	BAD(sizeof(*nm) - 1, "name header cut");
	BAD(sizeof(*nm) + 8, "name without NUL");
	nm->len = 0;
	BAD(sizeof(*nm) + 8, "name of length 0");
	nm->len = PROFD_GPU_NAME_MAX + 1;
	buf[sizeof(*nm) + PROFD_GPU_NAME_MAX] = '\0';
	BAD(sizeof(*nm) + PROFD_GPU_NAME_MAX + 1, "name longer than PROFD_GPU_NAME_MAX");
	nm->len = 8;
	buf[sizeof(*nm) + 7] = '\0';
	BAD(sizeof(*nm) + 7, "name record shorter than its len");
	ret = gpu_record(g, buf, sizeof(*nm) + 8, T0);
	CHECK(ret == 0 && stats(g).malformed == bad, "name of 7 x's and NUL accepted");
	nm->len = PROFD_GPU_NAME_MAX;
	buf[sizeof(*nm) + PROFD_GPU_NAME_MAX - 1] = '\0';
	ret = gpu_record(g, buf, sizeof(*nm) + PROFD_GPU_NAME_MAX, T0);
	CHECK(ret == 0 && stats(g).malformed == bad, "name of PROFD_GPU_NAME_MAX (cut) accepted");
#undef BAD

	/* well-formed records of the other types */
	CHECK(send_batch(g, PROFD_EVENT_GPU_DEVICE, PID, &dev, 1, sizeof(dev), T0) == 0 &&
	      gpu_device_comments(g, comments, 4) == 1 &&
	      streq(comments[0], "cuda_device 0: NVIDIA H100, 132 SMs, 1980 MHz, cc 9.0, "
		    "81920 MiB"),
	      "device record -> comment \"%s\"", comments[0]);
	dev.device_id = GPU_MAX_DEVICES;
	CHECK(send_batch(g, PROFD_EVENT_GPU_DEVICE, PID, &dev, 1, sizeof(dev), T0) == 0 &&
	      gpu_device_comments(g, comments, 4) == 1,
	      "device id out of range ignored");
	CHECK(send_batch(g, PROFD_EVENT_GPU_ERROR, PID, errs, 2, sizeof(errs[0]), T0) == 0 &&
	      stats(g).records_dropped == 17 && stats(g).library_errors == 1,
	      "error records: records_dropped 17, library_errors 1");
	CHECK(send_batch(g, PROFD_EVENT_GPU_KERNELS, PID, kv, 0, sizeof(*kv), T0) == 0 &&
	      stats(g).kernels == 0, "empty kernel batch accepted");
	CHECK(stats(g).malformed == bad, "malformed %" PRIu64 " == %" PRIu64,
	      stats(g).malformed, bad);
	gpu_free(g);
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}


/*
 * Random records, mostly of the GPU types with plausible sizes, counts,
 * pids, correlation and name ids, so that they get past the checks and
 * join launches; random launches and ticks in between, intervals swapped
 * and built now and then.
 */
static void test_fuzz(unsigned int records)
{
	struct gpu *g = gpu_with(SEC / 10, 1000);
	_Alignas(8) unsigned char buf[sizeof(struct profd_gpu_batch) +
				     (PROFD_GPU_BATCH_MAX + 2) * sizeof(struct profd_gpu_error)];
	const uint32_t pids[] = { (uint32_t)getpid(), 0x7ffffff0, 0 };	/* live, none, none */
	const uint64_t ips[] = { 0xffffffff81000000ULL, 0x401000, 0x402000, 0x403000,
				 0x404000, 0x405000, 0x406000, 0x407000 };
	uint64_t now = T0, bad = 0, good = 0, other = 0, built = 0;
	struct gpu_interval *iv;
	struct gpu_stats st;

	for (unsigned int i = 0; i < records; i++) {
		size_t size = rnd() % 2 ? rnd() % 640 : rnd() % (sizeof(buf) + 1);
		uint64_t r = rnd();
		uint32_t type;
		int ret;

		for (size_t j = 0; j < size; j += 8) {
			uint64_t x = rnd();

			memcpy(buf + j, &x, size - j < 8 ? size - j : 8);
		}
		/* the GPU types and their neighbours */
		type = PROFD_EVENT_GPU_LAUNCH + r % (PROFD_EVENT_GPU_LAUNCHES - PROFD_EVENT_GPU_LAUNCH + 2);
		if (size >= 4 && r >> 8 & 7)
			memcpy(buf, &type, 4);
		else
			type = size >= 4 ? *(uint32_t *)buf : 0;
		if (size >= 8 && r >> 11 & 3)
			memcpy(buf + 4, &pids[(r >> 13) % 3], 4);
		if (type == PROFD_EVENT_GPU_NAME && size > sizeof(struct profd_gpu_name) &&
		    r >> 16 & 1) {
			uint32_t len = size - sizeof(struct profd_gpu_name);

			memcpy(buf + 8, &(uint32_t){ (r >> 17) % 16 }, 4);
			memcpy(buf + 12, &len, 4);
			if (r >> 21 & 3)
				buf[size - 1] = '\0';
		}
		if (profd_gpu_batch_elem_size(type) &&
		    size >= sizeof(struct profd_gpu_batch)) {
			struct profd_gpu_batch *b = (struct profd_gpu_batch *)buf;
			uint32_t n = (size - sizeof(*b)) / profd_gpu_batch_elem_size(type);

			if (r >> 16 & 3)
				b->n = r >> 18 & 1 ? n : n % (PROFD_GPU_BATCH_MAX + 1);
			n = b->n < n ? b->n : n;
			for (uint32_t j = 0; j < n && r >> 20 & 3; j++) {
				void *e = buf + sizeof(*b) +
					  (size_t)j * profd_gpu_batch_elem_size(type);
				struct profd_gpu_kernel *k = e;
				struct profd_gpu_pc_sample *pc = e;
				struct profd_gpu_cubin *cb = e;
				struct profd_gpu_stall_reason *sr = e;
				struct profd_gpu_error *er = e;
				struct profd_gpu_launch_rec *lr = e;

				switch (type) {
				case PROFD_EVENT_GPU_KERNELS:
					k->correlation_id = rnd() % 64;
					k->name_id = rnd() % 16;
					if (rnd() % 16)
						k->name_ptr = 0;
					k->graph_id = rnd() % 2 ? 0 : k->graph_id;
					k->end_ns = k->start_ns + rnd() % 1000;
					break;
				case PROFD_EVENT_GPU_PC_SAMPLES:
					pc->cubin_crc = rnd() % 4;
					pc->function_name_id = rnd() % 16;
					pc->stall_reason = rnd() % 8;
					pc->device_id = rnd() % 2;
					break;
				case PROFD_EVENT_GPU_CUBIN:
					cb->crc = rnd() % 4;
					if (rnd() % 2)
						cb->size = rnd() % 4096;
					break;
				case PROFD_EVENT_GPU_STALL_REASONS:
					sr->index = rnd() % 8;
					sr->device_id = rnd() % 2;
					break;
				case PROFD_EVENT_GPU_LAUNCHES:
					lr->correlation_id = rnd() % 64;
					break;
				case PROFD_EVENT_GPU_ERROR:
					/* printable, still unterminated: stderr stays readable */
					for (size_t c = 0; c < sizeof(er->message); c++)
						er->message[c] = 'a' + (unsigned char)er->message[c] % 26;
					break;
				}
			}
		}
		ret = gpu_record(g, buf, size, now);
		if (ret == 0)
			good++;
		else if (ret == -EINVAL)
			bad++;
		else
			other++;
		if (i % 16 == 0) {
			struct gpu_launch_info l = {
				.pid = pids[rnd() % 3], .tid = rnd() % 8, .comm = "fuzz",
				.thread_name = rnd() % 2 ? "t" : "", .no_stack = rnd() % 8 == 0,
				.correlation_id = rnd() % 64, .ips = ips,
				.nkernel = rnd() % 2, .flags = rnd() % 2,
			};

			l.nuser = rnd() % (8 - l.nkernel + 1);
			if (l.no_stack) {
				l.ips = NULL;
				l.nkernel = l.nuser = 0;
			}
			gpu_launch(g, &l, now);
		}
		if (i % 100 == 99) {
			now += SEC / 50;
			gpu_tick(g, now);
		}
		if (i % 500 == 499 && rnd() % 2)
			gpu_process_exit(g, pids[rnd() % 3], now);
		if (i % 10000 == 9999 || i + 1 == records) {
			if (i + 1 == records)
				gpu_finish(g);
			iv = gpu_swap(g);
			if (iv) {
				struct profile *kp = gpu_build_kernel_profile(iv, &bopts, START_NS);
				struct profile *pp = gpu_build_pc_profile(iv, &bopts, START_NS);

				built += kp && pp;
				profile_free(kp);
				profile_free(pp);
			}
			gpu_interval_free(iv);
		}
	}
	st = stats(g);
	CHECK(other == 0, "fuzz: gpu_record returned only 0 or -EINVAL (%" PRIu64 " other)",
	      other);
	CHECK(st.malformed == bad && good + bad == records,
	      "fuzz: %u records, %" PRIu64 " accepted, %" PRIu64 " malformed == stats %" PRIu64,
	      records, good, bad, st.malformed);
	CHECK(built == (records + 9999) / 10000, "fuzz: every interval built (%" PRIu64 ")",
	      built);
	printf("      fuzz: kernels %" PRIu64 ", no_launch %" PRIu64 ", unmatched %" PRIu64
	       ", evicted %" PRIu64 ", pc_samples %" PRIu64 ", names_unknown %" PRIu64
	       ", cubins %" PRIu64 "/%" PRIu64 " errors\n", st.kernels, st.kernels_no_launch,
	       st.launches_unmatched, st.correlation_evicted, st.pc_samples,
	       st.names_unknown, st.cubins, st.cubin_errors);
	CHECK(st.kernels > 0 && st.kernels_no_launch > 0 && st.pc_samples > 0,
	      "fuzz: the random records reached the join and the PC tables");
	gpu_free(g);
}

/* --- 10: interval swap ---------------------------------------------------- */

static void test_swap(void)
{
	struct gpu *g = gpu_with(SEC, 0);
	struct gpu_interval *iv1, *iv2;
	const struct profile_sample *s;
	struct profile *p;
	unsigned int n;

	names(g, PID);
	launch(g, 100, T0);
	send_kernel(g, PID, kern(100, ID_MATMUL, 0, 11), T0);
	iv1 = gpu_swap(g);
	send_kernel(g, PID, kern(100, ID_MATMUL, 100, 22), T0 + 1);	/* same launch */
	send_kernel(g, PID, kern(100, ID_MATMUL, 200, 33), T0 + 2);
	iv2 = gpu_swap(g);
	CHECK(iv1 && iv2 && gpu_interval_kernels(iv1) == 1 && gpu_interval_kernels(iv2) == 2,
	      "swap: interval 1 holds 1 kernel, interval 2 holds 2");
	CHECK(g->nstacks == 1, "swap: one stack, held by both intervals and the launch");
	p = kernel_profile_of(iv1);
	s = find(p, MATMUL_D, NULL, &n);
	CHECK(p->nsamples == 1 && s && s->values[0] == 1 && s->values[1] == 11,
	      "swap: interval 1 profile {1, 11}");
	profile_free(p);
	gpu_interval_free(iv1);
	gpu_tick(g, T0 + 10 * SEC);	/* the launch expired, interval 2 holds the stack */
	CHECK(g->nstacks == 1, "swap: interval 2 still holds the stack after a sweep");
	p = kernel_profile_of(iv2);	/* (valgrind: no use after free) */
	s = find(p, MATMUL_D, NULL, &n);
	CHECK(p->nsamples == 1 && s && s->values[0] == 2 && s->values[1] == 55 &&
	      stack_is(p, s, stack_a, STACK_A_NK, STACK_A_NU),
	      "swap: interval 2 profile {2, 55} on the launch stack");
	profile_free(p);
	gpu_interval_free(iv2);
	gpu_tick(g, T0 + 10 * SEC + SEC / 2);
	CHECK(g->nstacks == 1, "swap: freed stacks wait for the next sweep (1 s apart)");
	gpu_tick(g, T0 + 11 * SEC);
	CHECK(g->nstacks == 0, "swap: the stack is released once no interval holds it");
	p = kernel_profile(g);
	CHECK(p->nsamples == 0, "swap: the current interval is empty");
	profile_free(p);
	gpu_free(g);
}

/* --- 11: PC samples ---------------------------------------------------------- */

static struct profd_gpu_stall_reason stall(uint32_t index, const char *name)
{
	struct profd_gpu_stall_reason r = { .index = index, .device_id = 0 };

	snprintf(r.name, sizeof(r.name), "%s", name);
	return r;
}

static struct profd_gpu_pc_sample pcs(uint64_t crc, uint32_t fn, uint64_t off,
				      uint32_t samples, uint32_t stall_reason)
{
	return (struct profd_gpu_pc_sample){
		.cubin_crc = crc, .pc_offset = off, .samples = samples,
		.stall_reason = stall_reason, .function_name_id = fn,
	};
}

/* The sample is on cubin @crc's mapping: "cubin:<crc>", build id <crc>. */
static bool on_cubin(const struct profile *p, const struct profile_sample *s, uint64_t crc)
{
	const struct profile_location *l = profile_location(p, s->location_ids[0]);
	const struct profile_mapping *m = l ? profile_mapping(p, l->mapping_id) : NULL;
	char name[40], bid[20];

	snprintf(name, sizeof(name), "cubin:%016" PRIx64, crc);
	snprintf(bid, sizeof(bid), "%016" PRIx64, crc);
	return m && streq(m->filename, name) && streq(m->build_id, bid);
}

/* The PC sample at (@crc, @fn, @address) with label stall_reason @stall_reason. */
static const struct profile_sample *find_pc(const struct profile *p, uint64_t crc,
					    const char *fn, uint64_t address,
					    const char *stall_reason)
{
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const struct profile_location *l = profile_location(p, s->location_ids[0]);

		if (s->nlocations == 1 && l && l->address == address && on_cubin(p, s, crc) &&
		    streq(fn_name(p, s->location_ids[0]), fn) &&
		    label_str(s, "stall_reason", stall_reason))
			return s;
	}
	return NULL;
}

/* Read @path whole; NULL if it is not there. */
static char *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (data = malloc(len)) && fread(data, 1, len, f) != (size_t)len) {
		free(data);
		data = NULL;
	}
	*size = data ? (size_t)len : 0;
	fclose(f);
	return data;
}

/* build/tests/gpu/apps/fake.cubin, next to this program's build directory. */
static char *read_fake_cubin(size_t *size)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';	/* build/tests/unit */
			snprintf(path, sizeof(path), "%s/../gpu/apps/fake.cubin", exe);
			char *data = read_file(path, size);

			if (data)
				return data;
		}
	}
	return read_file("build/tests/gpu/apps/fake.cubin", size);
}

/* The file offset of FUNC @name (section offset + value, as the ELF spec says). */
static bool func_file_offset(char *image, size_t size, const char *name, uint64_t *off,
			     uint64_t *fsize)
{
	Elf *e = elf_memory(image, size);
	Elf_Scn *scn = NULL;
	bool found = false;

	if (!e)
		return false;
	while (!found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			GElf_Shdr tsh;
			const char *sn;

			if (!gelf_getsym(d, i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			sn = elf_strptr(e, sh.sh_link, s.st_name);
			if (!streq(sn, name) || !gelf_getshdr(elf_getscn(e, s.st_shndx), &tsh))
				continue;
			*off = tsh.sh_offset + s.st_value - tsh.sh_addr;
			*fsize = s.st_size;
			found = true;
			break;
		}
	}
	elf_end(e);
	return found;
}

static void test_pc_samples(void)
{
	struct gpu *g = gpu_with(SEC, 0);
	struct profd_gpu_stall_reason sr[2] = {
		stall(4, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
		stall(7, "smsp__pcsamp_warps_issue_stalled_barrier"),
	};
	struct profd_gpu_pc_sample v[4] = {
		pcs(0xabc, ID_MATMUL, 0x30, 10, 4),
		pcs(0xabc, ID_MATMUL, 0x30, 5, 7),
		pcs(0xabc, ID_MATMUL, 0x30, 1, 9),	/* no such stall reason */
		pcs(0xabc, 55, 0x10, 2, 4),		/* function name never announced */
	};
	const struct profile_sample *s;
	struct gpu_stats st;
	struct profile *p;

	names(g, PID);
	CHECK(send_batch(g, PROFD_EVENT_GPU_STALL_REASONS, PID, sr, 2, sizeof(sr[0]), T0) == 0,
	      "pc: stall reasons batch accepted");
	CHECK(send_batch(g, PROFD_EVENT_GPU_PC_SAMPLES, PID, v, 4, sizeof(v[0]), T0) == 0 &&
	      send_batch(g, PROFD_EVENT_GPU_PC_SAMPLES, PID, v, 1, sizeof(v[0]), T0) == 0,
	      "pc: PC sample batches accepted");
	st = stats(g);
	CHECK(st.pc_samples == 28 && st.pc_unresolved == 26 && st.names_unknown == 2 &&
	      st.cubins == 0 && st.cubin_errors == 0,
	      "pc: pc_samples 28, pc_unresolved 26 (%" PRIu64 "), names_unknown 2 (%" PRIu64 ")",
	      st.pc_unresolved, st.names_unknown);
	p = pc_profile(g);
	CHECK(p->nsample_types == 1 && streq(p->sample_types[0].type, "pc_samples") &&
	      streq(p->sample_types[0].unit, "count") && p->nsamples == 4,
	      "pc: sample type pc_samples/count, 4 samples (%u)", p->nsamples);
	s = find_pc(p, 0xabc, MATMUL_D, 0x30, "long_scoreboard");
	CHECK(s && s->values[0] == 20 && on_cubin(p, s, 0xabc) && s->nlabels == 4 &&
	      label_num(s, "pid", PID) && label_str(s, "comm", "") &&
	      label_str(s, "cuda_device", "0") &&
	      streq(fn_of(p, s->location_ids[0])->system_name, MATMUL),
	      "pc: cubin never announced: %s at address 0x30 (pc_offset), "
	      "stall_reason long_scoreboard, 20 samples, mapping cubin:...abc", MATMUL_D);
	s = find_pc(p, 0xabc, MATMUL_D, 0x30, "barrier");
	CHECK(s && s->values[0] == 5, "pc: stall_reason barrier, 5 samples");
	s = find_pc(p, 0xabc, MATMUL_D, 0x30, "unknown");
	CHECK(s && s->values[0] == 1, "pc: unknown stall reason index -> \"unknown\"");
	s = find_pc(p, 0xabc, "[unknown function]", 0x10, "long_scoreboard");
	CHECK(s && s->values[0] == 2, "pc: unknown function name -> [unknown function]");
	profile_free(p);
	gpu_free(g);
}

static void test_pc_cubin(void)
{
	struct gpu *g;
	pid_t self = getpid();
	size_t size = 0;
	char *image = read_fake_cubin(&size);
	static char not_elf[64] = "this is not an ELF file";
	struct profd_gpu_cubin cubins[3] = {
		{ .crc = 0xc0b1, .size = size, .module_id = 1 },
		{ .crc = 0xbad, .image_ptr = (uintptr_t)not_elf, .size = sizeof(not_elf),
		  .module_id = 2 },
		{ .crc = 0x0dd, .flags = PROFD_GPU_CUBIN_NOT_KEPT, .module_id = 3 },
	};
	struct profd_gpu_stall_reason sr = stall(4,
		"smsp__pcsamp_warps_issue_stalled_long_scoreboard");
	struct profd_gpu_pc_sample v[6] = {
		pcs(0xc0b1, ID_MATMUL, 0x40, 3, 4),
		pcs(0xc0b1, ID_MATMUL, 0x40, 2, 4),	/* same location, added */
		pcs(0xc0b1, ID_MATMUL, 0x200, 1, 4),	/* past the symbol's size */
		pcs(0xc0b1, 6, 0x10, 4, 4),		/* not in the cubin */
		pcs(0xbad, ID_MATMUL, 0x8, 7, 4),	/* unparsable cubin */
		pcs(0x0dd, ID_MATMUL, 0x8, 8, 4),	/* cubin not kept */
	};
	const struct profile_sample *s;
	uint64_t off = 0, fsize = 0;
	struct gpu_stats st;
	struct profile *p;

	if (!image || !func_file_offset(image, size, MATMUL, &off, &fsize) || fsize != 0x200) {
		printf("skip: build/tests/gpu/apps/fake.cubin not there (make all builds it)\n");
		free(image);
		return;
	}
	g = gpu_with(SEC, 0);
	cubins[0].image_ptr = (uintptr_t)image;
	names(g, self);
	CHECK(send_name(g, self, 6, "_Z3foov") == 0 &&
	      send_batch(g, PROFD_EVENT_GPU_CUBIN, self, cubins, 3, sizeof(cubins[0]), T0) == 0 &&
	      send_batch(g, PROFD_EVENT_GPU_STALL_REASONS, self, &sr, 1, sizeof(sr), T0) == 0 &&
	      send_batch(g, PROFD_EVENT_GPU_PC_SAMPLES, self, v, 6, sizeof(v[0]), T0) == 0,
	      "cubin: cubin, stall reason and PC sample records of pid %d accepted", self);
	st = stats(g);
	CHECK(st.cubins == 1 && st.cubin_errors == 1 && st.pc_samples == 25 &&
	      st.pc_unresolved == 20 && st.names_unknown == 0,
	      "cubin: cubins 1 (%" PRIu64 "), cubin_errors 1 (%" PRIu64 "), pc_samples 25, "
	      "pc_unresolved 20 (%" PRIu64 ")", st.cubins, st.cubin_errors, st.pc_unresolved);
	p = pc_profile(g);
	CHECK(p->nsamples == 5, "cubin: 5 samples (%u)", p->nsamples);
	s = find_pc(p, 0xc0b1, MATMUL_D, off + 0x40, "long_scoreboard");
	CHECK(s && s->values[0] == 5 && on_cubin(p, s, 0xc0b1) && label_num(s, "pid", self),
	      "cubin: resolved: address = symbol file offset 0x%" PRIx64 " + 0x40, 5 samples",
	      off);
	s = find_pc(p, 0xc0b1, MATMUL_D, 0x200, "long_scoreboard");
	CHECK(s && s->values[0] == 1, "cubin: pc_offset past the symbol: unresolved at 0x200");
	s = find_pc(p, 0xc0b1, "foo()", 0x10, "long_scoreboard");
	CHECK(s && s->values[0] == 4, "cubin: function not in the cubin: unresolved at 0x10");
	s = find_pc(p, 0xbad, MATMUL_D, 0x8, "long_scoreboard");
	CHECK(s && s->values[0] == 7, "cubin: unparsable cubin: unresolved, on its own mapping");
	s = find_pc(p, 0x0dd, MATMUL_D, 0x8, "long_scoreboard");
	CHECK(s && s->values[0] == 8, "cubin: cubin not kept: unresolved, no read tried");
	profile_free(p);
	/* parsed once: later samples need no read (the image may be gone) */
	memset(image, 0, size);
	send_batch(g, PROFD_EVENT_GPU_PC_SAMPLES, self, v, 1, sizeof(v[0]), T0);
	st = stats(g);
	CHECK(st.cubins == 1 && st.pc_unresolved == 20,
	      "cubin: parsed once, resolved from the table afterwards");
	p = pc_profile(g);
	s = find_pc(p, 0xc0b1, MATMUL_D, off + 0x40, "long_scoreboard");
	CHECK(p->nsamples == 1 && s && s->values[0] == 3, "cubin: next interval {3} resolved");
	profile_free(p);
	gpu_free(g);
	free(image);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--fuzz")) {
		test_fuzz(strtoul(argv[2], NULL, 0));
	} else {
		test_launch_then_kernel();
		test_kernel_then_launch();
		test_graph();
		test_aggregation();
		test_timeout();
		test_bound();
		test_no_stack();
		test_names_missed();
		test_malformed();
		test_swap();
		test_pc_samples();
		test_pc_cubin();
		test_fuzz(100000);
	}
	printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
	return failures ? 1 : 0;
}
