/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wake_defer.h - deferred wakeups of a worker thread, shared by the
 * object loader and the unwind loader.
 *
 * Owns: the deferral state of one worker. While any caller has turned
 * deferral on (wake_defer_set(), calls nest), work queued does not wake
 * the worker but leaves a pending mark; turning the last deferral off
 * answers whether the worker is to be woken now. Lock-free, so the
 * reader can turn it on and off around every batch of records; the
 * caller wakes the worker (pthread_cond_broadcast) after dropping the
 * queue's lock, so the woken worker does not block on it.
 */
#ifndef PROFD_UTIL_WAKE_DEFER_H
#define PROFD_UTIL_WAKE_DEFER_H

#include <stdbool.h>

struct wake_defer {
	unsigned int deferrers;	/* callers with deferral on */
	bool pending;		/* work came while deferred */
};

/*
 * wake_defer_queued - work was queued: true when the caller is to wake
 * the worker now, false when the wakeup waits for the deferral's end.
 */
static inline bool wake_defer_queued(struct wake_defer *d)
{
	if (!__atomic_load_n(&d->deferrers, __ATOMIC_SEQ_CST))
		return true;
	__atomic_store_n(&d->pending, true, __ATOMIC_SEQ_CST);
	/* the last deferral may have ended meanwhile: then the wakeup is ours */
	return !__atomic_load_n(&d->deferrers, __ATOMIC_SEQ_CST) &&
	       __atomic_exchange_n(&d->pending, false, __ATOMIC_SEQ_CST);
}

/*
 * wake_defer_set - turn deferral on or off for one caller; true when the
 * last one turned it off with work pending: the caller wakes the worker.
 */
static inline bool wake_defer_set(struct wake_defer *d, bool on)
{
	if (on) {
		__atomic_add_fetch(&d->deferrers, 1, __ATOMIC_SEQ_CST);
		return false;
	}
	return !__atomic_sub_fetch(&d->deferrers, 1, __ATOMIC_SEQ_CST) &&
	       __atomic_exchange_n(&d->pending, false, __ATOMIC_SEQ_CST);
}

/* wake_defer_take - take the pending mark (a waiter wants the work done now). */
static inline bool wake_defer_take(struct wake_defer *d)
{
	return __atomic_exchange_n(&d->pending, false, __ATOMIC_SEQ_CST);
}

#endif /* PROFD_UTIL_WAKE_DEFER_H */
