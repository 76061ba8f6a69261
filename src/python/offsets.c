// SPDX-License-Identifier: GPL-2.0
/*
 * offsets.c - the CPython 3.9 - 3.13 struct layouts (see offsets.h).
 *
 * Owns: one static table, one entry per minor version. Every value is a
 * byte offset (or a size, or an enum value) for x86-64 release builds,
 * with the CPython header and member it comes from. Values were read
 * from the DWARF of builds of 3.9.18, 3.10.13, 3.11.7, 3.12.1 and
 * 3.13.0; tests/test_python_offsets.py checks each one against that
 * DWARF again (gdb), and against a live interpreter (ctypes), so a
 * wrong value here fails a test rather than an unwind.
 *
 * These are internal structs: CPython promises nothing about them, not
 * even within a release series, but in practice a series keeps the
 * layout of the fields below. One entry per minor version rests on that;
 * the test also checks Debian's 3.11.2 against the 3.11 entry.
 */
#include <stddef.h>
#include <string.h>

#include "bpf/unwind_python.h"
#include "python/offsets.h"

#define NONE	PY_OFF_NONE
#define NO_CSTACK	0xff	/* owner_cstack: no FRAME_OWNED_BY_CSTACK */

/*
 * Header paths below are relative to the CPython source tree of the
 * version in question (Include/...). "ob_base" members are omitted from
 * the names: PyObject's ob_refcnt is at 0 and ob_type at 8 in every
 * version (Include/object.h, struct _object), PyVarObject's ob_size at 16.
 */
