// SPDX-License-Identifier: GPL-2.0
/*
 * demangle.c - C++ and Rust demangling (see demangle.h).
 *
 * Owns: nothing but the calls. C++: __cxa_demangle, the Itanium C++ ABI
 * entry point every libstdc++ exports (declaring it here keeps the rest of
 * profd in C). Rust: libiberty's rust_demangle (binutils' own, as perf and
 * c++filt use), for v0 names ("_R...") and legacy ones ("_ZN...17h<hash>E",
 * which __cxa_demangle would name with the hash as a last path element);
 * it prints no hashes or disambiguators. Both return malloc'd memory, so
 * the caller frees with free().
 */
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "symbol/demangle.h"

char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
		     int *status);

static char *cxa(const char *name)
{
	int status = 0;
	char *out;

	/* Rust first: a legacy Rust name is also a valid Itanium one */
	out = rust_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	if (out)
		return out;
	if (name[1] != 'Z')
		return NULL;
	out = __cxa_demangle(name, NULL, NULL, &status);

	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/*
 * demangle - see demangle.h. Only names starting with "_Z" or "_R" are
 * tried. A
 * symbol version suffix ("_ZNSt6thread4joinEv@@GLIBCXX_3.4", as .symtab
 * names compat aliases) is kept as is after the demangled part.
 */
char *demangle(const char *name)
{
	const char *at;
	char *base, *dem, *out;
	size_t blen, dlen, slen;

	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	at = strchr(name, '@');
	if (!at)
		return cxa(name);
	blen = (size_t)(at - name);
	base = strndup(name, blen);
	if (!base)
		return NULL;
	dem = cxa(base);
	free(base);
	if (!dem)
		return NULL;
	dlen = strlen(dem);
	slen = strlen(at);
	out = realloc(dem, dlen + slen + 1);
	if (!out) {
		free(dem);
		return NULL;
	}
	memcpy(out + dlen, at, slen + 1);
	return out;
}
