/* SPDX-License-Identifier: MIT */
/*
 * leakwatch's own memory. Everything the shim keeps (hash tables, stacks,
 * live-allocation records) comes from here, never from the program's malloc:
 * that keeps the shim out of the program's heap statistics, lets it run from
 * contexts where malloc is not safe to re-enter, and bounds what it may use.
 */
#ifndef LW_ARENA_H
#define LW_ARENA_H

#include <stddef.h>

/*
 * Returns zeroed memory of at least size bytes, or NULL when the arena's
 * limit is reached or the system refuses memory. Thread-safe.
 */
void *lw_arena_alloc(size_t size);

/* Returns memory from lw_arena_alloc(); NULL is ignored. Thread-safe. */
void lw_arena_free(void *ptr);

/* Bytes currently obtained from the system. */
size_t lw_arena_mapped_bytes(void);

/* The most lw_arena_mapped_bytes() has been. */
size_t lw_arena_peak_bytes(void);

/* Caps lw_arena_mapped_bytes(); 0 means no cap. */
void lw_arena_set_limit(size_t bytes);

/* Fork handling: the tracker calls these from its pthread_atfork handlers. */
void lw_arena_lock_for_fork(void);
void lw_arena_unlock_after_fork(void);

#endif
