/* SPDX-License-Identifier: MIT */
/*
 * The address table (common/lw-addr-table.c) against a plain array of what
 * should be in it, with two kinds of record: the shim's live allocation
 * (memory from the arena) and a wider one (from malloc). Random puts and
 * removes, addresses that share their home slot, 0 and 2^64-1 among the
 * keys, growth past the first size, every record still found after each
 * backward shift, and a put of a key already there finding it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "live-table.h"
#include "lw-test.h"

#define KEYS 50000

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	return lw_test_rng(&rng_state);
}

/* A record of another size and layout than the shim's. */
struct wide {
	uint64_t key;
	uint64_t value;
	uint8_t used;
	uint64_t pad[2];
};

static const struct lw_addr_table_kind wide_kind = {
	.slot_size = sizeof(struct wide),
	.used_offset = offsetof(struct wide, used),
	.alloc = malloc,
	.release = free,
	.max_load = 128,
};

static uint64_t value_of(const struct lw_addr_table_kind *kind, const void *r)
{
	return kind == &wide_kind ? ((const struct wide *)r)->value
				  : ((const struct lw_live *)r)->size;
}

static void set_value(const struct lw_addr_table_kind *kind, void *r,
		      uint64_t v)
{
	if (kind == &wide_kind)
		((struct wide *)r)->value = v;
	else
		((struct lw_live *)r)->size = v;
}

static void run(const struct lw_addr_table_kind *kind, const uint64_t *keys,
		const char *name)
{
	static unsigned char in[KEYS];
	struct lw_addr_table t = { 0 };
	size_t count = 0;
	bool found;

	memset(in, 0, sizeof(in));
	CHECK(lw_addr_table_find(&t, kind, keys[0]) == NULL);
	for (unsigned round = 0; round < 400000; round++) {
		size_t k = rng() % KEYS;
		void *r;

		if (!in[k] || round % 7 == 0) {
			/* A put of a key already in finds its record. */
			r = lw_addr_table_put(&t, kind, keys[k], &found);
			REQUIRE(r);
			if (found != (in[k] != 0)) {
				lw_test_fail("%s: put of key %zu: found %d", name,
					     k, found);
				return;
			}
			if (found)
				CHECK_EQ_U64(value_of(kind, r), k);
			set_value(kind, r, k);
			count += !in[k];
			in[k] = 1;
		} else {
			r = lw_addr_table_find(&t, kind, keys[k]);
			REQUIRE(r);
			CHECK_EQ_U64(value_of(kind, r), k);
			lw_addr_table_remove(&t, kind, r);
			in[k] = 0;
			count--;
		}
	}
	CHECK_EQ_U64(t.used, count);
	for (size_t k = 0; k < KEYS; k++) {
		void *r = lw_addr_table_find(&t, kind, keys[k]);

		if (in[k] != (r != NULL) || (r && value_of(kind, r) != k)) {
			lw_test_fail("%s: key %zu: %s", name, k,
				     in[k] ? "lost" : "still there");
			break;
		}
	}
	/* The slots visited hold exactly the keys that are in. */
	size_t seen = 0;

	for (size_t i = 0; i < lw_addr_table_slots(&t); i++)
		seen += lw_addr_table_slot(&t, kind, i) != NULL;
	CHECK_EQ_U64(seen, count);
	lw_addr_table_clear(&t, kind);
	CHECK(lw_addr_table_find(&t, kind, keys[0]) == NULL);
	CHECK_EQ_U64(lw_addr_table_slots(&t), 0);
}

int main(void)
{
	static uint64_t keys[KEYS];

	/* Aligned addresses, as allocators give them, many a page apart;
	 * the first and last there are. */
	for (size_t i = 0; i < KEYS; i++)
		keys[i] = 0x7f0000000000ull + (uint64_t)i * 0x1000;
	keys[7] = 0;
	keys[8] = UINT64_MAX;
	run(&lw_live_table_kind, keys, "live table");
	/* Addresses from a trace, some differing only in their high bits. */
	for (size_t i = 0; i < KEYS; i++)
		keys[i] = i % 3 ? 0x7f0000000000ull + (uint64_t)i * 0x200
				: ((uint64_t)i << 40) + 0x100;
	keys[7] = 0;
	keys[8] = UINT64_MAX;
	run(&wide_kind, keys, "wide records");
	return lw_test_done("test-addr-table");
}
