// SPDX-License-Identifier: GPL-2.0
/*
 * elf_file.c - one ELF object opened for symbolization (see elf_file.h).
 *
 * Owns: the file descriptor (or, for an image such as the vDSO, a copy
 * of it in memory), a copy of the PT_LOAD segments, the GNU build ID and
 * the .gnu_debuglink (read at open), the descriptor of a separate debug
 * file once one is attached, and the function symbol table (read on
 * first lookup by elf_symtab.c). The FDE ranges of its .eh_frame are
 * read on demand with libdw (elf_file_cfi_range).
 *
 * libelf's handle is only held while reading: the open reads the headers
 * and closes it, the symbol load opens it again and closes it when done.
 * A mapped file that shrinks under us can only hurt inside those windows.
 * Debug files are read with ELF_C_READ (pread, no mmap): they are found
 * by path, possibly in a container, so they get no SIGBUS window at all.
 *
 * With a debug file attached, the symbols are the object's own tables
 * (.dynsym: it has no .symtab, or there would be no debug file) plus the
 * debug file's .symtab. Both describe the same virtual addresses: a
 * debug file keeps the original's section and segment addresses, only
 * without file data for code. Names in a .symtab may carry a symbol
 * version ("memcpy@GLIBC_2.2.5", "memcpy@@GLIBC_2.14"); elf_symtab.c
 * cuts it off, so a name reads the same from .symtab as from .dynsym
 * (where the version lives in .gnu.version, not in the name).
 *
 * Input is untrusted (any file a process maps): every count, offset and
 * index comes from libelf's checked accessors (gelf_get*, elf_strptr,
 * elf_getdata, gelf_getnote), and every failure is an error, never a
 * crash.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "symbol/elf_file.h"
#include "symbol/elf_symtab.h"
#include "symbol/go_symtab.h"
#include "util/elf_section.h"

#define BUILD_ID_MAX	64	/* bytes; SHA-1 ones are 20 */

struct load_seg {
	uint64_t offset;	/* p_offset */
	uint64_t filesz;	/* p_filesz */
	uint64_t vaddr;		/* p_vaddr */
	uint64_t memsz;		/* p_memsz */
};

struct elf_file {
	int fd;			/* -1 for an in-memory image */
	void *mem;		/* in-memory image (owned), or NULL */
	size_t memsz;
	bool is_dyn;
	int syms_err;		/* load_symbols() result, once loaded */
	bool has_symtab;	/* own file has a non-empty SHT_SYMTAB */
	bool has_dwarf;		/* own file has a .debug_info with data */
	char build_id[2 * BUILD_ID_MAX + 1];
	char *debuglink;	/* .gnu_debuglink file name, or NULL */
	uint32_t debuglink_crc;
	int dbg_fd;		/* attached debug file, or -1 */
	struct load_seg *segs;
	size_t nsegs;

	bool syms_loaded;	/* tried; symtab may still be empty */
	struct elf_symtab symtab;
};

/* elf_file_bytes - see elf_file.h. */
size_t elf_file_bytes(const struct elf_file *f)
{
	if (!f)
		return 0;
	return sizeof(*f) + f->symtab.bytes + go_symtab_bytes(f->symtab.go) + f->memsz +
	       f->nsegs * sizeof(*f->segs);
}

static bool libelf_ready(void)
{
	static int state;	/* 0 untried, 1 ok, -1 failed */

	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

static void hex_encode(char *dst, const unsigned char *src, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		dst[2 * i] = digits[src[i] >> 4];
		dst[2 * i + 1] = digits[src[i] & 15];
	}
	dst[2 * n] = '\0';
}

/* Look for NT_GNU_BUILD_ID in note data @d. Returns true when found. */
static bool scan_notes(struct elf_file *f, Elf_Data *d)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d || !d->d_buf)
		return false;
	while (off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *base = d->d_buf;

		/* gelf_getnote checked name and desc lie inside d. */
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(base + name_off, "GNU", 4) && nh.n_descsz > 0 &&
		    nh.n_descsz <= BUILD_ID_MAX) {
			hex_encode(f->build_id,
				   (const unsigned char *)base + desc_off,
				   nh.n_descsz);
			return true;
		}
		if (next <= off)
			break;
		off = next;
	}
	return false;
}

