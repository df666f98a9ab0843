/* SPDX-License-Identifier: MIT */
/*
 * reopen TESTEXT: the runtime closed and opened again. Not linked against
 * the runtime: libtestext.so (which needs it) is dlopen()ed RTLD_GLOBAL,
 * keeps a buffer of 100 bytes, and is dlclose()d. Where that unloads the
 * runtime, the address range it occupied is reserved, so that loading it
 * again must put it somewhere else; then libtestext.so is opened again and
 * keeps 200 bytes. Prints "unloaded yes|no" and "ok".
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RUNTIME "libcudart.so.13"

struct span {
	uintptr_t start, end;
};

static int find_runtime(struct dl_phdr_info *info, size_t size, void *data)
{
	struct span *span = data;
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	if (!base || strcmp(base + 1, RUNTIME) != 0)
		return 0;
	span->start = UINTPTR_MAX;
	span->end = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		uintptr_t hi = lo + ph->p_memsz;
		if (lo < span->start)
			span->start = lo;
		if (hi > span->end)
			span->end = hi;
	}
	return 1;
}

static void alloc_through(const char *testext, size_t size, struct span *span)
{
	void *handle = dlopen(testext, RTLD_NOW | RTLD_GLOBAL);
	int (*alloc)(size_t, void **);
	void *p;

	if (!handle) {
		fprintf(stderr, "reopen: %s\n", dlerror());
		exit(1);
	}
	*(void **)&alloc = dlsym(handle, "testext_alloc");
	if (!alloc || alloc(size, &p) != 0) {
		fprintf(stderr, "reopen: testext_alloc failed\n");
		exit(1);
	}
	if (span)
		dl_iterate_phdr(find_runtime, span);
	dlclose(handle);
}

int main(int argc, char **argv)
{
	struct span span = { 0, 0 };

	if (argc < 2) {
		fprintf(stderr, "usage: reopen TESTEXT\n");
		return 2;
	}
	alloc_through(argv[1], 100, &span);
	void *still = dlopen(RUNTIME, RTLD_LAZY | RTLD_NOLOAD);
	printf("unloaded %s\n", still ? "no" : "yes");
	if (!still && span.end > span.start) {
		uintptr_t page = 4096;
		uintptr_t lo = span.start & ~(page - 1);
		uintptr_t hi = (span.end + page - 1) & ~(page - 1);
		if (mmap((void *)lo, hi - lo, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0) == MAP_FAILED)
			perror("reopen: mmap");
	}
	if (still)
		dlclose(still);
	fflush(stdout);
	alloc_through(argv[1], 200, NULL);
	printf("ok\n");
	return 0;
}
