// SPDX-License-Identifier: GPL-2.0
/*
 * config_file.c - loading profd's YAML config file (see config_file.h)
 * with libyaml's document API; every value goes through option_set(),
 * the same parser the command line uses.
 *
 * The file is read whole first (a regular file only, opened without
 * blocking, 1 MiB at most), checked to be UTF-8, and run through
 * libyaml's event parser once to refuse deep nesting before the document
 * loader, whose cost grows with the depth, sees it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "util/utf8.h"
#include "config/config_file.h"

/* Biggest config file read: a hostile or mistaken path must not eat memory. */
#define CONFIG_MAX_BYTES (1 << 20)

/* Deepest nesting of lists and mappings (the top-level mapping is 1). */
#define CONFIG_MAX_DEPTH 32

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/*
 * Apply one scalar @value (@vlen bytes: a NUL among them is refused) to
 * option @d; errors name the file, line and key.
 */
static int apply(struct options *o, const struct option_def *d, const char *value,
		 size_t vlen, const char *path, const yaml_node_t *at, char *err, size_t len)
{
	char why[256] = "";
	const char *eq;
	int ret;

	if (!vlen)
		return 0;	/* empty: keep the default */
	eq = memchr(value, '=', vlen);
	if (!strcmp(d->name, "label") && eq && eq != value)
		ret = option_set_label(o, value, eq - value, eq + 1, vlen - (eq - value) - 1,
				       OPTION_FROM_FILE, why, sizeof(why));
	else if (strlen(value) != vlen) {
		snprintf(why, sizeof(why), "must not contain a NUL character");
		ret = OPTION_EUSAGE;
	} else
		ret = option_set(o, d, value, OPTION_FROM_FILE, why, sizeof(why));
	if (ret)
		snprintf(err, len, "%s:%zu: %s: %s", path, at->start_mark.line + 1,
			 d->name, why);
	return ret;
}


/*
 * The file option @key names with '_' or a leading "--" spelt as the
 * option is ("sampling_frequency": sampling-frequency), for the hint of
 * an unknown key; NULL if none.
 */
static const struct option_def *dashed(const char *key)
{
	const struct option_def *d;
	char name[64];
	size_t i;

	if (!strncmp(key, "--", 2))
		key += 2;
	for (i = 0; key[i] && i + 1 < sizeof(name); i++)
		name[i] = key[i] == '_' ? '-' : key[i];
	name[i] = '\0';
	if (key[i] || !strchr(key, '_'))
		return NULL;
	d = option_by_name(name);
	return d && d->file ? d : NULL;
}

/* A plain `~`/`null` (YAML's empty value). */
static bool yaml_null(const yaml_node_t *v)
{
	return v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!strcmp(scalar(v), "~") || !strcmp(scalar(v), "null"));
}

static int apply_node(struct options *o, yaml_document_t *doc, const struct option_def *d,
		      yaml_node_t *v, const char *path, char *err, size_t len)
{
	int ret = 0;

	if (v->type == YAML_SCALAR_NODE) {
		if (yaml_null(v))
			return 0;
		return apply(o, d, scalar(v), v->data.scalar.length, path, v, err, len);
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
			ret = apply(o, d, scalar(item), item->data.scalar.length, path, item,
				    err, len);
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
		char why[256] = "";

		if (!k || !val || k->type != YAML_SCALAR_NODE || val->type != YAML_SCALAR_NODE) {
			snprintf(err, len, "%s:%zu: label: expected KEY: VALUE pairs", path,
				 (k ? k : v)->start_mark.line + 1);
			return OPTION_EUSAGE;
		}
		/* the key as it is, '=' and all: no KEY=VALUE splitting here */
		ret = option_set_label(o, scalar(k), k->data.scalar.length, scalar(val),
				       yaml_null(val) ? 0 : val->data.scalar.length,
				       OPTION_FROM_FILE, why, sizeof(why));
		if (ret)
			snprintf(err, len, "%s:%zu: label: %s", path, k->start_mark.line + 1,
				 why);
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
			const struct option_def *like = d ? NULL : dashed(scalar(k));

			snprintf(err, len, "%s:%zu: %s key '%s'%s%s%s", path,
				 k->start_mark.line + 1, d ? "command-line only" : "unknown",
				 scalar(k), like ? " (did you mean '" : "",
				 like ? like->name : "", like ? "'?)" : "");
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

/* What a path that is not a regular file is, for the error line. */
static const char *file_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a file";
}

/*
 * Read regular file @path whole into *@buf (NUL-terminated, malloc'ed) and
 * *@n. Never blocks on a FIFO or device: those are refused by stat() before
 * opening, and by fstat() of what was opened (non-blocking) in case the path
 * changed in between.
 */
static int read_file(const char *path, char **buf, size_t *n, char *err, size_t len)
{
	struct stat st;
	size_t got = 0;
	char *b;
	int fd;

	if (stat(path, &st)) {
		snprintf(err, len, "%s: cannot read: %s", path, strerror(errno));
		return OPTION_ERUNTIME;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, len, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
		return OPTION_ERUNTIME;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(err, len, "%s: cannot read: %s", path, strerror(errno));
		return OPTION_ERUNTIME;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, len, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
		close(fd);
		return OPTION_ERUNTIME;
	}
	if (st.st_size > CONFIG_MAX_BYTES) {
		snprintf(err, len, "%s: bigger than %d bytes", path, CONFIG_MAX_BYTES);
		close(fd);
		return OPTION_ERUNTIME;
	}
	b = malloc(CONFIG_MAX_BYTES + 2);
	if (!b) {
		snprintf(err, len, "%s: out of memory", path);
		close(fd);
		return OPTION_ERUNTIME;
	}
	/* one byte more than allowed: a file that grew since fstat() */
	while (got <= CONFIG_MAX_BYTES) {
		ssize_t r = read(fd, b + got, CONFIG_MAX_BYTES + 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, len, "%s: cannot read: %s", path, strerror(errno));
			free(b);
			close(fd);
			return OPTION_ERUNTIME;
		}
		if (!r)
			break;
		got += r;
	}
	close(fd);
	if (got > CONFIG_MAX_BYTES) {
		snprintf(err, len, "%s: bigger than %d bytes", path, CONFIG_MAX_BYTES);
		free(b);
		return OPTION_ERUNTIME;
	}
	b[got] = '\0';
	*buf = b;
	*n = got;
	return 0;
}