/* Build ID from PT_NOTE segments, else from SHT_NOTE sections. */
static void read_build_id(struct elf_file *f, Elf *elf, size_t phnum)
{
	Elf_Scn *scn = NULL;
	size_t i;

	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
					 ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 :
							   ELF_T_NHDR);
		if (scan_notes(f, d))
			return;
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (scan_notes(f, elf_getdata(scn, NULL)))
			return;
	}
}

/*
 * .gnu_debuglink: a file name, NUL, padding to 4 bytes, then the CRC32
 * of the debug file in the object's byte order. Names with a '/' are
 * refused: the name is a file name next to the object, not a path.
 */
static void read_debuglink(struct elf_file *f, Elf_Data *d,
			   unsigned char data_enc)
{
	const char *p;
	size_t len, crc_off;
	uint32_t crc;

	if (!d || !d->d_buf || d->d_size < 8)
		return;
	p = d->d_buf;
	len = strnlen(p, d->d_size);
	if (!len || len == d->d_size || memchr(p, '/', len) ||
	    !strcmp(p, ".") || !strcmp(p, ".."))
		return;
	crc_off = (len + 4) & ~(size_t)3;
	if (crc_off + 4 > d->d_size)
		return;
	memcpy(&crc, p + crc_off, 4);
	f->debuglink_crc = data_enc == ELFDATA2MSB ? be32toh(crc) :
						     le32toh(crc);
	f->debuglink = strndup(p, len);
}

/* Whether there is a .symtab, a .debug_info, and the .gnu_debuglink if any. */
static void read_section_info(struct elf_file *f, Elf *elf,
			      const GElf_Ehdr *eh, bool want_debuglink)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool names = !elf_getshdrstrndx(elf, &shstrndx);

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && sh.sh_size)
			f->has_symtab = true;
		if (names && sh.sh_type == SHT_PROGBITS && sh.sh_size &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			f->has_dwarf = true;
		if (!want_debuglink || f->debuglink || !names ||
		    sh.sh_type != SHT_PROGBITS || (sh.sh_flags & SHF_COMPRESSED))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".gnu_debuglink"))
			read_debuglink(f, elf_getdata(scn, NULL),
				       eh->e_ident[EI_DATA]);
	}
}

static int read_segments(struct elf_file *f, Elf *elf, size_t phnum)
{
	size_t i;

	if (!phnum)
		return 0;
	f->segs = calloc(phnum, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD)
			continue;
		f->segs[f->nsegs++] = (struct load_seg){
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
		};
	}
	return 0;
}

/* The headers every object needs: type, segments, build ID, sections. */
static int read_headers(struct elf_file *f, Elf *elf)
{
	GElf_Ehdr eh;
	size_t phnum;
	int ret;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    elf_getphdrnum(elf, &phnum))
		return -ENOEXEC;
	f->is_dyn = eh.e_type == ET_DYN;
	ret = read_segments(f, elf, phnum);
	if (ret)
		return ret;
	read_build_id(f, elf, phnum);
	read_section_info(f, elf, &eh, true);
	return 0;
}

/*
 * A libelf handle on @f's own image (file or memory), or NULL. libelf
 * only reads the memory image (ELF_C_READ_MMAP semantics), hence const.
 */
static Elf *elf_handle(const struct elf_file *f)
{
	if (f->mem)
		return elf_memory(f->mem, f->memsz);
	return elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
}

static struct elf_file *elf_file_alloc(int fd, int *err)
{
	struct elf_file *f = calloc(1, sizeof(*f));

	if (!f) {
		if (fd >= 0)
			close(fd);
		*err = -ENOMEM;
		return NULL;
	}
	f->fd = fd;
	f->dbg_fd = -1;
	return f;
}

