/* SPDX-License-Identifier: GPL-2.0 */
/*
 * offsets.h - CPython struct layouts, by minor version (3.9 - 3.13).
 *
 * Owns: the one table of the byte offsets profd reads in a CPython
 * process: the runtime -> interpreter -> thread state -> frame chain the
 * BPF unwinder walks (turned into its struct profd_python_proc state by
 * py_offsets_bpf_state()), and the code,
 * bytes and str object fields user space reads to name a frame. x86-64,
 * release builds (no Py_DEBUG / Py_TRACE_REFS). Sources: CPython's headers
 * of each version (Include/cpython/pystate.h, Include/internal/
 * pycore_frame.h, pycore_interp.h, pycore_runtime.h, Include/cpython/
 * code.h, unicodeobject.h, bytesobject.h), checked against the DWARF of
 * builds of each version by tests/test_python_offsets.py.
 */
#ifndef PROFD_PYTHON_OFFSETS_H
#define PROFD_PYTHON_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

/* An absent field (this version has no such member). */
#define PY_OFF_NONE 0xffff

/* How frames are linked and how a frame's position is stored. */
enum py_frame_model {
	/* 3.9, 3.10: PyFrameObject linked by f_back; every frame runs in its
	 * own _PyEval_EvalFrameDefault call; f_lasti is an int. */
	PY_FRAMES_OBJECTS = 1,
	/* 3.11: _PyInterpreterFrame linked by previous; one eval call runs
	 * frames up to and including the one with is_entry set; prev_instr
	 * is a pointer into the code object's co_code_adaptive. */
	PY_FRAMES_IS_ENTRY = 2,
	/* 3.12, 3.13: as 3.11, but each eval call pushes a shim frame owned
	 * by the C stack (owner == FRAME_OWNED_BY_CSTACK) below its frames;
	 * 3.13 keeps the position in instr_ptr (see py_lasti_kind). */
	PY_FRAMES_CSTACK_SHIM = 3,
};

/*
 * Units of struct py_offsets.frame_instr's value. For a frame suspended
 * in a call, each gives the offset of that call instruction as
 * frame.f_lasti reports it (bytes from the start of the bytecode):
 * BYTES the int itself, CODEUNITS the int * 2, PREV_INSTR and INSTR_PTR
 * pointer - (code object + code_code_adaptive); tests/test_python_offsets.py
 * checks this on live interpreters.
 */
enum py_lasti_kind {
	PY_LASTI_BYTES = 1,	/* 3.9: int f_lasti, byte offset */
	PY_LASTI_CODEUNITS = 2,	/* 3.10: int f_lasti, index of 2-byte code units */
	PY_LASTI_PREV_INSTR = 3,/* 3.11, 3.12: pointer to the last started code unit */
	PY_LASTI_INSTR_PTR = 4,	/* 3.13: pointer to the code unit being executed
				 * (a caller's: its CALL, as for PREV_INSTR) */
};

/* Format of the code object's line table (see linetable.h). */
enum py_linetable_format {
	PY_LINETABLE_LNOTAB = 1,	/* 3.9 co_lnotab */
	PY_LINETABLE_310 = 2,		/* 3.10 co_linetable */
	PY_LINETABLE_LOCATIONS = 3,	/* 3.11+ co_linetable (PEP 657) */
};

struct py_offsets {
	uint8_t major, minor;
	enum py_frame_model frame_model;
	enum py_lasti_kind lasti_kind;
	enum py_linetable_format linetable_format;

	/* _PyRuntimeState */
	uint16_t runtime_interpreters_head;	/* interpreters.head */
	/* PyInterpreterState */
	uint16_t interp_next;
	uint16_t interp_threads_head;		/* tstate_head (3.9/3.10), threads.head */
	/* PyThreadState */
	uint16_t tstate_next;
	uint16_t tstate_thread_id;		/* pthread_self() of the thread */
	uint16_t tstate_native_thread_id;	/* kernel tid; PY_OFF_NONE before 3.11 */
	uint16_t tstate_frame;			/* frame (3.9/3.10), cframe (3.11/3.12),
						 * current_frame (3.13) */
	/* _PyCFrame (3.11/3.12); PY_OFF_NONE when tstate_frame is the frame */
	uint16_t cframe_current_frame;
	/* PyFrameObject (3.9/3.10) or _PyInterpreterFrame (3.11+) */
	uint16_t frame_code;			/* f_code, f_executable (3.13) */
	uint16_t frame_previous;		/* f_back, previous */
	uint16_t frame_instr;			/* f_lasti, prev_instr, instr_ptr */
	uint16_t frame_is_entry;		/* 3.11 only, else PY_OFF_NONE */
	uint16_t frame_owner;			/* 3.11+, else PY_OFF_NONE */
	uint8_t owner_cstack;			/* FRAME_OWNED_BY_CSTACK (3.12+), else 0xff */

	/* PyObject / PyVarObject */
	uint16_t ob_type;
	uint16_t ob_size;
	/* PyCodeObject */
	uint16_t code_filename;
	uint16_t code_name;
	uint16_t code_qualname;			/* 3.11+, else PY_OFF_NONE */
	uint16_t code_firstlineno;		/* int */
	uint16_t code_linetable;		/* co_lnotab (3.9), co_linetable */
	uint16_t code_code_adaptive;		/* 3.11+: inline bytecode, else PY_OFF_NONE */
	uint16_t code_firsttraceable;		/* 3.11+: int _co_firsttraceable, else PY_OFF_NONE */
	/* PyBytesObject */
	uint16_t bytes_sval;			/* ob_sval */
	/* PyASCIIObject / PyCompactUnicodeObject */
	uint16_t unicode_length;
	uint16_t unicode_state;
	uint16_t unicode_ascii_data;		/* sizeof(PyASCIIObject) */
	uint16_t unicode_compact_data;		/* sizeof(PyCompactUnicodeObject) */
};

/*
 * py_offsets_find - the layout of CPython @major.@minor, or NULL when the
 * version is not supported. The result is static (never freed).
 */
const struct py_offsets *py_offsets_find(unsigned int major, unsigned int minor);

struct profd_python_proc;

/*
 * py_offsets_bpf_state - the CPython walker's runtime_procs state
 * (bpf/unwind_python.h) for a version of offsets @o: the offsets the walk
 * reads, the sizes of its frame and thread state reads, and where the
 * code object's fingerprint fields lie. The runtime address (@v->runtime)
 * is left 0 for the caller.
 */
void py_offsets_bpf_state(const struct py_offsets *o, struct profd_python_proc *v);

/*
 * py_offsets_bpf_usable - whether the walker can use @v: every field it
 * reads lies inside its read buffers (PROFD_PY_FRAME_BUF,
 * PROFD_PY_TSTATE_BUF, PROFD_PY_PRINT_BUF).
 */
bool py_offsets_bpf_usable(const struct profd_python_proc *v);

#endif /* PROFD_PYTHON_OFFSETS_H */
