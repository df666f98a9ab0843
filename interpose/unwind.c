/* SPDX-License-Identifier: MIT */
#include "unwind.h"

#include <elf.h>
#include <link.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

/* The shim's own loaded range: frames in it are leakwatch's, not the
 * program's. Skipping by range rather than by count is immune to inlining. */
static uintptr_t self_start, self_end;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t probe = (uintptr_t)data;

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && probe >= s &&
		    probe < s + ph->p_memsz) {
			self_start = s;
			self_end = s + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void lw_unwind_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&lw_unwind);
}

unsigned lw_unwind(uintptr_t *frames, unsigned max)
{
	void *raw[LW_MAX_FRAMES + 16];
	unsigned skip = 0, depth = 0;
	int n;

	if (max > LW_MAX_FRAMES)
		max = LW_MAX_FRAMES;
	n = unw_backtrace(raw, (int)(max + 16));
	if (n <= 0)
		return 0;
	while (skip < (unsigned)n && (uintptr_t)raw[skip] >= self_start &&
	       (uintptr_t)raw[skip] < self_end)
		skip++;
	for (unsigned i = skip; i < (unsigned)n && depth < max; i++)
		frames[depth++] = (uintptr_t)raw[i];
	return depth;
}

uint64_t lw_stack_hash(const uintptr_t *frames, unsigned depth)
{
	/* Four independent lanes, so the multiplies overlap instead of
	 * forming one long dependency chain (stacks are tens of frames). */
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t lane[4] = { depth, k, k << 1, k << 2 };
	unsigned i = 0;

	for (; i + 4 <= depth; i += 4)
		for (unsigned j = 0; j < 4; j++)
			lane[j] = (lane[j] ^ frames[i + j]) * k;
	for (; i < depth; i++)
		lane[0] = (lane[0] ^ frames[i]) * k;
	uint64_t h = lane[0] ^ (lane[1] >> 1) ^ (lane[2] >> 2) ^ (lane[3] >> 3);
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h ? h : 1;
}
