/* SPDX-License-Identifier: GPL-2.0 */
/*
 * demangle.h - symbol demangling: C++ (Itanium ABI) through libstdc++'s
 * __cxa_demangle, Rust (v0 and legacy) through libiberty's rust_demangle.
 */
#ifndef PROFD_SYMBOL_DEMANGLE_H
#define PROFD_SYMBOL_DEMANGLE_H

/*
 * demangle - the demangled form of @name as a malloc'd string the caller
 * frees, or NULL if @name is not a mangled C++ or Rust name (or on OOM).
 * A symbol version suffix ("@@GLIBCXX_3.4") is kept after it.
 */
char *demangle(const char *name);

#endif /* PROFD_SYMBOL_DEMANGLE_H */
