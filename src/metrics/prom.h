/* SPDX-License-Identifier: GPL-2.0 */
/*
 * prom.h - a writer of the Prometheus text exposition format 0.0.4.
 *
 * Owns: a growable text buffer and the rules of the format, so callers
 * only say what to expose: one prom_family() (its "# HELP" and "# TYPE"
 * lines) and then that family's samples, each `name{labels} value`.
 * Names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 * [a-zA-Z_][a-zA-Z0-9_]*, counter names end in "_total"; label values
 * and help text are escaped here. A broken rule or an allocation failure
 * is remembered and reported once, by prom_finish().
 *
 * Threads: one buffer per thread; no global state.
 */
#ifndef PROFD_METRICS_PROM_H
#define PROFD_METRICS_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum prom_type {
	PROM_COUNTER,
	PROM_GAUGE,
	PROM_UNTYPED,
};

/* One label of a sample; both strings are copied (escaped) at once. */
struct prom_label {
	const char *name;
	const char *value;
};

struct prom_buf {
	char *data;		/* NUL-terminated text so far; owned */
	size_t len;		/* bytes of text, without the NUL */
	size_t cap;
	int err;		/* first error: -ENOMEM or -EINVAL; 0: none */
	char family[128];	/* current family: samples must use its name */
	char *seen;		/* "\nNAME\n..." of every family so far; owned */
	size_t seen_len;
};

/* prom_init - an empty buffer (nothing allocated until the first write). */
void prom_init(struct prom_buf *b);

/*
 * prom_family - start the family @name of @type: write "# HELP @name
 * @help" (backslashes and newlines escaped) and "# TYPE @name TYPE".
 * Later samples must be named @name. A name that breaks the rules above,
 * a counter not ending in "_total" or a family started before sets
 * -EINVAL and is not written.
 */
void prom_family(struct prom_buf *b, const char *name, enum prom_type type,
		 const char *help);

/*
 * prom_sample - one sample of the current family: `name{labels} value`,
 * @labels an array of @nlabels (NULL when 0). @value is written in the
 * shortest form that reads back exactly; NaN and +-Inf as "NaN",
 * "+Inf", "-Inf".
 */
void prom_sample(struct prom_buf *b, const char *name,
		 const struct prom_label *labels, size_t nlabels, double value);

/* prom_sample_u64 - prom_sample() of an integer, written exactly. */
void prom_sample_u64(struct prom_buf *b, const char *name,
		     const struct prom_label *labels, size_t nlabels,
		     uint64_t value);

/*
 * prom_metric_u64 - a family with one sample without labels (the common
 * case): prom_family() + prom_sample_u64().
 */
void prom_metric_u64(struct prom_buf *b, const char *name, enum prom_type type,
		     const char *help, uint64_t value);

/* prom_metric - the same with a floating-point value. */
void prom_metric(struct prom_buf *b, const char *name, enum prom_type type,
		 const char *help, double value);

/*
 * prom_finish - the text written: returns 0 and hands the NUL-terminated
 * text (malloc'ed, the caller frees it) in *@out and its length in
 * *@len; or the first error (-ENOMEM, -EINVAL) with nothing handed over.
 * Either way @b is empty afterwards.
 */
int prom_finish(struct prom_buf *b, char **out, size_t *len);

/* prom_free - drop whatever @b holds (after an error, or unfinished). */
void prom_free(struct prom_buf *b);

/* prom_valid_name - @s is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*). */
bool prom_valid_name(const char *s);

/* prom_valid_label_name - @s is a valid label name, not reserved ("__..."). */
bool prom_valid_label_name(const char *s);

#endif /* PROFD_METRICS_PROM_H */
