/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * probes.h - the USDT probes of provider "profd" (bpf/gpu_events.h,
 * bpf/nvtx_events.h) and their semaphores, plus the error reporter.
 *
 * Every probe has a semaphore the kernel increments while a uprobe is
 * attached to it; PROBE_ON(name) is a relaxed load of it, so code does no
 * work for a probe nobody listens to. Fire a probe only under PROBE_ON.
 * The semaphores live in section .probes (probes.c) and are found through
 * the stapsdt notes, so they can stay hidden.
 */
#ifndef PROFD_INJECT_PROBES_H
#define PROFD_INJECT_PROBES_H

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "inject.h"

#define PROFD_SEM(name) profd_##name##_semaphore

extern unsigned short profd_launch_semaphore INJECT_HIDDEN;
extern unsigned short profd_kernels_semaphore INJECT_HIDDEN;
extern unsigned short profd_name_semaphore INJECT_HIDDEN;
extern unsigned short profd_cubin_semaphore INJECT_HIDDEN;
extern unsigned short profd_pc_samples_semaphore INJECT_HIDDEN;
extern unsigned short profd_stall_reasons_semaphore INJECT_HIDDEN;
extern unsigned short profd_device_semaphore INJECT_HIDDEN;
extern unsigned short profd_error_semaphore INJECT_HIDDEN;
extern unsigned short profd_launches_semaphore INJECT_HIDDEN;
extern unsigned short profd_nvtx_semaphore INJECT_HIDDEN;

/* Non-zero while an agent has the probe attached. */
#define PROBE_ON(name) \
	(__atomic_load_n(&PROFD_SEM(name), __ATOMIC_RELAXED) != 0)

/*
 * The probes, one function each so the argument types stay fixed and each
 * probe has one site: an agent pays a uprobe per site, and the kernel
 * detaches them one at a time (~0.1 s each on a loaded guest) when it
 * exits. Each is noinline and fires nothing else (probes.c).
 */
void inject_fire_launch(uint64_t corr, uint32_t cbid, uint32_t flags) INJECT_HIDDEN;
void inject_fire_launches(const void *v, uint32_t n) INJECT_HIDDEN;
void inject_fire_kernels(const void *v, uint32_t n) INJECT_HIDDEN;
void inject_fire_name(uint32_t id, const char *str) INJECT_HIDDEN;
void inject_fire_cubin(const void *v, uint32_t n) INJECT_HIDDEN;
void inject_fire_pc_samples(const void *v, uint32_t n) INJECT_HIDDEN;
void inject_fire_stall_reasons(const void *v, uint32_t n) INJECT_HIDDEN;
void inject_fire_device(const void *v, uint32_t n) INJECT_HIDDEN;
void inject_fire_error(const void *v, uint32_t n) INJECT_HIDDEN;
void inject_fire_nvtx(const void *v, uint32_t n) INJECT_HIDDEN;

#define FIRE_LAUNCH(corr, cbid, flags) \
	inject_fire_launch((uint64_t)(corr), (uint32_t)(cbid), (uint32_t)(flags))
#define FIRE_LAUNCHES(v, n) inject_fire_launches((v), (uint32_t)(n))
#define FIRE_KERNELS(v, n) inject_fire_kernels((v), (uint32_t)(n))
#define FIRE_NAME(id, str) inject_fire_name((uint32_t)(id), (str))
#define FIRE_CUBIN(v, n) inject_fire_cubin((v), (uint32_t)(n))
#define FIRE_PC_SAMPLES(v, n) inject_fire_pc_samples((v), (uint32_t)(n))
#define FIRE_STALL_REASONS(v, n) inject_fire_stall_reasons((v), (uint32_t)(n))
#define FIRE_DEVICE(v, n) inject_fire_device((v), (uint32_t)(n))
#define FIRE_ERROR(v, n) inject_fire_error((v), (uint32_t)(n))
/* bpf/nvtx_events.h */
#define FIRE_NVTX(v, n) inject_fire_nvtx((v), (uint32_t)(n))

/* inject_probe_mask - INJECT_P_* bits of the probes attached now. */
unsigned inject_probe_mask(void) INJECT_HIDDEN;

/*
 * inject_error - report a failure: profd:error (when attached; the last 16
 * are also kept and sent again when the error probe attaches later) and a
 * stderr line with PROFD_INJECT_VERBOSE=1. code: enum profd_gpu_error_code;
 * result: CUptiResult/CUresult or 0; count: events this stands for.
 */
void inject_error(enum profd_gpu_error_code code, int result, uint64_t count,
		  const char *fmt, ...) INJECT_HIDDEN
	__attribute__((format(printf, 4, 5)));

/*
 * inject_cupti_error - inject_error for a failed CUPTI call: the message
 * gets ": <cuptiGetResultString text>" appended.
 */
void inject_cupti_error(enum profd_gpu_error_code code, CUptiResult res,
			const char *fmt, ...) INJECT_HIDDEN
	__attribute__((format(printf, 3, 4)));

/* inject_log - a stderr line with PROFD_INJECT_VERBOSE=1, else nothing. */
void inject_log(const char *fmt, ...) INJECT_HIDDEN
	__attribute__((format(printf, 1, 2)));

/* inject_replay_errors - fire the kept errors again (error probe attached). */
void inject_replay_errors(void) INJECT_HIDDEN;

#endif /* PROFD_INJECT_PROBES_H */
