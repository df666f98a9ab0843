/* SPDX-License-Identifier: MIT */
#include "live-table.h"

#include "arena.h"

const struct lw_addr_table_kind lw_live_table_kind = {
	.slot_size = sizeof(struct lw_live),
	.empty = 0,
	.alloc = lw_arena_alloc,
	.release = lw_arena_free,
	.max_load = 192,
};
