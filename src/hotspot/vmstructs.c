// SPDX-License-Identifier: GPL-2.0
/*
 * vmstructs.c - the JVM's vmStructs tables read from the live process
 * (see vmstructs.h).
 *
 * Owns: the read (through a page-cached struct hs_mem: the tables sit in
 * libjvm's .data, their names in .rodata, neither changes after libjvm's
 * initialisers ran), the copy and the lookups. While an entry is read its
 * names are kept as offsets into the growing name blob; pointers are made
 * once the blob is final, then each table is sorted for bsearch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "hotspot/mem.h"
#include "hotspot/vmstructs.h"

COUNTER_DEFINE(hotspot_vmstructs_unreadable, COUNTER_STAT,
	       "JVMs whose vmStructs tables could not be read (memory error, gone, hung)");
COUNTER_DEFINE(hotspot_vmstructs_bad, COUNTER_STAT,
	       "JVMs whose vmStructs tables were malformed: not used");
COUNTER_DEFINE(hotspot_vmstructs_not_ready, COUNTER_STAT,
	       "JVMs read before their vmStructs tables were set up (tried again)");
COUNTER_DEFINE(hotspot_vmstructs_entry_skipped, COUNTER_STAT,
	       "vmStructs entries left out: a name unreadable or longer than the cap");
COUNTER_DEFINE(hotspot_vmstructs_capped, COUNTER_STAT,
	       "vmStructs tables cut at their entry cap");

enum table { T_STRUCTS, T_TYPES, T_INTS, T_LONGS, T_COUNT };

/* Where each table's pointer, stride and member offsets are (enum hs_sym). */
static const struct {
	enum hs_sym base, stride;
	enum hs_sym member[6];		/* in the order read_entry() uses */
	uint8_t width[6];		/* bytes of each member */
	int nmembers;
} tables[T_COUNT] = {
	[T_STRUCTS] = { HS_SYM_STRUCTS, HS_SYM_STRUCT_STRIDE,
			{ HS_SYM_STRUCT_TYPE_NAME, HS_SYM_STRUCT_FIELD_NAME,
			  HS_SYM_STRUCT_TYPE_STRING, HS_SYM_STRUCT_IS_STATIC,
			  HS_SYM_STRUCT_OFFSET, HS_SYM_STRUCT_ADDRESS },
			{ 8, 8, 8, 4, 8, 8 }, 6 },
	[T_TYPES] = { HS_SYM_TYPES, HS_SYM_TYPE_STRIDE,
		      { HS_SYM_TYPE_TYPE_NAME, HS_SYM_TYPE_SUPER_NAME, HS_SYM_TYPE_IS_OOP,
			HS_SYM_TYPE_IS_INT, HS_SYM_TYPE_IS_UNSIGNED, HS_SYM_TYPE_SIZE },
		      { 8, 8, 4, 4, 4, 8 }, 6 },
	[T_INTS] = { HS_SYM_INTS, HS_SYM_INT_STRIDE,
		     { HS_SYM_INT_NAME, HS_SYM_INT_VALUE }, { 8, 4 }, 2 },
	[T_LONGS] = { HS_SYM_LONGS, HS_SYM_LONG_STRIDE,
		      { HS_SYM_LONG_NAME, HS_SYM_LONG_VALUE }, { 8, 8 }, 2 },
};

/* A table's layout in the process. */
struct layout {
	uint64_t base, stride;
	uint64_t off[6];
};

/* An entry while the blob grows: names as blob offsets + 1 (0: none). */
struct raw {
	uint32_t name[3];
	uint64_t v[4];
};

struct builder {
	struct hs_mem *mem;
	char *blob;
	size_t blob_len, blob_cap;
	struct raw *raw[T_COUNT];
	size_t n[T_COUNT], cap[T_COUNT];
	size_t skipped;
	bool capped;
};

/* Copy the name at @addr into the blob; its offset + 1 in *@at (0 for NULL). */
static int add_name(struct builder *b, uint64_t addr, uint32_t *at)
{
	char buf[HS_VM_NAME_MAX];
	int len;

	*at = 0;
	if (!addr)
		return 0;
	len = hs_mem_string(b->mem, addr, buf, sizeof(buf));
	if (len < 0)
		return len;
	if (b->blob_len + (size_t)len + 1 > b->blob_cap) {
		size_t cap = b->blob_cap ? b->blob_cap * 2 : 64 * 1024;
		char *p;

		while (cap < b->blob_len + (size_t)len + 1)
			cap *= 2;
		if (cap > UINT32_MAX || !(p = realloc(b->blob, cap)))
			return -ENOMEM;
		b->blob = p;
		b->blob_cap = cap;
	}
	memcpy(b->blob + b->blob_len, buf, (size_t)len + 1);
	*at = (uint32_t)b->blob_len + 1;
	b->blob_len += (size_t)len + 1;
	return 0;
}

