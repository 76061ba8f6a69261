// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pcsampling.c - CUPTI PC sampling (PROFD_PC_SAMPLING=1): where on the GPU
 * warps spend their time and why they stall.
 *
 * Owns: per context, the PC sampling session (continuous mode, parsed
 * output, no start/stop control), its stall-reason table (profd:stall_
 * reasons) and the CUpti_PCSamplingData buffer CUPTI fills, and turning
 * that buffer into struct profd_gpu_pc_sample batches (profd:pc_samples):
 * one per (PC, stall reason) with samples. Data is read at
 * cuCtxSynchronize/cuStreamSynchronize exit, before a module unloads, when
 * the context is destroyed (then sampling is disabled) and at exit.
 *
 * Order follows the CUPTI docs: cuptiPCSamplingEnable first (it creates
 * the context's sampling object), then the stall reasons, then the
 * configuration. Without start/stop control sampling runs from enable
 * until disable, so cuptiPCSamplingStart/Stop are not called.
 *
 * CUPTI allocates the functionName strings of the PC records and may
 * share one string among records; the docs leave freeing them to the
 * client "once post processing of all the records is done". The names are
 * interned (copied) here and CUPTI's strings are left alone.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "probes.h"

#define COLLECT_PCS	1000	/* PCs one cuptiPCSamplingGetData returns */
#define MAX_ROUNDS	64	/* GetData calls per collection */

/*
 * One sampled context. The list (pcs_lock) is only walked and linked, never
 * held across a CUPTI call; mu serializes the reads of data. A destroyed
 * context stays listed as dead with its stall table (small) so that no
 * thread can find freed memory; only the PC buffer is freed.
 */
struct pcs_ctx {
	struct pcs_ctx *next;
	pthread_mutex_t mu;
	int dead;			/* context destroyed, sampling disabled */
	CUcontext ctx;
	uint32_t device_id;
	size_t nstall;			/* stall reasons of the device */
	size_t stall_slots;		/* stall reason entries per PC buffer */
	uint32_t *stall_index;
	char **stall_names;
	CUpti_PCSamplingData data;	/* CUPTI writes here (configured) */
	int error_reported;
};

static pthread_mutex_t pcs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pcs_ctx *contexts;
static int api_missing_reported;

static void data_free(struct pcs_ctx *c)
{
	size_t i;

	if (c->data.pPcData) {
		for (i = 0; i < c->data.collectNumPcs; i++)
			free(c->data.pPcData[i].stallReason);
		free(c->data.pPcData);
	}
	memset(&c->data, 0, sizeof(c->data));
}

/* Only for a context that never got listed. */
static void ctx_free(struct pcs_ctx *c)
{
	size_t i;

	data_free(c);
	if (c->stall_names) {
		for (i = 0; i < c->nstall; i++)
			free(c->stall_names[i]);
		free(c->stall_names);
	}
	free(c->stall_index);
	free(c);
}

static void fire_stall_reasons(const struct pcs_ctx *c)
{
	struct profd_gpu_stall_reason batch[PROFD_GPU_BATCH_MAX];
	size_t i;
	uint32_t n = 0;

	for (i = 0; i < c->nstall && PROBE_ON(stall_reasons); i++) {
		struct profd_gpu_stall_reason *s = &batch[n++];

		memset(s, 0, sizeof(*s));
		s->index = c->stall_index[i];
		s->device_id = c->device_id;
		strncpy(s->name, c->stall_names[i], sizeof(s->name) - 1);
		if (n == PROFD_GPU_BATCH_MAX) {
			FIRE_STALL_REASONS(batch, n);
			n = 0;
		}
	}
	if (n && PROBE_ON(stall_reasons))
		FIRE_STALL_REASONS(batch, n);
}

static int have_api(void)
{
	if (cupti.cuptiPCSamplingEnable && cupti.cuptiPCSamplingDisable &&
	    cupti.cuptiPCSamplingGetNumStallReasons &&
	    cupti.cuptiPCSamplingGetStallReasons &&
	    cupti.cuptiPCSamplingSetConfigurationAttribute &&
	    cupti.cuptiPCSamplingGetData)
		return 1;
	if (!__atomic_exchange_n(&api_missing_reported, 1, __ATOMIC_RELAXED))
		inject_error(PROFD_GPU_ERR_PC_SAMPLING, 0, 1,
			     "libcupti lacks the PC sampling API");
	return 0;
}

/* The stall-reason table of c's device; 0 or -1 (reported). */
static int read_stall_reasons(struct pcs_ctx *c)
{
	CUpti_PCSamplingGetNumStallReasonsParams np;
	CUpti_PCSamplingGetStallReasonsParams sp;
	CUptiResult r;
	size_t i, n = 0;

	memset(&np, 0, sizeof(np));
	np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
	np.ctx = c->ctx;
	np.numStallReasons = &n;
	r = cupti.cuptiPCSamplingGetNumStallReasons(&np);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_PC_SAMPLING, r,
				   "cuptiPCSamplingGetNumStallReasons");
		return -1;
	}
	c->stall_index = calloc(n ? n : 1, sizeof(*c->stall_index));
	c->stall_names = calloc(n ? n : 1, sizeof(*c->stall_names));
	if (!c->stall_index || !c->stall_names)
		goto nomem;
	c->nstall = n;
	for (i = 0; i < n; i++) {
		c->stall_names[i] = calloc(1, CUPTI_STALL_REASON_STRING_SIZE);
		if (!c->stall_names[i])
			goto nomem;
	}
	memset(&sp, 0, sizeof(sp));
	sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
	sp.ctx = c->ctx;
	sp.numStallReasons = n;
	sp.stallReasonIndex = c->stall_index;
	sp.stallReasons = c->stall_names;
	r = cupti.cuptiPCSamplingGetStallReasons(&sp);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_PC_SAMPLING, r,
				   "cuptiPCSamplingGetStallReasons");
		return -1;
	}
	for (i = 0; i < n; i++)
		c->stall_names[i][CUPTI_STALL_REASON_STRING_SIZE - 1] = '\0';
	return 0;
