/* SPDX-License-Identifier: MIT */
#include "lw-addr-table.h"

#include <string.h>

#include "lw-hash.h"

#define MIN_SLOTS 1024

static inline uint64_t key_of(const unsigned char *slot)
{
	return *(const uint64_t *)slot;
}

static inline unsigned char *slot_at(const struct lw_addr_table *t, size_t i)
{
	return t->slots + i * t->kind->slot_size;
}

static inline size_t home(const struct lw_addr_table *t, uint64_t key)
{
	return (size_t)(lw_hash_mix(key) >> t->shift);
}

/* The slot holding key, or the empty slot where it would go. */
static unsigned char *probe(const struct lw_addr_table *t, uint64_t key)
{
	uint64_t empty = t->kind->empty;

	for (size_t i = home(t, key);; i = (i + 1) & t->mask) {
		unsigned char *s = slot_at(t, i);
		uint64_t k = key_of(s);

		if (k == key || k == empty)
			return s;
	}
}

void *lw_addr_table_find(const struct lw_addr_table *t, uint64_t key)
{
	unsigned char *s;

	if (!t->slots || key == t->kind->empty)
		return NULL;
	s = probe(t, key);
	return key_of(s) == key ? s : NULL;
}

static bool grow(struct lw_addr_table *t)
{
	const struct lw_addr_table_kind *kind = t->kind;
	size_t slots = t->slots ? 2 * (t->mask + 1) : MIN_SLOTS;
	size_t old_slots = lw_addr_table_slots(t);
	unsigned char *old = t->slots, *fresh;
	unsigned bits = 0;

	if (slots > SIZE_MAX / kind->slot_size)
		return false;
	fresh = kind->alloc(slots * kind->slot_size);
	if (!fresh)
		return false;
	for (size_t i = 0; i < slots; i++)
		memcpy(fresh + i * kind->slot_size, &kind->empty,
		       sizeof(kind->empty));
	while (((size_t)1 << bits) < slots)
		bits++;
	t->slots = fresh;
	t->mask = slots - 1;
	t->shift = 64 - bits;
	for (size_t i = 0; i < old_slots; i++) {
		const unsigned char *s = old + i * kind->slot_size;

		if (key_of(s) != kind->empty)
			memcpy(probe(t, key_of(s)), s, kind->slot_size);
	}
	kind->release(old);
	return true;
}

void *lw_addr_table_put(struct lw_addr_table *t, uint64_t key, bool *found)
{
	unsigned char *s;

	*found = false;
	if (key == t->kind->empty)
		return NULL;
	if (t->slots) {
		s = probe(t, key);
		if (key_of(s) == key) {
			*found = true;
			return s;
		}
	}
	if (!t->slots || (t->used + 1) * 256 > (t->mask + 1) * t->kind->max_load) {
		if (!grow(t))
			return NULL;
	}
	s = probe(t, key);
	memcpy(s, &key, sizeof(key));
	t->used++;
	return s;
}

void lw_addr_table_remove(struct lw_addr_table *t, void *record)
{
	size_t size = t->kind->slot_size;
	size_t i = (size_t)((unsigned char *)record - t->slots) / size;

	/* Shift back each later record of the run whose home is not after
	 * the hole, so that every record stays reachable from its home. */
	for (size_t j = (i + 1) & t->mask; key_of(slot_at(t, j)) != t->kind->empty;
	     j = (j + 1) & t->mask) {
		size_t h = home(t, key_of(slot_at(t, j)));

		if (((j - h) & t->mask) >= ((j - i) & t->mask)) {
			memcpy(slot_at(t, i), slot_at(t, j), size);
			i = j;
		}
	}
	memcpy(slot_at(t, i), &t->kind->empty, sizeof(t->kind->empty));
	t->used--;
}

void lw_addr_table_clear(struct lw_addr_table *t)
{
	if (t->slots)
		t->kind->release(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->shift = 0;
	t->used = 0;
}