static const struct py_offsets py_offsets_table[] = {
	{
		.major = 3, .minor = 9,
		.frame_model = PY_FRAMES_OBJECTS,
		.lasti_kind = PY_LASTI_BYTES,
		.linetable_format = PY_LINETABLE_LNOTAB,
		/* Include/internal/pycore_runtime.h: _PyRuntimeState.interpreters.head */
		.runtime_interpreters_head = 32,
		/* Include/internal/pycore_interp.h: struct _is.next, .tstate_head */
		.interp_next = 0,
		.interp_threads_head = 8,
		/* Include/cpython/pystate.h: struct _ts.next, .thread_id, .frame */
		.tstate_next = 8,
		.tstate_thread_id = 176,
		.tstate_native_thread_id = NONE,
		.tstate_frame = 24,
		.cframe_current_frame = NONE,
		/* Include/cpython/frameobject.h: struct _frame.f_code, .f_back, .f_lasti */
		.frame_code = 32,
		.frame_previous = 24,
		.frame_instr = 104,
		.frame_is_entry = NONE,
		.frame_owner = NONE,
		.owner_cstack = NO_CSTACK,
		/* Include/object.h: PyObject.ob_type, PyVarObject.ob_size */
		.ob_type = 8,
		.ob_size = 16,
		/* Include/cpython/code.h: struct PyCodeObject.co_filename,
		 * .co_name, .co_firstlineno, .co_lnotab */
		.code_filename = 104,
		.code_name = 112,
		.code_qualname = NONE,
		.code_firstlineno = 40,
		.code_linetable = 120,
		.code_code_adaptive = NONE,
		.code_firsttraceable = NONE,
		/* Include/cpython/bytesobject.h: PyBytesObject.ob_sval */
		.bytes_sval = 32,
		/* Include/cpython/unicodeobject.h: PyASCIIObject.length, .state,
		 * sizeof(PyASCIIObject) (with wstr), sizeof(PyCompactUnicodeObject) */
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_data = 48,
		.unicode_compact_data = 72,
	},
	{
		.major = 3, .minor = 10,
		.frame_model = PY_FRAMES_OBJECTS,
		.lasti_kind = PY_LASTI_CODEUNITS,
		.linetable_format = PY_LINETABLE_310,
		/* Include/internal/pycore_runtime.h: _PyRuntimeState.interpreters.head */
		.runtime_interpreters_head = 32,
		/* Include/internal/pycore_interp.h: struct _is.next, .tstate_head */
		.interp_next = 0,
		.interp_threads_head = 8,
		/* Include/cpython/pystate.h: struct _ts.next, .thread_id, .frame
		 * (3.10's _ts.cframe, at 48, only holds use_tracing: not a frame) */
		.tstate_next = 8,
		.tstate_thread_id = 176,
		.tstate_native_thread_id = NONE,
		.tstate_frame = 24,
		.cframe_current_frame = NONE,
		/* Include/cpython/frameobject.h: struct _frame.f_code, .f_back,
		 * .f_lasti (int, in code units since 3.10) */
		.frame_code = 32,
		.frame_previous = 24,
		.frame_instr = 96,
		.frame_is_entry = NONE,
		.frame_owner = NONE,
		.owner_cstack = NO_CSTACK,
		/* Include/object.h: PyObject.ob_type, PyVarObject.ob_size */
		.ob_type = 8,
		.ob_size = 16,
		/* Include/cpython/code.h: struct PyCodeObject.co_filename,
		 * .co_name, .co_firstlineno, .co_linetable */
		.code_filename = 104,
		.code_name = 112,
		.code_qualname = NONE,
		.code_firstlineno = 40,
		.code_linetable = 120,
		.code_code_adaptive = NONE,
		.code_firsttraceable = NONE,
		/* Include/cpython/bytesobject.h: PyBytesObject.ob_sval */
		.bytes_sval = 32,
		/* Include/cpython/unicodeobject.h: PyASCIIObject.length, .state,
		 * sizeof(PyASCIIObject) (with wstr), sizeof(PyCompactUnicodeObject) */
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_data = 48,
		.unicode_compact_data = 72,
	},
	{
		.major = 3, .minor = 11,
		.frame_model = PY_FRAMES_IS_ENTRY,
		.lasti_kind = PY_LASTI_PREV_INSTR,
		.linetable_format = PY_LINETABLE_LOCATIONS,
		/* Include/internal/pycore_runtime.h: _PyRuntimeState.interpreters.head */
		.runtime_interpreters_head = 40,
		/* Include/internal/pycore_interp.h: struct _is.next, .threads.head */
		.interp_next = 0,
		.interp_threads_head = 16,
		/* Include/cpython/pystate.h: struct _ts.next, .thread_id,
		 * .native_thread_id, .cframe */
		.tstate_next = 8,
		.tstate_thread_id = 152,
		.tstate_native_thread_id = 160,
		.tstate_frame = 56,
		/* Include/cpython/pystate.h: _PyCFrame.current_frame */
		.cframe_current_frame = 8,
		/* Include/internal/pycore_frame.h: _PyInterpreterFrame.f_code,
		 * .previous, .prev_instr, .is_entry (bool), .owner (char) */
		.frame_code = 32,
		.frame_previous = 48,
		.frame_instr = 56,
		.frame_is_entry = 68,
		.frame_owner = 69,
		.owner_cstack = NO_CSTACK,
		/* Include/object.h: PyObject.ob_type, PyVarObject.ob_size */
		.ob_type = 8,
		.ob_size = 16,
		/* Include/cpython/code.h: _PyCode_DEF(): co_filename, co_name,
		 * co_qualname, co_firstlineno, co_linetable, co_code_adaptive,
		 * _co_firsttraceable */
		.code_filename = 112,
		.code_name = 120,
		.code_qualname = 128,
		.code_firstlineno = 72,
		.code_linetable = 136,
		.code_code_adaptive = 184,
		.code_firsttraceable = 168,
		/* Include/cpython/bytesobject.h: PyBytesObject.ob_sval */
		.bytes_sval = 32,
		/* Include/cpython/unicodeobject.h: PyASCIIObject.length, .state,
		 * sizeof(PyASCIIObject) (with wstr), sizeof(PyCompactUnicodeObject) */
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_data = 48,
		.unicode_compact_data = 72,
	},
	{
		.major = 3, .minor = 12,
		.frame_model = PY_FRAMES_CSTACK_SHIM,
		.lasti_kind = PY_LASTI_PREV_INSTR,
		.linetable_format = PY_LINETABLE_LOCATIONS,
		/* Include/internal/pycore_runtime.h: _PyRuntimeState.interpreters.head */
		.runtime_interpreters_head = 40,
		/* Include/internal/pycore_interp.h: struct _is.next, .threads.head */
		.interp_next = 0,
		.interp_threads_head = 72,
		/* Include/cpython/pystate.h: struct _ts.next, .thread_id,
		 * .native_thread_id, .cframe */
		.tstate_next = 8,
		.tstate_thread_id = 136,
		.tstate_native_thread_id = 144,
		.tstate_frame = 56,
		/* Include/cpython/pystate.h: _PyCFrame.current_frame */
		.cframe_current_frame = 0,
		/* Include/internal/pycore_frame.h: _PyInterpreterFrame.f_code,
		 * .previous, .prev_instr, .owner (char) */
		.frame_code = 0,
		.frame_previous = 8,
		.frame_instr = 56,
		.frame_is_entry = NONE,
		.frame_owner = 70,
		/* Include/internal/pycore_frame.h: enum _frameowner */
		.owner_cstack = 3,
		/* Include/object.h: PyObject.ob_type, PyVarObject.ob_size */
		.ob_type = 8,
		.ob_size = 16,
		/* Include/cpython/code.h: _PyCode_DEF(): co_filename, co_name,
		 * co_qualname, co_firstlineno, co_linetable, co_code_adaptive,
		 * _co_firsttraceable */
		.code_filename = 112,
		.code_name = 120,
		.code_qualname = 128,
		.code_firstlineno = 68,
		.code_linetable = 136,
		.code_code_adaptive = 192,
		.code_firsttraceable = 176,
		/* Include/cpython/bytesobject.h: PyBytesObject.ob_sval */
		.bytes_sval = 32,
		/* Include/cpython/unicodeobject.h: PyASCIIObject.length, .state,
		 * sizeof(PyASCIIObject) (wstr gone), sizeof(PyCompactUnicodeObject) */
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_data = 40,
		.unicode_compact_data = 56,
	},
	{
		.major = 3, .minor = 13,
		.frame_model = PY_FRAMES_CSTACK_SHIM,
		.lasti_kind = PY_LASTI_INSTR_PTR,
		.linetable_format = PY_LINETABLE_LOCATIONS,
		/* Include/internal/pycore_runtime.h: _PyRuntimeState.interpreters.head */
		.runtime_interpreters_head = 632,
		/* Include/internal/pycore_interp.h: struct _is.next, .threads.head */
		.interp_next = 7264,
		.interp_threads_head = 7344,
		/* Include/cpython/pystate.h: struct _ts.next, .thread_id,
		 * .native_thread_id, .current_frame (_PyCFrame is gone) */
		.tstate_next = 8,
		.tstate_thread_id = 152,
		.tstate_native_thread_id = 160,
		.tstate_frame = 72,
		.cframe_current_frame = NONE,
		/* Include/internal/pycore_frame.h: _PyInterpreterFrame.f_executable,
		 * .previous, .instr_ptr, .owner (char) */
		.frame_code = 0,
		.frame_previous = 8,
		.frame_instr = 56,
		.frame_is_entry = NONE,
		.frame_owner = 70,
		/* Include/internal/pycore_frame.h: enum _frameowner */
		.owner_cstack = 3,
		/* Include/object.h: PyObject.ob_type, PyVarObject.ob_size */
		.ob_type = 8,
		.ob_size = 16,
		/* Include/cpython/code.h: _PyCode_DEF(): co_filename, co_name,
		 * co_qualname, co_firstlineno, co_linetable, co_code_adaptive,
		 * _co_firsttraceable */
		.code_filename = 112,
		.code_name = 120,
		.code_qualname = 128,
		.code_firstlineno = 68,
		.code_linetable = 136,
		.code_code_adaptive = 200,
		.code_firsttraceable = 184,
		/* Include/cpython/bytesobject.h: PyBytesObject.ob_sval */
		.bytes_sval = 32,
		/* Include/cpython/unicodeobject.h: PyASCIIObject.length, .state,
		 * sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject) */
		.unicode_length = 16,
		.unicode_state = 32,
		.unicode_ascii_data = 40,
		.unicode_compact_data = 56,
	},
};