nomem:
	inject_error(PROFD_GPU_ERR_PC_SAMPLING, 0, 1,
		     "no memory for %zu stall reasons", n);
	return -1;
}

/* The buffer CUPTI fills: COLLECT_PCS PCs, each with every stall reason. */
static int alloc_data(struct pcs_ctx *c)
{
	CUpti_PCSamplingData *d = &c->data;
	size_t i;

	memset(d, 0, sizeof(*d));
	d->size = sizeof(*d);
	c->stall_slots = c->nstall ? c->nstall : 1;
	d->pPcData = calloc(COLLECT_PCS, sizeof(*d->pPcData));
	if (!d->pPcData)
		goto nomem;
	d->collectNumPcs = COLLECT_PCS;
	for (i = 0; i < COLLECT_PCS; i++) {
		d->pPcData[i].size = sizeof(d->pPcData[i]);
		d->pPcData[i].stallReason =
			calloc(c->stall_slots, sizeof(CUpti_PCSamplingStallReason));
		if (!d->pPcData[i].stallReason)
			goto nomem;
	}
	return 0;
nomem:
	inject_error(PROFD_GPU_ERR_PC_SAMPLING, 0, 1,
		     "no memory for the PC sampling buffer");
	return -1;
}

static int configure(struct pcs_ctx *c)
{
	CUpti_PCSamplingConfigurationInfo info[5];
	CUpti_PCSamplingConfigurationInfoParams p;
	CUptiResult r;

	memset(info, 0, sizeof(info));
	info[0].attributeType =
		CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
	info[0].attributeData.samplingPeriodData.samplingPeriod =
		inject_cfg.pc_period;
	info[1].attributeType =
		CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
	info[1].attributeData.collectionModeData.collectionMode =
		CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
	info[2].attributeType =
		CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
	info[2].attributeData.outputDataFormatData.outputDataFormat =
		CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
	info[3].attributeType =
		CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
	info[3].attributeData.samplingDataBufferData.samplingDataBuffer =
		&c->data;
	info[4].attributeType =
		CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
	info[4].attributeData.enableStartStopControlData.enableStartStopControl = 0;

	memset(&p, 0, sizeof(p));
	p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
	p.ctx = c->ctx;
	p.numAttributes = sizeof(info) / sizeof(info[0]);
	p.pPCSamplingConfigurationInfo = info;
	r = cupti.cuptiPCSamplingSetConfigurationAttribute(&p);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_PC_SAMPLING, r,
				   "cuptiPCSamplingSetConfigurationAttribute");
		return -1;
	}
	return 0;
}

