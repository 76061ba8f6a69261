/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nvtx.h - what the NVTX files of libprofd_inject.so share.
 *
 * Owns: the interface between the NVTX API handlers (nvtx.c: the export
 * table contract, one handler per NVTX call), the per-thread batches
 * (nvtx_batch.c: buffers, flushing, sessions, the definitions replayed to
 * a new agent) and the string helpers (nvtx_strings.c: messages as UTF-8,
 * the per-thread intern cache). The wire format is bpf/nvtx_events.h.
 *
 * NVTX may load the library without CUDA (NVTX_INJECTION64_PATH): nothing
 * here touches CUPTI or the driver.
 */
#ifndef PROFD_INJECT_NVTX_H
#define PROFD_INJECT_NVTX_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/nvtx_events.h"

#define NVTX_HIDDEN __attribute__((visibility("hidden")))

_Static_assert(sizeof(struct profd_nvtx_event) == PROFD_NVTX_TEXT_CHUNK,
	       "a text chunk is one event");

/* NVTX message types (nvtxMessageType_t), so callers need no NVTX header. */
enum {
	NVTX_MSG_NONE = 0,
	NVTX_MSG_ASCII = 1,
	NVTX_MSG_UNICODE = 2,
	NVTX_MSG_REGISTERED = 3,
};

/* A message as an NVTX call passed it. */
struct nvtx_msg {
	int type;		/* NVTX_MSG_* */
	const void *p;		/* ASCII: const char *, UNICODE: const wchar_t * */
	uint32_t id;		/* REGISTERED: the string id behind the handle */
};

/* A message's text: UTF-8 bytes, not NUL terminated. */
struct nvtx_text {
	const char *s;
	uint32_t len;		/* <= PROFD_NVTX_STRING_MAX */
	int cut;		/* longer in the call: PROFD_NVTX_F_CUT */
};

/* Room nvtx_text_get needs to convert a wide string (UTF-8, 4 bytes a char). */
#define NVTX_TEXT_BUF (PROFD_NVTX_STRING_MAX + 4)

/* --- nvtx_strings.c --- */

/*
 * nvtx_text_get - the text of an ASCII or UNICODE message m: ASCII text is
 * used in place, wide text converted to UTF-8 into buf (NVTX_TEXT_BUF
 * bytes). Cut at PROFD_NVTX_STRING_MAX bytes on a character boundary.
 * Returns 0 and fills *t, or -1 for no text (other type, NULL pointer).
 */
int nvtx_text_get(const struct nvtx_msg *m, char *buf, struct nvtx_text *t) NVTX_HIDDEN;

/* nvtx_text_hash - 64-bit hash of t's bytes (never 0). */
uint64_t nvtx_text_hash(const struct nvtx_text *t) NVTX_HIDDEN;

/* One thread's cache of the texts it defined: text -> string id. */
struct nvtx_strings {
	struct nvtx_string_slot *slots;	/* NULL until the first insert */
	uint32_t mask;			/* slots - 1 */
	uint32_t used;
};

/* Most texts a thread's cache holds; the next one empties it. */
#define NVTX_STRINGS_MAX 4096

/* nvtx_strings_find - the id t (with hash h) was defined under, 0: none. */
uint32_t nvtx_strings_find(const struct nvtx_strings *c, const struct nvtx_text *t,
			   uint64_t h) NVTX_HIDDEN;

/*
 * nvtx_strings_add - remember t (hash h) as string id. A full cache
 * (NVTX_STRINGS_MAX texts) is emptied first: the thread then defines its
 * texts again under new ids. Returns 0, or -1 without memory (t is then
 * defined again on its next use).
 */
int nvtx_strings_add(struct nvtx_strings *c, const struct nvtx_text *t,
		     uint64_t h, uint32_t id) NVTX_HIDDEN;

/* nvtx_strings_reset - forget every text and free the memory. */
void nvtx_strings_reset(struct nvtx_strings *c) NVTX_HIDDEN;

/* --- nvtx_batch.c --- */

/*
 * nvtx_batch_init - settings (PROFD_NVTX_FLUSH_MS), the thread-exit key,
 * the fork and exit handlers. Idempotent: NVTX calls the entry point once
 * per NVTX instance in the process.
 */
void nvtx_batch_init(void) NVTX_HIDDEN;

/* nvtx_new_string_id - a string id unique in the process (>= 1). */
uint32_t nvtx_new_string_id(void) NVTX_HIDDEN;

/*
 * nvtx_batch_event - append ev (kind, time, ids and attributes set; tid
 * and message_id are filled here) to the calling thread's batch, defining
 * m's text first if the thread has not yet. Fires the batch when full.
 * Call only while an agent listens (PROBE_ON(nvtx)); an event that cannot
 * be recorded is counted and reported later as PROFD_NVTX_DROPPED.
 */
void nvtx_batch_event(struct profd_nvtx_event *ev, const struct nvtx_msg *m) NVTX_HIDDEN;

/*
 * nvtx_batch_define - a rare call that defines something every thread may
 * use after: a registered string, a domain, a category, thread or resource
 * name. ev carries the kind and ids; its text (m, or text) is defined as
 * string text_id (0: a new id; a registered string passes its own) and
 * ev->message_id set to it, except for kind PROFD_NVTX_STRING where ev
 * itself is the definition. Kept (bounded) to be sent again to an agent
 * that attaches later, replacing an earlier definition of the same thing;
 * key: a handle that nvtx_batch_forget() can name (0: none). Sent and
 * flushed at once when an agent listens. Returns the string id of the
 * text (0: no text).
 */
uint32_t nvtx_batch_define(struct profd_nvtx_event *ev, const struct nvtx_msg *m,
			   uint32_t text_id, uint64_t key) NVTX_HIDDEN;

/*
 * nvtx_batch_domain - the domain named m (NULL name: a new unnamed one):
 * the id of a kept domain of that name, else a new id (>= 1, never 0, the
 * default domain's) defined as a PROFD_NVTX_DOMAIN like nvtx_batch_define.
 */
uint32_t nvtx_batch_domain(const struct nvtx_msg *m) NVTX_HIDDEN;

/*
 * nvtx_batch_forget - stop re-sending what was kept for domain_id (its
 * definition, categories and registered strings; 0: none) or under key
 * (a resource handle; 0: none); with ev (a PROFD_NVTX_DOMAIN_DESTROY)
 * also send that now when an agent listens.
 */
void nvtx_batch_forget(uint32_t domain_id, uint64_t key,
		       struct profd_nvtx_event *ev) NVTX_HIDDEN;

/*
 * nvtx_batch_unseen - add @n events fired while no agent listened to what
 * the next batch reports as PROFD_NVTX_UNSEEN. Thread-safe.
 */
void nvtx_batch_unseen(uint64_t n) NVTX_HIDDEN;

/* nvtx_unseen_forget - zero the calling thread's unseen count (a forked child). */
void nvtx_unseen_forget(void) NVTX_HIDDEN;

/* nvtx_unseen_flush - hand the calling thread's unseen count to nvtx_batch_unseen(). */
void nvtx_unseen_flush(void) NVTX_HIDDEN;

/* nvtx_batch_flush_all - fire every thread's batch (exit, tests). */
void nvtx_batch_flush_all(void) NVTX_HIDDEN;

#endif /* PROFD_INJECT_NVTX_H */
