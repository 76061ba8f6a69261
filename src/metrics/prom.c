// SPDX-License-Identifier: GPL-2.0
/*
 * prom.c - the Prometheus text exposition format 0.0.4 (see prom.h).
 *
 * The format, as this file writes it: lines end in '\n'; a family is
 * "# HELP name text" (text with '\' and newline escaped), "# TYPE name
 * counter|gauge|untyped", then its samples "name{l="v",...} value" (label
 * values with '\', '"' and newline escaped). Values are Go-style floats:
 * integers as digits, others the shortest form that reads back exactly.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/prom.h"

void prom_init(struct prom_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void prom_free(struct prom_buf *b)
{
	free(b->data);
	free(b->seen);
	prom_init(b);
}

/* Make room for @more bytes plus the NUL; false (and -ENOMEM) if not. */
static bool reserve(struct prom_buf *b, size_t more)
{
	size_t want, cap;
	char *p;

	if (b->err)
		return false;
	if (more > SIZE_MAX / 2 - b->len) {
		b->err = -ENOMEM;
		return false;
	}
	want = b->len + more + 1;
	if (want <= b->cap)
		return true;
	cap = b->cap ? b->cap : 4096;
	while (cap < want)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->err = -ENOMEM;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

static void put(struct prom_buf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static void puts_(struct prom_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* Append @s with '\' and newline escaped, and '"' too when @quote. */
static void put_escaped(struct prom_buf *b, const char *s, bool quote)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc = NULL;

		if (*s == '\\')
			esc = "\\\\";
		else if (*s == '\n')
			esc = "\\n";
		else if (*s == '"' && quote)
			esc = "\\\"";
		if (!esc)
			continue;
		put(b, run, s - run);
		puts_(b, esc);
		run = s + 1;
	}
	put(b, run, s - run);
}

static bool name_char(char c, bool first, bool colon)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return true;
	if (c == ':')
		return colon;
	return !first && c >= '0' && c <= '9';
}

bool prom_valid_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!name_char(*p, p == s, true))
			return false;
	return true;
}

bool prom_valid_label_name(const char *s)
{
	if (!s || !*s || !strncmp(s, "__", 2))
		return false;
	for (const char *p = s; *p; p++)
		if (!name_char(*p, p == s, false))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static void fail(struct prom_buf *b, int err)
{
	if (!b->err)
		b->err = err;
}

/*
 * Remember family @name; false if it was started before (-EINVAL) or on
 * out of memory. A few dozen families: a string search is enough.
 */
static bool family_new(struct prom_buf *b, const char *name)
{
	size_t n = strlen(name);
	char key[sizeof(b->family) + 2], *p;

	snprintf(key, sizeof(key), "\n%s\n", name);
	if (b->seen && strstr(b->seen, key)) {
		fail(b, -EINVAL);
		return false;
	}
	p = realloc(b->seen, b->seen_len + n + 3);
	if (!p) {
		fail(b, -ENOMEM);
		return false;
	}
	b->seen = p;
	if (!b->seen_len)
		p[b->seen_len++] = '\n';
	memcpy(p + b->seen_len, name, n);
	b->seen_len += n;
	p[b->seen_len++] = '\n';
	p[b->seen_len] = '\0';
	return true;
}

void prom_family(struct prom_buf *b, const char *name, enum prom_type type,
		 const char *help)
{
	static const char *const types[] = {
		[PROM_COUNTER] = "counter",
		[PROM_GAUGE] = "gauge",
		[PROM_UNTYPED] = "untyped",
	};

	if (!prom_valid_name(name) || strlen(name) >= sizeof(b->family) ||
	    (unsigned int)type > PROM_UNTYPED ||
	    (type == PROM_COUNTER && !ends_with(name, "_total"))) {
		fail(b, -EINVAL);
		return;
	}
	if (b->err || !family_new(b, name))
		return;
	snprintf(b->family, sizeof(b->family), "%s", name);
	puts_(b, "# HELP ");
	puts_(b, name);
	puts_(b, " ");
	put_escaped(b, help ? help : "", false);
	puts_(b, "\n# TYPE ");
	puts_(b, name);
	puts_(b, " ");
	puts_(b, types[type]);
	puts_(b, "\n");
}

/* "name{a="x",b="y"} " of a sample, checked against the family. */
static bool sample_head(struct prom_buf *b, const char *name,
			const struct prom_label *labels, size_t nlabels)
{
	if (b->err)
		return false;
	if (!b->family[0] || !name || strcmp(name, b->family)) {
		fail(b, -EINVAL);
		return false;
	}
	for (size_t i = 0; i < nlabels; i++) {
		if (!prom_valid_label_name(labels[i].name) || !labels[i].value) {
			fail(b, -EINVAL);
			return false;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(labels[i].name, labels[j].name)) {
				fail(b, -EINVAL);
				return false;
			}
	}
	puts_(b, name);
	if (nlabels) {
		puts_(b, "{");
		for (size_t i = 0; i < nlabels; i++) {
			if (i)
				puts_(b, ",");
			puts_(b, labels[i].name);
			puts_(b, "=\"");
			put_escaped(b, labels[i].value, true);
			puts_(b, "\"");
		}
		puts_(b, "}");
	}
	puts_(b, " ");
	return !b->err;
}

/* Shortest "%g" form of @v that strtod() reads back as @v. */
static void format_double(double v, char *out, size_t len)
{
	if (isnan(v)) {
		snprintf(out, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, len, "%sInf", v > 0 ? "+" : "-");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, len, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

void prom_sample(struct prom_buf *b, const char *name,
		 const struct prom_label *labels, size_t nlabels, double value)
{
	char num[40];

	if (!sample_head(b, name, labels, nlabels))
		return;
	format_double(value, num, sizeof(num));
	puts_(b, num);
	puts_(b, "\n");
}

void prom_sample_u64(struct prom_buf *b, const char *name,
		     const struct prom_label *labels, size_t nlabels,
		     uint64_t value)
{
	char num[24];

	if (!sample_head(b, name, labels, nlabels))
		return;
	snprintf(num, sizeof(num), "%" PRIu64, value);
	puts_(b, num);
	puts_(b, "\n");
}

void prom_metric_u64(struct prom_buf *b, const char *name, enum prom_type type,
		     const char *help, uint64_t value)
{
	prom_family(b, name, type, help);
	prom_sample_u64(b, name, NULL, 0, value);
}

void prom_metric(struct prom_buf *b, const char *name, enum prom_type type,
		 const char *help, double value)
{
	prom_family(b, name, type, help);
	prom_sample(b, name, NULL, 0, value);
}

int prom_finish(struct prom_buf *b, char **out, size_t *len)
{
	int err = b->err;

	*out = NULL;
	*len = 0;
	if (!err && !b->data) {
		if (reserve(b, 0))
			b->data[0] = '\0';	/* nothing written: "" */
		err = b->err;
	}
	if (err) {
		prom_free(b);
		return err;
	}
	*out = b->data;
	*len = b->len;
	b->data = NULL;
	prom_free(b);
	return 0;
}
