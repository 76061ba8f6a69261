/* SPDX-License-Identifier: GPL-2.0 */
/*
 * demangle.h - C++ (Itanium ABI) symbol demangling through libstdc++'s
 * __cxa_demangle.
 */
#ifndef PROFD_SYMBOL_DEMANGLE_H
#define PROFD_SYMBOL_DEMANGLE_H

/*
 * demangle - the demangled form of @name as a malloc'd string the caller
 * frees, or NULL if @name is not a mangled C++ name (or on OOM).
 */
char *demangle(const char *name);

#endif /* PROFD_SYMBOL_DEMANGLE_H */
