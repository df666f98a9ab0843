/* SPDX-License-Identifier: MIT */
#include "live-table.h"

#include "arena.h"
#include "lw-hash.h"

#define LIVE_MIN_SLOTS 1024

static size_t home(const struct lw_live_table *t, uintptr_t addr)
{
	return (size_t)(lw_hash_mix((uint64_t)addr) >> t->shift);
}

struct lw_live *lw_live_table_find(const struct lw_live_table *t,
				   uintptr_t addr)
{
	if (!t->slots)
		return NULL;
	for (size_t i = home(t, addr);; i = (i + 1) & t->mask) {
		if (t->slots[i].addr == addr)
			return &t->slots[i];
		if (!t->slots[i].addr)
			return NULL;
	}
}

/* The slot where addr, not in the table, goes. */
static struct lw_live *free_slot(const struct lw_live_table *t, uintptr_t addr)
{
	size_t i = home(t, addr);

	while (t->slots[i].addr)
		i = (i + 1) & t->mask;
	return &t->slots[i];
}

static int grow(struct lw_live_table *t)
{
	size_t slots = t->slots ? 2 * (t->mask + 1) : LIVE_MIN_SLOTS;
	struct lw_live *old = t->slots;
	size_t old_slots = old ? t->mask + 1 : 0;
	unsigned bits = 0;

	if (slots > SIZE_MAX / sizeof(*old))
		return 0;
	struct lw_live *fresh = lw_arena_alloc(slots * sizeof(*fresh));
	if (!fresh)
		return 0;
	while (((size_t)1 << bits) < slots)
		bits++;
	t->slots = fresh;
	t->mask = slots - 1;
	t->shift = 64 - bits;
	for (size_t i = 0; i < old_slots; i++)
		if (old[i].addr)
			*free_slot(t, old[i].addr) = old[i];
	lw_arena_free(old);
	return 1;
}

struct lw_live *lw_live_table_insert(struct lw_live_table *t, uintptr_t addr)
{
	struct lw_live *e;

	if (!t->slots || (t->used + 1) * 4 > (t->mask + 1) * 3) {
		if (!grow(t))
			return NULL;
	}
	e = free_slot(t, addr);
	e->addr = addr;
	t->used++;
	return e;
}

void lw_live_table_remove(struct lw_live_table *t, struct lw_live *e)
{
	size_t i = (size_t)(e - t->slots);

	/* Shift back each later record of the run whose home is not after
	 * the hole, so that every record stays reachable from its home. */
	for (size_t j = (i + 1) & t->mask; t->slots[j].addr;
	     j = (j + 1) & t->mask) {
		size_t h = home(t, t->slots[j].addr);
		if (((j - h) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].addr = 0;
	t->used--;
}

void lw_live_table_clear(struct lw_live_table *t)
{
	lw_arena_free(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->shift = 0;
	t->used = 0;
}
