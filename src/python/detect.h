/* SPDX-License-Identifier: GPL-2.0 */
/*
 * detect.h - is this ELF object a CPython interpreter, and which?
 *
 * Owns: recognising CPython by its symbols, never by file name: an
 * object that defines `_PyRuntime` and `_PyEval_EvalFrameDefault` (in
 * .dynsym or .symtab) is an interpreter, whether it is python3.X, a
 * renamed copy, a statically linked executable or libpython3.X.so. The
 * version comes from the `Py_Version` data symbol (3.11+, PY_VERSION_HEX)
 * or, before 3.11, from the PY_VERSION string ("3.9.18") that
 * Py_GetVersion() formats (detect.c says why a plain search of .rodata
 * is not enough).
 */
#ifndef PROFD_PYTHON_DETECT_H
#define PROFD_PYTHON_DETECT_H

#include <stdint.h>

/* What profd needs of one interpreter object. Addresses are ELF virtual
 * addresses (add the load bias for runtime addresses). 0 = absent. */
struct py_binary {
	unsigned int major, minor, micro;
	uint64_t runtime;		/* _PyRuntime */
	uint64_t eval_start;		/* _PyEval_EvalFrameDefault */
	uint64_t eval_end;		/*   start + st_size */
	uint64_t eval_cold_start;	/* _PyEval_EvalFrameDefault.cold (.symtab), or 0 */
	uint64_t eval_cold_end;
	uint64_t code_type;		/* PyCode_Type */
	uint64_t unicode_type;		/* PyUnicode_Type */
	uint64_t bytes_type;		/* PyBytes_Type */
};

/*
 * py_detect_fd - inspect the ELF object open on @fd (not taken over; read
 * with pread, the offset is left alone). Returns 1 and fills @out when it
 * is a CPython interpreter whose version was found, 0 when it is not an
 * interpreter (or not ELF), -ENOTSUP for an interpreter whose version
 * is unknown or unreadable (@out->runtime set, version 0), or another
 * negative errno on a read error (-ENOSYS: libelf unusable). Only
 * regular files are read (anything else is 0). Never trusts sizes from
 * the file: a corrupt object is 0, -ENOEXEC or -ENOTSUP (or, when the
 * damage spares what is read, 1), never a crash. Thread-safe (no state
 * kept between calls). Cost for an ELF file that is not Python: its
 * section headers and symbol string tables are read once (see detect.c).
 */
int py_detect_fd(int fd, struct py_binary *out);

/* py_detect_path - py_detect_fd() on open(@path). Same returns (-errno of open). */
int py_detect_path(const char *path, struct py_binary *out);

#endif /* PROFD_PYTHON_DETECT_H */
