/* SPDX-License-Identifier: GPL-2.0 */
/*
 * profile.h - the in-memory profile of one interval.
 *
 * Owns: the data model the aggregator fills and every writer (pprof, flame
 * graph, later OTLP) reads. It follows the pprof model (profile.proto):
 * samples point at locations (leaf first), locations at a mapping and a
 * function, and all strings are interned in one table.
 *
 * Ids: mapping, function and location ids are 1-based indices into their
 * arrays (0 means "none"), exactly as pprof's ids, so writers copy them.
 * Ownership: the profile owns every string and array it holds; a
 * `const char *` returned by profile_intern() lives until profile_free().
 */
#ifndef PROFD_PROFILE_H
#define PROFD_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROFILE_MAX_VALUES	4
#define PROFILE_MAX_LABELS	16	/* per sample; each sample holds only its own */
#define PROFILE_MAX_COMMON_LABELS 32

struct profile_value_type {
	const char *type;	/* e.g. "cpu" */
	const char *unit;	/* e.g. "nanoseconds" */
};

struct profile_mapping {
	uint64_t start;		/* runtime address range [start, limit) */
	uint64_t limit;
	uint64_t offset;	/* file offset of start */
	const char *filename;	/* path as the process saw it, or "[kernel.kallsyms]" */
	const char *build_id;	/* lowercase hex, "" if unknown */
	/*
	 * pprof's Mapping flags, kept by profile_location_id*(): true only
	 * when every location of the mapping has it (a function; a source
	 * file for every Line; a line number for every Line; its inlined
	 * frames resolved from debug information), so a consumer (pprof
	 * -symbolize, a backend) knows what is left to name.
	 */
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
	uint32_t nlocations;	/* locations of this mapping so far */
};

struct profile_function {
	const char *name;	/* demangled */
	const char *system_name;/* as in the symbol table */
	const char *filename;	/* source file, "" if unknown */
};

/* One pprof Line: a function and the source line executing in it. */
struct profile_line {
	uint32_t function_id;
	int64_t line;		/* 0: unknown */
};

/*
 * A location's pprof Lines are @inlined[0..ninlined-1] (the functions
 * inlined at the address, innermost first), then { function_id, line }:
 * the function the symbol table names, last (pprof's convention: the
 * last Line is the caller).
 */
struct profile_location {
	uint32_t mapping_id;	/* 0: no mapping known */
	uint64_t address;	/* runtime address */
	uint32_t function_id;	/* 0: unresolved */
	int64_t line;		/* 0: unknown */
	const struct profile_line *inlined;	/* owned by the profile; NULL if none */
	uint32_t ninlined;
	bool inline_known;	/* its inlined frames were looked up in debug info */
};

/* A label is a string label (str != NULL) or a numeric one. */
struct profile_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;	/* NULL or e.g. "bytes" */
};

struct profile_sample {
	uint32_t *location_ids;	/* leaf first; in the block of labels */
	uint32_t nlocations;
	int64_t values[PROFILE_MAX_VALUES];
	struct profile_label *labels;	/* owned: one block with location_ids */
	uint32_t nlabels;
};

struct profile_index;	/* interning and dedup tables (profile.c) */

struct profile {
	struct profile_value_type sample_types[PROFILE_MAX_VALUES];
	uint32_t nsample_types;
	struct profile_value_type period_type;
	int64_t period;
	int64_t time_nanos;	/* start of the interval, Unix epoch ns */
	int64_t duration_nanos;

	struct profile_mapping *mappings;
	uint32_t nmappings, cap_mappings;
	struct profile_function *functions;
	uint32_t nfunctions, cap_functions;
	struct profile_location *locations;
	uint32_t nlocations, cap_locations;
	struct profile_sample *samples;
	uint32_t nsamples, cap_samples;
	const char **comments;
	uint32_t ncomments, cap_comments;
	/*
	 * Labels of every sample, kept once (profile_add_common_label): the
	 * pprof writer puts them on each sample, OTLP on each resource.
	 * String labels only; keys are unique.
	 */
	struct profile_label common_labels[PROFILE_MAX_COMMON_LABELS];
	uint32_t ncommon_labels;

