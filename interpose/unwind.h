/* SPDX-License-Identifier: MIT */
/* Native call stacks, captured with libunwind. */
#ifndef LW_UNWIND_H
#define LW_UNWIND_H

#include <stdint.h>

#define LW_MAX_FRAMES 128

/* Sets libunwind's per-thread cache and finds the shim's own code range. */
void lw_unwind_init(void);

/*
 * Fills frames with the return addresses of the current call stack,
 * innermost first, starting at the first frame outside the shim (the caller
 * of the intercepted CUDA function). Returns the number of frames, at most
 * max. Takes no lock of leakwatch's.
 */
unsigned lw_unwind(uintptr_t *frames, unsigned max);

/* A 64-bit hash of a stack, never 0. */
uint64_t lw_stack_hash(const uintptr_t *frames, unsigned depth);

#endif
