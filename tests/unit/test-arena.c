/* SPDX-License-Identifier: MIT */
/* leakwatch's private allocator. */
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "lw-test.h"

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(void)
{
	static const size_t sizes[] = { 1, 15, 16, 17, 100, 4000, 4081, 5000,
					1 << 20 };
	void *blocks[sizeof(sizes) / sizeof(sizes[0])];

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		blocks[i] = lw_arena_alloc(sizes[i]);
		CHECK(blocks[i] != NULL);
		CHECK(((uintptr_t)blocks[i] & 15) == 0);
		CHECK(all_zero(blocks[i], sizes[i]));
		memset(blocks[i], 0xab, sizes[i]);
	}
	/* Blocks do not overlap: each still holds its own pattern. */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const uint8_t *p = blocks[i];
		CHECK(p[0] == 0xab && p[sizes[i] - 1] == 0xab);
	}
	size_t mapped = lw_arena_mapped_bytes();
	CHECK(mapped >= (1 << 20));

	/* A freed small block is reused, and comes back zeroed. */
	lw_arena_free(blocks[4]);
	void *again = lw_arena_alloc(100);
	CHECK(again == blocks[4]);
	CHECK(all_zero(again, 100));

	/* A freed large block is returned to the system. */
	lw_arena_free(blocks[8]);
	CHECK(lw_arena_mapped_bytes() < mapped);

	/* The limit makes allocation fail cleanly instead of growing. */
	lw_arena_set_limit(lw_arena_mapped_bytes());
	CHECK(lw_arena_alloc(1 << 20) == NULL);
	lw_arena_set_limit(0);
	void *big = lw_arena_alloc(1 << 20);
	CHECK(big != NULL);
	lw_arena_free(big);

	CHECK(lw_arena_alloc(SIZE_MAX) == NULL);
	lw_arena_free(NULL);
	return lw_test_done("test-arena");
}
