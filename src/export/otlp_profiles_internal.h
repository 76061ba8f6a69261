/* SPDX-License-Identifier: GPL-2.0 */
/*
 * otlp_profiles_internal.h - the encoder state shared by the files of the
 * OTLP profiles encoder (internal to src/export/; otlp_profiles.h is the
 * interface): otlp_dictionary.c owns the request's ProfilesDictionary
 * (string, attribute, stack, mapping, function, location tables) and the
 * arena every message lives in, otlp_profiles.c the request around it
 * (resources, scopes, profiles, samples). One encoding, one thread.
 */
#ifndef PROFD_EXPORT_OTLP_PROFILES_INTERNAL_H
#define PROFD_EXPORT_OTLP_PROFILES_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "export/otlp_profiles.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

#define PF(x)	opentelemetry__proto__profiles__v1development__##x
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles ResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles ScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__Link Link;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType ValueType;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Stack Stack;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Line Line;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit KeyValueAndUnit;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Request;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;

#define BUILD_ID_KEY	"process.executable.build_id.gnu"

/* Every message struct of one encoding: freed at once after packing. */
struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct arena {
	struct chunk *head;
	int err;			/* sticky -ENOMEM */
};

/* Open-addressing index over one dictionary table. */
struct index {
	uint32_t *slots;		/* table index + 1, 0 = empty */
	uint64_t *hashes;		/* by table index */
	uint32_t nslots, n;
};

/* One encoding: the profile, the arena, the request and its dictionary. */
struct enc {
	const struct profile *p;
	struct arena a;
	Request req;
	Dictionary dict;

	/* string_table: borrowed or arena-owned (repaired) strings */
	char **strs;
	uint32_t nstrs, cap_strs;
	struct index six;

	KeyValueAndUnit **attrs;	/* attribute_table */
	uint32_t nattrs, cap_attrs;
	struct index aix;

	Stack **stacks;			/* stack_table */
	uint32_t nstacks, cap_stacks;
	struct index stix;
};

/*
 * otlp_arena_alloc - zeroed memory for @n items of @size bytes, freed with
 * the arena. NULL on out of memory, which also sets a->err (sticky:
 * every later allocation fails too).
 */
void *otlp_arena_alloc(struct arena *a, size_t n, size_t size);
/* otlp_arena_free - free every chunk of @a. */
void otlp_arena_free(struct arena *a);

/*
 * otlp_index_init - an empty index for a table of at most @cap entries
 * (it never grows). Returns 0 or -ENOMEM (otlp_index_free() either way).
 */
int otlp_index_init(struct index *ix, uint32_t cap);
void otlp_index_free(struct index *ix);

/*
 * otlp_str_index - the string_table index of @s, adding it if new
 * (repaired into UTF-8 first when needed; @s is borrowed until packing,
 * a repaired copy lives in the arena). NULL and "" are 0. On out of
 * memory sets the arena's error and returns 0.
 */
int32_t otlp_str_index(struct enc *e, const char *s);
/*
 * otlp_attr_index - the attribute_table index of (@key, @str or @num,
 * @unit), adding it if new: a string attribute when @str != NULL, an int
 * one otherwise. On out of memory sets the arena's error and returns 0.
 */
int32_t otlp_attr_index(struct enc *e, const char *key, const char *str,
			int64_t num, const char *unit);
/*
 * otlp_stack_index - the stack_table index of @s's locations, adding it
 * if new. On out of memory sets the arena's error and returns 0.
 */
int32_t otlp_stack_index(struct enc *e, const struct profile_sample *s);
/*
 * otlp_enc_tables - fill the dictionary's mapping, function, location and
 * link tables from e->p (its 1-based ids are the OTLP indices). The
 * string, attribute and stack tables must be set up. Returns 0 or
 * -ENOMEM.
 */
int otlp_enc_tables(struct enc *e);

#endif /* PROFD_EXPORT_OTLP_PROFILES_INTERNAL_H */
