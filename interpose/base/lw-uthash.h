/* SPDX-License-Identifier: MIT */
/*
 * uthash as the shim uses it: tables draw on leakwatch's arena and never
 * exit() when memory runs out. A file that includes this defines
 * `static int table_oom;`, which an insertion sets when it failed.
 */
#ifndef LW_UTHASH_H
#define LW_UTHASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lw-hash.h"
#include "arena.h"

#define uthash_malloc(size) lw_arena_alloc(size)
#define uthash_free(ptr, size) lw_arena_free(ptr)
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (table_oom = 1)
/* Keys are 64-bit addresses and hashes, hashed with one multiply, or
 * strings (phase and Python names), hashed with FNV-1a. */
static inline unsigned lw_uthash_key(const void *key, size_t len)
{
	if (len == sizeof(uint64_t)) {
		uint64_t k;
		memcpy(&k, key, sizeof(k));
		return (unsigned)((k * LW_HASH_GOLDEN) >> 32);
	}
	const unsigned char *p = key;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}
#define HASH_FUNCTION(keyptr, keylen, hashv)                                  \
	((hashv) = lw_uthash_key((keyptr), (size_t)(keylen)))
#include <uthash.h>

#endif
