/* SPDX-License-Identifier: MIT */
#include "modules.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "writer.h"

/* Known objects, sorted by start address. */
static struct lw_module *known;
static unsigned known_count, known_capacity;

const struct lw_module *lw_modules_find(uintptr_t addr)
{
	unsigned lo = 0, hi = known_count;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (addr < known[mid].start)
			hi = mid;
		else if (addr >= known[mid].end)
			lo = mid + 1;
		else
			return &known[mid];
	}
	return NULL;
}

int lw_modules_cover(const uintptr_t *addrs, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		if (!lw_modules_find(addrs[i]))
			return 0;
	return 1;
}

static char *arena_strdup(const char *s)
{
	size_t len = strlen(s);
	char *copy = lw_arena_alloc(len + 1);
	if (copy)
		memcpy(copy, s, len + 1);
	return copy;
}

static int grow(struct lw_module **array, unsigned *capacity, unsigned need)
{
	if (need <= *capacity)
		return 0;
	unsigned cap = *capacity ? *capacity * 2 : 64;
	while (cap < need)
		cap *= 2;
	struct lw_module *bigger = lw_arena_alloc(cap * sizeof(*bigger));
	if (!bigger)
		return -1;
	if (*array) {
		memcpy(bigger, *array, *capacity * sizeof(*bigger));
		lw_arena_free(*array);
	}
	*array = bigger;
	*capacity = cap;
	return 0;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lw_module_scan *scan = data;
	char resolved[PATH_MAX];
	const char *name = info->dlpi_name;
	uintptr_t start = UINTPTR_MAX, end = 0;

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (s < start)
			start = s;
		if (s + ph->p_memsz > end)
			end = s + ph->p_memsz;
	}
	if (start >= end)
		return 0;

	if (!name || !name[0]) {
		/* The main program has no name here. */
		ssize_t n = readlink("/proc/self/exe", resolved,
				     sizeof(resolved) - 1);
		if (n <= 0)
			return 0;
		resolved[n] = '\0';
		name = resolved;
	} else if (name[0] != '/') {
		/* linux-vdso.so.1 has no file; relative LD_PRELOAD paths do. */
		if (!realpath(name, resolved))
			return 0;
		name = resolved;
	}

	if (grow(&scan->modules, &scan->capacity, scan->count + 1) < 0)
		return 1;
	char *path = arena_strdup(name);
	if (!path)
		return 1;
	scan->modules[scan->count++] = (struct lw_module){
		.start = start, .end = end,
		.bias = info->dlpi_addr, .path = path,
	};
	return 0;
}

int lw_modules_scan(struct lw_module_scan *scan)
{
	memset(scan, 0, sizeof(*scan));
	dl_iterate_phdr(scan_one, scan);
	return scan->count ? 0 : -12; /* -ENOMEM */
}

static int same_module(const struct lw_module *a, const struct lw_module *b)
{
	return a->start == b->start && a->end == b->end &&
	       a->bias == b->bias && strcmp(a->path, b->path) == 0;
}

static void insert_known(const struct lw_module *m)
{
	unsigned pos = 0;

	/* An object loaded where another one was unloaded replaces it. */
	for (unsigned i = 0; i < known_count;) {
		if (known[i].start < m->end && m->start < known[i].end) {
			lw_arena_free(known[i].path);
			memmove(&known[i], &known[i + 1],
				(known_count - i - 1) * sizeof(*known));
			known_count--;
		} else {
			i++;
		}
	}
	while (pos < known_count && known[pos].start < m->start)
		pos++;
	memmove(&known[pos + 1], &known[pos],
		(known_count - pos) * sizeof(*known));
	known[pos] = *m;
	known_count++;
}

void lw_modules_merge(struct lw_module_scan *scan, struct lw_writer *w)
{
	for (unsigned i = 0; i < scan->count; i++) {
		struct lw_module *m = &scan->modules[i];
		const struct lw_module *old = lw_modules_find(m->start);
		if (old && same_module(old, m))
			continue;
		if (grow(&known, &known_capacity, known_count + 1) < 0)
			return;
		insert_known(m);
		lw_writer_module(w, m->bias, m->start, m->end, m->path);
		m->path = NULL; /* now owned by the known list */
	}
}

void lw_modules_scan_release(struct lw_module_scan *scan)
{
	for (unsigned i = 0; i < scan->count; i++)
		lw_arena_free(scan->modules[i].path);
	lw_arena_free(scan->modules);
	memset(scan, 0, sizeof(*scan));
}

void lw_modules_reset(void)
{
	for (unsigned i = 0; i < known_count; i++)
		lw_arena_free(known[i].path);
	known_count = 0;
}
