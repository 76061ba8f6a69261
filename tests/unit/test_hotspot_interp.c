// SPDX-License-Identifier: GPL-2.0
/*
 * test_hotspot_interp.c - hs_interpreter_read() (src/hotspot/codecache.c)
 * on a StubQueue laid out in this process, read back through the remote
 * reader as profd reads a JVM's: the interpreter's range is the codelets
 * the queue holds (_queue_end), never the buffer's unused tail, and a
 * buffer not yet trimmed by StubQueue::deallocate_unused_tail() is
 * reported unsettled (a JVM caught starting up: the tail becomes other
 * blobs' code, which must not be walked as interpreter frames).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hotspot/codecache.h"
#include "hotspot/mem.h"
#include "hotspot/offsets.h"
#include "proc/remote.h"

/* HotSpot's StubQueue, as far as profd reads it (stubs.hpp) */
struct stub_queue {
	void *stub_interface;
	uint64_t stub_buffer;
	int32_t buffer_size, buffer_limit, queue_begin, queue_end, number_of_stubs;
};

static struct stub_queue queue;
static uint64_t interpreter_code;	/* AbstractInterpreter::_code */

static struct hs_offsets offsets(bool with_queue)
{
	struct hs_offsets o;

	memset(&o, 0, sizeof(o));
	o.features = HS_FEAT_INTERP;
	o.interpreter_code = (uint64_t)(uintptr_t)&interpreter_code;
	o.sq_stub_buffer = (struct hs_off){ offsetof(struct stub_queue, stub_buffer), 8 };
	o.sq_buffer_limit = (struct hs_off){ offsetof(struct stub_queue, buffer_limit), 4 };
	if (with_queue) {
		o.sq_queue_begin = (struct hs_off){ offsetof(struct stub_queue, queue_begin), 4 };
		o.sq_queue_end = (struct hs_off){ offsetof(struct stub_queue, queue_end), 4 };
	}
	return o;
}

int main(void)
{
	struct remote_reader *r = remote_reader_new();
	struct hs_mem *m = calloc(1, sizeof(*m));
	struct hs_offsets o = offsets(true);
	uint64_t low = 0, size = 0;
	bool unsettled = false;
	int err;

	if (!r || !m)
		return 1;
	hs_mem_init(m, r, getpid(), false);

	/* no interpreter yet */
	err = hs_interpreter_read(m, &o, &low, &size, &unsettled);
	CHECK(err == -EAGAIN, "no StubQueue: -EAGAIN (%d)", err);

	/* generated, not trimmed: 103624 bytes of codelets in a 278528-byte buffer */
	interpreter_code = (uint64_t)(uintptr_t)&queue;
	queue.stub_buffer = 0x7f0000407d60ULL;
	queue.buffer_size = queue.buffer_limit = 278528;
	queue.queue_end = 103624;
	err = hs_interpreter_read(m, &o, &low, &size, &unsettled);
	CHECK(!err && low == 0x7f0000407d60ULL && size == 103624 && unsettled,
	      "untrimmed: the codelets only, unsettled (%d, %#llx+%llu, %d)", err,
	      (unsigned long long)low, (unsigned long long)size, unsettled);

	/* trimmed: the buffer ends at its codelets (rounded to a segment) */
	queue.buffer_size = queue.buffer_limit = 103680;
	err = hs_interpreter_read(m, &o, &low, &size, &unsettled);
	CHECK(!err && size == 103624 && !unsettled, "trimmed: settled (%d, %llu, %d)", err,
	      (unsigned long long)size, unsettled);

	/* an empty queue is not generated yet; a queue past its buffer is no queue */
	queue.queue_end = 0;
	err = hs_interpreter_read(m, &o, &low, &size, &unsettled);
	CHECK(err == -EAGAIN, "empty queue: -EAGAIN (%d)", err);
	queue.queue_end = 200000;
	err = hs_interpreter_read(m, &o, &low, &size, &unsettled);
	CHECK(err == -EPROTO, "queue end past the buffer: -EPROTO (%d)", err);
	queue.queue_end = 103624;
	queue.queue_begin = 64;
	err = hs_interpreter_read(m, &o, &low, &size, &unsettled);
	CHECK(err == -EPROTO, "a queue not from the buffer's start: -EPROTO (%d)", err);
	queue.queue_begin = 0;

	/* vmStructs without the queue's indices: the buffer, as before */
	o = offsets(false);
	queue.buffer_limit = 278528;
	err = hs_interpreter_read(m, &o, &low, &size, &unsettled);
	CHECK(!err && size == 278528 && !unsettled, "no queue indices: the buffer (%d, %llu)",
	      err, (unsigned long long)size);

	free(m);
	remote_reader_free(r);
	return failures ? 1 : 0;
}