/* 0, or -1 (reported): CUPTI may still own the configured buffer. */
static int disable(CUcontext ctx)
{
	CUpti_PCSamplingDisableParams p;
	CUptiResult r;

	memset(&p, 0, sizeof(p));
	p.size = CUpti_PCSamplingDisableParamsSize;
	p.ctx = ctx;
	r = cupti.cuptiPCSamplingDisable(&p);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_PC_SAMPLING, r,
				   "cuptiPCSamplingDisable");
		return -1;
	}
	return 0;
}

void pcsampling_on_context_created(CUcontext ctx, uint32_t device_id)
{
	CUpti_PCSamplingEnableParams ep;
	struct pcs_ctx *c;
	CUptiResult r;

	/* no agent listening when the context starts: no PC sampling for it */
	if (!inject_cfg.pc_sampling || !ctx || !have_api() || !PROBE_ON(pc_samples))
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		inject_error(PROFD_GPU_ERR_PC_SAMPLING, 0, 1, "no memory");
		return;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->ctx = ctx;
	c->device_id = device_id;

	memset(&ep, 0, sizeof(ep));
	ep.size = CUpti_PCSamplingEnableParamsSize;
	ep.ctx = ctx;
	r = cupti.cuptiPCSamplingEnable(&ep);
	if (r != CUPTI_SUCCESS) {
		inject_cupti_error(PROFD_GPU_ERR_PC_SAMPLING, r,
				   "cuptiPCSamplingEnable");
		ctx_free(c);
		return;
	}
	if (read_stall_reasons(c) < 0 || alloc_data(c) < 0 ||
	    configure(c) < 0) {
		if (disable(ctx) == 0)
			ctx_free(c);
		return;
	}

	pthread_mutex_lock(&pcs_lock);
	c->next = contexts;
	contexts = c;
	pthread_mutex_unlock(&pcs_lock);
	inject_log("PC sampling on (device %u, %zu stall reasons)", device_id,
		   c->nstall);
	fire_stall_reasons(c);
}

/* Fire what the last GetData/Disable left in c->data. */
static void process(struct pcs_ctx *c)
{
	struct profd_gpu_pc_sample batch[PROFD_GPU_BATCH_MAX];
	const CUpti_PCSamplingData *d = &c->data;
	const char *last_fn = NULL, *stored = NULL;
	uint32_t last_id = 0, n = 0;
	size_t i, j, npcs, nsr;

	if (d->droppedSamples)
		inject_error(PROFD_GPU_ERR_PC_SAMPLING, 0, d->droppedSamples,
			     "hardware dropped %llu PC samples",
			     (unsigned long long)d->droppedSamples);
	if (!PROBE_ON(pc_samples))
		return;
	npcs = d->totalNumPcs < d->collectNumPcs ? d->totalNumPcs :
						    d->collectNumPcs;
	for (i = 0; i < npcs; i++) {
		const CUpti_PCSamplingPCData *pc = &d->pPcData[i];

		if (!pc->functionName || pc->functionName != last_fn) {
			last_fn = pc->functionName;
			last_id = names_intern(pc->functionName, &stored);
		}
		nsr = pc->stallReasonCount < c->stall_slots ?
			      pc->stallReasonCount : c->stall_slots;
		for (j = 0; j < nsr; j++) {
			const CUpti_PCSamplingStallReason *sr = &pc->stallReason[j];
			struct profd_gpu_pc_sample *s;

			if (!sr->samples)
				continue;
			s = &batch[n++];
			s->cubin_crc = pc->cubinCrc;
			s->pc_offset = pc->pcOffset;
			s->samples = sr->samples;
			s->stall_reason = sr->pcSamplingStallReasonIndex;
			s->function_name_id = last_id;
			s->function_index = pc->functionIndex;
			s->correlation_id = pc->correlationId;
			s->device_id = c->device_id;
			if (n == PROFD_GPU_BATCH_MAX) {
				FIRE_PC_SAMPLES(batch, n);
				n = 0;
			}
		}
	}
	if (n)
		FIRE_PC_SAMPLES(batch, n);
}

