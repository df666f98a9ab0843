/* SPDX-License-Identifier: MIT */
/*
 * The project's one hash table: records keyed by a 64-bit address (live
 * allocations, in the shim and in the report's model). Open addressing with
 * linear probing, records in place, at most as full as its kind says; a
 * removal shifts later records of its probe run back, so there are no
 * tombstones and lookups stay short however many allocations come and go.
 *
 * A record is any struct whose first member is its uint64_t key, with a
 * byte the table owns: nonzero while the slot holds a record, so that every
 * key, 0 and 2^64-1 included, is a valid one. What the table holds is
 * described by a kind (struct lw_addr_table_kind), passed to every call: a
 * user defines its kind as a static const and the calls, inline here, are
 * compiled for that record's size and layout. Not thread-safe.
 */
#ifndef LW_ADDR_TABLE_H
#define LW_ADDR_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lw-hash.h"

struct lw_addr_table_kind {
	size_t slot_size;	/* a multiple of 8, key first */
	size_t used_offset;	/* of the byte the table owns */
	/* Grows past this many records in 256 slots: 192 (three quarters)
	 * saves memory, 128 (half) keeps probes shorter. */
	unsigned max_load;
	/* Memory for slots (NULL when there is none), and its release. */
	void *(*alloc)(size_t bytes);
	void (*release)(void *p);
};

struct lw_addr_table {
	unsigned char *slots;	/* NULL until the first insert */
	size_t mask;		/* slot count - 1 */
	unsigned shift;		/* 64 - log2(slot count) */
	size_t used;
};

static inline bool lw_addr_table_used_(const unsigned char *slot,
				       const struct lw_addr_table_kind *k)
{
	return slot[k->used_offset] != 0;
}

/* Doubles the table (or makes its first slots); false when out of memory.
 * Out of line: it runs once per doubling. */
bool lw_addr_table_grow(struct lw_addr_table *t,
			const struct lw_addr_table_kind *k);

/* Frees the table's memory and empties it. */
void lw_addr_table_clear(struct lw_addr_table *t,
			 const struct lw_addr_table_kind *k);

static inline uint64_t lw_addr_table_key_(const unsigned char *slot)
{
	uint64_t key;

	memcpy(&key, slot, sizeof(key));
	return key;
}

static inline unsigned char *
lw_addr_table_at_(const struct lw_addr_table *t,
		  const struct lw_addr_table_kind *k, size_t i)
{
	return t->slots + i * k->slot_size;
}

static inline size_t lw_addr_table_home_(const struct lw_addr_table *t,
					 uint64_t key)
{
	return (size_t)(lw_hash_mix(key) >> t->shift);
}

/* The slot holding key, or the empty slot where it would go. */
static inline unsigned char *
lw_addr_table_probe_(const struct lw_addr_table *t,
		     const struct lw_addr_table_kind *k, uint64_t key)
{
	for (size_t i = lw_addr_table_home_(t, key);; i = (i + 1) & t->mask) {
		unsigned char *s = lw_addr_table_at_(t, k, i);

		if (!lw_addr_table_used_(s, k) || lw_addr_table_key_(s) == key)
			return s;
	}
}

/* The record of key, or NULL. */
static inline void *lw_addr_table_find(const struct lw_addr_table *t,
				       const struct lw_addr_table_kind *k,
				       uint64_t key)
{
	unsigned char *s;

	if (!t->slots)
		return NULL;
	s = lw_addr_table_probe_(t, k, key);
	return lw_addr_table_used_(s, k) ? s : NULL;
}

/*
 * The record of key: the one the table holds (*found true), or a new one
 * with only its key set (*found false; the caller fills the rest). NULL
 * when the table cannot grow. Pointers into the table are valid until the
 * next insert.
 */
static inline void *lw_addr_table_put(struct lw_addr_table *t,
				      const struct lw_addr_table_kind *k,
				      uint64_t key, bool *found)
{
	unsigned char *s = NULL;

	*found = false;
	if (t->slots) {
		s = lw_addr_table_probe_(t, k, key);
		if (lw_addr_table_used_(s, k)) {
			*found = true;
			return s;
		}
	}
	if (!s || (t->used + 1) * 256 > (t->mask + 1) * k->max_load) {
		if (!lw_addr_table_grow(t, k))
			return NULL;
		s = lw_addr_table_probe_(t, k, key);
	}
	memcpy(s, &key, sizeof(key));
	s[k->used_offset] = 1;
	t->used++;
	return s;
}

/* Empties the slot of a record the table holds. */
static inline void lw_addr_table_remove(struct lw_addr_table *t,
					const struct lw_addr_table_kind *k,
					void *record)
{
	size_t i = (size_t)((unsigned char *)record - t->slots) / k->slot_size;

	/* Shift back each later record of the run whose home is not after
	 * the hole, so that every record stays reachable from its home. */
	for (size_t j = (i + 1) & t->mask;; j = (j + 1) & t->mask) {
		unsigned char *s = lw_addr_table_at_(t, k, j);
		size_t h;

		if (!lw_addr_table_used_(s, k))
			break;
		h = lw_addr_table_home_(t, lw_addr_table_key_(s));
		if (((j - h) & t->mask) >= ((j - i) & t->mask)) {
			memcpy(lw_addr_table_at_(t, k, i), s, k->slot_size);
			i = j;
		}
	}
	lw_addr_table_at_(t, k, i)[k->used_offset] = 0;
	t->used--;
}

/* Slot i (i < lw_addr_table_slots()) when it holds a record, else NULL. */
static inline void *lw_addr_table_slot(const struct lw_addr_table *t,
				       const struct lw_addr_table_kind *k,
				       size_t i)
{
	unsigned char *s = lw_addr_table_at_(t, k, i);

	return lw_addr_table_used_(s, k) ? s : NULL;
}

/* The number of slots, for visiting every record. */
static inline size_t lw_addr_table_slots(const struct lw_addr_table *t)
{
	return t->slots ? t->mask + 1 : 0;
}

#endif
