/* SPDX-License-Identifier: GPL-2.0 */
/*
 * frames.h - naming the V8 frame at a frame pointer of a stopped thread,
 * from user space, through the layout the metadata gave (metadata.h).
 *
 * Owns: the reads from one frame of a live process (remote.h: reads that
 * time out) to a name: the frame's context-or-marker and function slots;
 * a typed frame (a Smi marker: entry, exit, stub, builtin frames) gives
 * its frame type; a JS frame (interpreted, baseline, optimized; the
 * context slot a Context, the function slot a JSFunction) gives
 *   JSFunction::shared -> SharedFunctionInfo
 *     ::name_or_scope_info -> the name (a String, or a ScopeInfo's
 *       function variable name, else its inferred name: V8's
 *       SharedFunctionInfo::DebugName(), what Error().stack shows),
 *     ::script_or_debug_info -> Script::name (the file),
 * and, for an interpreted frame, the line: the frame's BytecodeArray and
 * bytecode offset (or the interpreter's offset register, for the leaf),
 * the BytecodeArray's source position table (V8's
 * AbstractCode::SourcePosition(): the last entry at or before the
 * offset), the position's line through Script::line_ends (binary search
 * as Script::GetPositionInfo(); plus Script::line_offset) or, where
 * V8 has not computed the line ends yet, by counting line terminators in
 * the Script's source up to the position.
 *
 * Every read is checked: heap object tags, the map's instance type of
 * every object followed, Smi tags, lengths and offsets against their
 * object; strings are read only as sequential (one- or two-byte), cons,
 * thin and sliced strings, at most V8_NAME_MAX / V8_FILE_MAX bytes of
 * UTF-8 and V8_STRING_DEPTH levels deep. What does not check out gives
 * no name (counted), never a guess. Lines of optimized frames and their
 * inlined functions: code.h (from the sample's pc, not from a frame
 * here); this reader gives compiled frames line 0.
 *
 * Threads: the caller's (remote.h: one caller per reader at a time).
 */
#ifndef PROFD_V8_FRAMES_H
#define PROFD_V8_FRAMES_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include "v8/metadata.h"

struct remote_reader;

#define V8_NAME_MAX	256	/* bytes of a function name, with its NUL */
#define V8_FILE_MAX	1024	/* bytes of a file name, with its NUL */
#define V8_STRING_DEPTH	8	/* cons/thin/sliced levels followed */
#define V8_POSITIONS_MAX	(256u << 10)	/* bytes of a source position table read */
#define V8_SOURCE_SCAN_MAX	(16u << 20)	/* characters of a source counted for a line */

/* One process's V8: where to read and how. */
struct v8_reader {
	struct remote_reader *rr;
	pid_t pid;
	const struct v8_layout *l;
};

/* What the code at the frame's pc is, as the caller knows it. */
enum v8_code {
	V8_CODE_OTHER,		/* JIT code, builtins: no line read */
	V8_CODE_INTERPRETED,	/* the interpreter (entry trampoline, bytecode handlers) */
};

enum v8_frame_kind {
	V8_FRAME_NONE,		/* not a V8 frame, or its slots did not check out */
	V8_FRAME_TYPED,		/* a typed frame: .type */
	V8_FRAME_JS,		/* a JS function's frame: .function, .name, .file, .line */
};

struct v8_frame {
	enum v8_frame_kind kind;
	int64_t type;			/* V8_FRAME_TYPED: StackFrame::Type */
	uint64_t function;		/* V8_FRAME_JS: the JSFunction (tagged) */
	char name[V8_NAME_MAX];		/* "" when anonymous or unread (name_err) */
	char file[V8_FILE_MAX];		/* "" when none (a builtin) or unread (file_err) */
	int line;			/* 1-based; 0 when not read (line_err) */
	int name_err, file_err, line_err;	/* 0, or why not read (-errno) */
};

/*
 * v8_read_frame - read the frame whose frame pointer is @fp in @r's
 * process into @out. @code says what the frame's pc runs; @live_offset
 * is, for the leaf frame of an interpreted function whose pc is in the
 * interpreter, the value of V8's bytecode offset register
 * (v8dbg_InterpreterBytecodeOffsetRegister, as the frame keeps it:
 * the offset plus BytecodeArray's header, less the heap object tag), or
 * -1 to use the frame's slot (valid once the frame called out).
 * Returns 0 with @out filled (kind NONE when the slots did not check out:
 * counted in v8_frame_unverified), or a negative errno when the frame's
 * slots could not be read (the process is gone, -ESRCH; unmapped, -EFAULT;
 * ...: counted in v8_read_errors). Parts that cannot be read leave their
 * field empty and set its *_err (each counted).
 */
