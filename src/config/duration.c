// SPDX-License-Identifier: GPL-2.0
/*
 * duration.c - durations in option values: "90", "90s", "500ms", "5m",
 * "2h", "1d", "1w" parsed into seconds, and seconds printed back in the
 * largest exact unit (see options.h: parse_duration(), format_duration());
 * short ones ("500us", "1ms") in nanoseconds (parse_duration_ns(),
 * format_duration_ns()).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/options.h"

struct duration_unit {
	const char *unit;
	unsigned long long mult;
};

static const struct duration_unit duration_units[] = {
	{ "w", 7 * 86400ULL }, { "d", 86400 }, { "h", 3600 }, { "m", 60 },
	{ "s", 1 }, { "", 1 },
};

static const struct duration_unit duration_ns_units[] = {
	{ "s", 1000000000ULL }, { "ms", 1000000 }, { "us", 1000 }, { "ns", 1 },
	{ "", 1000000000ULL },
};

/*
 * A decimal number followed by one of @n @units (exactly), times its
 * multiplier, into *@out. 0 or -EINVAL (no digits, overflow, no such unit).
 */
static int parse_scaled(const char *s, const struct duration_unit *units, size_t n,
			unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (v > ULLONG_MAX / units[i].mult)
			return -EINVAL;
		*out = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

int parse_duration(const char *s, unsigned long long *seconds)
{
	unsigned long long ns;
	size_t len = s ? strlen(s) : 0;

	/* sub-second units: whole seconds only ("2000ms") */
	if (len > 2 && s[len - 1] == 's' && strchr("mun", s[len - 2])) {
		if (parse_scaled(s, duration_ns_units, 4, &ns) || ns % 1000000000ULL)
			return -EINVAL;
		*seconds = ns / 1000000000ULL;
		return 0;
	}
	return parse_scaled(s, duration_units,
			    sizeof(duration_units) / sizeof(duration_units[0]), seconds);
}

void format_duration(unsigned long long s, char *out, size_t len)
{
	for (size_t i = 1; i < 5; i++) {	/* days at most: 14d, not 2w */
		if (s && s % duration_units[i].mult == 0) {
			snprintf(out, len, "%llu%s", s / duration_units[i].mult,
				 duration_units[i].unit);
			return;
		}
	}
	snprintf(out, len, "%llus", s);
}

int parse_duration_ns(const char *s, unsigned long long *ns)
{
	return parse_scaled(s, duration_ns_units,
			    sizeof(duration_ns_units) / sizeof(duration_ns_units[0]), ns);
}

void format_duration_ns(unsigned long long ns, char *out, size_t len)
{
	for (size_t i = 0; i < 3; i++) {
		if (ns && ns % duration_ns_units[i].mult == 0) {
			snprintf(out, len, "%llu%s", ns / duration_ns_units[i].mult,
				 duration_ns_units[i].unit);
			return;
		}
	}
	snprintf(out, len, "%lluns", ns);
}