static void reset_counts(CUpti_PCSamplingData *d)
{
	d->totalNumPcs = 0;
	d->remainingNumPcs = 0;
	d->totalSamples = 0;
	d->droppedSamples = 0;
}

/* Read everything CUPTI has for c now. Called with c->mu held. */
static void drain(struct pcs_ctx *c)
{
	CUpti_PCSamplingGetDataParams p;
	CUptiResult r;
	int round;

	for (round = 0; round < MAX_ROUNDS; round++) {
		reset_counts(&c->data);
		memset(&p, 0, sizeof(p));
		p.size = CUpti_PCSamplingGetDataParamsSize;
		p.ctx = c->ctx;
		p.pcSamplingData = &c->data;
		r = cupti.cuptiPCSamplingGetData(&p);
		if (r != CUPTI_SUCCESS) {
			/* Once per context: this repeats at every sync. */
			if (!c->error_reported)
				inject_cupti_error(PROFD_GPU_ERR_PC_SAMPLING, r,
						   "cuptiPCSamplingGetData");
			c->error_reported = 1;
			return;
		}
		process(c);
		if (!c->data.remainingNumPcs)
			return;
	}
}

/*
 * Last read, then disable: Disable copies what is left into c->data. The
 * buffer is freed unless Disable failed (CUPTI may still write it: leak).
 * Called with c->mu held.
 */
static void finish(struct pcs_ctx *c)
{
	drain(c);
	reset_counts(&c->data);
	__atomic_store_n(&c->dead, 1, __ATOMIC_RELEASE);
	if (disable(c->ctx) < 0)
		return;
	if (c->data.totalNumPcs)
		process(c);
	data_free(c);
}

static struct pcs_ctx *find(CUcontext ctx)
{
	struct pcs_ctx *c;

	pthread_mutex_lock(&pcs_lock);
	for (c = contexts; c; c = c->next) {
		if (c->ctx == ctx && !__atomic_load_n(&c->dead, __ATOMIC_ACQUIRE))
			break;
	}
	pthread_mutex_unlock(&pcs_lock);
	return c;
}

void pcsampling_collect(CUcontext ctx, int final)
{
	struct pcs_ctx *c;

	if (!inject_cfg.pc_sampling || !ctx)
		return;
	c = find(ctx);
	if (!c)
		return;
	if (final) {
		pthread_mutex_lock(&c->mu);
	} else if (pthread_mutex_trylock(&c->mu) != 0) {
		return;		/* another thread is reading it right now */
	}
	if (!c->dead) {
		if (final)
			finish(c);
		else
			drain(c);
	}
	pthread_mutex_unlock(&c->mu);
}

void pcsampling_shutdown(void)
{
	struct pcs_ctx *c, *list;

	pthread_mutex_lock(&pcs_lock);
	list = contexts;
	pthread_mutex_unlock(&pcs_lock);
	/* Entries are never unlinked or freed: walking without the lock is safe. */
	for (c = list; c; c = c->next) {
		pthread_mutex_lock(&c->mu);
		if (!c->dead)
			finish(c);
		pthread_mutex_unlock(&c->mu);
	}
}

void pcsampling_replay_stall_reasons(void)
{
	struct pcs_ctx *c;

	pthread_mutex_lock(&pcs_lock);
	for (c = contexts; c; c = c->next) {
		if (!__atomic_load_n(&c->dead, __ATOMIC_ACQUIRE))
			fire_stall_reasons(c);
	}
	pthread_mutex_unlock(&pcs_lock);
}
