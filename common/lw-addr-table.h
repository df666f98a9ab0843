/* SPDX-License-Identifier: MIT */
/*
 * The project's one hash table: records keyed by a 64-bit address (live
 * allocations, in the shim and in the report's model). Open addressing with
 * linear probing, records in place, at most as full as its kind says; a removal
 * shifts later records of its probe run back, so there are no tombstones
 * and lookups stay short however many allocations come and go.
 *
 * A record is any struct whose first member is its uint64_t key. An empty
 * slot holds the kind's empty key, which must be a key the table is never
 * given (0 for pointers returned by an allocator, UINT64_MAX for addresses
 * read from a trace). Where the memory comes from is the kind's choice.
 * Not thread-safe.
 */
#ifndef LW_ADDR_TABLE_H
#define LW_ADDR_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lw_addr_table_kind {
	size_t slot_size;	/* a multiple of 8, key first */
	uint64_t empty;		/* the key of an empty slot */
	/* Grows past this many records in 256 slots: 192 (three quarters)
	 * saves memory, 128 (half) keeps probes shorter. */
	unsigned max_load;
	/* Memory for slots; NULL when there is none. */
	void *(*alloc)(size_t bytes);
	void (*release)(void *p);
};

struct lw_addr_table {
	const struct lw_addr_table_kind *kind;
	unsigned char *slots;	/* NULL until the first insert */
	size_t mask;		/* slot count - 1 */
	unsigned shift;		/* 64 - log2(slot count) */
	size_t used;
};

/* An empty table of that kind; nothing is allocated until an insert. */
static inline void lw_addr_table_init(struct lw_addr_table *t,
				      const struct lw_addr_table_kind *kind)
{
	*t = (struct lw_addr_table){ .kind = kind };
}

/* The record of key, or NULL. */
void *lw_addr_table_find(const struct lw_addr_table *t, uint64_t key);

/*
 * The record of key: the one the table holds (*found true), or a new one
 * with only its key set (*found false; the caller fills the rest). NULL
 * when the table cannot grow or key is the empty key. Pointers into the
 * table are valid until the next insert.
 */
void *lw_addr_table_put(struct lw_addr_table *t, uint64_t key, bool *found);

/* Empties the slot of a record the table holds. */
void lw_addr_table_remove(struct lw_addr_table *t, void *record);

/* Frees the table's memory and empties it. */
void lw_addr_table_clear(struct lw_addr_table *t);

/* Slot i (i < lw_addr_table_slots()) when it holds a record, else NULL. */
static inline void *lw_addr_table_slot(const struct lw_addr_table *t,
				       size_t i)
{
	unsigned char *s = t->slots + i * t->kind->slot_size;

	return *(const uint64_t *)s != t->kind->empty ? s : NULL;
}

/* The number of slots, for visiting every record. */
static inline size_t lw_addr_table_slots(const struct lw_addr_table *t)
{
	return t->slots ? t->mask + 1 : 0;
}

#endif
