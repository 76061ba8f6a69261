// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gpu_app.c - $(BUILD)/tests/gpu/apps/gpu_app, the CUDA test program (tests only).
 *
 * Owns: known CPU call chains that launch "kernels" through the mock
 * libcuda/libcudart (LD_LIBRARY_PATH=$(BUILD)/tests/gpu/mock; no rpath).
 * A kernel's duration in ns is its first argument. Modes:
 *
 *   gpu_app chains [N=50]  in the main thread (name unchanged, "gpu_app"):
 *       main -> train_loop -> train_step -> forward -> launch_matmul ->
 *         cuLaunchKernel(matmul, 2 ms, stream A1)
 *       forward -> launch_softmax -> cudaLaunchKernel(softmax, 0.5 ms, A2)
 *       train_step -> backward -> launch_relu -> cuLaunchKernel(relu, 1 ms, A1)
 *       train_step -> cuStreamSynchronize(A1)
 *     and in a second thread named "evaluator":
 *       eval_thread -> eval_loop -> eval_step -> forward -> (matmul on B1,
 *       softmax via cudaLaunchKernel on B2); eval_step -> cuStreamSynchronize(B1).
 *     N iterations each; A1, A2, B1, B2 are created streams (CUPTI ids 13+).
 *   gpu_app graph [N=20]   main -> run_graphs -> build_graph (matmul 1 ms,
 *       relu 0.5 ms, layernorm 0.25 ms) ; run_graphs -> launch_graph ->
 *       cuGraphLaunch, N times; then launch_graph_rt -> cudaGraphLaunch once.
 *   gpu_app flood [SECONDS=1]  main -> flood_loop -> launch_tiny ->
 *       cuLaunchKernel(tiny, 1 us) as fast as possible.
 *   gpu_app pc [N=5]       chains' main-thread chain only (no evaluator).
 *   gpu_app noop           main -> noop_loop -> launch_tiny, 1000 launches.
 *   gpu_app fork [N=100]   N launches, a forked child that exit()s, N more.
 *   gpu_app graphflood [SECONDS=1] [--nodes N=1000] [--rate K]  one graph of
 *       N tiny kernels launched over and over, at K kernels/s if given
 *       (kernel-record throughput bench).
 *   gpu_app sync [N=10]    waits on the GPU in known chains, N times each:
 *       main -> sync_loop -> stream_step -> sync_launch(matmul, 20 ms, stream S);
 *         stream_step -> stream_wait -> cudaStreamSynchronize(S)
 *       sync_loop -> ctx_step -> sync_launch(relu, 20 ms, S);
 *         ctx_step -> ctx_wait -> cuCtxSynchronize()
 *     and prints "sync_stream NS" and "sync_ctx NS": the time spent in each
 *     synchronize call (CLOCK_MONOTONIC). With MOCK_CUDA_SYNC_SLEEP=1 the
 *     mock blocks there in the kernel (ppoll) until the kernel's end.
 *
 * Options (after the mode): --cubin PATH (default: fake.cubin next to the
 * executable), --start-delay-ms MS (sleep after setup, before launching),
 * --exit-delay-ms MS (sleep before tear-down), --iter-sleep-us US (sleep
 * per iteration). Every mode ends with cuCtxSynchronize + cuCtxDestroy and
 * prints one summary line "gpu_app MODE: key=value ..." on stdout.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define NOINLINE __attribute__((noinline))

#define MS 1000000ull
#define US 1000ull

static struct {
	CUcontext ctx;
	CUmodule mod;
	CUfunction matmul, relu, softmax, layernorm, tiny;
	long iter_sleep_us;
	int nodes;		/* graphflood: kernels per graph */
	double rate;		/* graphflood: kernels per second, 0 = flat out */
} g;

static long n_matmul, n_relu, n_softmax, n_layernorm, n_tiny, n_graphs;

static void die(const char *what, int err)
{
	const char *s = NULL;

	cuGetErrorString((CUresult)err, &s);
	fprintf(stderr, "gpu_app: %s failed: %d (%s)\n", what, err, s ? s : "?");
	exit(1);
}

