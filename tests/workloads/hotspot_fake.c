// SPDX-License-Identifier: GPL-2.0
/*
 * hotspot_fake.c - a process that looks like a JVM to src/hotspot/: it
 * exports the gHotSpotVM* symbols (build with -rdynamic) and lays out
 * tables and a code heap of its own, hostile where tests/test_hotspot.py
 * asks. Prints "ready ADDR..." (the pcs to name, see below), then sleeps.
 *
 * Usage: hotspot_fake notready   every stride and table pointer 0
 *        hotspot_fake badlayout  an entry member past the stride
 *        hotspot_fake endless    20000 entries, no terminator, each name
 *                                300 bytes without a NUL
 *        hotspot_fake heap       valid tables (a layout of its own) and
 *                                one code heap; prints the pcs of: a stub,
 *                                the tail of its block, an nmethod, an
 *                                nmethod whose class's pool does not name
 *                                it back, a blob of size 0, a blob whose
 *                                name is unmapped, an unused segment, a
 *                                hop chain through an unused segment, a
 *                                hop past the map's start, a block longer
 *                                than the heap
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default"), used))

struct sentry { const char *type, *field, *tstring; int32_t is_static; uint64_t offset; void *addr; };
struct tentry { const char *type, *super; int32_t oop, integer, unsign; uint64_t size; };
struct ientry { const char *name; int32_t value; };
struct lentry { const char *name; uint64_t value; };

EXPORT void *gHotSpotVMStructs, *gHotSpotVMTypes, *gHotSpotVMIntConstants, *gHotSpotVMLongConstants;
EXPORT uint64_t gHotSpotVMStructEntryTypeNameOffset, gHotSpotVMStructEntryFieldNameOffset,
	gHotSpotVMStructEntryTypeStringOffset, gHotSpotVMStructEntryIsStaticOffset,
	gHotSpotVMStructEntryOffsetOffset, gHotSpotVMStructEntryAddressOffset,
	gHotSpotVMStructEntryArrayStride;
EXPORT uint64_t gHotSpotVMTypeEntryTypeNameOffset, gHotSpotVMTypeEntrySuperclassNameOffset,
	gHotSpotVMTypeEntryIsOopTypeOffset, gHotSpotVMTypeEntryIsIntegerTypeOffset,
	gHotSpotVMTypeEntryIsUnsignedOffset, gHotSpotVMTypeEntrySizeOffset,
	gHotSpotVMTypeEntryArrayStride;
EXPORT uint64_t gHotSpotVMIntConstantEntryNameOffset, gHotSpotVMIntConstantEntryValueOffset,
	gHotSpotVMIntConstantEntryArrayStride;
EXPORT uint64_t gHotSpotVMLongConstantEntryNameOffset, gHotSpotVMLongConstantEntryValueOffset,
	gHotSpotVMLongConstantEntryArrayStride;

/* The fake layout (what the tables below describe). */
struct vs { char *low, *high, *pad[2]; };
struct heap { struct vs memory, segmap; int32_t log2; };
struct garr { int32_t len, max; void **data; };
struct block { uint64_t length; uint8_t used; uint8_t pad[7]; };
struct blob {
	const char *name; int32_t size, frame; char *code_begin, *code_end;
	void *method; int32_t compile_id, entry_bci, level;
};
struct symbol { uint16_t len; char body[30]; };
struct tags { int32_t len; uint8_t data[8]; };
struct pool { struct tags *tags; void *holder; int32_t len, pad[3]; void *entries[4]; };
struct klass { struct symbol *name; struct pool *constants; };
struct cmethod { struct pool *constants; uint16_t name_index, signature_index; };
struct method { struct cmethod *cm; };

#define SEG	128
#define NSEG	64
static _Alignas(4096) char code[SEG * NSEG];
static uint8_t segmap[NSEG];
static struct heap heap0;
static void *heap_list[1];
static struct garr heaps_arr;
static struct garr *heaps;	/* CodeCache::_heaps */

