/* SPDX-License-Identifier: MIT */
/*
 * ELF symbol lookup in one pass over the table (elf-symbols.h).
 *
 * libdwfl's rules (dwfl_module_addrsym.c, elfutils 0.188), for a module
 * whose own file holds its symbol table: symbols of type SECTION, FILE or
 * TLS, undefined ones and those with an empty name never count. The
 * global symbols are searched first; among those whose [value, value +
 * size) holds the address, a later one replaces the one kept when its
 * value is higher or its binding stronger (GLOBAL > WEAK > LOCAL), or, at
 * the same value, when it is smaller and binds no weaker, or as small and
 * binds stronger. Failing that, a global symbol of size 0 exactly at the
 * address (the last one) is the answer; failing that, the local symbols
 * are searched the same way. What is left (the nearest symbol of size 0
 * below the address, bounded by the ends of the symbols before it) reads
 * the names of every symbol below the address: libdwfl answers that.
 */
#include "elf-symbols.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Symbols read per pread() of the table. */
#define SYMBOL_CHUNK 4096
/* Section headers accepted: far more than any linker writes. */
#define MAX_SECTIONS 65536
/* Notes read for the build id. */
#define MAX_NOTES_SIZE (64 * 1024)
#define MAX_BUILD_ID 64

struct lw_elf {
	int fd;
	uint16_t type, machine;
	Elf64_Shdr *sections;
	size_t section_count;
	uint8_t build_id[MAX_BUILD_ID];
	size_t build_id_len;
	/* The symbol table libdwfl would read; symtab_ok false: none. */
	bool symtab_ok;
	uint64_t symbols_offset, symbol_count, first_global;
	uint64_t strings_offset, strings_size;
};

static int read_at(int fd, void *buf, size_t len, uint64_t offset)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* shorter than its headers say */
		p += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

static bool within(uint64_t offset, uint64_t size, uint64_t file_size)
{
	return offset <= file_size && size <= file_size - offset;
}

/* A GNU build-id note among the notes in buf; align is the notes'. */
static bool find_build_id(struct lw_elf *e, const uint8_t *buf, size_t len,
			  size_t align)
{
	size_t at = 0;

	while (len - at >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr note;
		size_t name_at, desc_at, next;

		memcpy(&note, buf + at, sizeof(note));
		name_at = at + sizeof(note);
		if (note.n_namesz > len - name_at)
			return false;
		desc_at = name_at + ((note.n_namesz + align - 1) & ~(align - 1));
		if (desc_at > len || note.n_descsz > len - desc_at)
			return false;
		next = desc_at + ((note.n_descsz + align - 1) & ~(align - 1));
		if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
		    memcmp(buf + name_at, "GNU", 4) == 0 && note.n_descsz > 0 &&
		    note.n_descsz <= MAX_BUILD_ID) {
			memcpy(e->build_id, buf + desc_at, note.n_descsz);
			e->build_id_len = note.n_descsz;
			return true;
		}
		if (next <= at || next > len)
			return false;
		at = next;
	}
	return false;
}

static int read_notes(struct lw_elf *e, uint64_t offset, uint64_t size,
		      uint64_t align, uint64_t file_size)
{
	uint8_t *buf;
	int rc;

	if (size == 0 || size > MAX_NOTES_SIZE ||
	    !within(offset, size, file_size))
		return 0;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	rc = read_at(e->fd, buf, size, offset);
	if (rc == 0)
		find_build_id(e, buf, size, align == 8 ? 8 : 4);
	free(buf);
	return rc;
}

/* As libdwfl: the notes of the sections, or of the segments when the
 * file has no section headers. */
