/* SPDX-License-Identifier: MIT */
/*
 * uthash as the shim uses it: tables draw on leakwatch's arena and never
 * exit() when memory runs out. A file that includes this defines
 * `static int table_oom;`, which an insertion sets when it failed.
 */
#ifndef LW_UTHASH_H
#define LW_UTHASH_H

#include <stdint.h>
#include <string.h>

#include "arena.h"

#define uthash_malloc(size) lw_arena_alloc(size)
#define uthash_free(ptr, size) lw_arena_free(ptr)
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (table_oom = 1)
/* Keys are 64-bit addresses and hashes, or strings (the phase and Python
 * names): one multiply mixes the former; strings keep uthash's own. */
#define HASH_FUNCTION(keyptr, keylen, hashv)                                  \
	do {                                                                  \
		if ((keylen) == sizeof(uint64_t)) {                           \
			uint64_t k_;                                          \
			memcpy(&k_, (keyptr), sizeof(k_));                    \
			k_ *= 0x9e3779b97f4a7c15ull;                          \
			(hashv) = (unsigned)(k_ >> 32);                       \
		} else {                                                      \
			HASH_JEN(keyptr, keylen, hashv);                      \
		}                                                             \
	} while (0)
#include <uthash.h>

#endif