#define S(t, f, ts, o) { t, f, ts, 0, o, NULL }
static struct sentry structs[] = {
	S("GrowableArrayBase", "_len", "int", 0),
	S("GrowableArray<int>", "_data", "int*", 8),
	S("CodeHeap", "_memory", "VirtualSpace", 0),
	S("CodeHeap", "_segmap", "VirtualSpace", 32),
	S("CodeHeap", "_log2_segment_size", "int", 64),
	S("VirtualSpace", "_low", "char*", 0),
	S("VirtualSpace", "_high", "char*", 8),
	S("HeapBlock", "_header", "HeapBlock::Header", 0),
	S("HeapBlock::Header", "_length", "size_t", 0),
	S("HeapBlock::Header", "_used", "bool", 8),
	S("CodeBlob", "_name", "const char*", 0),
	S("CodeBlob", "_size", "int", 8),
	S("CodeBlob", "_frame_size", "int", 12),
	S("CodeBlob", "_code_begin", "address", 16),
	S("CodeBlob", "_code_end", "address", 24),
	S("nmethod", "_method", "Method*", 32),
	S("nmethod", "_compile_id", "int", 40),
	S("nmethod", "_entry_bci", "int", 44),
	S("nmethod", "_comp_level", "int", 48),
	S("Method", "_constMethod", "ConstMethod*", 0),
	S("ConstMethod", "_constants", "ConstantPool*", 0),
	S("ConstMethod", "_name_index", "u2", 8),
	S("ConstMethod", "_signature_index", "u2", 10),
	S("ConstantPool", "_tags", "Array<u1>*", 0),
	S("ConstantPool", "_pool_holder", "InstanceKlass*", 8),
	S("ConstantPool", "_length", "int", 16),
	S("InstanceKlass", "_constants", "ConstantPool*", 8),
	S("Klass", "_name", "Symbol*", 0),
	S("Array<u1>", "_data", NULL, 4),
	S("Symbol", "_length", "u2", 0),
	S("Symbol", "_body", NULL, 2),
	{ "CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, &heaps },
	{ NULL, NULL, NULL, 0, 0, NULL },
};

static struct tentry types[] = {
	{ "int", NULL, 0, 1, 0, 4 }, { "u2", NULL, 0, 1, 1, 2 }, { "bool", NULL, 0, 1, 0, 1 },
	{ "size_t", NULL, 0, 1, 1, 8 }, { "address", NULL, 0, 0, 0, 8 },
	{ "VirtualSpace", NULL, 0, 0, 0, sizeof(struct vs) },
	{ "HeapBlock", NULL, 0, 0, 0, sizeof(struct block) },
	{ "HeapBlock::Header", NULL, 0, 0, 0, sizeof(struct block) },
	{ "ConstantPool", NULL, 0, 0, 0, offsetof(struct pool, entries) },
	{ "CodeBlob", NULL, 0, 0, 0, sizeof(struct blob) },
	{ NULL, NULL, 0, 0, 0, 0 },
};

static struct ientry ints[] = {
	{ "JVM_CONSTANT_Utf8", 1 }, { "InvocationEntryBci", -1 }, { NULL, 0 },
};
static struct lentry longs[] = { { "fake_long", 1ULL << 40 }, { NULL, 0 } };

static void layout(void)
{
	gHotSpotVMStructEntryTypeNameOffset = offsetof(struct sentry, type);
	gHotSpotVMStructEntryFieldNameOffset = offsetof(struct sentry, field);
	gHotSpotVMStructEntryTypeStringOffset = offsetof(struct sentry, tstring);
	gHotSpotVMStructEntryIsStaticOffset = offsetof(struct sentry, is_static);
	gHotSpotVMStructEntryOffsetOffset = offsetof(struct sentry, offset);
	gHotSpotVMStructEntryAddressOffset = offsetof(struct sentry, addr);
	gHotSpotVMStructEntryArrayStride = sizeof(struct sentry);
	gHotSpotVMTypeEntryTypeNameOffset = offsetof(struct tentry, type);
	gHotSpotVMTypeEntrySuperclassNameOffset = offsetof(struct tentry, super);
	gHotSpotVMTypeEntryIsOopTypeOffset = offsetof(struct tentry, oop);
	gHotSpotVMTypeEntryIsIntegerTypeOffset = offsetof(struct tentry, integer);
	gHotSpotVMTypeEntryIsUnsignedOffset = offsetof(struct tentry, unsign);
	gHotSpotVMTypeEntrySizeOffset = offsetof(struct tentry, size);
	gHotSpotVMTypeEntryArrayStride = sizeof(struct tentry);
	gHotSpotVMIntConstantEntryNameOffset = offsetof(struct ientry, name);
	gHotSpotVMIntConstantEntryValueOffset = offsetof(struct ientry, value);
	gHotSpotVMIntConstantEntryArrayStride = sizeof(struct ientry);
	gHotSpotVMLongConstantEntryNameOffset = offsetof(struct lentry, name);
	gHotSpotVMLongConstantEntryValueOffset = offsetof(struct lentry, value);
	gHotSpotVMLongConstantEntryArrayStride = sizeof(struct lentry);
	gHotSpotVMStructs = structs;
	gHotSpotVMTypes = types;
	gHotSpotVMIntConstants = ints;
	gHotSpotVMLongConstants = longs;
}

static struct symbol sym_class = { 12, "fake/pkg/Hot" }, sym_run = { 3, "run" },
		     sym_sig = { 3, "()V" }, sym_other = { 5, "Other" };
static struct tags tags = { 4, { 0, 1, 1, 7 } };
static struct pool pool, other_pool;
static struct klass klass, other;
static struct cmethod cm, cm_bad;
static struct method method, method_bad;

/* A used block of @nseg segments at segment @seg; its blob, or NULL if @nseg 0. */
static struct blob *block_at(int seg, int nseg, uint64_t length)
{
	struct block *b = (struct block *)(code + seg * SEG);

