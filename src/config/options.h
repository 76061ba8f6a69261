/* SPDX-License-Identifier: GPL-2.0 */
/*
 * options.h - every profd setting, once: its name (the long flag without
 * "--" and the config file key), argument, help text, parser and printer.
 *
 * Owns: the option table that the command line (src/main.c, argp), the
 * config file (config_file.c, YAML) and --print-config all use, so a
 * setting cannot exist in one and not the others; value parsing and
 * validation with one message per bad value; the storage behind the
 * strings and lists struct agent_config points at.
 */
#ifndef PROFD_CONFIG_OPTIONS_H
#define PROFD_CONFIG_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "config/config.h"

#define OPTIONS_MAX_PIDS 1024

/* The settings of one run and the storage behind them. */
struct options {
	struct agent_config cfg;
	bool exec;			/* `profd exec`: arguments start CMD */
	bool print_config;		/* --print-config: print and exit */
	pid_t pids[OPTIONS_MAX_PIDS];
	pid_t debug_pids[AGENT_MAX_DEBUG_PIDS];
	struct agent_label labels[AGENT_MAX_LABELS];
	/* per option: its value came from the config file (a flag replaces
	 * a list then, instead of adding to it) */
	bool from_file[64];
	/* strings the options own (config file values, label copies) */
	char **owned;
	size_t nowned, cap_owned;
};

/* Where a value comes from: flags add to lists, the file sets them. */
enum option_source {
	OPTION_FROM_FLAG,
	OPTION_FROM_FILE,
};

/* Errors of option_set(). */
#define OPTION_EUSAGE	1	/* bad value: usage error (exit 64) */
#define OPTION_ERUNTIME	2	/* good syntax, wrong for this machine (exit 1) */

enum option_kind {
	OPTION_VALUE,	/* takes a value */
	OPTION_FLAG,	/* boolean: no value on the command line; true/false in the file */
	OPTION_COUNT,	/* repeatable switch (-v -v); a number in the file */
	OPTION_LIST,	/* repeatable value; a list (or KEY: VALUE map) in the file */
};

/* --help sections, in this order (titles: option_group_title()). */
enum {
	OPTION_GROUP_SAMPLING = 1,
	OPTION_GROUP_UNWINDING,
	OPTION_GROUP_SERVICE,
	OPTION_GROUP_GPU,
	OPTION_GROUP_MAX,
};

/* option_group_title - the --help heading of section @g. */
const char *option_group_title(int g);

struct option_def {
	const char *name;	/* long flag without "--"; the config file key */
	int key;		/* argp key: a short option letter or > 0xff */
	const char *arg;	/* argument name in --help; NULL for flags */
	enum option_kind kind;
	bool file;		/* may appear in the config file */
	int group;		/* --help section: OPTION_GROUP_* */
	const char *doc;	/* --help text */
};

/* options_init - defaults for every setting. */
void options_init(struct options *o);

/* options_free - free what the options own (strings from the file). */
void options_free(struct options *o);

/* option_table - the table (terminated by a NULL name) and its length. */
const struct option_def *option_table(size_t *n);

/* option_by_name - the option named @name (no "--"), or NULL. */
const struct option_def *option_by_name(const char *name);

/* option_by_key - the option with argp key @key, or NULL. */
const struct option_def *option_by_key(int key);

/*
 * option_set - apply @value (NULL for a flag/count switch from the
 * command line) to option @d of @o. @value is copied when kept. Every
 * value must be valid UTF-8; --label's KEY=VALUE follows the rules of
 * option_set_label(); --http-address is checked with the HTTP server's
 * own parser (metrics_parse_address()). A -v from the command line after
 * a file's `verbose` starts the count again from 0 (flags override the
 * file). Returns 0, or OPTION_EUSAGE / OPTION_ERUNTIME with one line
 * (without the option name or "error:") in @err.
 */
int option_set(struct options *o, const struct option_def *d, const char *value,
	       enum option_source src, char *err, size_t errlen);

/*
 * option_set_label - add label @key=@value (@klen and @vlen bytes) as
 * option_set() does for "--label KEY=VALUE", for a config file's
 * `label: {KEY: VALUE}` whose key could hold '=' and whose strings could
 * hold a NUL ("\0"). KEY: letters, digits, '_', '.', '-', starting with
 * a letter or '_', not one of the labels profd sets itself (pid, comm,
 * stall_reason, ...) nor an OTLP resource attribute it sets (host.name,
 * service.name, ...), not given twice in one list. VALUE: 1-1024 bytes of UTF-8 without control
 * characters (NUL included; pprof cannot carry an empty string label).
 * Returns 0, or OPTION_EUSAGE / OPTION_ERUNTIME with one line in @err.
 */
int option_set_label(struct options *o, const char *key, size_t klen,
		     const char *value, size_t vlen, enum option_source src,
		     char *err, size_t errlen);

/*
 * options_finish - checks across options (e.g. exec and --pid) after
 * everything was set. Returns 0 or OPTION_EUSAGE with a reason in @err.
 */
int options_finish(struct options *o, char *err, size_t errlen);

/*
 * options_print_yaml - write every setting that may be in a config file
 * as a YAML document to @f (a config file that gives the same settings:
 * `profd --config FILE --print-config` prints it again). Returns 0 or -EIO.
 */
int options_print_yaml(const struct options *o, FILE *f);

/*
 * parse_duration - "90", "90s", "500ms", "5m", "2h", "1d", "1w" into
 * seconds (ms rounded up to whole seconds is not allowed: must be a
 * multiple of 1000 ms). Returns 0 or -EINVAL.
 */
int parse_duration(const char *s, unsigned long long *seconds);

/* format_duration - @s seconds in the largest exact unit ("1m", "90s"). */
void format_duration(unsigned long long s, char *out, size_t len);

/*
 * parse_duration_ns - "250us", "1ms", "2s", "100ns" (a bare number:
 * seconds) into nanoseconds. Returns 0 or -EINVAL.
 */
int parse_duration_ns(const char *s, unsigned long long *ns);

/* format_duration_ns - @ns in the largest exact unit ("1ms", "250us"). */
void format_duration_ns(unsigned long long ns, char *out, size_t len);

#endif /* PROFD_CONFIG_OPTIONS_H */