#define CHECK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) die(#call, r_); } while (0)
#define RTCHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
	fprintf(stderr, "gpu_app: %s failed: %d (%s)\n", #call, e_, cudaGetErrorString(e_)); \
	exit(1); } } while (0)

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (us > 0 && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	void *buf;

	if (!f) {
		fprintf(stderr, "gpu_app: cannot open cubin %s: %s\n", path, strerror(errno));
		exit(1);
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) ||
	    !(buf = malloc((size_t)n)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "gpu_app: cannot read cubin %s\n", path);
		exit(1);
	}
	fclose(f);
	return buf;
}

static void default_cubin(char *out, size_t len)
{
	char exe[PATH_MAX - 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0) {
		snprintf(out, len, "fake.cubin");
		return;
	}
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(out, len, "%s/fake.cubin", exe);
}

static NOINLINE void setup(const char *cubin)
{
	CUdevice dev;
	void *image = read_file(cubin);

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&g.ctx, NULL, 0, dev));
	CHECK(cuModuleLoadData(&g.mod, image));
	free(image);	/* the driver keeps its own copy */
	CHECK(cuModuleGetFunction(&g.matmul, g.mod, "_Z6matmulPKfS0_Pfi"));
	CHECK(cuModuleGetFunction(&g.relu, g.mod, "_Z4reluPfi"));
	CHECK(cuModuleGetFunction(&g.softmax, g.mod, "_Z7softmaxPfi"));
	CHECK(cuModuleGetFunction(&g.layernorm, g.mod, "_Z9layernormPfi"));
	CHECK(cuModuleGetFunction(&g.tiny, g.mod, "_Z4tinyv"));
}

static NOINLINE void teardown(void)
{
	CHECK(cuCtxSynchronize());
	CHECK(cuModuleUnload(g.mod));
	CHECK(cuCtxDestroy(g.ctx));
}

/* Driver API launch, expanded in place so that the launch_* function is the
 * caller of cuLaunchKernel; the duration travels as the first argument. */
#define LAUNCH(f, s, ns) do {						\
	uint64_t ns_ = (ns);						\
	void *args_[] = { &ns_ };					\
	CHECK(cuLaunchKernel((f), 128, 1, 1, 256, 1, 1, 0, (s), args_, NULL)); \
} while (0)

/* ------------------------------------------------------------- chains */

struct worker {
	const char *name;
	int iters;
	CUstream main, aux;
	pid_t tid;
};

static NOINLINE void launch_matmul(struct worker *w)
{
	LAUNCH(g.matmul, w->main, 2 * MS);
	__atomic_add_fetch(&n_matmul, 1, __ATOMIC_RELAXED);
}

static NOINLINE void launch_relu(struct worker *w)
{
	LAUNCH(g.relu, w->main, 1 * MS);
	__atomic_add_fetch(&n_relu, 1, __ATOMIC_RELAXED);
}

/* Runtime API path: cudaLaunchKernel -> cuLaunchKernel. */
static NOINLINE void launch_softmax(struct worker *w)
{
	uint64_t ns = 500 * US;
	void *args[] = { &ns };
	dim3 grid = { 64, 1, 1 }, block = { 128, 1, 1 };

	RTCHECK(cudaLaunchKernel((const void *)g.softmax, grid, block, args, 0,
				 (cudaStream_t)w->aux));
	__atomic_add_fetch(&n_softmax, 1, __ATOMIC_RELAXED);
}

static NOINLINE void forward(struct worker *w)
{
	launch_matmul(w);
	launch_softmax(w);
}

static NOINLINE void backward(struct worker *w)
{
	launch_relu(w);
}

static NOINLINE void train_step(struct worker *w)
{
	forward(w);
	backward(w);
	CHECK(cuStreamSynchronize(w->main));
}

static NOINLINE void train_loop(struct worker *w)
{
	for (int i = 0; i < w->iters; i++) {
		train_step(w);
		if (g.iter_sleep_us)
			sleep_us(g.iter_sleep_us);
	}
}

static NOINLINE void eval_step(struct worker *w)
{
	forward(w);
	CHECK(cuStreamSynchronize(w->main));
}

