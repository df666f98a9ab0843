/* SPDX-License-Identifier: MIT */
/*
 * The symbol table read directly (report/symbols/elf-symbols.c) against
 * libdwfl, whose answers it must give: for each ELF file named, at two load
 * biases, every address of a small module (some 32768 of a larger one) and
 * the edges of every symbol are looked up both ways. Where the direct lookup
 * answers, the name must be libdwfl's; it must answer wherever libdwfl found
 * a symbol whose size covers the address, or a global label exactly at it
 * (only the fallback to a nearest label below the address is left to
 * libdwfl).
 *
 *     test-elf-symbols ELF...
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf-symbols.h"
#include "lw-test.h"

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct addresses {
	uint64_t *items;
	size_t count, capacity;
};

static void add(struct addresses *a, uint64_t address)
{
	if (a->count == a->capacity) {
		a->capacity = a->capacity ? a->capacity * 2 : 4096;
		a->items = realloc(a->items, a->capacity * sizeof(*a->items));
		REQUIRE(a->items);
	}
	a->items[a->count++] = address;
}

static int compare(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* The module's addresses, and the edges of each of its symbols. */
static void addresses_of(Dwfl_Module *mod, struct addresses *a)
{
	Dwarf_Addr low, high;
	int symbols = dwfl_module_getsymtab(mod);
	uint64_t step;
	size_t n = 0;

	dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL);
	/* Every address of a small module, some 32768 of a large one. */
	step = (high - low) / 32768 + 1;
	for (uint64_t at = low; at < high; at += step)
		add(a, at);
	for (int i = 1; i < symbols; i++) {
		GElf_Sym sym;
		GElf_Addr value;

		if (!dwfl_module_getsym_info(mod, i, &sym, &value, NULL, NULL,
					     NULL))
			continue;
		add(a, value - 1);
		add(a, value);
		add(a, value + sym.st_size / 2);
		add(a, value + sym.st_size - 1);
		add(a, value + sym.st_size);
	}
	qsort(a->items, a->count, sizeof(*a->items), compare);
	for (size_t i = 0; i < a->count; i++) {
		if (n == 0 || a->items[n - 1] != a->items[i])
			a->items[n++] = a->items[i];
	}
	a->count = n;
}

static void check_file(const char *path, uint64_t load_bias)
{
	struct addresses a = { 0 };
	struct lw_elf_match *matches;
	struct lw_elf *elf;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	Dwfl *dwfl;
	size_t found = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int dwfl_fd = open(path, O_RDONLY | O_CLOEXEC);

	REQUIRE(fd >= 0 && dwfl_fd >= 0);
	dwfl = dwfl_begin(&callbacks);
	REQUIRE(dwfl);
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, path, path, dwfl_fd, load_bias, false);
	dwfl_report_end(dwfl, NULL, NULL);
	REQUIRE(mod);
	REQUIRE(dwfl_module_getelf(mod, &bias));
	REQUIRE(lw_elf_open(fd, &elf) == 0);
	if (!lw_elf_can_lookup(elf)) {
		lw_test_fail("%s: no symbol table to read", path);
		goto out;
	}
	addresses_of(mod, &a);
	matches = calloc(a.count, sizeof(*matches));
	REQUIRE(matches);
	REQUIRE(lw_elf_lookup(elf, bias, a.items, a.count, matches) == 0);
	for (size_t i = 0; i < a.count; i++) {
		GElf_Off offset;
		GElf_Sym sym;
		const char *expected = dwfl_module_addrinfo(
			mod, a.items[i], &offset, &sym, NULL, NULL, NULL);
		char *name;

		if (matches[i].answer == LW_ELF_UNDECIDED) {
			/* Left to libdwfl: labels without a size, but for
			 * a global one exactly at the address. */
			if (expected &&
			    (sym.st_size ||
			     (offset == 0 &&
			      GELF_ST_BIND(sym.st_info) != STB_LOCAL)))
				lw_test_fail("%s+%#llx: no answer, libdwfl: %s",
					     path,
					     (unsigned long long)(a.items[i] -
								  load_bias),
					     expected);
			continue;
		}
		found++;
		REQUIRE(lw_elf_symbol_name(elf, &matches[i], &name) == 0);
		if (!expected || strcmp(name, expected) != 0)
			lw_test_fail("%s+%#llx: %s, libdwfl: %s", path,
				     (unsigned long long)(a.items[i] - load_bias),
				     name, expected ? expected : "(none)");
		free(name);
	}
	CHECK(found > 0);
	printf("%s at %#llx: %zu addresses, %zu answered directly\n", path,
	       (unsigned long long)load_bias, a.count, found);
	free(matches);
out:
	free(a.items);
	lw_elf_free(elf);
	close(fd);
	dwfl_end(dwfl);
}

int main(int argc, char **argv)
{
	REQUIRE(argc > 1);
	for (int i = 1; i < argc; i++) {
		check_file(argv[i], 0);
		check_file(argv[i], 0x7f1234560000ull);
	}
	return lw_test_done("test-elf-symbols");
}
