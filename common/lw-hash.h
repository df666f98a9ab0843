/* SPDX-License-Identifier: MIT */
/*
 * The one hash of the project's tables (the shim's and the report's):
 * Fibonacci hashing, a multiplication by 2^64 divided by the golden ratio
 * whose high bits are the slot, so that keys that differ only in their
 * low bits (aligned addresses, nearby code pointers) spread over the table.
 */
#ifndef LW_HASH_H
#define LW_HASH_H

#include <stdint.h>

#define LW_HASH_GOLDEN 0x9e3779b97f4a7c15ull

/* key mixed; take its high bits (>> (64 - table bits)) for a slot. */
static inline uint64_t lw_hash_mix(uint64_t key)
{
	return key * LW_HASH_GOLDEN;
}

#endif
