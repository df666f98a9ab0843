/* SPDX-License-Identifier: MIT */
/*
 * Phases (PHASE_BEGIN/PHASE_END): what was born inside the innermost open
 * phase and is still live when it ends survived it, summed per named phase
 * and per site. And the per-site shares (struct lw_shares) that phases,
 * peak attribution and PyTorch's out-of-memory report keep.
 */
#include "model-parts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Adds to the share of site in sh; *slot caches where it is. */
int lw_shares_add(struct lw_shares *sh, uint32_t site, uint64_t bytes,
		      uint64_t count, uint32_t *slot)
{
	struct lw_site_share *items;
	size_t i;

	if (slot && *slot < sh->count && sh->items[*slot].site == site) {
		i = *slot;
	} else {
		for (i = 0; i < sh->count && sh->items[i].site != site; i++)
			;
		if (i == sh->count) {
			items = lw_grow_array(sh->items, &sh->capacity,
					   sh->count + 1, sizeof(*items));
			if (!items)
				return -ENOMEM;
			sh->items = items;
			items[i].site = site;
			items[i].bytes = 0;
			items[i].count = 0;
			sh->count++;
		}
		if (slot)
			*slot = (uint32_t)i;
	}
	sh->items[i].bytes += bytes;
	sh->items[i].count += count;
	return 0;
}

void lw_shares_sub(struct lw_shares *sh, uint32_t site, uint64_t bytes)
{
	for (size_t i = 0; i < sh->count; i++) {
		if (sh->items[i].site == site) {
			sh->items[i].bytes -= bytes;
			sh->items[i].count--;
			return;
		}
	}
}

static int compare_shares(const void *a, const void *b)
{
	const struct lw_site_share *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return (x->site > y->site) - (x->site < y->site);
}

void lw_shares_sort(struct lw_shares *sh)
{
	if (sh->count > 1)
		qsort(sh->items, sh->count, sizeof(*sh->items), compare_shares);
}

void lw_shares_fini(struct lw_shares *sh)
{
	free(sh->items);
	memset(sh, 0, sizeof(*sh));
}

/* The open phase instance with this id, or NULL (ended, or too deep). */
struct lw_open_phase *lw_model_open_phase(struct lw_model *m, uint32_t instance)
{
	size_t depth = m->phases.depth < LW_PHASE_DEPTH_MAX ? m->phases.depth
							   : LW_PHASE_DEPTH_MAX;

	for (size_t i = depth; i-- > 0;) {
		if (m->phases.open[i].instance == instance)
			return &m->phases.open[i];
	}
	return NULL;
}

int lw_model_phase_born_inside(struct lw_model *m, struct lw_live *e)
{
	struct lw_open_phase *op;
	struct lw_site *s = &m->sites.items[e->site];

	op = &m->phases.open[m->phases.depth - 1];
	e->phase = op->instance;
	if (s->phase_instance != op->instance) {
		s->phase_instance = op->instance;
		s->phase_slot = UINT32_MAX;
	}
	return lw_shares_add(&op->live, e->site, e->size, 1, &s->phase_slot);
}

/* The named phase for a STRING id, added at its first use. */
static int named_phase(struct lw_model *m, uint64_t string_id, uint32_t *out)
{
	struct lw_phase *all;

	for (size_t i = 0; i < m->phases.count; i++) {
		if (m->phases.items[i].string_id == string_id) {
			*out = (uint32_t)i;
			return 0;
		}
	}
	if (m->phases.count >= UINT32_MAX - 1)
		return -EOVERFLOW;
	all = lw_grow_array(m->phases.items, &m->phases.capacity, m->phases.count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->phases.items = all;
	memset(&all[m->phases.count], 0, sizeof(*all));
	all[m->phases.count].string_id = string_id;
	*out = (uint32_t)m->phases.count++;
	return 0;
}

int lw_model_on_phase_begin(void *ctx, uint64_t string_id)
{
	struct lw_model *m = ctx;
	struct lw_string *s = lw_model_find_string(m, string_id);
	struct lw_open_phase *op;
	uint32_t phase = UINT32_MAX;
	int rc;

	if (s) {
		s->phase_begins++;
		if ((rc = named_phase(m, string_id, &phase)) < 0)
			return rc;
	} else {
		m->phases.unnamed_begins++;
	}
	m->phases.begins++;
	m->phases.depth++;
	m->counts.events++;
	if (m->phases.depth > LW_PHASE_DEPTH_MAX)
		return 0; /* too deep: its memory counts for the phase outside */
	op = &m->phases.open[m->phases.depth - 1];
	op->phase = phase;
	/* Instance ids start at 1 (0 marks memory born outside phases) and
	 * wrap after 2^32 - 1 phases: an ended one is then looked up in
	 * vain among the open ones, as before. */
	if (++m->phases.instances == 0)
		m->phases.instances = 1;
	op->instance = m->phases.instances;
	op->live.count = 0;
	return 0;
}

/* An open phase ends: what was born in it and is still live survived it. */
static int end_phase(struct lw_model *m, struct lw_open_phase *op)
{
	struct lw_phase *ph;
	int rc;

	op->instance = 0;
	if (op->phase == UINT32_MAX)
		return 0;
	ph = &m->phases.items[op->phase];
	ph->instances++;
	for (size_t i = 0; i < op->live.count; i++) {
		const struct lw_site_share *sh = &op->live.items[i];

		if (sh->count == 0)
			continue;
		ph->surviving_bytes += sh->bytes;
		ph->surviving_count += sh->count;
		if ((rc = lw_shares_add(&ph->sites, sh->site, sh->bytes, sh->count,
				     NULL)) < 0)
			return rc;
	}
	return 0;
}

int lw_model_on_phase_end(void *ctx)
{
	struct lw_model *m = ctx;

	m->counts.events++;
	if (m->phases.depth == 0) {
		m->phases.unbalanced_ends++;
		return 0;
	}
	m->phases.depth--;
	if (m->phases.depth >= LW_PHASE_DEPTH_MAX)
		return 0;
	return end_phase(m, &m->phases.open[m->phases.depth]);
}

const struct lw_phase *lw_model_phase(const struct lw_model *m,
				      uint64_t string_id)
{
	for (size_t i = 0; i < m->phases.count; i++) {
		if (m->phases.items[i].string_id == string_id)
			return &m->phases.items[i];
	}
	return NULL;
}
