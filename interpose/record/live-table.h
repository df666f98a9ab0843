/* SPDX-License-Identifier: MIT */
/*
 * The live table: the allocations live now, by address, in the project's
 * address table (common/lw-addr-table.h), its memory from the arena. An
 * allocation or a free costs a probe or two and no call to the arena; only
 * growing the table does. Not thread-safe: the tracker holds its lock.
 */
#ifndef LW_LIVE_TABLE_H
#define LW_LIVE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "lw-addr-table.h"

struct lw_stack_entry;

/* A live allocation. */
struct lw_live {
	uint64_t addr;
	uint64_t size;
	struct lw_stack_entry *stack;
	uint8_t kind;
	/* Made inside a phase: 1 + the phases closed by then, mod 255; 0
	 * outside any phase. */
	uint8_t phase;
	uint8_t used;	/* the table's */
	uint8_t flags;	/* LW_LIVE_* (bounded.h) */
	uint32_t step;	/* steps written before it was made */
};

/* Four to a cache line: the shim's memory per live allocation. */
_Static_assert(sizeof(struct lw_live) == 32, "struct lw_live grew");

static const struct lw_addr_table_kind lw_live_table_kind = {
	.slot_size = sizeof(struct lw_live),
	.used_offset = offsetof(struct lw_live, used),
	.max_load = 192,
	.alloc = lw_arena_alloc,
	.release = lw_arena_free,
};

/* The record of addr, or NULL. */
static inline struct lw_live *lw_live_table_find(const struct lw_addr_table *t,
						 uint64_t addr)
{
	return lw_addr_table_find(t, &lw_live_table_kind, addr);
}

/*
 * The record of addr: the one the table holds (*found true) or a new one
 * with addr set (the caller fills the rest); NULL when the table cannot
 * grow (leakwatch's memory is out) or addr is 0.
 */
static inline struct lw_live *lw_live_table_put(struct lw_addr_table *t,
						uint64_t addr, bool *found)
{
	return lw_addr_table_put(t, &lw_live_table_kind, addr, found);
}

static inline void lw_live_table_remove(struct lw_addr_table *t,
					struct lw_live *e)
{
	lw_addr_table_remove(t, &lw_live_table_kind, e);
}

/* Record i (i < lw_addr_table_slots()), or NULL for an empty slot. */
static inline const struct lw_live *
lw_live_table_slot(const struct lw_addr_table *t, size_t i)
{
	return lw_addr_table_slot(t, &lw_live_table_kind, i);
}

static inline void lw_live_table_clear(struct lw_addr_table *t)
{
	lw_addr_table_clear(t, &lw_live_table_kind);
}

#endif