static int read_build_id(struct lw_elf *e, const Elf64_Ehdr *h,
			 uint64_t file_size)
{
	int rc = 0;

	for (size_t i = 0; i < e->section_count && !e->build_id_len; i++) {
		const Elf64_Shdr *s = &e->sections[i];

		if (s->sh_type == SHT_NOTE &&
		    (rc = read_notes(e, s->sh_offset, s->sh_size,
				     s->sh_addralign, file_size)) < 0)
			return rc;
	}
	if (e->section_count || h->e_phentsize != sizeof(Elf64_Phdr))
		return 0;
	for (size_t i = 0; i < h->e_phnum && !e->build_id_len; i++) {
		Elf64_Phdr p;

		rc = read_at(e->fd, &p, sizeof(p),
			     h->e_phoff + i * sizeof(Elf64_Phdr));
		if (rc < 0)
			return rc;
		if (p.p_type == PT_NOTE &&
		    (rc = read_notes(e, p.p_offset, p.p_filesz, p.p_align,
				     file_size)) < 0)
			return rc;
	}
	return 0;
}

/* The table libdwfl's load_symtab() takes from the main file, when it is
 * one this reader reads as libdwfl does. */
static int find_symtab(struct lw_elf *e, uint64_t file_size)
{
	const Elf64_Shdr *table = NULL, *strings;
	unsigned tables = 0;
	char last;
	int rc;

	if ((e->machine != EM_X86_64 && e->machine != EM_AARCH64) ||
	    (e->type != ET_DYN && e->type != ET_EXEC))
		return 0;
	for (size_t i = 0; i < e->section_count; i++) {
		const Elf64_Shdr *s = &e->sections[i];

		if (s->sh_type == SHT_SYMTAB_SHNDX)
			return 0;
		if (s->sh_type == SHT_SYMTAB && s->sh_entsize) {
			table = s;
			tables++;
		}
	}
	if (tables != 1 || table->sh_entsize != sizeof(Elf64_Sym) ||
	    (table->sh_flags & SHF_COMPRESSED) ||
	    !within(table->sh_offset, table->sh_size, file_size) ||
	    table->sh_link >= e->section_count)
		return 0;
	strings = &e->sections[table->sh_link];
	if (strings->sh_type != SHT_STRTAB || strings->sh_size == 0 ||
	    (strings->sh_flags & SHF_COMPRESSED) ||
	    !within(strings->sh_offset, strings->sh_size, file_size))
		return 0;
	/* libelf hands out names only from a table that ends with a NUL. */
	rc = read_at(e->fd, &last, 1, strings->sh_offset + strings->sh_size - 1);
	if (rc < 0)
		return rc;
	if (last != '\0')
		return 0;
	e->symbol_count = table->sh_size / sizeof(Elf64_Sym);
	e->first_global = table->sh_info;
	if (e->first_global > e->symbol_count)
		return 0;
	e->symbols_offset = table->sh_offset;
	e->strings_offset = strings->sh_offset;
	e->strings_size = strings->sh_size;
	e->symtab_ok = true;
	return 0;
}

int lw_elf_open(int fd, struct lw_elf **out)
{
	struct lw_elf *e;
	Elf64_Ehdr h;
	off_t end;
	uint64_t file_size, count;
	int rc;

	*out = NULL;
	end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		return -errno;
	file_size = (uint64_t)end;
	if (file_size < sizeof(h))
		return -ENOEXEC;
	if ((rc = read_at(fd, &h, sizeof(h), 0)) < 0)
		return rc;
	if (memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 ||
	    h.e_ident[EI_CLASS] != ELFCLASS64 ||
	    h.e_ident[EI_DATA] != ELFDATA2LSB ||
	    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ ||
	    h.e_shentsize != sizeof(Elf64_Shdr))
		return -ENOEXEC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->fd = fd;
	e->type = h.e_type;
	e->machine = h.e_machine;
	count = h.e_shnum;
	if (h.e_shoff && count == 0) {
		/* Extended numbering: the count is section 0's size. */
		Elf64_Shdr first;

		if (!within(h.e_shoff, sizeof(first), file_size)) {
			rc = -ENOEXEC;
			goto error;
		}
		if ((rc = read_at(fd, &first, sizeof(first), h.e_shoff)) < 0)
			goto error;
		count = first.sh_size;
	}
	if (count > MAX_SECTIONS ||
	    !within(h.e_shoff, count * sizeof(Elf64_Shdr), file_size)) {
		rc = -ENOEXEC;
		goto error;
	}
	if (count) {
		e->sections = malloc(count * sizeof(*e->sections));
		if (!e->sections) {
			rc = -ENOMEM;
			goto error;
		}
		rc = read_at(fd, e->sections, count * sizeof(*e->sections),
			     h.e_shoff);
		if (rc < 0)
			goto error;
		e->section_count = count;
	}
	if ((rc = read_build_id(e, &h, file_size)) < 0 ||
	    (rc = find_symtab(e, file_size)) < 0)
		goto error;
	*out = e;
	return 0;

error:
	lw_elf_free(e);
	return rc;
}

