/* SPDX-License-Identifier: MIT */
/*
 * A hash table of pointers: the stand-in runtime's record of what it handed
 * out (allocations, host registrations, streams, pools), so that it can
 * answer a bad pointer with the error the real runtime gives instead of
 * crashing. Not thread-safe: the caller holds the runtime's lock.
 */
#ifndef FAKE_TABLE_H
#define FAKE_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct fake_entry {
	uintptr_t key;  /* the pointer or handle; 0 marks an empty slot */
	size_t size;    /* bytes asked for; 0 for handles */
	int kind;       /* enum fake_kind */
	int device;     /* device ordinal, -1 for host memory */
	uintptr_t pool; /* the memory pool of a stream-ordered allocation, or 0 */
};

struct fake_table {
	struct fake_entry *slots;
	size_t slot_count; /* 0 or a power of two */
	size_t count;
};

/*
 * Adds a copy of entry (whose key must not be 0). Returns 0, -EEXIST if the
 * key is already there, or -ENOMEM if the table could not grow.
 */
int fake_table_insert(struct fake_table *table, const struct fake_entry *entry);

/* Returns the entry for key, or NULL. Valid until the table next changes. */
struct fake_entry *fake_table_find(struct fake_table *table, uintptr_t key);

/* Removes an entry returned by fake_table_find() or fake_table_scan(). */
void fake_table_remove(struct fake_table *table, struct fake_entry *entry);

/*
 * Returns the first entry for which match() returns non-zero, or NULL.
 * Linear in the table's size: for the uncommon calls only.
 */
struct fake_entry *fake_table_scan(struct fake_table *table,
				   int (*match)(const struct fake_entry *entry, void *context),
				   void *context);

/*
 * Removes every entry for which match() returns non-zero, after passing it to
 * release() (which may be NULL). Returns how many were removed.
 */
size_t fake_table_remove_matching(struct fake_table *table,
				  int (*match)(const struct fake_entry *entry, void *context),
				  void (*release)(const struct fake_entry *entry, void *context),
				  void *context);

#endif