	struct profile_index *index;
};

/*
 * profile_new - an empty profile. Returns NULL on out of memory.
 * Free it with profile_free().
 */
struct profile *profile_new(void);

/* profile_free - free the profile and everything it interned. NULL is fine. */
void profile_free(struct profile *p);

/*
 * profile_intern - a copy of @s owned by @p; equal strings give the same
 * pointer. NULL is interned as "". Bytes that are not UTF-8 become U+FFFD
 * (pprof's string_table is a proto3 string). Returns NULL on out of memory.
 */
const char *profile_intern(struct profile *p, const char *s);

/* profile_add_sample_type - append a sample value type. Returns 0 or -ENOSPC/-ENOMEM. */
int profile_add_sample_type(struct profile *p, const char *type, const char *unit);

/* profile_add_comment - append a comment (copied). Returns 0 or -ENOMEM. */
int profile_add_comment(struct profile *p, const char *comment);

/*
 * profile_add_common_label - a string label (@key, @value; both interned)
 * that every sample of @p carries, such as an external --label. A key
 * added again gets the new value. Writers give a sample's own label of
 * the same key precedence. Returns 0, -EINVAL for an empty key or a NULL
 * value, -ENOSPC beyond PROFILE_MAX_COMMON_LABELS keys, or -ENOMEM.
 */
int profile_add_common_label(struct profile *p, const char *key,
			     const char *value);

/*
 * profile_add_mapping - append a mapping; strings are interned.
 * Returns its id (>= 1) or 0 on out of memory.
 */
uint32_t profile_add_mapping(struct profile *p, uint64_t start, uint64_t limit,
			     uint64_t offset, const char *filename,
			     const char *build_id);

/*
 * profile_function_id - id of the function with these names, adding it if
 * new (deduplicated on (name, system_name, filename)). Returns 0 on OOM.
 */
uint32_t profile_function_id(struct profile *p, const char *name,
			     const char *system_name, const char *filename);

/*
 * profile_location_id - id of the location (mapping_id, address,
 * function_id, line), adding it if new (deduplicated on all four).
 * Returns 0 on out of memory.
 */
uint32_t profile_location_id(struct profile *p, uint32_t mapping_id,
			     uint64_t address, uint32_t function_id,
			     int64_t line);

/*
 * profile_location_id_lines - profile_location_id() for a location with
 * @ninlined functions inlined at @address (@inlined, innermost first,
 * copied; see struct profile_location) and whether its inlined frames
 * were looked up in debug information (@inline_known: the mapping's
 * has_inline_frames). Deduplicated on all of it. Returns 0 on out of
 * memory.
 */
uint32_t profile_location_id_lines(struct profile *p, uint32_t mapping_id,
				   uint64_t address, uint32_t function_id,
				   int64_t line, const struct profile_line *inlined,
				   uint32_t ninlined, bool inline_known);

/*
 * profile_add_sample - append a sample. @location_ids (leaf first) and the
 * label strings are copied/interned. @values has p->nsample_types entries.
 * Returns 0, -EINVAL for more than PROFILE_MAX_LABELS labels, or -ENOMEM.
 */
int profile_add_sample(struct profile *p, const uint32_t *location_ids,
		       uint32_t nlocations, const int64_t *values,
		       const struct profile_label *labels, uint32_t nlabels);

/* Accessors by id (1-based); NULL for 0 or out of range. */
const struct profile_mapping *profile_mapping(const struct profile *p, uint32_t id);
const struct profile_function *profile_function(const struct profile *p, uint32_t id);
const struct profile_location *profile_location(const struct profile *p, uint32_t id);

#endif /* PROFD_PROFILE_H */
