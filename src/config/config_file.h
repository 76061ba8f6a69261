/* SPDX-License-Identifier: GPL-2.0 */
/*
 * config_file.h - profd's config file (--config FILE): a YAML mapping
 * whose keys are the long options without "--" (src/config/options.h).
 *
 * Values: a scalar for an option with a value; true/false for a switch
 * (`no-gpu: true`); a number for `verbose`; a list (or a scalar) for the
 * repeatable options `pid`, `debug-pid` and `label`, which also takes a
 * KEY: VALUE mapping. An empty value (`http-address:` or "") leaves the
 * default. Flags given on the command line override the file.
 */
#ifndef PROFD_CONFIG_CONFIG_FILE_H
#define PROFD_CONFIG_CONFIG_FILE_H

#include <stddef.h>

#include "config/options.h"

/*
 * config_file_load - apply the settings of YAML file @path to @o. @path
 * must be a regular file (a FIFO or device is refused, never waited on)
 * of at most 1 MiB of UTF-8 text, lists and mappings nested at most 32
 * deep. Returns 0, or OPTION_EUSAGE / OPTION_ERUNTIME with one line in
 * @err: OPTION_ERUNTIME for "PATH: cannot read: ...", "PATH: not a
 * regular file (a FIFO)", "PATH: bigger than ... bytes"; OPTION_EUSAGE
 * for "PATH:LINE: [KEY: ]not valid UTF-8 ...", "PATH:LINE: YAML syntax
 * error: ...", "PATH:LINE: lists and mappings nested deeper than 32
 * levels", "PATH:LINE: unknown key 'K'", "PATH:LINE: KEY: <what is wrong>".
 */
int config_file_load(struct options *o, const char *path, char *err, size_t errlen);

#endif /* PROFD_CONFIG_CONFIG_FILE_H */