/* Read the headers of a freshly allocated @f; frees it on failure. */
static struct elf_file *elf_file_finish_open(struct elf_file *f, int *err)
{
	Elf *elf = elf_handle(f);
	int ret = read_headers(f, elf);

	elf_end(elf);
	if (ret) {
		elf_file_free(f);
		*err = ret;
		return NULL;
	}
	return f;
}

/*
 * elf_file_open_fd - see elf_file.h. Only regular files are read (a
 * mapped device must never be read); ET_EXEC and ET_DYN are accepted,
 * anything else is -ENOEXEC.
 */
struct elf_file *elf_file_open_fd(int fd, int *err)
{
	struct elf_file *f;
	struct stat st;
	int ret;

	if (fd < 0) {
		*err = -EBADF;
		return NULL;
	}
	if (!libelf_ready()) {
		close(fd);
		*err = -ENOSYS;
		return NULL;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		*err = ret;
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		*err = -ENOEXEC;
		return NULL;
	}
	f = elf_file_alloc(fd, err);
	if (!f)
		return NULL;
	return elf_file_finish_open(f, err);
}

/*
 * elf_file_open_mem - see elf_file.h. The copy is what libelf reads
 * (elf_memory), so @image may go away after the call.
 */
struct elf_file *elf_file_open_mem(const void *image, size_t len, int *err)
{
	struct elf_file *f;

	if (!libelf_ready()) {
		*err = -ENOSYS;
		return NULL;
	}
	if (!len) {
		*err = -ENOEXEC;
		return NULL;
	}
	f = elf_file_alloc(-1, err);
	if (!f)
		return NULL;
	f->mem = malloc(len);
	if (!f->mem) {
		elf_file_free(f);
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(f->mem, image, len);
	f->memsz = len;
	return elf_file_finish_open(f, err);
}

/* elf_file_open - see elf_file.h. Errors from open(2) come back as -errno. */
struct elf_file *elf_file_open(const char *path, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	return elf_file_open_fd(fd, err);
}

/* elf_file_read - see elf_file.h. */
ssize_t elf_file_read(const struct elf_file *f, uint64_t off, void *buf, size_t len)
{
	ssize_t n;

	if (f->fd < 0) {
		if (!f->mem || off >= f->memsz)
			return f->mem ? 0 : -EBADF;
		n = (ssize_t)(len < f->memsz - off ? len : f->memsz - off);
		memcpy(buf, (const char *)f->mem + off, (size_t)n);
		return n;
	}
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	n = preadv2(f->fd, &iov, 1, (off_t)off, RWF_NOWAIT);
	return n < 0 ? -errno : n;
}

/* elf_file_free - see elf_file.h. */
void elf_file_free(struct elf_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	if (f->dbg_fd >= 0)
		close(f->dbg_fd);
	free(f->mem);
	free(f->debuglink);
	free(f->segs);
	elf_symtab_free(&f->symtab);
	free(f);
}

/* elf_file_build_id - see elf_file.h. */
const char *elf_file_build_id(const struct elf_file *f)
{
	return f->build_id;
}

/* elf_file_has_symtab - see elf_file.h. */
bool elf_file_has_symtab(const struct elf_file *f)
{
	return f->has_symtab;
}

/* elf_file_has_dwarf - see elf_file.h. */
bool elf_file_has_dwarf(const struct elf_file *f)
{
	return f->has_dwarf;
}

/* elf_file_debuglink - see elf_file.h. */
const char *elf_file_debuglink(const struct elf_file *f, uint32_t *crc)
{
	if (f->debuglink && crc)
		*crc = f->debuglink_crc;
	return f->debuglink;
}

/* elf_file_stat - see elf_file.h. */
int elf_file_stat(const struct elf_file *f, struct stat *st)
{
	if (f->fd < 0)
		return -EBADF;
	return fstat(f->fd, st) ? -errno : 0;
}

/*
 * Read the ELF header, build ID and whether there is a .symtab of the
 * file on @fd into @probe and @eh, with ELF_C_READ (pread, no mmap: the
 * file came from a path or a server, not from a mapping). Returns 0, or
 * -ENOEXEC when it is no ELF file with a non-empty .symtab.
 */
static int probe_debug(int fd, struct elf_file *probe, GElf_Ehdr *eh)
{
	struct stat st;
	size_t phnum;
	Elf *elf;
	int ret = -ENOEXEC;

	if (!libelf_ready() || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, eh) &&
	    !elf_getphdrnum(elf, &phnum)) {
		read_build_id(probe, elf, phnum);
		read_section_info(probe, elf, eh, false);
		if (probe->has_symtab)
			ret = 0;
	}
	elf_end(elf);
	return ret;
}

