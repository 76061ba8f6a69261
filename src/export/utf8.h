/* SPDX-License-Identifier: GPL-2.0 */
/*
 * utf8.h - UTF-8 checking for OTLP string fields.
 *
 * Owns: the rule that every protobuf `string` profd sends is valid UTF-8
 * (receivers such as the OpenTelemetry Collector reject a whole request
 * for one bad string), and the repair of strings that are not: NVTX
 * messages, thread names and file paths come from other programs.
 */
#ifndef PROFD_EXPORT_UTF8_H
#define PROFD_EXPORT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/*
 * utf8_seq - the length (1-4) of the valid UTF-8 sequence at @s (before
 * the NUL), or 0 if @s does not start one (stray continuation byte,
 * overlong form, surrogate, above U+10FFFF, truncated).
 */
static inline size_t utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80 || (c == 0xf0 && s[1] < 0x90) ||
		    (c == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

/* utf8_valid - whether the NUL-terminated @s is valid UTF-8. */
static inline bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n;

		if (*p < 0x80) {	/* the common case: ASCII */
			p++;
			continue;
		}
		n = utf8_seq(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

/*
 * utf8_repair - a malloc'ed copy of @s with every byte that starts no
 * valid sequence replaced by U+FFFD. NULL on out of memory.
 */
static inline char *utf8_repair(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		return NULL;
	while (*p) {
		size_t n = utf8_seq(p);

		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		}
	}
	*o = 0;
	return out;
}

#endif /* PROFD_EXPORT_UTF8_H */
