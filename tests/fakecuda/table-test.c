/* SPDX-License-Identifier: MIT */
/*
 * fake-table.c against a plain array: random inserts and removes, with
 * keys aligned and packed like the runtime's allocations, so that probe runs
 * collide and wrap and every backward shift is exercised.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake-table.h"

#define KEYS 4096
#define STEPS 400000

static unsigned char present[KEYS];
static int failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,   \
				__LINE__, #cond);                                \
			if (++failures > 20)                                     \
				exit(1);                                         \
		}                                                                \
	} while (0)

static uintptr_t key_of(size_t index)
{
	return 0x7f0000000000u + (uintptr_t)index * 256;
}

static void verify(struct fake_table *table)
{
	const struct fake_entry *entry;
	size_t count = 0;
	size_t i;

	for (i = 0; i < KEYS; i++) {
		entry = fake_table_find(table, key_of(i));
		CHECK(present[i] ? entry && entry->size == i : !entry);
		count += present[i];
	}
	CHECK(table->count == count);
}

static int is_odd(const struct fake_entry *entry, void *context)
{
	return entry->size % 2 == 1;
}

static void forget(const struct fake_entry *entry, void *context)
{
	size_t *released = context;

	present[entry->size] = 0;
	(*released)++;
}

static int has_size(const struct fake_entry *entry, void *context)
{
	return entry->size == *(const size_t *)context;
}

int main(void)
{
	struct fake_table table = { 0 };
	struct fake_entry entry = { 0 };
	unsigned int state = 12345;
	size_t released, removed, i, step;
	struct fake_entry *found;

	CHECK(fake_table_find(&table, key_of(1)) == NULL);
	CHECK(fake_table_insert(&table, &entry) == -EINVAL);
	for (step = 0; step < STEPS; step++) {
		state = state * 1103515245u + 12345u;
		/* Grow to about half full, then churn around that. */
		i = (state >> 8) % (step < STEPS / 2 ? KEYS / 2 : KEYS);
		entry = (struct fake_entry){ .key = key_of(i), .size = i, .kind = 1 };
		if (present[i]) {
			found = fake_table_find(&table, key_of(i));
			CHECK(found && found->size == i);
			if (found)
				fake_table_remove(&table, found);
			present[i] = 0;
		} else {
			CHECK(fake_table_insert(&table, &entry) == 0);
			CHECK(fake_table_insert(&table, &entry) == -EEXIST);
			present[i] = 1;
		}
		if (step % 20000 == 0)
			verify(&table);
		if (step % 100000 == 99999) {
			released = 0;
			removed = fake_table_remove_matching(&table, is_odd, forget, &released);
			CHECK(removed == released);
			verify(&table);
		}
	}
	verify(&table);
	for (i = 0; i < KEYS; i += 2) {
		if (present[i])
			CHECK(fake_table_scan(&table, has_size, &i) != NULL);
	}
	removed = fake_table_remove_matching(&table, is_odd, NULL, NULL);
	CHECK(removed == 0);
	free(table.slots);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
