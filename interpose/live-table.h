/* SPDX-License-Identifier: MIT */
/*
 * The live table: the allocations live now, by address. Open addressing
 * with linear probing, records in place, at most three quarters full;
 * deletions shift later records back (no tombstones). An allocation or a
 * free costs a probe or two and no call to the arena; only growing the
 * table does. Not thread-safe: the tracker holds its lock.
 */
#ifndef LW_LIVE_TABLE_H
#define LW_LIVE_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct lw_stack_entry;

/* A live allocation: a slot of the table, empty when addr is 0. */
struct lw_live {
	uintptr_t addr;
	uint64_t size;
	struct lw_stack_entry *stack;
	uint8_t kind;
	/* Made inside a phase: 1 + the phases closed by then, mod 255; 0
	 * outside any phase. */
	uint8_t phase;
	uint32_t step;	/* steps written before it was made */
};

struct lw_live_table {
	struct lw_live *slots;	/* NULL until the first insert */
	size_t mask;		/* slots - 1 */
	unsigned shift;		/* 64 - log2(slots) */
	size_t used;
};

/* The record of addr, or NULL. */
struct lw_live *lw_live_table_find(const struct lw_live_table *t,
				   uintptr_t addr);

/*
 * A slot for addr, which the table must not hold, with addr set (the
 * caller fills the rest); NULL when the table cannot grow (leakwatch's
 * memory is out). Pointers into the table are valid until the next insert.
 */
struct lw_live *lw_live_table_insert(struct lw_live_table *t, uintptr_t addr);

/* Empties the slot e of the table. */
void lw_live_table_remove(struct lw_live_table *t, struct lw_live *e);

/* Frees the table's memory and empties it. */
void lw_live_table_clear(struct lw_live_table *t);

/* The number of slots to visit (for i < n, t->slots[i] with addr != 0). */
static inline size_t lw_live_table_slots(const struct lw_live_table *t)
{
	return t->slots ? t->mask + 1 : 0;
}

#endif
