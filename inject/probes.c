// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * probes.c - the probe semaphores and the error reporter.
 *
 * Owns: the ten profd_<probe>_semaphore variables (section .probes, as
 * sys/sdt.h expects; nvtx's is read by the NVTX files only and is not in
 * the CUDA side's attached-probe mask), the attached-probe mask, and error
 * reporting: every failure in the library becomes a struct profd_gpu_error
 * fired on profd:error and, with PROFD_INJECT_VERBOSE=1, one stderr line.
 * The last few errors are kept so an agent that attaches later still
 * learns why a feature is off.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "probes.h"

#define SEMAPHORE(name) \
	unsigned short PROFD_SEM(name) __attribute__((section(".probes"), used))

SEMAPHORE(launch);
SEMAPHORE(kernels);
SEMAPHORE(name);
SEMAPHORE(cubin);
SEMAPHORE(pc_samples);
SEMAPHORE(stall_reasons);
SEMAPHORE(device);
SEMAPHORE(error);
SEMAPHORE(launches);
SEMAPHORE(nvtx);

#define FIRE2(name) \
	__attribute__((noinline)) void inject_fire_##name(const void *v, uint32_t n) \
	{ STAP_PROBE2(profd, name, v, n); }

__attribute__((noinline)) void inject_fire_launch(uint64_t corr, uint32_t cbid,
						  uint32_t flags)
{
	STAP_PROBE3(profd, launch, corr, cbid, flags);
}

__attribute__((noinline)) void inject_fire_name(uint32_t id, const char *str)
{
	STAP_PROBE2(profd, name, id, str);
}

FIRE2(launches)
FIRE2(kernels)
FIRE2(cubin)
FIRE2(pc_samples)
FIRE2(stall_reasons)
FIRE2(device)
FIRE2(error)
FIRE2(nvtx)

#define KEPT_ERRORS 16

static pthread_mutex_t errors_lock = PTHREAD_MUTEX_INITIALIZER;
static struct profd_gpu_error kept[KEPT_ERRORS];
static unsigned kept_next;	/* errors ever kept; kept[kept_next % 16] next */

unsigned inject_probe_mask(void)
{
	unsigned m = 0;

	if (PROBE_ON(launch))
		m |= INJECT_P_LAUNCH;
	if (PROBE_ON(kernels))
		m |= INJECT_P_KERNELS;
	if (PROBE_ON(name))
		m |= INJECT_P_NAME;
	if (PROBE_ON(cubin))
		m |= INJECT_P_CUBIN;
	if (PROBE_ON(pc_samples))
		m |= INJECT_P_PC_SAMPLES;
	if (PROBE_ON(stall_reasons))
		m |= INJECT_P_STALL_REASONS;
	if (PROBE_ON(device))
		m |= INJECT_P_DEVICE;
	if (PROBE_ON(error))
		m |= INJECT_P_ERROR;
	if (PROBE_ON(launches))
		m |= INJECT_P_LAUNCHES;
	return m;
}

static void report(struct profd_gpu_error *e)
{
	pthread_mutex_lock(&errors_lock);
	kept[kept_next % KEPT_ERRORS] = *e;
	kept_next++;
	pthread_mutex_unlock(&errors_lock);

	if (PROBE_ON(error))
		FIRE_ERROR(e, 1);
	if (inject_cfg.verbose)
		fprintf(stderr, "profd-inject: %s\n", e->message);
}

void inject_error(enum profd_gpu_error_code code, int result, uint64_t count,
		  const char *fmt, ...)
{
	struct profd_gpu_error e = {
		.code = code,
		.result = result,
		.count = count,
	};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.message, sizeof(e.message), fmt, ap);
	va_end(ap);
	report(&e);
}

void inject_cupti_error(enum profd_gpu_error_code code, CUptiResult res,
			const char *fmt, ...)
{
	struct profd_gpu_error e = {
		.code = code,
		.result = (int)res,
		.count = 1,
	};
	const char *str = NULL;
	size_t len;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.message, sizeof(e.message), fmt, ap);
	va_end(ap);

	if (!cupti.cuptiGetResultString ||
	    cupti.cuptiGetResultString(res, &str) != CUPTI_SUCCESS || !str)
		str = NULL;
	len = strlen(e.message);
	if (str)
		snprintf(e.message + len, sizeof(e.message) - len, ": %s", str);
	else
		snprintf(e.message + len, sizeof(e.message) - len,
			 ": CUptiResult %d", (int)res);
	report(&e);
}

void inject_log(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!inject_cfg.verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "profd-inject: %s\n", line);
}

void inject_replay_errors(void)
{
	struct profd_gpu_error copy[KEPT_ERRORS];
	unsigned n, first, i;

	pthread_mutex_lock(&errors_lock);
	n = kept_next < KEPT_ERRORS ? kept_next : KEPT_ERRORS;
	first = kept_next - n;
	for (i = 0; i < n; i++)
		copy[i] = kept[(first + i) % KEPT_ERRORS];
	pthread_mutex_unlock(&errors_lock);

	if (n && PROBE_ON(error))
		FIRE_ERROR(copy, n);
}
