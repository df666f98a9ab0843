/* SPDX-License-Identifier: MIT */
#include "lw-addr-table.h"

#define MIN_SLOTS 1024

bool lw_addr_table_grow(struct lw_addr_table *t,
			const struct lw_addr_table_kind *k)
{
	size_t slots = t->slots ? 2 * (t->mask + 1) : MIN_SLOTS;
	size_t old_slots = lw_addr_table_slots(t);
	unsigned char *old = t->slots, *fresh;
	unsigned bits = 0;

	if (slots > SIZE_MAX / k->slot_size)
		return false;
	fresh = k->alloc(slots * k->slot_size);
	if (!fresh)
		return false;
	memset(fresh, 0, slots * k->slot_size);
	while (((size_t)1 << bits) < slots)
		bits++;
	t->slots = fresh;
	t->mask = slots - 1;
	t->shift = 64 - bits;
	for (size_t i = 0; i < old_slots; i++) {
		const unsigned char *s = old + i * k->slot_size;

		if (lw_addr_table_used_(s, k))
			memcpy(lw_addr_table_probe_(t, k, lw_addr_table_key_(s)),
			       s, k->slot_size);
	}
	if (old)
		k->release(old);
	return true;
}

void lw_addr_table_clear(struct lw_addr_table *t,
			 const struct lw_addr_table_kind *k)
{
	if (t->slots)
		k->release(t->slots);
	*t = (struct lw_addr_table){ 0 };
}
