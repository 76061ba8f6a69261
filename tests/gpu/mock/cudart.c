// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cudart.c - the mock libcudart.so (SONAME libcudart.so.13, tests only).
 *
 * Owns: the few runtime API calls the test apps use. Each is reported as
 * a CUPTI_CB_DOMAIN_RUNTIME_API call with its own correlation id and is
 * implemented with the driver API, whose nested driver calls are reported
 * too, as with real CUDA; kernels launched through cudaLaunchKernel and
 * cudaGraphLaunch carry the runtime call's correlation id. Simplification:
 * cudaLaunchKernel's `func` is a CUfunction from cuModuleGetFunction (no
 * fatbin registration), and the runtime uses the thread's current context.
 */
#include <cuda_runtime_api.h>

#include "mock_internal.h"

static __thread cudaError_t last_error;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static CUresult rt_init_result;

static void rt_init(void)
{
	rt_init_result = cuInit(0);
}

static cudaError_t to_rt(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS: return cudaSuccess;
	case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
	case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
	case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
	case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
	case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
	case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
	default: return cudaErrorUnknown;
	}
}

static cudaError_t rt_result(cudaError_t e)
{
	if (e != cudaSuccess)
		last_error = e;
	return e;
}

#define RCALL(fn, cbid_, pp, rp) {					\
	.domain = CUPTI_CB_DOMAIN_RUNTIME_API,				\
	.cbid = CUPTI_RUNTIME_TRACE_CBID_##cbid_,			\
	.name = #fn, .params = (pp), .ret = (rp) }

MOCK_EXPORT cudaError_t CUDARTAPI cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
						   void **args, size_t sharedMem,
						   cudaStream_t stream)
{
	cudaError_t ret;
	cudaLaunchKernel_v7000_params p = { func, gridDim, blockDim, args, sharedMem, stream };
	struct mock_call c = RCALL(cudaLaunchKernel, cudaLaunchKernel_v7000, &p, &ret);
	const unsigned int grid[3] = { gridDim.x, gridDim.y, gridDim.z };
	const unsigned int block[3] = { blockDim.x, blockDim.y, blockDim.z };
	struct mock_launch l;
	CUresult r;

	pthread_once(&rt_once, rt_init);
	c.ctx = __mock_current_ctx();
	r = __mock_prepare_kernel(&l, (CUfunction)func, grid, block, (unsigned int)sharedMem,
				  (CUstream)stream, args, NULL,
				  CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR);
	ret = to_rt(r);
	if (r == CUDA_SUCCESS) {
		c.launch = &l;
		c.symbol = l.one.f->name;
	}
	__mock_api_enter(&c);
	if (r == CUDA_SUCCESS)
		ret = to_rt(cuLaunchKernel((CUfunction)func, gridDim.x, gridDim.y, gridDim.z,
					   blockDim.x, blockDim.y, blockDim.z,
					   (unsigned int)sharedMem, (CUstream)stream, args, NULL));
	__mock_api_exit(&c);
	return rt_result(ret);
}

MOCK_EXPORT cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	cudaError_t ret;
	cudaGraphLaunch_v10000_params p = { graphExec, stream };
	struct mock_call c = RCALL(cudaGraphLaunch, cudaGraphLaunch_v10000, &p, &ret);
	struct mock_launch l;
	CUresult r;

	pthread_once(&rt_once, rt_init);
	c.ctx = __mock_current_ctx();
	r = __mock_prepare_graph(&l, (CUgraphExec)graphExec, (CUstream)stream);
	ret = to_rt(r);
	if (r == CUDA_SUCCESS)
		c.launch = &l;
	__mock_api_enter(&c);
	if (r == CUDA_SUCCESS)
		ret = to_rt(cuGraphLaunch((CUgraphExec)graphExec, (CUstream)stream));
	__mock_api_exit(&c);
	return rt_result(ret);
}

MOCK_EXPORT cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream)
{
	cudaError_t ret;
	cudaStreamSynchronize_v3020_params p = { stream };
	struct mock_call c = RCALL(cudaStreamSynchronize, cudaStreamSynchronize_v3020, &p, &ret);

	pthread_once(&rt_once, rt_init);
	c.ctx = __mock_current_ctx();
	__mock_api_enter(&c);
	ret = to_rt(rt_init_result != CUDA_SUCCESS ? rt_init_result :
		    cuStreamSynchronize((CUstream)stream));
	__mock_api_exit(&c);
	return rt_result(ret);
}

MOCK_EXPORT cudaError_t CUDARTAPI cudaDeviceSynchronize(void)
{
	cudaError_t ret;
	struct mock_call c = RCALL(cudaDeviceSynchronize, cudaDeviceSynchronize_v3020, NULL, &ret);

	pthread_once(&rt_once, rt_init);
	c.ctx = __mock_current_ctx();
	__mock_api_enter(&c);
	ret = to_rt(rt_init_result != CUDA_SUCCESS ? rt_init_result : cuCtxSynchronize());
	__mock_api_exit(&c);
	return rt_result(ret);
}

MOCK_EXPORT cudaError_t CUDARTAPI cudaGetLastError(void)
{
	cudaError_t e = last_error;

	last_error = cudaSuccess;
	return e;
}

MOCK_EXPORT const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
	switch (error) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorInitializationError: return "initialization error";
	case cudaErrorDeviceUninitialized: return "invalid device context";
	case cudaErrorInvalidResourceHandle: return "invalid resource handle";
	case cudaErrorSymbolNotFound: return "named symbol not found";
	default: return "unknown error";
	}
}