/* The 1-based line of byte @off of @buf. */
static size_t line_of(const char *buf, size_t off)
{
	size_t line = 1;

	for (size_t i = 0; i < off; i++)
		line += buf[i] == '\n';
	return line;
}

/*
 * The option whose top-level `KEY:` governs byte @off of @buf (the last
 * line at or before it that starts in column 0 with a key), or NULL. Only
 * for naming the key in an error: block style, as profd prints it.
 */
static const struct option_def *key_at(const char *buf, size_t off)
{
	size_t start = off;

	for (;;) {
		char key[64];
		size_t k = 0;

		while (start > 0 && buf[start - 1] != '\n')
			start--;
		if (buf[start] != ' ' && buf[start] != '\t' && buf[start] != '#' &&
		    buf[start] != '-' && buf[start] != '\n' && buf[start] != '\r') {
			const struct option_def *d;
			size_t i = start;

			if (buf[i] == '"' || buf[i] == '\'')
				i++;
			while (k < sizeof(key) - 1 && i < off &&
			       ((buf[i] >= 'a' && buf[i] <= 'z') || buf[i] == '-'))
				key[k++] = buf[i++];
			key[k] = '\0';
			d = option_by_name(key[0] == '-' && key[1] == '-' ? key + 2 : key);
			return d && d->file ? d : NULL;
		}
		if (!start)
			return NULL;
		start--;
	}
}

/* Refuse a file that is not UTF-8: one line with the line and key of the byte. */
static int check_utf8(const char *buf, size_t n, const char *path, char *err, size_t len)
{
	size_t bad = utf8_invalid_at(buf, n);
	const struct option_def *d;

	if (bad == n)
		return 0;
	d = key_at(buf, bad);
	snprintf(err, len, "%s:%zu: %s%snot valid UTF-8 (byte 0x%02x)", path,
		 line_of(buf, bad), d ? d->name : "", d ? ": " : "",
		 (unsigned char)buf[bad]);
	return OPTION_EUSAGE;
}

/* The one line for a libyaml parser error of @p on @buf. */
static int syntax_error(const yaml_parser_t *p, const char *buf, size_t n,
			const char *path, char *err, size_t len)
{
	size_t line = p->problem_mark.line + 1;

	if (p->error == YAML_MEMORY_ERROR) {
		snprintf(err, len, "%s: out of memory", path);
		return OPTION_ERUNTIME;
	}
	/* the reader reports a byte offset, not a mark */
	if (p->error == YAML_READER_ERROR)
		line = line_of(buf, p->problem_offset < n ? p->problem_offset : n);
	snprintf(err, len, "%s:%zu: YAML syntax error: %s", path, line,
		 p->problem ? p->problem : "unreadable");
	return OPTION_EUSAGE;
}

/*
 * Parse @buf as events only, stopping at the first list or mapping nested
 * deeper than CONFIG_MAX_DEPTH: the cost so far is bounded by the depth
 * limit, whatever the file holds. Also reports syntax errors.
 */
static int check_depth(const char *buf, size_t n, const char *path, char *err, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, ret = 0;
	bool done = false;

	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, len, "%s: out of memory", path);
		return OPTION_ERUNTIME;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, n);
	while (!done && !ret) {
		if (!yaml_parser_parse(&parser, &ev)) {
			ret = syntax_error(&parser, buf, n, path, err, len);
			break;
		}
		switch (ev.type) {
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > CONFIG_MAX_DEPTH) {
				snprintf(err, len, "%s:%zu: lists and mappings nested deeper "
					 "than %d levels", path, ev.start_mark.line + 1,
					 CONFIG_MAX_DEPTH);
				ret = OPTION_EUSAGE;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return ret;
}

int config_file_load(struct options *o, const char *path, char *err, size_t len)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	size_t n;
	char *buf;
	int ret;

	ret = read_file(path, &buf, &n, err, len);
	if (ret)
		return ret;
	ret = check_utf8(buf, n, path, err, len);
	if (!ret)
		ret = check_depth(buf, n, path, err, len);
	if (ret) {
		free(buf);
		return ret;
	}
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, len, "%s: out of memory", path);
		free(buf);
		return OPTION_ERUNTIME;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, n);
	if (!yaml_parser_load(&parser, &doc)) {
		ret = syntax_error(&parser, buf, n, path, err, len);
		yaml_parser_delete(&parser);
		free(buf);
		return ret;
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
	free(buf);
	return ret;
}
