/* SPDX-License-Identifier: MIT */
/*
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones), so a long run of allocations and frees never degrades it.
 */
#include "fake-table.h"

#include <errno.h>
#include <stdlib.h>

#define MIN_SLOTS 64

static size_t slot_of(uintptr_t key, size_t slot_count)
{
	uint64_t hash = (uint64_t)key;

	/* MurmurHash3's finaliser: the keys are aligned, so mix the low bits. */
	hash ^= hash >> 33;
	hash *= UINT64_C(0xff51afd7ed558ccd);
	hash ^= hash >> 33;
	hash *= UINT64_C(0xc4ceb9fe1a85ec53);
	hash ^= hash >> 33;
	return (size_t)hash & (slot_count - 1);
}

static void place(struct fake_entry *slots, size_t slot_count,
		  const struct fake_entry *entry)
{
	size_t i = slot_of(entry->key, slot_count);

	while (slots[i].key)
		i = (i + 1) & (slot_count - 1);
	slots[i] = *entry;
}

static int grow(struct fake_table *table)
{
	size_t new_count = table->slot_count ? table->slot_count * 2 : MIN_SLOTS;
	struct fake_entry *slots;
	size_t i;

	if (new_count < table->slot_count || new_count > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(new_count, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < table->slot_count; i++) {
		if (table->slots[i].key)
			place(slots, new_count, &table->slots[i]);
	}
	free(table->slots);
	table->slots = slots;
	table->slot_count = new_count;
	return 0;
}

int fake_table_insert(struct fake_table *table, const struct fake_entry *entry)
{
	int ret;

	if (!entry->key)
		return -EINVAL;
	if (fake_table_find(table, entry->key))
		return -EEXIST;
	/* Keep the load under 3/4 so that probe runs stay short. */
	if ((table->count + 1) * 4 > table->slot_count * 3) {
		ret = grow(table);
		if (ret)
			return ret;
	}
	place(table->slots, table->slot_count, entry);
	table->count++;
	return 0;
}

struct fake_entry *fake_table_find(struct fake_table *table, uintptr_t key)
{
	size_t i;

	if (!table->slot_count || !key)
		return NULL;
	i = slot_of(key, table->slot_count);
	while (table->slots[i].key) {
		if (table->slots[i].key == key)
			return &table->slots[i];
		i = (i + 1) & (table->slot_count - 1);
	}
	return NULL;
}

void fake_table_remove(struct fake_table *table, struct fake_entry *entry)
{
	struct fake_entry *slots = table->slots;
	size_t mask = table->slot_count - 1;
	size_t hole = (size_t)(entry - slots);
	size_t i = hole;
	size_t home;

	for (;;) {
		i = (i + 1) & mask;
		if (!slots[i].key)
			break;
		/*
		 * The entry at i may fill the hole only if the hole lies on its
		 * probe path, that is cyclically within [home, i).
		 */
		home = slot_of(slots[i].key, table->slot_count);
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			slots[hole] = slots[i];
			hole = i;
		}
	}
	slots[hole] = (struct fake_entry){ 0 };
	table->count--;
}

struct fake_entry *fake_table_scan(struct fake_table *table,
				   int (*match)(const struct fake_entry *entry, void *context),
				   void *context)
{
	size_t i;

	for (i = 0; i < table->slot_count; i++) {
		if (table->slots[i].key && match(&table->slots[i], context))
			return &table->slots[i];
	}
	return NULL;
}

size_t fake_table_remove_matching(struct fake_table *table,
				  int (*match)(const struct fake_entry *entry, void *context),
				  void (*release)(const struct fake_entry *entry, void *context),
				  void *context)
{
	struct fake_entry *entry;
	size_t removed = 0;
	size_t i = 0;

	while (i < table->slot_count) {
		entry = &table->slots[i];
		if (entry->key && match(entry, context)) {
			if (release)
				release(entry, context);
			/*
			 * Backward shift may pull a later entry into slot i:
			 * look at the same slot again. Entries only ever move
			 * into the hole, never past unvisited slots.
			 */
			fake_table_remove(table, entry);
			removed++;
			continue;
		}
		i++;
	}
	return removed;
}