	b->length = length;
	b->used = 1;
	segmap[seg] = 0;
	for (int i = 1; i < nseg; i++)
		segmap[seg + i] = (uint8_t)i;
	return (struct blob *)(b + 1);
}

static void blob(struct blob *bl, const char *name, int size, struct method *m)
{
	bl->name = name;
	bl->size = size;
	bl->code_begin = (char *)bl + 64;
	bl->code_end = (char *)bl + size;
	bl->method = m;
	bl->compile_id = 42;
	bl->entry_bci = -1;
	bl->level = 4;
}

/* The pcs printed: segment, offset in it (see the usage). */
static const int pcs[][2] = {
	{ 0, 0x40 }, { 0, 0x1f0 }, { 4, 0x60 }, { 8, 0x60 }, { 12, 0x60 },
	{ 16, 0x60 }, { 20, 0x10 }, { 24, 0x10 }, { 30, 0x10 }, { 33, 0x10 },
};

static void fake_heap(void)
{
	struct blob *b;

	memset(segmap, 0xFF, sizeof(segmap));
	pool = (struct pool){ &tags, &klass, 4, { 0 }, { NULL, &sym_run, &sym_sig, NULL } };
	klass = (struct klass){ &sym_class, &pool };
	cm = (struct cmethod){ &pool, 1, 2 };
	method.cm = &cm;
	/* a pool that claims a class whose own pool is another one's */
	other_pool = (struct pool){ &tags, &other, 4, { 0 }, { NULL, &sym_run, &sym_sig, NULL } };
	other = (struct klass){ &sym_other, &pool };
	cm_bad = (struct cmethod){ &other_pool, 1, 2 };
	method_bad.cm = &cm_bad;

	blob(block_at(0, 4, 4), "FakeStub", 400, NULL);		/* pcs 0, 1 */
	blob(block_at(4, 4, 4), "nmethod", 480, &method);		/* pc 2 */
	blob(block_at(8, 4, 4), "nmethod", 480, &method_bad);	/* pc 3 */
	blob(block_at(12, 4, 4), "FakeStub", 0, NULL);		/* pc 4 */
	b = block_at(16, 4, 4);					/* pc 5 */
	blob(b, "FakeStub", 480, NULL);
	b->name = (const char *)16;
	/* segment 20 unused (pc 6); 21..24: hops through it (pc 7) */
	for (int i = 21; i < 25; i++)
		segmap[i] = 1;
	segmap[30] = 31;					/* pc 8: past the start */
	block_at(32, 4, 1ULL << 40);				/* pc 9 */
	heap0 = (struct heap){ { code, code + sizeof(code) }, { (char *)segmap,
			       (char *)segmap + sizeof(segmap) }, 7 };
	heap_list[0] = &heap0;
	heaps_arr = (struct garr){ 1, 1, heap_list };
	heaps = &heaps_arr;
	printf("ready");
	for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]); i++)
		printf(" %#lx", (unsigned long)(uintptr_t)(code + pcs[i][0] * SEG + pcs[i][1]));
	printf("\n");
}

static char unterminated[300];
static struct sentry endless[20000];

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "heap";

	layout();
	if (!strcmp(mode, "notready")) {
		gHotSpotVMStructs = NULL;
		gHotSpotVMStructEntryArrayStride = 0;
		printf("ready\n");
	} else if (!strcmp(mode, "badlayout")) {
		gHotSpotVMStructEntryAddressOffset = 4096;
		printf("ready\n");
	} else if (!strcmp(mode, "endless")) {
		memset(unterminated, 'A', sizeof(unterminated));
		for (size_t i = 0; i < sizeof(endless) / sizeof(endless[0]); i++)
			endless[i] = (struct sentry){ unterminated, unterminated, NULL, 0, 0, NULL };
		gHotSpotVMStructs = endless;
		printf("ready\n");
	} else {
		fake_heap();
	}
	fflush(stdout);
	for (;;)
		pause();
}