/*
 * py_offsets_find - see offsets.h. A linear search of five entries; the
 * caller keeps the pointer (static storage, never freed).
 */
const struct py_offsets *py_offsets_find(unsigned int major, unsigned int minor)
{
	size_t i;

	for (i = 0; i < sizeof(py_offsets_table) / sizeof(py_offsets_table[0]); i++) {
		const struct py_offsets *o = &py_offsets_table[i];

		if (o->major == major && o->minor == minor)
			return o;
	}
	return NULL;
}

void py_offsets_bpf_state(const struct py_offsets *o, struct profd_python_proc *v)
{
	memset(v, 0, sizeof(*v));
	v->runtime_interpreters_head = o->runtime_interpreters_head;
	v->interp_next = o->interp_next;
	v->interp_threads_head = o->interp_threads_head;
	v->tstate_next = o->tstate_next;
	v->tstate_thread_id = o->tstate_thread_id;
	v->tstate_frame = o->tstate_frame;
	v->cframe_current_frame = o->cframe_current_frame;
	v->frame_code = o->frame_code;
	v->frame_previous = o->frame_previous;
	v->frame_instr = o->frame_instr;
	v->frame_is_entry = o->frame_is_entry;
	v->frame_owner = o->frame_owner;
	v->frame_model = o->frame_model;
	v->owner_cstack = o->owner_cstack;
	v->frame_read_size = 0;
	v->tstate_read_size = 0;
	{
		uint16_t name = o->code_qualname != PY_OFF_NONE ? o->code_qualname
								: o->code_name;
		uint16_t lo = o->code_firstlineno, hi = o->code_firstlineno + 4;

		if (name < lo)
			lo = name;
		if (o->code_filename < lo)
			lo = o->code_filename;
		if (name + 8 > hi)
			hi = name + 8;
		if (o->code_filename + 8 > hi)
			hi = o->code_filename + 8;
		v->code_print_off = lo;
		v->code_print_size = hi - lo;
		v->code_firstlineno_rel = o->code_firstlineno - lo;
		v->code_name_rel = name - lo;
		v->code_filename_rel = o->code_filename - lo;
	}
	{
		uint16_t f[] = { o->frame_code, o->frame_previous, o->frame_instr,
				 o->frame_is_entry, o->frame_owner };
		uint16_t t[] = { o->tstate_next, o->tstate_thread_id, o->tstate_frame };

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			if (f[i] != PY_OFF_NONE && f[i] + 8 > v->frame_read_size)
				v->frame_read_size = f[i] + 8;
		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
			if (t[i] + 8 > v->tstate_read_size)
				v->tstate_read_size = t[i] + 8;
	}
}

bool py_offsets_bpf_usable(const struct profd_python_proc *v)
{
	return v->frame_read_size <= PROFD_PY_FRAME_BUF &&
	       v->tstate_read_size <= PROFD_PY_TSTATE_BUF &&
	       v->code_print_size <= PROFD_PY_PRINT_BUF;
}
