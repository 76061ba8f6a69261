// SPDX-License-Identifier: GPL-2.0
/*
 * hotspot_probe.c - a test-only driver for tests/test_hotspot.py: find
 * the JVM of a live process by its symbols (src/hotspot/detect.h), read
 * its vmStructs tables (vmstructs.h), derive the offsets profd needs
 * (offsets.h) and name pcs in its code cache (codecache.h).
 *
 * Usage: hotspot_probe PID vmstructs   every entry, as `jhsdb clhsdb`'s
 *                                      vmstructsdump / intConstant /
 *                                      longConstant print them (statics too)
 *        hotspot_probe PID offsets     the offsets, one "name value" a line
 *        hotspot_probe PID pc ADDR...  one line per pc (codecache.h); "-"
 *                                      reads the pcs from stdin, one a line
 * Exit: 0, 1 the JVM could not be read (the error on stderr), 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotspot/codecache.h"
#include "hotspot/detect.h"
#include "hotspot/mem.h"
#include "hotspot/offsets.h"
#include "hotspot/vmstructs.h"
#include "proc/maps.h"
#include "proc/remote.h"

static int usage(void)
{
	fprintf(stderr, "usage: hotspot_probe PID vmstructs|offsets|pc ADDR...\n");
	return 2;
}

static const char *tf(bool b)
{
	return b ? "true" : "false";
}

static void dump(const struct hs_vmstructs *vm)
{
	for (size_t i = 0; i < vm->ntypes; i++) {
		const struct hs_vm_type *t = &vm->types[i];

		printf("type %s %s %s %s %s %" PRIu64 "\n", t->name, *t->super ? t->super : "null",
		       tf(t->is_oop), tf(t->is_int), tf(t->is_unsigned), t->size);
	}
	for (size_t i = 0; i < vm->nfields; i++) {
		const struct hs_vm_field *f = &vm->fields[i];

		/* jhsdb's spelling: "<opaque>" for no type, quotes around spaces */
		const char *q = strchr(f->type_string, ' ') ? "\"" : "";

		printf("field %s %s %s%s%s %s %" PRIu64 " 0x%" PRIx64 "\n", f->type, f->name, q,
		       *f->type_string ? f->type_string : "<opaque>", q, tf(f->is_static),
		       f->offset, f->address);
	}
	for (size_t i = 0; i < vm->nints; i++)
		printf("intConstant %s %" PRId64 "\n", vm->ints[i].name, vm->ints[i].value);
	for (size_t i = 0; i < vm->nlongs; i++)
		printf("longConstant %s %" PRId64 "\n", vm->longs[i].name, vm->longs[i].value);
	fprintf(stderr, "hotspot_probe: %zu types, %zu fields, %zu+%zu constants, %zu skipped, "
		"%" PRIu64 " reads, %zu bytes\n", vm->ntypes, vm->nfields, vm->nints, vm->nlongs,
		vm->skipped, vm->remote_reads, vm->bytes);
}

static void print_offset(void *arg, const char *name, int64_t value)
{
	printf("%s %" PRId64 "\n", name, value);
}

static const char *err_name(int err)
{
	switch (err) {
	case -ENOENT: return "not-in-code-cache";
	case -ENODATA: return "free";
	case -EPROTO: return "unverified";
	case -ENOTSUP: return "unsupported";
	case -ENAMETOOLONG: return "name-too-long";
	default: return "read-error";
	}
}

/*
 * One line a pc:
 *   ADDR nmethod BLOB CODE_BEGIN CODE_END COMPILE_ID LEVEL OSR FRAME NAME SIGNATURE
 *   ADDR blob BLOB CODE_BEGIN CODE_END FRAME NAME...
 *   ADDR none REASON
 */
static int name_pcs(struct remote_reader *rr, pid_t pid, const struct hs_offsets *o,
		    char **pcs, int n)
{
	static struct hs_mem mem;
	struct hs_codecache cc;
	int err;

	hs_mem_init(&mem, rr, pid, false);
	if ((err = hs_codecache_read(&mem, o, &cc))) {
		fprintf(stderr, "hotspot_probe: code heaps: %s\n", strerror(-err));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char line[64];
		uint64_t pc;
		struct hs_pc_info pi;

		if (!strcmp(pcs[i], "-")) {
			if (!fgets(line, sizeof(line), stdin))
				continue;	/* stdin ended: the next argument */
			pc = strtoull(line, NULL, 0);
			i--;	/* "-" again until stdin ends */
		} else {
			pc = strtoull(pcs[i], NULL, 0);
		}

		err = hs_codecache_pc(&mem, o, &cc, pc, &pi);
		if (err == -ENOENT && !hs_codecache_read(&mem, o, &cc))
			err = hs_codecache_pc(&mem, o, &cc, pc, &pi);	/* the heaps grew */
		if (err)
			printf("0x%" PRIx64 " none %s\n", pc, err_name(err));
		else if (pi.kind == HS_PC_NMETHOD)
			printf("0x%" PRIx64 " nmethod 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64
			       " %d %d %d %d %s %s\n", pc, pi.blob, pi.code_begin, pi.code_end,
			       pi.compile_id, pi.comp_level, pi.osr, pi.frame_size, pi.name,
			       pi.signature);
		else
			printf("0x%" PRIx64 " blob 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64
			       " %d %s\n", pc, pi.blob, pi.code_begin, pi.code_end,
			       pi.frame_size, pi.name);
	}
	for (uint32_t i = 0; i < cc.nheaps; i++)
		fprintf(stderr, "hotspot_probe: heap 0x%" PRIx64 "-0x%" PRIx64 " segment %u\n",
			cc.heap[i].low, cc.heap[i].high, 1u << cc.heap[i].log2_segment_size);
	return 0;
}

int main(int argc, char **argv)
{
	struct hs_vmstructs vm;
	struct hs_offsets off;
	struct remote_reader *rr;
	struct proc_maps maps;
	struct hs_binary bin;
	uint64_t bias = 0;
	pid_t pid;
	int err;

	if (argc < 3)
		return usage();
	pid = (pid_t)atoi(argv[1]);
	if ((err = proc_maps_read(pid, &maps))) {
		fprintf(stderr, "hotspot_probe: maps of %d: %s\n", (int)pid, strerror(-err));
		return 1;
	}
	err = hs_find_jvm(pid, &maps, &bin, &bias);
	proc_maps_free(&maps);
	if (err != 1) {
		fprintf(stderr, "hotspot_probe: no JVM in %d (%d)\n", (int)pid, err);
		return 1;
	}
	rr = remote_reader_new();
	if (!rr)
		return 1;
	if ((err = hs_vmstructs_read(rr, pid, &bin, bias, &vm))) {
		fprintf(stderr, "hotspot_probe: vmStructs of %d: %s\n", (int)pid, strerror(-err));
		remote_reader_free(rr);
		return 1;
	}
	hs_offsets_from(&vm, &off);
	if (!strcmp(argv[2], "vmstructs")) {
		dump(&vm);
	} else if (!strcmp(argv[2], "offsets")) {
		hs_offsets_each(&vm, &off, print_offset, NULL);
	} else if (!strcmp(argv[2], "pc")) {
		err = name_pcs(rr, pid, &off, argv + 3, argc - 3);
		hs_vmstructs_free(&vm);
		remote_reader_free(rr);
		return err;
	} else {
		hs_vmstructs_free(&vm);
		remote_reader_free(rr);
		return usage();
	}
	hs_vmstructs_free(&vm);
	remote_reader_free(rr);
	return 0;
}