static NOINLINE void eval_loop(struct worker *w)
{
	for (int i = 0; i < w->iters; i++) {
		eval_step(w);
		if (g.iter_sleep_us)
			sleep_us(g.iter_sleep_us);
	}
}

static void worker_streams(struct worker *w)
{
	CHECK(cuCtxSetCurrent(g.ctx));
	CHECK(cuStreamCreate(&w->main, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&w->aux, CU_STREAM_NON_BLOCKING));
	w->tid = gettid_();
}

static void worker_done(struct worker *w)
{
	CHECK(cuStreamSynchronize(w->main));
	RTCHECK(cudaStreamSynchronize((cudaStream_t)w->aux));
	CHECK(cuStreamDestroy(w->main));
	CHECK(cuStreamDestroy(w->aux));
}

static NOINLINE void *eval_thread(void *arg)
{
	struct worker *w = arg;

	pthread_setname_np(pthread_self(), w->name);
	worker_streams(w);
	eval_loop(w);
	worker_done(w);
	return NULL;
}

static struct worker train_w = { "gpu_app", 0, NULL, NULL, 0 };
static struct worker eval_w = { "evaluator", 0, NULL, NULL, 0 };
static pthread_t eval_t;

/* Chains mode around main's own call of train_loop. */
static void chains_begin(int iters, int threads)
{
	train_w.iters = eval_w.iters = iters;
	if (threads > 1 && pthread_create(&eval_t, NULL, eval_thread, &eval_w)) {
		fprintf(stderr, "gpu_app: pthread_create failed\n");
		exit(1);
	}
	worker_streams(&train_w);
}

static void chains_end(int threads)
{
	worker_done(&train_w);
	if (threads > 1)
		pthread_join(eval_t, NULL);
	printf("gpu_app %s: iterations=%d threads=%d launches=%ld matmul=%ld relu=%ld softmax=%ld"
	       " train_tid=%d eval_tid=%d pid=%d\n", threads > 1 ? "chains" : "pc", train_w.iters,
	       threads, n_matmul + n_relu + n_softmax, n_matmul, n_relu, n_softmax, train_w.tid,
	       threads > 1 ? eval_w.tid : 0, (int)getpid());
}

/* -------------------------------------------------------------- graph */

static NOINLINE void build_graph(CUgraph *graph, CUgraphExec *exec)
{
	static uint64_t dur[3] = { 1 * MS, 500 * US, 250 * US };
	CUfunction fn[3] = { g.matmul, g.relu, g.layernorm };
	CUgraphNode prev = NULL, node;

	CHECK(cuGraphCreate(graph, 0));
	for (int i = 0; i < 3; i++) {
		void *args[] = { &dur[i] };
		CUDA_KERNEL_NODE_PARAMS p;

		memset(&p, 0, sizeof(p));
		p.func = fn[i];
		p.gridDimX = 132;
		p.gridDimY = p.gridDimZ = 1;
		p.blockDimX = 256;
		p.blockDimY = p.blockDimZ = 1;
		p.kernelParams = args;
		CHECK(cuGraphAddKernelNode(&node, *graph, prev ? &prev : NULL, prev ? 1 : 0, &p));
		prev = node;
	}
	CHECK(cuGraphInstantiate(exec, *graph, 0));
}

static NOINLINE void launch_graph(CUgraphExec exec, CUstream s)
{
	CHECK(cuGraphLaunch(exec, s));
	n_graphs++;
	n_matmul++;
	n_relu++;
	n_layernorm++;
}

static NOINLINE void launch_graph_rt(CUgraphExec exec, CUstream s)
{
	RTCHECK(cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)s));
	n_graphs++;
	n_matmul++;
	n_relu++;
	n_layernorm++;
}