int v8_read_frame(const struct v8_reader *r, uint64_t fp, enum v8_code code,
		  int64_t live_offset, struct v8_frame *out);

/*
 * What src/v8/merge.c names after the sampled frame is gone, from the
 * objects BPF recorded (bpf/unwind_v8.h), with the same checks:
 *
 * v8_object_type - the instance type of heap object @tagged (its map's).
 * v8_object_field - the tagged word at byte @off of heap object @tagged.
 * Both: 0, -EPROTO (not a heap object, or a map that is none), or the
 * read's error (-ESRCH gone, -EFAULT unmapped, ...).
 */
int v8_object_type(const struct v8_reader *r, uint64_t tagged, uint16_t *type);
int v8_object_field(const struct v8_reader *r, uint64_t tagged, uint32_t off, uint64_t *v);

/*
 * v8_sfi_describe - the name and file of SharedFunctionInfo @sfi (the
 * caller checked its type) into @out (kind V8_FRAME_JS, name/file and
 * their *_err as v8_read_frame() fills them, each failure counted), its
 * Script in *@script (0: none or unread). 0, or -ENOTSUP (the layout
 * names nothing).
 */
int v8_sfi_describe(const struct v8_reader *r, uint64_t sfi, struct v8_frame *out,
		    uint64_t *script);

/*
 * v8_bytecode_line - the 1-based line of bytecode offset @raw_offset (as
 * V8's frame slot or offset register holds it: the offset plus
 * BytecodeArray's header, less the heap object tag) of BytecodeArray @ba
 * in @script, into *@line (0 when not read: counted in v8_line_unknown).
 * 0, or why not (-EPROTO: memory contradicts the layout, -ENOENT: no
 * position recorded, a read's error).
 */
int v8_bytecode_line(const struct v8_reader *r, uint64_t ba, int64_t raw_offset,
		     uint64_t script, int *line);

/*
 * A SourcePosition (V8's src/codegen/source-position.h, the raw 64 bits
 * of a source position table entry): bit 0 external (a file and line of
 * its own, wasm), bits 1-30 the script offset + 1, bits 31-46 the
 * inlining id + 1 (-1: the code's own function).
 */
static inline int64_t v8_position_offset(int64_t raw)
{
	return ((raw >> 1) & ((1 << 30) - 1)) - 1;
}

static inline int v8_position_inlining_id(int64_t raw)
{
	return (int)((raw >> 31) & 0xffff) - 1;
}

/* v8_vlq - one unsigned VLQ (V8's base/vlq.h: 7 bits a byte, the high bit
 * set when more follow) at @p[*@i] (< @n) into *@v, *@i past it. 0, or
 * -EPROTO (it runs past @n or 64 bits). */
static inline int v8_vlq(const uint8_t *p, uint32_t n, uint32_t *i, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned int shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (*i >= n)
			return -EPROTO;
		c = p[(*i)++];
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EPROTO;
}

/*
 * v8_position_at - the raw SourcePosition of code offset @offset (the
 * last entry at or before it) in source position table @table (a
 * ByteArray, tagged), into *@raw. 0, -ENOENT (no entry, not a ByteArray:
 * not collected, or an external position), -EPROTO (a corrupt table),
 * -E2BIG (over V8_POSITIONS_MAX bytes), or a read's error.
 */
int v8_position_at(const struct v8_reader *r, uint64_t table, int64_t offset, int64_t *raw);

/*
 * v8_script_line - the 1-based line of script offset @pos in Script
 * @script into *@line (through its line ends, else its source, as
 * interpreted frames' lines). 0, -ENOTSUP (no layout for lines, no
 * script), -ENOENT (@pos < 0), -EPROTO, or a read's error. Not counted.
 */
int v8_script_line(const struct v8_reader *r, uint64_t script, int64_t pos, int *line);

#endif /* PROFD_V8_FRAMES_H */
