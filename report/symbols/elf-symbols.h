/* SPDX-License-Identifier: MIT */
/*
 * The symbol table of an ELF file, read directly and only where it is
 * needed: a framework's libraries hold hundreds of thousands of symbols
 * and tens of megabytes of names, and libdwfl's lookup reads every symbol
 * and the first byte of every name for each address. Here one pass over
 * the table answers a whole batch of addresses, and names are read only
 * for the symbols found.
 *
 * The answers are libdwfl's (dwfl_module_addrinfo, elfutils 0.188): where
 * the rules it follows are short of a symbol whose size covers the
 * address, or the file is not one this reader handles the same way, the
 * lookup says so (LW_ELF_UNDECIDED) and the caller asks libdwfl.
 *
 * Files are read with pread() on a descriptor the caller opened and
 * checked: nothing is mapped, so a file truncated meanwhile gives an error,
 * not a signal, and memory holds one chunk of the table at a time.
 */
#ifndef LW_ELF_SYMBOLS_H
#define LW_ELF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lw_elf;

/*
 * Reads the headers of the ELF file open on fd, which stays the caller's
 * and must stay open while *out is used. Returns 0, -ENOEXEC when the file
 * is not a 64-bit little-endian ELF file with section headers, or another
 * negative errno (-ENOMEM, a read error).
 */
int lw_elf_open(int fd, struct lw_elf **out);
void lw_elf_free(struct lw_elf *elf);

/* The GNU build id of the file's notes (*bits owned by elf); 0: none. */
size_t lw_elf_build_id(const struct lw_elf *elf, const uint8_t **bits);

/*
 * Whether lw_elf_lookup() can answer for this file: a symbol table
 * (SHT_SYMTAB) of its own, uncompressed, on x86-64 or AArch64, in a
 * shared object or executable. Otherwise libdwfl looks elsewhere (a
 * separate debug file, .gnu_debugdata, the dynamic symbols).
 */
bool lw_elf_can_lookup(const struct lw_elf *elf);

enum lw_elf_answer {
	LW_ELF_UNDECIDED,	/* ask libdwfl */
	LW_ELF_FOUND,		/* symbol below */
};

struct lw_elf_match {
	enum lw_elf_answer answer;
	uint32_t name;		/* st_name of the symbol found */
};

/*
 * The symbol libdwfl's dwfl_module_addrinfo() names for each of pcs
 * (absolute addresses, ascending, no two equal), given the module's bias
 * as libdwfl computed it (dwfl_module_getelf()): one pass over the table.
 * out has count entries. Returns 0 or a negative errno.
 */
int lw_elf_lookup(struct lw_elf *elf, uint64_t bias, const uint64_t *pcs,
		  size_t count, struct lw_elf_match *out);

/* The name of a symbol found (malloc'ed into *out). Returns 0 or a
 * negative errno. */
int lw_elf_symbol_name(struct lw_elf *elf, const struct lw_elf_match *match,
		       char **out);

#endif
