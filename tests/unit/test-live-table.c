/* SPDX-License-Identifier: MIT */
/*
 * The shim's live table (interpose/live-table.c) against a plain array of
 * what should be in it: random inserts and removes, addresses that share
 * their home slot, growth past its first size, and every record still
 * found after each backward shift.
 */
#include <stdint.h>
#include <string.h>

#include "live-table.h"
#include "lw-test.h"

#define KEYS 50000

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

int main(void)
{
	static uintptr_t keys[KEYS];
	static unsigned char in[KEYS];
	struct lw_live_table t = { 0 };
	size_t count = 0;

	/* Aligned addresses, as allocators give them, many a page apart. */
	for (size_t i = 0; i < KEYS; i++)
		keys[i] = 0x7f0000000000ull + (uintptr_t)i * 0x1000;
	for (unsigned round = 0; round < 400000; round++) {
		size_t k = rng() % KEYS;

		if (!in[k]) {
			struct lw_live *e = lw_live_table_insert(&t, keys[k]);

			REQUIRE(e);
			e->size = k;
			in[k] = 1;
			count++;
		} else {
			struct lw_live *e = lw_live_table_find(&t, keys[k]);

			REQUIRE(e);
			CHECK_EQ_U64(e->size, k);
			lw_live_table_remove(&t, e);
			in[k] = 0;
			count--;
		}
	}
	CHECK_EQ_U64(t.used, count);
	for (size_t k = 0; k < KEYS; k++) {
		struct lw_live *e = lw_live_table_find(&t, keys[k]);

		if (in[k] != (e != NULL) || (e && e->size != k)) {
			lw_test_fail("key %zu: %s", k, in[k] ? "lost"
							       : "still there");
			break;
		}
	}
	/* Every slot visited holds a key that is in. */
	size_t seen = 0;

	for (size_t i = 0; i < lw_live_table_slots(&t); i++)
		seen += t.slots[i].addr != 0;
	CHECK_EQ_U64(seen, count);
	lw_live_table_clear(&t);
	CHECK(lw_live_table_find(&t, keys[0]) == NULL);
	CHECK_EQ_U64(lw_live_table_slots(&t), 0);
	return lw_test_done("test-live-table");
}
