// real_app.cu - a small CUDA program for tests/gpu/real.sh: known kernels
// launched from known CPU call chains, on two streams, plus a CUDA graph.
// Each kernel spins for a requested number of GPU clock cycles, so its
// time is known roughly; the program prints what it launched.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)

__device__ void spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

__global__ void matmul_kernel(float *out, long long cycles) { spin(cycles); out[threadIdx.x] += 1.0f; }
__global__ void relu_kernel(float *out, long long cycles) { spin(cycles); out[threadIdx.x] *= 0.5f; }
__global__ void softmax_kernel(float *out, long long cycles) { spin(cycles); out[threadIdx.x] -= 1.0f; }
__global__ void layernorm_kernel(float *out, long long cycles) { spin(cycles); out[threadIdx.x] += 2.0f; }

static long long cycles_per_ms;

__attribute__((noinline)) void launch_matmul(float *buf, cudaStream_t s)
{ matmul_kernel<<<1, 32, 0, s>>>(buf, 2 * cycles_per_ms); CHECK(cudaGetLastError()); }
__attribute__((noinline)) void launch_relu(float *buf, cudaStream_t s)
{ relu_kernel<<<1, 32, 0, s>>>(buf, cycles_per_ms); CHECK(cudaGetLastError()); }
__attribute__((noinline)) void launch_softmax(float *buf, cudaStream_t s)
{ softmax_kernel<<<1, 32, 0, s>>>(buf, cycles_per_ms / 2); CHECK(cudaGetLastError()); }

__attribute__((noinline)) void forward(float *buf, cudaStream_t s1, cudaStream_t s2)
{ launch_matmul(buf, s1); launch_softmax(buf + 32, s2); }
__attribute__((noinline)) void backward(float *buf, cudaStream_t s1)
{ launch_relu(buf, s1); }
__attribute__((noinline)) void train_step(float *buf, cudaStream_t s1, cudaStream_t s2)
{ forward(buf, s1, s2); backward(buf, s1); }

__attribute__((noinline)) void build_graph(float *buf, cudaStream_t s, cudaGraphExec_t *exec)
{
	cudaGraph_t g;

	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	matmul_kernel<<<1, 32, 0, s>>>(buf, cycles_per_ms);
	relu_kernel<<<1, 32, 0, s>>>(buf, cycles_per_ms / 2);
	layernorm_kernel<<<1, 32, 0, s>>>(buf, cycles_per_ms / 4);
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphInstantiate(exec, g, 0));
}
__attribute__((noinline)) void launch_graph(cudaGraphExec_t exec, cudaStream_t s)
{ CHECK(cudaGraphLaunch(exec, s)); }
__attribute__((noinline)) void run_graphs(float *buf, cudaStream_t s, int n)
{
	cudaGraphExec_t exec;

	build_graph(buf, s, &exec);
	for (int i = 0; i < n; i++)
		launch_graph(exec, s);
}

/* CPU work before the first launch: profd samples the process, reads its
 * maps and builds unwind tables for libcuda and libcupti meanwhile. */
__attribute__((noinline)) void warm_up(double seconds)
{
	struct timespec t0, t;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x += i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 200, clock_khz = 0;
	cudaStream_t s1, s2;
	float *buf;

	CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
	cycles_per_ms = clock_khz ? clock_khz : 1500000;
	CHECK(cudaMalloc(&buf, 64 * sizeof(float)));
	CHECK(cudaStreamCreate(&s1));
	CHECK(cudaStreamCreate(&s2));
	warm_up(2.0);
	for (int i = 0; i < iters; i++)
		train_step(buf, s1, s2);
	run_graphs(buf, s1, iters / 4);
	CHECK(cudaDeviceSynchronize());
	printf("launched matmul=%d relu=%d softmax=%d graphs=%d (3 nodes each)\n",
	       iters, iters, iters, iters / 4);
	return 0;
}
