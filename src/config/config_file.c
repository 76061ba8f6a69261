// SPDX-License-Identifier: GPL-2.0
/*
 * config_file.c - loading profd's YAML config file (see config_file.h)
 * with libyaml's document API; every value goes through option_set(),
 * the same parser the command line uses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "config/config_file.h"

/* Biggest config file read: a hostile or mistaken path must not eat memory. */
#define CONFIG_MAX_BYTES (1 << 20)

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* Apply one scalar @value to option @d; errors name the file, line and key. */
static int apply(struct options *o, const struct option_def *d, const char *value,
		 const char *path, const yaml_node_t *at, char *err, size_t len)
{
	char why[256] = "";
	int ret;

	if (!*value)
		return 0;	/* empty: keep the default */
	ret = option_set(o, d, value, OPTION_FROM_FILE, why, sizeof(why));
	if (ret)
		snprintf(err, len, "%s:%zu: %s: %s", path, at->start_mark.line + 1,
			 d->name, why);
	return ret;
}

static int apply_node(struct options *o, yaml_document_t *doc, const struct option_def *d,
		      yaml_node_t *v, const char *path, char *err, size_t len)
{
	int ret = 0;

	if (v->type == YAML_SCALAR_NODE) {
		/* a plain `~`/`null` is YAML's empty value */
		if (v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    (!strcmp(scalar(v), "~") || !strcmp(scalar(v), "null")))
			return 0;
		return apply(o, d, scalar(v), path, v, err, len);
	}
	if (d->kind != OPTION_LIST) {
		snprintf(err, len, "%s:%zu: %s: expected one value, got a %s", path,
			 v->start_mark.line + 1, d->name,
			 v->type == YAML_SEQUENCE_NODE ? "list" : "mapping");
		return OPTION_EUSAGE;
	}
	if (v->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *i = v->data.sequence.items.start;
		     !ret && i < v->data.sequence.items.top; i++) {
			yaml_node_t *item = yaml_document_get_node(doc, *i);

			if (!item || item->type != YAML_SCALAR_NODE) {
				snprintf(err, len, "%s:%zu: %s: list items must be values",
					 path, (item ? item : v)->start_mark.line + 1, d->name);
				return OPTION_EUSAGE;
			}
			ret = apply(o, d, scalar(item), path, item, err, len);
		}
		return ret;
	}
	/* a mapping: only `label: {KEY: VALUE, ...}` */
	if (strcmp(d->name, "label")) {
		snprintf(err, len, "%s:%zu: %s: expected a value or a list, got a mapping",
			 path, v->start_mark.line + 1, d->name);
		return OPTION_EUSAGE;
	}
	for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
	     !ret && p < v->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *val = yaml_document_get_node(doc, p->value);
		char *kv;

		if (!k || !val || k->type != YAML_SCALAR_NODE || val->type != YAML_SCALAR_NODE) {
			snprintf(err, len, "%s:%zu: label: expected KEY: VALUE pairs", path,
				 (k ? k : v)->start_mark.line + 1);
			return OPTION_EUSAGE;
		}
		if (asprintf(&kv, "%s=%s", scalar(k), scalar(val)) < 0) {
			snprintf(err, len, "%s: out of memory", path);
			return OPTION_ERUNTIME;
		}
		ret = apply(o, d, kv, path, k, err, len);
		free(kv);
	}
	return ret;
}

static int load_doc(struct options *o, yaml_document_t *doc, const char *path,
		    char *err, size_t len)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	bool seen[64] = { false };
	size_t n;
	const struct option_def *table = option_table(&n);
	int ret = 0;

	if (!root)
		return 0;	/* an empty file: defaults */
	if (root->type != YAML_MAPPING_NODE) {
		snprintf(err, len, "%s:%zu: expected a mapping of option: value",
			 path, root->start_mark.line + 1);
		return OPTION_EUSAGE;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     !ret && p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const struct option_def *d;

		if (!k || !v || k->type != YAML_SCALAR_NODE) {
			snprintf(err, len, "%s:%zu: keys must be option names", path,
				 (k ? k : root)->start_mark.line + 1);
			return OPTION_EUSAGE;
		}
		d = option_by_name(scalar(k));
		if (!d && !strncmp(scalar(k), "--", 2))
			d = option_by_name(scalar(k) + 2);
		if (!d || !d->file) {
			snprintf(err, len, "%s:%zu: %s key '%s'", path, k->start_mark.line + 1,
				 d ? "command-line only" : "unknown", scalar(k));
			return OPTION_EUSAGE;
		}
		if (seen[d - table]) {
			snprintf(err, len, "%s:%zu: %s: given twice", path,
				 k->start_mark.line + 1, d->name);
			return OPTION_EUSAGE;
		}
		seen[d - table] = true;
		ret = apply_node(o, doc, d, v, path, err, len);
	}
	return ret;
}

int config_file_load(struct options *o, const char *path, char *err, size_t len)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct stat st;
	FILE *f = fopen(path, "re");
	int ret;

	if (!f) {
		snprintf(err, len, "%s: cannot read: %s", path, strerror(errno));
		return OPTION_ERUNTIME;
	}
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX_BYTES) {
		snprintf(err, len, "%s: not a regular file of at most %d bytes", path,
			 CONFIG_MAX_BYTES);
		fclose(f);
		return OPTION_ERUNTIME;
	}
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, len, "%s: out of memory", path);
		fclose(f);
		return OPTION_ERUNTIME;
	}
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, len, "%s:%zu: YAML syntax error: %s", path,
			 parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "unreadable");
		yaml_parser_delete(&parser);
		fclose(f);
		return OPTION_EUSAGE;
	}
	ret = load_doc(o, &doc, path, err, len);
	yaml_document_delete(&doc);
	/* a second document is not part of the config: say so */
	if (!ret && yaml_parser_load(&parser, &doc)) {
		if (yaml_document_get_root_node(&doc)) {
			snprintf(err, len, "%s: more than one YAML document", path);
			ret = OPTION_EUSAGE;
		}
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&parser);
	fclose(f);
	return ret;
}
