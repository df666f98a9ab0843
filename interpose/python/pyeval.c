/* SPDX-License-Identifier: MIT */
#include "pyeval.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void add_eval_range(struct lw_py_eval_ranges *out, uintptr_t start,
			   uintptr_t size)
{
	if (out->count < LW_PY_MAX_EVAL_RANGES && size) {
		out->range[out->count].start = start;
		out->range[out->count].end = start + size;
		out->count++;
	}
}


/*
 * gcc moves the unlikely blocks of a function into a separate local symbol,
 * "_PyEval_EvalFrameDefault.cold", which only the full symbol table names
 * (pyenv builds keep it; distributions strip it into a separate debug file).
 * Finds those parts in the ELF file at path. eval is where the function is
 * and bias where the object is loaded: a file of another build (a stale
 * debug file, a library replaced on disk) puts it elsewhere, and is ignored.
 */
static void add_cold_ranges(struct lw_py_eval_ranges *out, const char *path,
			    uintptr_t eval, uintptr_t bias)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	void *map = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(ElfW(Ehdr)))
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;

	size_t file_size = (size_t)st.st_size;
	const char *image = map;
	const ElfW(Ehdr) *eh = map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > file_size ||
	    eh->e_shnum > (file_size - eh->e_shoff) / sizeof(ElfW(Shdr)))
		goto out;

	const ElfW(Shdr) *sections = (const ElfW(Shdr) *)(image + eh->e_shoff);
	for (unsigned s = 0; s < eh->e_shnum; s++) {
		const ElfW(Shdr) *symtab = &sections[s];
		if (symtab->sh_type != SHT_SYMTAB || symtab->sh_link >= eh->e_shnum)
			continue;
		const ElfW(Shdr) *strtab = &sections[symtab->sh_link];
		if (symtab->sh_offset > file_size ||
		    symtab->sh_size > file_size - symtab->sh_offset ||
		    strtab->sh_offset > file_size ||
		    strtab->sh_size > file_size - strtab->sh_offset)
			continue;
		const ElfW(Sym) *syms = (const ElfW(Sym) *)(image + symtab->sh_offset);
		size_t count = symtab->sh_size / sizeof(ElfW(Sym));
		const char *names = image + strtab->sh_offset;
		uintptr_t hot = 0, cold[LW_PY_MAX_EVAL_RANGES], cold_size[LW_PY_MAX_EVAL_RANGES];
		unsigned cold_count = 0;

		for (size_t i = 0; i < count; i++) {
			const ElfW(Sym) *sym = &syms[i];
			if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC ||
			    sym->st_name >= strtab->sh_size || !sym->st_value)
				continue;
			const char *name = names + sym->st_name;
			size_t room = strtab->sh_size - sym->st_name;
			if (room < sizeof(LW_PY_EVAL_NAME) ||
			    memcmp(name, LW_PY_EVAL_NAME, sizeof(LW_PY_EVAL_NAME) - 1) != 0)
				continue;
			const char *suffix = name + sizeof(LW_PY_EVAL_NAME) - 1;
			room -= sizeof(LW_PY_EVAL_NAME) - 1;
			if (*suffix == '\0')
				hot = sym->st_value;
			else if (room > 5 && memcmp(suffix, ".cold", 5) == 0 &&
				 cold_count < LW_PY_MAX_EVAL_RANGES) {
				cold[cold_count] = sym->st_value;
				cold_size[cold_count++] = sym->st_size;
			}
		}
		if (!hot)
			continue;
		if (hot + bias != eval)
			break;
		for (unsigned i = 0; i < cold_count; i++)
			add_eval_range(out, cold[i] + bias, cold_size[i]);
		break;
	}
out:
	munmap(map, file_size);
}

struct object_search {
	uintptr_t addr;
	uintptr_t bias;
	char path[256];
	char debug_path[128]; /* /usr/lib/debug/.build-id/xx/yyyy.debug */
};

static void hex_byte(char *out, uint8_t byte)
{
	static const char digits[] = "0123456789abcdef";
	out[0] = digits[byte >> 4];
	out[1] = digits[byte & 15];
}

/* Finds the loaded object holding addr: its file and build-id debug file. */
static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct object_search *search = data;
	int inside = 0;

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && search->addr >= start &&
		    search->addr < start + ph->p_memsz)
			inside = 1;
	}
	if (!inside)
		return 0;
	search->bias = info->dlpi_addr;

	/* The main program has no name here. */
	const char *name = info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
	size_t len = strlen(name);
	if (len < sizeof(search->path))
		memcpy(search->path, name, len + 1);

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *note = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = note + ph->p_memsz;
		while (note + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)note;
			const uint8_t *desc = (const uint8_t *)note + sizeof(*nh) +
					      ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(note + sizeof(*nh), "GNU", 4) == 0 &&
			    nh->n_descsz >= 2 && nh->n_descsz <= 40 &&
			    (const char *)desc + nh->n_descsz <= end) {
				static const char prefix[] = "/usr/lib/debug/.build-id/";
				char *p = search->debug_path;
				memcpy(p, prefix, sizeof(prefix) - 1);
				p += sizeof(prefix) - 1;
				hex_byte(p, desc[0]);
				p += 2;
				*p++ = '/';
				for (unsigned b = 1; b < nh->n_descsz; b++, p += 2)
					hex_byte(p, desc[b]);
				memcpy(p, ".debug", sizeof(".debug"));
				break;
			}
			note += sizeof(*nh) + ((nh->n_namesz + 3) & ~3u) +
				((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1;
}

void lw_py_find_eval_ranges(void *eval, struct lw_py_eval_ranges *out)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;

	/* Without a size no range is known, no native frame matches, and the
	 * caller's count check keeps it from interleaving. */
	if (dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym)
		add_eval_range(out, (uintptr_t)eval, sym->st_size);

	struct object_search search = { .addr = (uintptr_t)eval };
	dl_iterate_phdr(find_object, &search);
	unsigned before = out->count;
	if (search.path[0])
		add_cold_ranges(out, search.path, (uintptr_t)eval, search.bias);
	if (out->count == before && search.debug_path[0])
		add_cold_ranges(out, search.debug_path, (uintptr_t)eval, search.bias);
}