static uint64_t member(const uint8_t *e, uint64_t off, unsigned int width)
{
	uint32_t u32;
	uint64_t u64;

	if (width == 4) {
		memcpy(&u32, e + off, 4);
		return u32;
	}
	memcpy(&u64, e + off, 8);
	return u64;
}

/* Read the process's layout of table @t: 0, -EAGAIN, -EPROTO, or a read error. */
static int read_layout(struct hs_mem *m, const struct hs_binary *bin, uint64_t bias,
		       enum table t, struct layout *l)
{
	int err;

	if ((err = hs_mem_u64(m, bin->sym[tables[t].base] + bias, &l->base)) ||
	    (err = hs_mem_u64(m, bin->sym[tables[t].stride] + bias, &l->stride)))
		return err;
	if (!l->base || !l->stride)
		return -EAGAIN;
	if (l->stride > HS_VM_STRIDE_MAX)
		return -EPROTO;
	for (int i = 0; i < tables[t].nmembers; i++) {
		if ((err = hs_mem_u64(m, bin->sym[tables[t].member[i]] + bias, &l->off[i])))
			return err;
		if (l->off[i] > l->stride || l->stride - l->off[i] < tables[t].width[i])
			return -EPROTO;
	}
	return 0;
}

static int push(struct builder *b, enum table t, const struct raw *r)
{
	if (b->n[t] == b->cap[t]) {
		size_t cap = b->cap[t] ? b->cap[t] * 2 : 512;
		struct raw *p = realloc(b->raw[t], cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		b->raw[t] = p;
		b->cap[t] = cap;
	}
	b->raw[t][b->n[t]++] = *r;
	return 0;
}

/*
 * Read every entry of table @t laid out as @l until its terminator (a
 * NULL first name). 0, -EPROTO (no terminator within the cap and no
 * entry), -ENOMEM or a read error of an entry itself.
 */
static int read_table(struct builder *b, enum table t, const struct layout *l)
{
	int names = t == T_STRUCTS ? 3 : t == T_TYPES ? 2 : 1;
	uint8_t e[HS_VM_STRIDE_MAX];
	size_t i;
	int err;

	for (i = 0; i < HS_VM_MAX_ENTRIES; i++) {
		struct raw r = { 0 };
		uint64_t first;
		bool bad = false;

		if ((err = hs_mem_read(b->mem, l->base + i * l->stride, e, l->stride)))
			return err;
		first = member(e, l->off[0], 8);
		if (!first)
			return 0;
		for (int k = 0; k < names; k++) {
			err = add_name(b, member(e, l->off[k], 8), &r.name[k]);
			if (err == -ENOMEM)
				return err;
			bad |= err != 0;
		}
		for (int k = names; k < tables[t].nmembers; k++)
			r.v[k - names] = member(e, l->off[k], tables[t].width[k]);
		if (bad || !r.name[0]) {
			b->skipped++;
			counter_inc(&counter_hotspot_vmstructs_entry_skipped);
			continue;
		}
		if ((err = push(b, t, &r)))
			return err;
	}
	b->capped = true;
	counter_inc(&counter_hotspot_vmstructs_capped);
	return 0;
}

static int cmp_field(const void *a, const void *b)
{
	const struct hs_vm_field *x = a, *y = b;
	int c = strcmp(x->type, y->type);

	return c ? c : strcmp(x->name, y->name);
}

static int cmp_type(const void *a, const void *b)
{
	return strcmp(((const struct hs_vm_type *)a)->name, ((const struct hs_vm_type *)b)->name);
}

static int cmp_const(const void *a, const void *b)
{
	return strcmp(((const struct hs_vm_const *)a)->name,
		      ((const struct hs_vm_const *)b)->name);
}

/* Make @out's tables from @b's raw entries (the blob moves into @out). */
static int finish(struct builder *b, struct hs_vmstructs *out)
{
	char *s = b->blob;
#define NAME(o)	((o) ? s + (o) - 1 : "")

	out->fields = calloc(b->n[T_STRUCTS] + 1, sizeof(*out->fields));
	out->types = calloc(b->n[T_TYPES] + 1, sizeof(*out->types));
	out->ints = calloc(b->n[T_INTS] + 1, sizeof(*out->ints));
	out->longs = calloc(b->n[T_LONGS] + 1, sizeof(*out->longs));
	if (!out->fields || !out->types || !out->ints || !out->longs)
		return -ENOMEM;
	out->names = b->blob;
	b->blob = NULL;
	for (size_t i = 0; i < b->n[T_STRUCTS]; i++) {
		const struct raw *r = &b->raw[T_STRUCTS][i];

		if (!r->name[1])	/* a field entry must name its field */
			continue;
		out->fields[out->nfields++] = (struct hs_vm_field){
			.type = NAME(r->name[0]), .name = NAME(r->name[1]),
			.type_string = NAME(r->name[2]), .is_static = (uint32_t)r->v[0] != 0,
			.offset = r->v[1], .address = r->v[2],
		};
	}
	for (size_t i = 0; i < b->n[T_TYPES]; i++) {
		const struct raw *r = &b->raw[T_TYPES][i];

		out->types[out->ntypes++] = (struct hs_vm_type){
			.name = NAME(r->name[0]), .super = NAME(r->name[1]),
			.is_oop = (uint32_t)r->v[0] != 0, .is_int = (uint32_t)r->v[1] != 0,
			.is_unsigned = (uint32_t)r->v[2] != 0, .size = r->v[3],
		};
	}
	for (size_t i = 0; i < b->n[T_INTS]; i++)
		out->ints[out->nints++] = (struct hs_vm_const){
			NAME(b->raw[T_INTS][i].name[0]), (int32_t)(uint32_t)b->raw[T_INTS][i].v[0] };
	for (size_t i = 0; i < b->n[T_LONGS]; i++)
		out->longs[out->nlongs++] = (struct hs_vm_const){
			NAME(b->raw[T_LONGS][i].name[0]), (int64_t)b->raw[T_LONGS][i].v[0] };
#undef NAME
	qsort(out->fields, out->nfields, sizeof(*out->fields), cmp_field);
	qsort(out->types, out->ntypes, sizeof(*out->types), cmp_type);
	qsort(out->ints, out->nints, sizeof(*out->ints), cmp_const);
	qsort(out->longs, out->nlongs, sizeof(*out->longs), cmp_const);
	out->bytes = b->blob_cap + (out->nfields + 1) * sizeof(*out->fields) +
		     (out->ntypes + 1) * sizeof(*out->types) +
		     (out->nints + out->nlongs + 2) * sizeof(*out->ints);
	out->skipped = b->skipped;
	out->capped = b->capped;
	return 0;
}

int hs_vmstructs_read(struct remote_reader *r, pid_t pid, const struct hs_binary *bin,
		      uint64_t bias, struct hs_vmstructs *out)
{
	struct layout l[T_COUNT];
	struct builder b = { 0 };
	int err = 0;

	memset(out, 0, sizeof(*out));
	b.mem = malloc(sizeof(*b.mem));
	if (!b.mem)
		return -ENOMEM;
	hs_mem_init(b.mem, r, pid, true);
	for (int t = 0; t < T_COUNT && !err; t++)
		err = read_layout(b.mem, bin, bias, t, &l[t]);
	for (int t = 0; t < T_COUNT && !err; t++)
		err = read_table(&b, t, &l[t]);
	if (!err && (!b.n[T_STRUCTS] || !b.n[T_TYPES]))
		err = -EPROTO;
	if (!err)
		err = finish(&b, out);
	out->remote_reads = b.mem->remote_reads;
	for (int t = 0; t < T_COUNT; t++)
		free(b.raw[t]);
	free(b.blob);
	free(b.mem);
	if (err == -EAGAIN)
		counter_inc(&counter_hotspot_vmstructs_not_ready);
	else if (err == -EPROTO)
		counter_inc(&counter_hotspot_vmstructs_bad);
	else if (err && err != -ENOMEM)
		counter_inc(&counter_hotspot_vmstructs_unreadable);
	if (err) {
		uint64_t reads = out->remote_reads;

		hs_vmstructs_free(out);
		out->remote_reads = reads;
	}
	return err;
}

void hs_vmstructs_free(struct hs_vmstructs *vm)
{
	free(vm->fields);
	free(vm->types);
	free(vm->ints);
	free(vm->longs);
	free(vm->names);
	memset(vm, 0, sizeof(*vm));
}

const struct hs_vm_field *hs_vm_field(const struct hs_vmstructs *vm, const char *type,
				      const char *name)
{
	struct hs_vm_field key = { .type = type, .name = name };

	if (!vm->nfields)
		return NULL;
	return bsearch(&key, vm->fields, vm->nfields, sizeof(key), cmp_field);
}

const struct hs_vm_type *hs_vm_type(const struct hs_vmstructs *vm, const char *name)
{
	struct hs_vm_type key = { .name = name };

	if (!vm->ntypes)
		return NULL;
	return bsearch(&key, vm->types, vm->ntypes, sizeof(key), cmp_type);
}

static bool find_const(const struct hs_vm_const *v, size_t n, const char *name, int64_t *out)
{
	struct hs_vm_const key = { .name = name };
	const struct hs_vm_const *c = n ? bsearch(&key, v, n, sizeof(key), cmp_const) : NULL;

	if (c)
		*out = c->value;
	return c != NULL;
}

bool hs_vm_int(const struct hs_vmstructs *vm, const char *name, int64_t *v)
{
	return find_const(vm->ints, vm->nints, name, v);
}

bool hs_vm_long(const struct hs_vmstructs *vm, const char *name, int64_t *v)
{
	return find_const(vm->longs, vm->nlongs, name, v);
}
