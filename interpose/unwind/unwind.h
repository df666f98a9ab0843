/* SPDX-License-Identifier: MIT */
/* Native call stacks, captured with libunwind. */
#ifndef LW_UNWIND_H
#define LW_UNWIND_H

#include <stdint.h>

#include "lw-hash.h"

#define LW_MAX_FRAMES 128

/*
 * Sets libunwind's per-thread cache and finds the shim's own code range;
 * fast_walk: follow ordinary x86-64 frames with cached .eh_frame rules
 * (falling back to libunwind for any other frame), else libunwind only.
 */
void lw_unwind_init(int fast_walk);

/*
 * A stack's hash is built word by word (lw_hash_word from LW_HASH_SEED),
 * so that the unwinder hashes the frames as it finds them and the Python
 * frames are added after, then finished by lw_hash_finish.
 */
#define LW_HASH_SEED 0x243f6a8885a308d3ull

static inline uint64_t lw_hash_word(uint64_t h, uintptr_t word)
{
	h = (h ^ word) * LW_HASH_GOLDEN;
	return (h << 31) | (h >> 33);
}

/* The finished hash of words hashed words: never 0. */
uint64_t lw_hash_finish(uint64_t h, unsigned words);

/*
 * Fills frames with the return addresses of the current call stack,
 * innermost first, starting at the first frame outside the shim (the caller
 * of the intercepted CUDA function), and *hash with their running hash.
 * Returns the number of frames, at most max. Takes no lock of leakwatch's.
 */
unsigned lw_unwind(uintptr_t *frames, unsigned max, uint64_t *hash);

/* lw_unwind() through the fast walk alone: the depth, or -1 when some
 * frame's rule is not one it follows (or not on x86-64). */
int lw_unwind_fast(uintptr_t *frames, unsigned max, uint64_t *hash);

/* lw_unwind() through libunwind's unw_backtrace() alone. */
unsigned lw_unwind_libunwind(uintptr_t *frames, unsigned max, uint64_t *hash);

/* The finished hash of a whole stack, never 0. */
uint64_t lw_stack_hash(const uintptr_t *frames, unsigned depth);

#endif
