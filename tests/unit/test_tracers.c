// SPDX-License-Identifier: GPL-2.0
/*
 * test_tracers.c - unit tests of --tracers (src/config/runtimes.c and its
 * option in options.c): the names are the runtime registry's (every
 * runtime_registry[] entry is a tracer of the same name and id, "native"
 * is id 0), the default walks every runtime, a list replaces the default
 * and later values add, native is implied, unknown and empty names are
 * usage errors, and --no-python-unwinding still turns CPython off,
 * whatever --tracers says. Prints one ok/FAIL line per check; exit status
 * 1 on any failure. Run by tests/test_config.py.
 */
#include <string.h>

#include "check.h"
#include "config/options.h"
#include "config/runtimes.h"
#include "runtime/runtime.h"

/* option_set() of --tracers @value from the command line into @o. */
static int tracers(struct options *o, const char *value, char *err, size_t len)
{
	return option_set(o, option_by_name("tracers"), value, OPTION_FROM_FLAG, err, len);
}

/* How many runtimes @o walks. */
static unsigned int walked(const struct options *o)
{
	unsigned int n = 0;

	for (unsigned int id = 0; id <= PROFD_RUNTIME_END + 1; id++)
		n += config_runtime_enabled(&o->cfg, id);
	return n;
}

int main(void)
{
	static struct options o;
	char err[320];
	int ret;

	/* the names are the registry's */
	CHECK(!strcmp(config_tracer_name(0), "native") && config_tracer_id("native", 6) == 0,
	      "native is tracer 0");
	for (unsigned int i = 0; runtime_registry[i]; i++) {
		const struct runtime_ops *ops = runtime_registry[i];

		CHECK(config_tracer_name(ops->id) && !strcmp(config_tracer_name(ops->id), ops->name) &&
		      config_tracer_id(ops->name, strlen(ops->name)) == (int)ops->id,
		      "runtime %s (id %u) is the tracer of that name", ops->name, ops->id);
		CHECK(strstr(CONFIG_TRACER_NAMES, ops->name), "--help lists %s (%s)", ops->name,
		      CONFIG_TRACER_NAMES);
	}
	CHECK(!config_tracer_name(PROFD_RUNTIME_END) && config_tracer_id("pytho", 5) < 0 &&
	      config_tracer_id("Python", 6) < 0 && config_tracer_id("", 0) < 0,
	      "no tracer past the registry, no prefix, exact case");
	CHECK(config_tracers_all() == (1u << PROFD_RUNTIME_END) - 1, "all: native and every runtime");

	/* the default: every runtime */
	options_init(&o);
	CHECK(walked(&o) == PROFD_RUNTIME_COUNT && !config_runtime_enabled(&o.cfg, 0),
	      "default: the %u runtimes, no runtime 0", walked(&o));

	/* native alone: no runtime */
	ret = tracers(&o, "native", err, sizeof(err));
	CHECK(!ret && walked(&o) == 0 && o.cfg.tracers == 1, "--tracers native: no runtime");
	/* a later value adds */
	ret = tracers(&o, "python", err, sizeof(err));
	CHECK(!ret && config_runtime_enabled(&o.cfg, PROFD_RUNTIME_CPYTHON) && walked(&o) == 1,
	      "--tracers native --tracers python: python");
	options_free(&o);

	/* native implied, spaces allowed, duplicates harmless */
	options_init(&o);
	ret = tracers(&o, " python , python", err, sizeof(err));
	CHECK(!ret && (o.cfg.tracers & 1) && walked(&o) == 1, "python alone: native implied");

	/* the old switch still turns CPython off, in either order */
	option_set(&o, option_by_name("no-python-unwinding"), NULL, OPTION_FROM_FLAG,
		   err, sizeof(err));
	CHECK(!config_runtime_enabled(&o.cfg, PROFD_RUNTIME_CPYTHON),
	      "--tracers python --no-python-unwinding: python off");
	options_free(&o);
	options_init(&o);
	option_set(&o, option_by_name("no-python-unwinding"), NULL, OPTION_FROM_FLAG,
		   err, sizeof(err));
	CHECK(!config_runtime_enabled(&o.cfg, PROFD_RUNTIME_CPYTHON) &&
	      walked(&o) == PROFD_RUNTIME_COUNT - 1,
	      "--no-python-unwinding alone: every other runtime still walked");
	options_free(&o);

	/* errors: one line, a usage error, the setting unchanged */
	options_init(&o);
	static const char *const bad[] = {
		"cobol", "native,cobol", "", ",", "native,", ",python", "native,,python",
		"NATIVE", "native python", "all", "\x01", NULL,
	};
	for (int i = 0; bad[i]; i++) {
		err[0] = '\0';
		ret = tracers(&o, bad[i], err, sizeof(err));
		CHECK(ret == OPTION_EUSAGE && err[0] && !strchr(err, '\n') &&
		      walked(&o) == PROFD_RUNTIME_COUNT,
		      "'%s' refused: %s", bad[i][0] == 1 ? "^A" : bad[i], err);
	}
	ret = tracers(&o, "cobol", err, sizeof(err));
	CHECK(strstr(err, "'cobol'") && strstr(err, CONFIG_TRACER_NAMES),
	      "the message names the bad name and the known ones: %s", err);
	options_free(&o);

	/* the file's list is replaced by a flag's, not added to */
	options_init(&o);
	option_set(&o, option_by_name("tracers"), "native", OPTION_FROM_FILE, err, sizeof(err));
	option_set(&o, option_by_name("tracers"), "python", OPTION_FROM_FILE, err, sizeof(err));
	CHECK(walked(&o) == 1, "file: [native, python] is python");
	ret = tracers(&o, "native", err, sizeof(err));
	CHECK(!ret && walked(&o) == 0, "a flag replaces the file's list");
	options_free(&o);

	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
