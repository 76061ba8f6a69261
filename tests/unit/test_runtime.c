// SPDX-License-Identifier: GPL-2.0
/*
 * test_runtime.c - unit tests of the language runtime seam
 * (src/runtime/): the registry generated from PROFD_RUNTIMES, frame
 * tokens told from native IPs (a bogus native IP that looks like a token
 * of no runtime stays native), runtimes left out by the enabled mask,
 * dispatch by runtime id (merge, frame names) through CPython, the first
 * runtime, without BPF. Prints one ok/FAIL line per check; exit status 1
 * on any failure. Run by tests/test_python.py.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "bpf/profd.h"
#include "check.h"
#include "python/python.h"
#include "runtime/runtime.h"

int main(void)
{
	struct runtime_env env = { .procs_fd = -1, .budget = 8 << 20, .verbose = 0 };
	const uint64_t native[] = { 0x7f0000001000ULL, 0x7f0000002000ULL | PROFD_IP_EXACT };
	/* a broken walk's "return address": ASCII, bit 62 set, runtime id 19 */
	const uint64_t bogus = 0x7370616d2f353836ULL;
	uint64_t token = PY_IP_FRAME | PY_FRAME_TRUNCATED, out[8];
	struct runtime_frame f;
	struct runtimes *rts;
	uint32_t n;

	/* the registry */
	CHECK(runtimes_count() == PROFD_RUNTIME_COUNT && PROFD_RUNTIME_COUNT >= 1,
	      "%u runtimes registered", runtimes_count());
	for (unsigned int i = 0; i < runtimes_count(); i++) {
		const struct runtime_ops *ops = runtime_registry[i];

		CHECK(ops->id == i + 1 && runtimes_ops(ops->id) == ops,
		      "%s: id %u in registry order", ops->name, ops->id);
		CHECK(ops->mapping && ops->mapping[0] == '[' && ops->objects &&
		      ops->create && ops->destroy && ops->maps_read && ops->removed &&
		      ops->merge_stack && ops->frame,
		      "%s: mapping %s, every required hook", ops->name, ops->mapping);
		for (unsigned int j = 0; j < i; j++)
			CHECK(strcmp(runtime_registry[j]->name, ops->name),
			      "%s: name unique", ops->name);
	}
	CHECK(!runtimes_ops(0) && !runtimes_ops(PROFD_RUNTIME_END), "no runtime 0 or past the end");
	CHECK(!strcmp(runtimes_ops(PROFD_RUNTIME_CPYTHON)->name, "python") &&
	      !strcmp(runtimes_ops(PROFD_RUNTIME_CPYTHON)->mapping, "[python]"),
	      "CPython is \"python\" under [python]");

	/* tokens */
	CHECK(!runtime_ip_ops(native[0]) && !runtime_ip_ops(native[1]),
	      "native IPs (exact or not) are no tokens");
	CHECK(runtime_ip_ops(token) == runtimes_ops(PROFD_RUNTIME_CPYTHON) &&
	      runtime_ip_ops(token | PY_IP_GEN) == runtimes_ops(PROFD_RUNTIME_CPYTHON),
	      "CPython tokens (both generations) are CPython's");
	CHECK(runtime_ip_id(bogus) == 19 && !runtime_ip_ops(bogus),
	      "a bogus IP with bit 62 and an unknown id stays native");
	CHECK((runtime_ip_tag(PROFD_RUNTIME_CPYTHON) & RUNTIME_IP_OWN_MASK) == 0,
	      "a tag leaves the runtime's own bits free");

	/* none enabled: every call is a no-op, stacks pass through */
	rts = runtimes_new(&env, 0);
	CHECK(rts && !runtimes_instance(rts, PROFD_RUNTIME_CPYTHON), "nothing enabled: no instance");
	n = runtimes_merge_stack(rts, PROFD_RUNTIME_CPYTHON, getpid(), PROFD_SAMPLE_INTERP,
				 native, 2, NULL, 0, out, 8, 1);
	CHECK(n == 2 && !memcmp(out, native, sizeof(native)),
	      "disabled runtime: the native stack back (%u)", n);
	CHECK(runtimes_frame(rts, token, &f) == -ENOENT, "disabled runtime names nothing");
	runtimes_maps_read(rts, getpid(), NULL);	/* must not touch NULL */
	runtimes_tick(rts);
	runtimes_new_interval(rts, 1);
	runtimes_free(rts);

	/* CPython enabled, no BPF */
	rts = runtimes_new(&env, 1u << PROFD_RUNTIME_CPYTHON);
	CHECK(rts && runtimes_instance(rts, PROFD_RUNTIME_CPYTHON), "CPython enabled: an instance");
	n = runtimes_merge_stack(rts, PROFD_RUNTIME_CPYTHON, getpid(), PROFD_SAMPLE_INTERP,
				 native, 2, NULL, 0, out, 8, 1);
	CHECK(n == 2 && !memcmp(out, native, sizeof(native)),
	      "a process CPython does not know: its native stack back (%u)", n);
	n = runtimes_merge_stack(rts, 19, getpid(), PROFD_SAMPLE_INTERP, native, 2,
				 NULL, 0, out, 1, 1);
	CHECK(n == 1 && out[0] == native[0], "an unknown runtime id: native, within @cap (%u)", n);
	CHECK(!runtimes_frame(rts, token, &f) && f.function &&
	      !strcmp(f.function, "[python: truncated]"),
	      "a CPython token named by CPython (%s)", f.function ? f.function : "(null)");
	CHECK(runtimes_frame(rts, bogus, &f) == -ENOENT, "a bogus IP is named by no runtime");
	{
		/* runtimes_fast_poll() reads one entry per registered runtime */
		struct runtime_stats st[PROFD_RUNTIME_COUNT];
		uint64_t budget, other;

		for (unsigned int i = 0; i < runtimes_count(); i++)
			runtimes_stats(rts, i, &st[i], i ? &other : &budget);
		CHECK(budget == env.budget && st[0].processes == 0,
		      "the one enabled runtime gets the whole budget (%llu), no process",
		      (unsigned long long)budget);
		CHECK(!runtimes_fast_poll(st), "no process known: no fast poll");
		st[0].processes = 1;
		CHECK(runtimes_fast_poll(st) == runtimes_ops(PROFD_RUNTIME_CPYTHON)->fast_poll,
		      "a process of CPython known: its fast_poll");
	}
	runtimes_free(rts);
	runtimes_free(NULL);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