static NOINLINE void run_graphs(int n)
{
	CUgraph graph;
	CUgraphExec exec;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	build_graph(&graph, &exec);
	for (int i = 0; i < n; i++) {
		launch_graph(exec, s);
		if (g.iter_sleep_us)
			sleep_us(g.iter_sleep_us);
	}
	launch_graph_rt(exec, s);
	CHECK(cuStreamSynchronize(s));
	CHECK(cuGraphExecDestroy(exec));
	CHECK(cuGraphDestroy(graph));
	CHECK(cuStreamDestroy(s));
	printf("gpu_app graph: graph_launches=%ld driver_launches=%d runtime_launches=1 nodes=3"
	       " kernels=%ld pid=%d\n", n_graphs, n, n_matmul + n_relu + n_layernorm,
	       (int)getpid());
}

/* -------------------------------------------------------- flood, noop */

static NOINLINE void launch_tiny(CUstream s)
{
	LAUNCH(g.tiny, s, 1 * US);
	n_tiny++;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static NOINLINE void flood_loop(double seconds)
{
	double t0 = now_s(), t;

	do {
		for (int i = 0; i < 256; i++)
			launch_tiny(NULL);
		if (g.iter_sleep_us)	/* pacing: per 256 launches */
			sleep_us(g.iter_sleep_us);
		t = now_s();
	} while (t - t0 < seconds);
	printf("gpu_app flood: launches=%ld seconds=%.3f launches_per_sec=%.0f pid=%d\n",
	       n_tiny, t - t0, (double)n_tiny / (t - t0), (int)getpid());
}

/*
 * graphflood: a graph of g.nodes tiny kernels launched again and again:
 * one launch probe, g.nodes kernel records (the kernel-record pipeline's
 * throughput, bench/gpu_throughput.sh).
 */
static NOINLINE void graph_flood(double seconds)
{
	static uint64_t dur = 1 * US;
	CUgraph graph;
	CUgraphExec exec;
	CUgraphNode prev = NULL, node;
	CUstream s;
	long launches = 0;
	double t0, t;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuGraphCreate(&graph, 0));
	for (int i = 0; i < g.nodes; i++) {
		void *args[] = { &dur };
		CUDA_KERNEL_NODE_PARAMS p;

		memset(&p, 0, sizeof(p));
		p.func = g.tiny;
		p.gridDimX = p.gridDimY = p.gridDimZ = 1;
		p.blockDimX = p.blockDimY = p.blockDimZ = 1;
		p.kernelParams = args;
		CHECK(cuGraphAddKernelNode(&node, graph, prev ? &prev : NULL, prev ? 1 : 0, &p));
		prev = node;
	}
	CHECK(cuGraphInstantiate(&exec, graph, 0));
	t0 = now_s();
	do {
		CHECK(cuGraphLaunch(exec, s));
		if (++launches % 16 == 0)
			CHECK(cuStreamSynchronize(s));
		t = now_s();
		/* --rate: kernels per second, paced by sleeping ahead of schedule */
		if (g.rate > 0 && (double)launches * g.nodes / g.rate > t - t0 + 0.001)
			sleep_us((long)(((double)launches * g.nodes / g.rate - (t - t0)) * 1e6));
	} while (t - t0 < seconds);
	CHECK(cuStreamSynchronize(s));
	t = now_s();
	printf("gpu_app graphflood: graph_launches=%ld nodes=%d kernels=%ld seconds=%.3f "
	       "kernels_per_sec=%.0f pid=%d\n", launches, g.nodes, launches * g.nodes,
	       t - t0, (double)launches * g.nodes / (t - t0), (int)getpid());
	CHECK(cuGraphExecDestroy(exec));
	CHECK(cuGraphDestroy(graph));
	CHECK(cuStreamDestroy(s));
}

/*
 * fork: launches, then a child that exit()s (running atexit handlers in a
 * copy of a CUDA process, as Python multiprocessing does), then more
 * launches: the child must neither hang nor re-send the parent's records.
 */
static NOINLINE void fork_child_exits(int n)
{
	pid_t child;
	int status;

	for (int i = 0; i < n; i++)
		launch_tiny(NULL);
	child = fork();
	if (child == 0)
		exit(0);
	if (child < 0 || waitpid(child, &status, 0) != child) {
		fprintf(stderr, "gpu_app: fork/waitpid failed\n");
		exit(1);
	}
	for (int i = 0; i < n; i++)
		launch_tiny(NULL);
	printf("gpu_app fork: launches=%ld child_status=%d pid=%d\n", n_tiny,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1, (int)getpid());
}

