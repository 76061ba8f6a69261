/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rvalue.h - reading CRuby objects (VALUEs) out of another process,
 * for src/ruby/ (internal; the unit tests use it too).
 *
 * Owns: the bounded, type-checked readers of the few object shapes that
 * naming a frame needs: String (embedded or heap), an Array's element,
 * an imemo's type, a class's ivar (its iv table, an st_table keyed by
 * ID), and an iseq's line table: its entries, and the decoding of its
 * succinct index table (iseq.c's succ_index_table) back into instruction
 * positions. Every
 * read goes through struct rv_reader: charged to the sample's byte
 * budget, through remote.h (reads that time out rather than hang).
 * Nothing here trusts a length or a pointer read from the process.
 */
#ifndef PROFD_RUBY_RVALUE_H
#define PROFD_RUBY_RVALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ruby/offsets.h"

struct remote_reader;

/* Where reads go and what they may cost. */
struct rv_reader {
	struct remote_reader *remote;
	pid_t pid;
	size_t *budget;		/* bytes left to this sample; reads are charged */
	uint64_t *timeouts;	/* reads that timed out (may be NULL) */
};

/* Little-endian loads from bytes read (unaligned). */
static inline uint64_t rv_u64(const uint8_t *b, size_t off)
{
	uint64_t v;

	__builtin_memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint32_t rv_u32(const uint8_t *b, size_t off)
{
	uint32_t v;

	__builtin_memcpy(&v, b + off, sizeof(v));
	return v;
}

/* An iseq's line table: entry i covers the instructions from pos[i]. */
struct rv_lines {
	uint32_t n;		/* entries; 0: lines unknown */
	uint32_t *pos;		/* first instruction of each entry (ascending) */
	int32_t *line;		/* its line */
};

/* Entries of an iv table scanned for one ivar (class tables are small). */
#define RV_IVTBL_MAX	64

/*
 * rv_read - read @len bytes at @addr into @buf, charged to the budget.
 * Returns 0, -EAGAIN (budget spent: nothing read), or remote_read()'s
 * errors (-EFAULT, -ESRCH, -ETIMEDOUT, ...).
 */
int rv_read(struct rv_reader *r, uint64_t addr, void *buf, size_t len);

/* rv_is_obj - whether VALUE @v can be a heap object's address (not a
 * special constant, aligned, above the first page, user space). */
static inline bool rv_is_obj(uint64_t v)
{
	return v >= 4096 && !(v & 7) && v < (1ULL << 47);
}

/* rv_type - the T_* type of an object whose flags are @flags. */
static inline unsigned int rv_type(const struct rb_offsets *off, uint64_t flags)
{
	return (unsigned int)(flags & off->t_mask);
}

/* rv_imemo_type - the imemo type of a T_IMEMO object's @flags, -1 when
 * it is not a T_IMEMO. */
static inline int rv_imemo_type(const struct rb_offsets *off, uint64_t flags)
{
	if (rv_type(off, flags) != off->t_imemo)
		return -1;
	return (int)(flags >> off->imemo_shift & off->imemo_mask);
}

/*
 * rv_string - the String @v as a new NUL-terminated UTF-8 string (malloc,
 * the caller frees): at most RB_NAME_MAX bytes of it, NUL bytes as '?',
 * invalid UTF-8 repaired (U+FFFD). Returns 0, -EINVAL (not a String, or a
 * malformed one), -ENOMEM, or rv_read()'s errors.
 */
int rv_string(struct rv_reader *r, const struct rb_offsets *off, uint64_t v,
	      char **out);

/*
 * rv_array_at - element @i of the Array @ary into *@out. Returns 0,
 * -ENOENT (@i past its length), -EINVAL (not an Array, malformed), or
 * rv_read()'s errors.
 */
int rv_array_at(struct rv_reader *r, const struct rb_offsets *off, uint64_t ary,
		uint64_t i, uint64_t *out);

/*
 * rv_class_ivars - the keys and values of the class or module @klass's
 * iv table (RCLASS_IV_TBL: ID -> VALUE), at most @max (<= RV_IVTBL_MAX)
 * live entries. Returns how many were stored, 0 when the class has no
 * table, -EINVAL when @klass is not a class, module or iclass, or
 * rv_read()'s errors.
 */
int rv_class_ivars(struct rv_reader *r, const struct rb_offsets *off,
		   uint64_t klass, uint64_t *keys, uint64_t *vals, int max);

/*
 * rv_succ_positions - decode the succinct index table (struct
 * succ_index_table, iseq.c: @imm_size words of the immediate part, then
 * blocks of 80 bytes) in @table (@len bytes) of an iseq of @max_pos
 * instructions, into the ascending instruction positions that start a
 * line table entry, the first @cap of them in @pos. Returns how many
 * there are (may exceed @cap), or -EINVAL (@len too short for @max_pos, or the
 * table is inconsistent: positions must rise). The bytes needed for
 * @max_pos are rv_succ_table_len(). Pure: no reads.
 */
int rv_succ_positions(const uint8_t *table, size_t len, uint32_t max_pos,
		      unsigned int imm_table_size, uint32_t *pos, uint32_t cap);

/*
 * rv_iseq_lines - read the line table of the iseq whose body header is
 * @body (bytes read at the body's address, holding the insns_info
 * fields) and which has @iseq_size instructions into *@out (malloc'ed
 * arrays; free with rv_lines_free(), also after an error): the entries'
 * lines (insns_info.body) and first instructions (insns_info.positions,
 * or the succinct index table once Ruby encoded them). A table of more
 * than RB_LINES_MAX entries, or a succinct table over @succ_max bytes, is
 * not read (lines unknown, 0). Returns 0, -EINVAL (malformed: sizes,
 * pointers, positions that do not rise, a table that disagrees with the
 * body), -ENOMEM, or rv_read()'s errors.
 */
int rv_iseq_lines(struct rv_reader *r, const struct rb_offsets *off,
		  const uint8_t *body, uint32_t iseq_size, size_t succ_max,
		  struct rv_lines *out);

/*
 * rv_lines_at - the line of instruction @pos (get_insn_info(), iseq.c:
 * the entry of the last first instruction <= @pos; the only entry when
 * there is one), 0 when unknown.
 */
int rv_lines_at(const struct rv_lines *l, uint64_t pos);

/* rv_lines_free - free @l's arrays and zero it. */
void rv_lines_free(struct rv_lines *l);

/* rv_succ_table_len - bytes of the succinct table of an iseq of @max_pos
 * instructions (succ_index_table_create()'s allocation). */
size_t rv_succ_table_len(uint32_t max_pos, unsigned int imm_table_size);

#endif /* PROFD_RUBY_RVALUE_H */
