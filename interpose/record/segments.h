/* SPDX-License-Identifier: MIT */
/*
 * The segments that PyTorch's native caching allocator holds: the memory it
 * reserved with cudaMalloc (or cuMemCreate, for expandable segments, keyed
 * by the handle) and hands out block by block. They are kept apart from the
 * live allocations, so that a block and the segment it starts share an
 * address without being counted twice. The caller (the tracker) holds its
 * lock around every call.
 */
#ifndef LW_SEGMENTS_H
#define LW_SEGMENTS_H

#include <stdint.h>

/* Adds a segment; an earlier one at the same key is replaced. Returns 0,
 * or -ENOMEM when leakwatch's own memory is exhausted. */
int lw_segments_add(uintptr_t key, uint64_t size);

/* Removes the segment at key; returns 1 and its size, or 0 if none. */
int lw_segments_remove(uintptr_t key, uint64_t *size);

/* Bytes reserved in live segments. */
uint64_t lw_segments_live_bytes(void);

/* Forgets every segment (a forked child starts empty). */
void lw_segments_reset(void);

#endif