static NOINLINE void noop_loop(int n)
{
	for (int i = 0; i < n; i++)
		launch_tiny(NULL);
	printf("gpu_app noop: launches=%ld pid=%d\n", n_tiny, (int)getpid());
}

/* --------------------------------------------------------------- sync */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t sync_stream_ns, sync_ctx_ns;

static NOINLINE void stream_wait(struct worker *w)
{
	uint64_t t0 = mono_ns();

	RTCHECK(cudaStreamSynchronize((cudaStream_t)w->main));
	sync_stream_ns += mono_ns() - t0;
}

static NOINLINE void ctx_wait(void)
{
	uint64_t t0 = mono_ns();

	CHECK(cuCtxSynchronize());
	sync_ctx_ns += mono_ns() - t0;
}

static NOINLINE void sync_launch(CUfunction f, struct worker *w)
{
	LAUNCH(f, w->main, 20 * MS);
}

static NOINLINE void stream_step(struct worker *w)
{
	sync_launch(g.matmul, w);
	stream_wait(w);
}

static NOINLINE void ctx_step(struct worker *w)
{
	sync_launch(g.relu, w);
	ctx_wait();
}

static NOINLINE void sync_loop(int n)
{
	struct worker w = { .name = "sync" };

	CHECK(cuStreamCreate(&w.main, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < n; i++) {
		stream_step(&w);
		ctx_step(&w);
	}
	CHECK(cuStreamDestroy(w.main));
	printf("sync_stream %llu\nsync_ctx %llu\n", (unsigned long long)sync_stream_ns,
	       (unsigned long long)sync_ctx_ns);
}

/* --------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr, "usage: gpu_app chains|graph|flood|graphflood|pc|noop|fork|sync [N|SECONDS]"
		" [--cubin PATH] [--start-delay-ms MS] [--exit-delay-ms MS] [--iter-sleep-us US]"
		" [--nodes N] [--rate KERNELS_PER_SEC]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	char cubin[PATH_MAX];
	const char *mode, *count = NULL;
	long start_delay_ms = 0, exit_delay_ms = 0;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage();
	mode = argv[1];
	default_cubin(cubin, sizeof(cubin));
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--cubin") && i + 1 < argc)
			snprintf(cubin, sizeof(cubin), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--start-delay-ms") && i + 1 < argc)
			start_delay_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--exit-delay-ms") && i + 1 < argc)
			exit_delay_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--iter-sleep-us") && i + 1 < argc)
			g.iter_sleep_us = atol(argv[++i]);
		else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
			g.nodes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
			g.rate = atof(argv[++i]);
		else if (argv[i][0] != '-' && !count)
			count = argv[i];
		else
			usage();
	}

	setup(cubin);
	if (start_delay_ms)
		sleep_us(start_delay_ms * 1000);
	if (!strcmp(mode, "chains") || !strcmp(mode, "pc")) {
		int threads = !strcmp(mode, "chains") ? 2 : 1;

		chains_begin(count ? atoi(count) : threads > 1 ? 50 : 5, threads);
		train_loop(&train_w);	/* main -> train_loop -> ... */
		chains_end(threads);
	} else if (!strcmp(mode, "graph"))
		run_graphs(count ? atoi(count) : 20);
	else if (!strcmp(mode, "flood"))
		flood_loop(count ? atof(count) : 1.0);
	else if (!strcmp(mode, "noop"))
		noop_loop(count ? atoi(count) : 1000);
	else if (!strcmp(mode, "fork"))
		fork_child_exits(count ? atoi(count) : 100);
	else if (!strcmp(mode, "sync"))
		sync_loop(count ? atoi(count) : 10);
	else if (!strcmp(mode, "graphflood")) {
		if (g.nodes <= 0)
			g.nodes = 1000;
		graph_flood(count ? atof(count) : 1.0);
	}
	else
		usage();
	if (exit_delay_ms)
		sleep_us(exit_delay_ms * 1000);
	teardown();
	return 0;
}
