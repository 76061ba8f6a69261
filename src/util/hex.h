/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hex.h - one hexadecimal digit's value.
 */
#ifndef PROFD_UTIL_HEX_H
#define PROFD_UTIL_HEX_H

/* hex_digit - the value (0-15) of hex digit @c, either case; -1 if none. */
static inline int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif /* PROFD_UTIL_HEX_H */
