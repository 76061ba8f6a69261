// SPDX-License-Identifier: GPL-2.0
/*
 * wait.c - the GPU's wait class (see aggregate/wait.h): a thread blocked
 * under a CUDA call that waits for work queued on the device to finish
 * (stream, context/device and event synchronization, runtime and driver
 * API) waits on the GPU. libcuda's blocking sync sleeps in poll() below
 * these calls; a spinning or yielding one stays on CPU and shows no
 * off-CPU time.
 */
#include <string.h>

#include "aggregate/wait.h"

static const char *const sync_functions[] = {
	/* runtime API (libcudart, or linked statically into the program) */
	"cudaDeviceSynchronize",
	"cudaEventSynchronize",
	"cudaStreamSynchronize",
	"cudaStreamSynchronize_ptsz",
	"cudaThreadSynchronize",
	/* driver API (libcuda) */
	"cuCtxSynchronize",
	"cuCtxSynchronize_v2",
	"cuEventSynchronize",
	"cuStreamSynchronize",
	"cuStreamSynchronize_ptsz",
};

static bool is_sync(const char *function)
{
	if (function[0] != 'c' || function[1] != 'u')
		return false;
	for (size_t i = 0; i < sizeof(sync_functions) / sizeof(sync_functions[0]); i++)
		if (!strcmp(function, sync_functions[i]))
			return true;
	return false;
}

const struct wait_class gpu_wait_class = {
	.name = "gpu",
	.match = is_sync,
};