/*
 * Whether the file on @fd may be @f's debug file (elf_file_check_debug()
 * without the -EEXIST rule).
 */
static int check_debug_fd(const struct elf_file *f, int fd)
{
	struct elf_file probe = { .fd = -1, .dbg_fd = -1 };
	GElf_Ehdr eh, own;
	Elf *self;
	int ret = probe_debug(fd, &probe, &eh);

	if (ret)
		return ret;
	self = elf_handle(f);
	if (!self || !gelf_getehdr(self, &own) ||
	    eh.e_ident[EI_CLASS] != own.e_ident[EI_CLASS] ||
	    eh.e_machine != own.e_machine)
		ret = -ENOEXEC;
	else
		ret = strcmp(probe.build_id, f->build_id) ? -ESTALE : 0;
	elf_end(self);
	return ret;
}

/*
 * elf_file_check_debug - see elf_file.h. The candidate is opened with
 * ELF_C_READ (no mmap) and checked: ELF, a non-empty .symtab, the same
 * ELF class and machine, the same build ID (or none on both sides).
 */
int elf_file_check_debug(const struct elf_file *f, int fd)
{
	if (f->dbg_fd >= 0 || f->syms_loaded)
		return -EEXIST;
	return check_debug_fd(f, fd);
}

/* elf_debug_file_check - see elf_file.h. */
int elf_debug_file_check(int fd, const char *build_id)
{
	struct elf_file probe = { .fd = -1, .dbg_fd = -1 };
	GElf_Ehdr eh;
	int ret;

	if (!build_id || !build_id[0])
		return -EINVAL;
	ret = probe_debug(fd, &probe, &eh);
	if (ret)
		return ret;
	return strcmp(probe.build_id, build_id) ? -ESTALE : 0;
}

/* elf_file_set_debug - see elf_file.h. */
int elf_file_set_debug(struct elf_file *f, int fd)
{
	int ret = elf_file_check_debug(f, fd);

	if (ret) {
		close(fd);
		return ret;
	}
	f->dbg_fd = fd;
	return 0;
}

/* elf_file_has_debug - see elf_file.h. */
bool elf_file_has_debug(const struct elf_file *f)
{
	return f->dbg_fd >= 0;
}

/* elf_file_fd - see elf_file.h. */
int elf_file_fd(const struct elf_file *f)
{
	return f->fd;
}

/* elf_file_debug_fd - see elf_file.h. */
int elf_file_debug_fd(const struct elf_file *f)
{
	return f->dbg_fd;
}

/* elf_file_is_dyn - see elf_file.h. */
bool elf_file_is_dyn(const struct elf_file *f)
{
	return f->is_dyn;
}

/*
 * elf_file_offset_to_vaddr - see elf_file.h. The file-backed part of a
 * PT_LOAD segment (p_filesz) is tried first, then its in-memory size.
 */
