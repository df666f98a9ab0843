/* SPDX-License-Identifier: MIT */
/*
 * The project's two hashes (the shim's and the report's). Of a key for a
 * table: Fibonacci hashing, a multiplication by 2^64 divided by the golden
 * ratio whose high bits are the slot, so that keys that differ only in
 * their low bits (aligned addresses, nearby code pointers) spread over the
 * table. Of bytes and text: FNV-1a.
 */
#ifndef LW_HASH_H
#define LW_HASH_H

#include <stddef.h>
#include <stdint.h>

#define LW_HASH_GOLDEN 0x9e3779b97f4a7c15ull

/* key mixed; take its high bits (>> (64 - table bits)) for a slot. */
static inline uint64_t lw_hash_mix(uint64_t key)
{
	return key * LW_HASH_GOLDEN;
}

/*
 * 64-bit FNV-1a of len bytes, continued from h (LW_FNV1A_BASIS to start):
 * for names and payloads whose hash is kept, written or compared (the
 * symbol cache's checksums, the report's groups of holders and labels).
 */
#define LW_FNV1A_BASIS 0xcbf29ce484222325ull
#define LW_FNV1A_PRIME 0x100000001b3ull

static inline uint64_t lw_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * LW_FNV1A_PRIME;
	return h;
}

/* The same over a NUL-terminated string, without its NUL. */
static inline uint64_t lw_fnv1a_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * LW_FNV1A_PRIME;
	return h;
}

#endif