void lw_elf_free(struct lw_elf *e)
{
	if (!e)
		return;
	free(e->sections);
	free(e);
}

size_t lw_elf_build_id(const struct lw_elf *e, const uint8_t **bits)
{
	*bits = e->build_id;
	return e->build_id_len;
}

bool lw_elf_can_lookup(const struct lw_elf *e)
{
	return e->symtab_ok;
}

/* The best symbol so far whose size covers one address. */
struct cover {
	bool found;
	uint8_t binding;
	uint32_t name;
	uint64_t value, size;
};

struct pc_state {
	struct cover global, local;
	bool exact;		/* a global symbol of size 0 at the address */
	uint32_t exact_name;
};

/* GELF_ST_BIND as libdwfl ranks it, higher is preferred. */
static uint8_t binding_rank(unsigned char info)
{
	switch (ELF64_ST_BIND(info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

/* Whether a symbol replaces the one kept: libdwfl's try_sym_value(). */
static bool better(const struct cover *kept, uint64_t value, uint64_t size,
		   uint8_t binding)
{
	if (!kept->found || kept->value < value || kept->binding < binding)
		return true;
	return kept->value == value &&
	       ((kept->size > size && kept->binding <= binding) ||
		(kept->size >= size && kept->binding < binding));
}

/* First index of pcs not below value. */
static size_t lower_bound(const uint64_t *pcs, size_t count, uint64_t value)
{
	size_t lo = 0, hi = count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pcs[mid] < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the name at offset is not empty (offset within the table). */
static int name_is_set(struct lw_elf *e, uint64_t offset, bool *set)
{
	char c;
	int rc = read_at(e->fd, &c, 1, e->strings_offset + offset);

	if (rc < 0)
		return rc;
	*set = c != '\0';
	return 0;
}

/*
 * The address libdwfl compares with for one symbol (__libdwfl_getsym()
 * for dwfl_module_addrinfo): the bias is added to symbols of allocated
 * sections, and to those of special sections other than ABS and COMMON.
 */
static uint64_t symbol_address(const struct lw_elf *e, const Elf64_Sym *s,
			       uint64_t bias)
{
	size_t index;

	if (s->st_shndx == SHN_ABS || s->st_shndx == SHN_COMMON)
		return s->st_value;
	/* SHN_XINDEX without an index table (find_symtab refuses one):
	 * libelf gives section 0. */
	if (s->st_shndx == SHN_XINDEX)
		index = 0;
	else if (s->st_shndx < SHN_LORESERVE)
		index = s->st_shndx;
	else
		return s->st_value + bias;
	if (index < e->section_count &&
	    !(e->sections[index].sh_flags & SHF_ALLOC))
		return s->st_value;
	return s->st_value + bias;
}

/* One symbol against every address it may answer for. */
static int try_symbol(struct lw_elf *e, const Elf64_Sym *s, bool global,
		      uint64_t bias, const uint64_t *pcs, size_t count,
		      struct pc_state *state)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);
	uint64_t value;
	size_t j;
	bool named = false, checked = false;
	int rc;

	if (s->st_shndx == SHN_UNDEF || type == STT_SECTION ||
	    type == STT_FILE || type == STT_TLS ||
	    s->st_name >= e->strings_size)
		return 0;
	value = symbol_address(e, s, bias);
	j = lower_bound(pcs, count, value);
	if (s->st_size == 0) {
		if (!global || j == count || pcs[j] != value)
			return 0;
		if ((rc = name_is_set(e, s->st_name, &named)) < 0)
			return rc;
		if (named) {
			state[j].exact = true;
			state[j].exact_name = s->st_name;
		}
		return 0;
	}
	for (; j < count && pcs[j] - value < s->st_size; j++) {
		struct cover *c = global ? &state[j].global : &state[j].local;
		uint8_t binding = binding_rank(s->st_info);

		if (!checked) {
			if ((rc = name_is_set(e, s->st_name, &named)) < 0)
				return rc;
			checked = true;
		}
		if (!named)
			return 0;
		if (better(c, value, s->st_size, binding)) {
			c->found = true;
			c->binding = binding;
			c->name = s->st_name;
			c->value = value;
			c->size = s->st_size;
		}
	}
	return 0;
}

int lw_elf_lookup(struct lw_elf *e, uint64_t bias, const uint64_t *pcs,
		  size_t count, struct lw_elf_match *out)
{
	struct pc_state *state;
	Elf64_Sym *chunk;
	/* libdwfl: symbol 0 is skipped; with no locals recorded (sh_info
	 * 0) every symbol is searched as a global one. */
	uint64_t first_global = e->first_global ? e->first_global : 1;
	int rc = 0;

	memset(out, 0, count * sizeof(*out));
	if (!e->symtab_ok || count == 0)
		return 0;
	state = calloc(count, sizeof(*state));
	chunk = malloc(SYMBOL_CHUNK * sizeof(*chunk));
	if (!state || !chunk) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint64_t at = 1; at < e->symbol_count && rc == 0;) {
		uint64_t n = e->symbol_count - at;

		if (n > SYMBOL_CHUNK)
			n = SYMBOL_CHUNK;
		rc = read_at(e->fd, chunk, n * sizeof(*chunk),
			     e->symbols_offset + at * sizeof(*chunk));
		for (uint64_t i = 0; i < n && rc == 0; i++)
			rc = try_symbol(e, &chunk[i], at + i >= first_global,
					bias, pcs, count, state);
		at += n;
	}
	for (size_t j = 0; j < count && rc == 0; j++) {
		const struct pc_state *st = &state[j];

		if (st->global.found) {
			out[j].answer = LW_ELF_FOUND;
			out[j].name = st->global.name;
		} else if (st->exact) {
			out[j].answer = LW_ELF_FOUND;
			out[j].name = st->exact_name;
		} else if (st->local.found) {
			out[j].answer = LW_ELF_FOUND;
			out[j].name = st->local.name;
		}
	}
out:
	if (rc < 0)
		memset(out, 0, count * sizeof(*out));
	free(state);
	free(chunk);
	return rc;
}

int lw_elf_symbol_name(struct lw_elf *e, const struct lw_elf_match *match,
		       char **out)
{
	uint64_t offset = match->name;
	size_t size = 256, len = 0;
	char *name = NULL;

	*out = NULL;
	if (match->answer != LW_ELF_FOUND || offset >= e->strings_size)
		return -EINVAL;
	/* The table ends with a NUL (find_symtab), so every name does. */
	for (;;) {
		uint64_t left = e->strings_size - offset - len;
		size_t want = size - len - 1;
		char *bigger = realloc(name, size);
		char *nul;
		int rc;

		if (!bigger) {
			free(name);
			return -ENOMEM;
		}
		name = bigger;
		if (want > left)
			want = (size_t)left;
		rc = read_at(e->fd, name + len, want,
			     e->strings_offset + offset + len);
		if (rc < 0) {
			free(name);
			return rc;
		}
		name[len + want] = '\0';
		nul = memchr(name + len, '\0', want + 1);
		if ((size_t)(nul - name) < len + want || want == left) {
			*out = name;
			return 0;
		}
		len += want;
		size *= 2;
	}
}
