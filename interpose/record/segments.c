/* SPDX-License-Identifier: MIT */
#include "segments.h"

#include <errno.h>
#include <stddef.h>

#include "lw-hash.h"
#include "arena.h"

/* Open addressing with linear probing, as the live table: segments are few
 * (one per cache miss of the allocator), so the table stays small. */
struct segment {
	uintptr_t key;
	uint64_t size;
};

static struct segment *slots;
static size_t mask, used;
static uint64_t live_bytes;

static size_t home(uintptr_t key)
{
	return (size_t)((uint64_t)key * LW_HASH_GOLDEN >> 20) & mask;
}

static struct segment *find(uintptr_t key)
{
	if (!slots)
		return NULL;
	for (size_t i = home(key);; i = (i + 1) & mask) {
		if (slots[i].key == key)
			return &slots[i];
		if (!slots[i].key)
			return NULL;
	}
}

static void put(struct segment s)
{
	size_t i = home(s.key);

	while (slots[i].key)
		i = (i + 1) & mask;
	slots[i] = s;
}

static int grow(void)
{
	size_t old_slots = slots ? mask + 1 : 0;
	size_t count = old_slots ? 2 * old_slots : 64;
	struct segment *old = slots;

	if (count > SIZE_MAX / sizeof(*old))
		return -ENOMEM;
	slots = lw_arena_alloc(count * sizeof(*slots));
	if (!slots) {
		slots = old;
		return -ENOMEM;
	}
	mask = count - 1;
	for (size_t i = 0; i < old_slots; i++)
		if (old[i].key)
			put(old[i]);
	lw_arena_free(old);
	return 0;
}

int lw_segments_add(uintptr_t key, uint64_t size)
{
	uint64_t old_size;

	if (!key)
		return 0;
	lw_segments_remove(key, &old_size);
	if ((!slots || (used + 1) * 4 > (mask + 1) * 3) && grow() < 0)
		return -ENOMEM;
	put((struct segment){ key, size });
	used++;
	live_bytes += size;
	return 0;
}

int lw_segments_remove(uintptr_t key, uint64_t *size)
{
	struct segment *s = used ? find(key) : NULL;

	if (!s)
		return 0;
	*size = s->size;
	live_bytes -= s->size;
	used--;
	/* Shift later records of the run back over the hole. */
	size_t i = (size_t)(s - slots);
	for (size_t j = (i + 1) & mask; slots[j].key; j = (j + 1) & mask) {
		size_t h = home(slots[j].key);
		if (((j - h) & mask) >= ((j - i) & mask)) {
			slots[i] = slots[j];
			i = j;
		}
	}
	slots[i].key = 0;
	return 1;
}

uint64_t lw_segments_live_bytes(void)
{
	return live_bytes;
}

void lw_segments_reset(void)
{
	lw_arena_free(slots);
	slots = NULL;
	mask = used = 0;
	live_bytes = 0;
}
