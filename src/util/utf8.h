/* SPDX-License-Identifier: GPL-2.0 */
/*
 * utf8.h - UTF-8 checking: one sequence rule (utf8_seq_len) for the
 * flame graph's escaping, the NVTX tracer's text clean-up and the OTLP
 * string fields.
 *
 * Owns: the rule that every protobuf `string` profd writes or sends (pprof
 * string table, OTLP) and every option value is valid UTF-8
 * (receivers such as the OpenTelemetry Collector reject a whole request
 * for one bad string), and the repair of strings that are not: NVTX
 * messages, thread names and file paths come from other programs.
 */
#ifndef PROFD_UTIL_UTF8_H
#define PROFD_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/*
 * utf8_seq_len - the length (1-4) of the valid UTF-8 sequence at @s, of
 * which @left bytes may be read, or 0 if @s does not start one (stray
 * continuation byte, overlong form, surrogate, above U+10FFFF, cut short).
 */
static inline size_t utf8_seq_len(const unsigned char *s, size_t left)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (left < len)
		return 0;
	/* second byte ranges that exclude overlongs, surrogates, > U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * utf8_invalid_at - the offset of the first byte of @s (@len bytes, NULs
 * included) that does not start a valid sequence, or @len when all of it
 * is UTF-8.
 */
static inline size_t utf8_invalid_at(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		size_t n = s[i] < 0x80 ? 1 : utf8_seq_len(s + i, len - i);

		if (!n)
			return i;
		i += n;
	}
	return len;
}

/* utf8_valid - whether the NUL-terminated @s is valid UTF-8. */
static inline bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s);

	while (*p) {
		size_t n;

		if (*p < 0x80) {	/* the common case: ASCII */
			p++;
			left--;
			continue;
		}
		n = utf8_seq_len(p, left);
		if (!n)
			return false;
		p += n;
		left -= n;
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
	size_t left = strlen(s);
	char *out = malloc(left * 3 + 1), *o = out;

	if (!out)
		return NULL;
	while (*p) {
		size_t n = utf8_seq_len(p, left);

		left -= n ? n : 1;

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

#endif /* PROFD_UTIL_UTF8_H */