int elf_file_offset_to_vaddr(const struct elf_file *f, uint64_t off,
			     uint64_t *vaddr)
{
	size_t i;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < f->nsegs; i++) {
			const struct load_seg *s = &f->segs[i];
			uint64_t sz = pass ? s->memsz : s->filesz;

			if (off >= s->offset && off - s->offset < sz) {
				*vaddr = s->vaddr + (off - s->offset);
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* ---- symbol table (elf_symtab.c) ---- */

/*
 * Read @f's function symbols (its own tables, then the .symtab of the
 * debug file on @dbg_fd, if >= 0) into @t; @f is only read (its
 * descriptors), so this may run beside lookups in @f's current table.
 */
static int read_symbols_with(const struct elf_file *f, int dbg_fd,
			     struct elf_symtab *t)
{
	Elf *elves[2];
	bool symtab_only[2] = { false, true };
	size_t n = 0;
	int ret;

	elves[n] = elf_handle(f);
	if (!elves[n] || elf_kind(elves[n]) != ELF_K_ELF) {
		elf_end(elves[n]);
		return -ENOEXEC;
	}
	n++;
	/*
	 * A debug file's .dynsym has no data: its .symtab only. An object
	 * with a .symtab of its own (strip -g) has it for its DWARF alone.
	 */
	if (dbg_fd >= 0 && !f->has_symtab) {
		elves[n] = elf_begin(dbg_fd, ELF_C_READ, NULL);
		if (elves[n] && elf_kind(elves[n]) == ELF_K_ELF)
			n++;
		else
			elf_end(elves[n]);
	}
	ret = elf_symtab_build(t, elves, symtab_only, n);
	/* a Go executable's own table: its errors are counted there */
	if (!ret && go_symtab_read(elves[0], &t->go) == -ENOMEM)
		ret = -ENOMEM;
	if (ret)
		elf_symtab_free(t);
	while (n)
		elf_end(elves[--n]);
	return ret;
}

static int read_symbols(const struct elf_file *f, struct elf_symtab *t)
{
	return read_symbols_with(f, f->dbg_fd, t);
}

static int load_symbols(struct elf_file *f)
{
	int ret;

	f->syms_loaded = true;
	ret = read_symbols(f, &f->symtab);
	f->syms_err = ret < 0 ? ret : 0;
	return ret;
}

/*
 * elf_file_symbols_estimate - see elf_file.h. The handles read_symbols()
 * would open, their section headers only; a Go executable's pclntab
 * (copied whole by go_symtab.c) by its section.
 */
uint64_t elf_file_symbols_estimate(const struct elf_file *f)
{
	bool symtab_only[2] = { false, true };
	Elf *elves[2] = { elf_handle(f), NULL };
	uint64_t bytes = 0, file_size = f->memsz;
	struct stat st;
	size_t n = 1;
	GElf_Shdr sh;

	if (f->fd >= 0)
		file_size = fstat(f->fd, &st) ? 0 : (uint64_t)st.st_size;
	if (!elves[0] || elf_kind(elves[0]) != ELF_K_ELF) {
		elf_end(elves[0]);
		return 0;
	}
	if (f->dbg_fd >= 0 && (elves[1] = elf_begin(f->dbg_fd, ELF_C_READ, NULL)))
		n += elf_kind(elves[1]) == ELF_K_ELF;
	bytes = elf_symtab_estimate(elves, symtab_only, n);
	/* a section past the file's end is corrupt, not big: go_symtab.c
	 * refuses it (counted go_pclntab_unreadable) */
	if ((elf_section_by_name(elves[0], ".gopclntab", &sh) ||
	     elf_section_by_name(elves[0], ".data.rel.ro.gopclntab", &sh)) &&
	    sh.sh_type != SHT_NOBITS && sh.sh_offset <= file_size &&
	    sh.sh_size <= file_size - sh.sh_offset)
		bytes += sh.sh_size;
	elf_end(elves[1]);
	elf_end(elves[0]);
	return bytes;
}

/* elf_file_is_go - see elf_file.h. */
bool elf_file_is_go(const struct elf_file *f)
{
	return f->syms_loaded && f->symtab.go;
}

/* elf_file_unload_symbols - see elf_file.h. */
size_t elf_file_unload_symbols(struct elf_file *f)
{
	size_t bytes = f->symtab.bytes + go_symtab_bytes(f->symtab.go);

	elf_symtab_free(&f->symtab);
	f->syms_loaded = false;
	return bytes;
}

/* elf_file_read_symbols - see elf_file.h. */
int elf_file_read_symbols(const struct elf_file *f, struct elf_symtab **out)
{
	struct elf_symtab *t = calloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	ret = read_symbols(f, t);
	if (ret < 0) {
		free(t);
		return ret;
	}
	*out = t;
	return 0;
}

/*
 * elf_file_read_debug_symbols - see elf_file.h. Reads only: @f's lookups
 * may go on meanwhile.
 */
int elf_file_read_debug_symbols(const struct elf_file *f, int fd,
				struct elf_symtab **out)
{
	struct elf_symtab *t;
	int ret;

	*out = NULL;
	if (f->dbg_fd >= 0)
		return -EEXIST;
	ret = check_debug_fd(f, fd);
	if (ret)
		return ret;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ret = read_symbols_with(f, fd, t);
	if (ret < 0) {
		free(t);
		return ret;
	}
	*out = t;
	return 0;
}

/* elf_file_adopt_debug - see elf_file.h. */
void elf_file_adopt_debug(struct elf_file *f, int fd, struct elf_symtab *t)
{
	if (f->dbg_fd >= 0)
		close(f->dbg_fd);
	f->dbg_fd = fd;
	elf_file_set_symbols(f, t);
}

/* elf_file_set_symbols - see elf_file.h. */
void elf_file_set_symbols(struct elf_file *f, struct elf_symtab *t)
{
	elf_symtab_free(&f->symtab);
	f->symtab = *t;
	free(t);
	f->syms_loaded = true;
	f->syms_err = 0;
}

/* elf_file_free_symbols - see elf_file.h. */
void elf_file_free_symbols(struct elf_symtab *t)
{
	if (!t)
		return;
	elf_symtab_free(t);
	free(t);
}

/* elf_file_load_symbols - see elf_file.h. */
int elf_file_load_symbols(struct elf_file *f)
{
	if (!f->syms_loaded)
		load_symbols(f);
	return f->syms_err;
}

/* elf_file_lookup - see elf_file.h (and elf_symtab_lookup). */
const char *elf_file_lookup(struct elf_file *f, uint64_t vaddr,
			    uint64_t *sym_vaddr)
{
	if (!f->syms_loaded)
		load_symbols(f);
	return elf_symtab_lookup(&f->symtab, vaddr, sym_vaddr);
}

/* elf_file_go_frames - see elf_file.h. */
int elf_file_go_frames(struct elf_file *f, uint64_t vaddr, struct sym_frame *out,
		       int max, uint64_t *entry)
{
	int n;

	if (!f->syms_loaded)
		load_symbols(f);
	if (!f->symtab.go)
		return -ENOENT;
	n = go_symtab_frames(f->symtab.go, vaddr, out, max);
	if (n > 0 && entry)
		*entry = go_symtab_entry(f->symtab.go, vaddr);
	return n;
}

/* elf_file_nsymbols - see elf_file.h. */
uint64_t elf_file_nsymbols(struct elf_file *f)
{
	if (!f->syms_loaded)
		load_symbols(f);
	return f->symtab.n;
}

/* elf_file_cfi_range - see elf_file.h. */
int elf_file_cfi_range(const struct elf_file *f, uint64_t vaddr,
		       uint64_t *start, uint64_t *end)
{
	Elf *elf = elf_handle(f);
	Dwarf_CFI *cfi;
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr lo, hi;
	bool signal;
	int ret = -ENOENT;

	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -ENOEXEC;
	}
	cfi = dwarf_getcfi_elf(elf);
	if (!cfi) {
		elf_end(elf);
		return -ENODATA;
	}
	if (dwarf_cfi_addrframe(cfi, vaddr, &frame) == 0 &&
	    dwarf_frame_info(frame, &lo, &hi, &signal) >= 0 &&
	    lo <= vaddr && vaddr < hi) {
		*start = lo;
		*end = hi;
		ret = 0;
	}
	free(frame);
	dwarf_cfi_end(cfi);
	elf_end(elf);
	return ret;
}
