/* SPDX-License-Identifier: MIT */
/*
 * What the model's files (model.c, model-points.c, model-phases.c,
 * model-peak.c) share while a trace is read. Not for renderers: they read
 * the finished model through model.h's accessors.
 */
#ifndef LW_MODEL_PARTS_H
#define LW_MODEL_PARTS_H

#include <stdbool.h>
#include <stdlib.h>

#include "model.h"

/* Makes room for need elements; returns the (maybe moved) array or NULL. */
static inline void *lw_grow_array(void *array, size_t *capacity,
				  size_t need, size_t elem_size)
{
	size_t n = *capacity ? *capacity : 16;
	void *p;

	if (need <= *capacity)
		return array;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (n > SIZE_MAX / elem_size)
		return NULL;
	p = realloc(array, n * elem_size);
	if (p)
		*capacity = n;
	return p;
}

/* The STRING with this id, or NULL. */
struct lw_string *lw_model_find_string(const struct lw_model *m, uint64_t id);
/* The slot of an INFO key in meta.known_infos, or -1 for a key no part
 * of the report asks for. */
int lw_model_known_info(const uint8_t *key, size_t len);
/* The last PYCODE record with id, or NULL. */
const struct lw_pycode *lw_model_find_pycode(const struct lw_model *m,
					     uint64_t id);

/* Adds to the share of site in sh (*slot, when not NULL, caches where it
 * is); takes bytes and one allocation back; frees the shares. */
int lw_shares_add(struct lw_shares *sh, uint32_t site, uint64_t bytes,
		  uint64_t count, uint32_t *slot);
void lw_shares_sub(struct lw_shares *sh, uint32_t site, uint64_t bytes);
void lw_shares_fini(struct lw_shares *sh);

/* Phases: the open instance with this id (NULL: ended, or too deep); a
 * new live allocation counted for the innermost open phase; the trace's
 * PHASE_BEGIN and PHASE_END. */
struct lw_open_phase *lw_model_open_phase(struct lw_model *m,
					  uint32_t instance);
int lw_model_phase_born_inside(struct lw_model *m, struct lw_live *e);

static inline int lw_model_phase_born(struct lw_model *m, struct lw_live *e)
{
	e->phase = 0;
	if (m->phases.depth == 0 || m->phases.depth > LW_PHASE_DEPTH_MAX)
		return 0;
	return lw_model_phase_born_inside(m, e);
}
int lw_model_on_phase_begin(void *ctx, uint64_t string_id);
int lw_model_on_phase_end(void *ctx);

/* Peak attribution: a free of device memory; the end of a step (before
 * the step count moves on); the end of the trace. */
int lw_peak_note_late_free(struct lw_model *m, const struct lw_live *e);

static inline int lw_peak_note_free(struct lw_model *m,
				    const struct lw_live *e)
{
	uint64_t now = m->counts.steps, b = e->birth_step;

	/* Born in this step, or too long ago to linger: nothing to note. */
	if (b >= now || now - b > LW_LINGER_STEPS)
		return 0;
	return lw_peak_note_late_free(m, e);
}
int lw_peak_end_step(struct lw_model *m);
int lw_peak_finish(struct lw_model *m);

/* The trace's CONTEXT record: the API, device and stream of the
 * allocations that follow. */
int lw_model_on_context(void *ctx, uint64_t api, int64_t device,
			uint64_t stream);

/* The site of a stack and kind, made at its first use. Returns 0 or
 * -ENOMEM (-EOVERFLOW past the sites' limit). */
int lw_model_site_for(struct lw_model *m, uint64_t stack_id, unsigned kind,
		      uint32_t *site);

/* The index of a context (api, device, stream), added at its first use
 * (past LW_CONTEXTS_MAX, the last, marked other). */
uint16_t lw_model_context_index(struct lw_model *m, uint64_t api,
				int64_t device, uint64_t stream);

/*
 * The accounting of allocations that a full trace's ALLOC and FREE records
 * and a bounded trace's SHORT_LIVED records (count allocations of a stack,
 * made and freed in one interval) share, so that a site reads the same
 * from either. The records' events, the live totals and PyTorch's blocks
 * are their callers'.
 *
 * Births: count allocations of bytes in all at site, in context (its
 * index), made at the current step. torch_block: whether they are
 * PyTorch's blocks, which a site is or is not from its first allocation
 * on, so that its frees take back what its births added.
 */
static inline void lw_model_account_births(struct lw_model *m, uint32_t site,
					   uint16_t context, bool torch_block,
					   uint64_t count, uint64_t bytes)
{
	struct lw_site *s = &m->sites.items[site];
	struct lw_totals *k = &m->kinds[s->kind];

	if (s->totals.allocations == 0) {
		s->torch_block = torch_block;
		s->first_birth_step = m->counts.steps;
	}
	s->last_birth_step = m->counts.steps;
	s->totals.allocations += count;
	s->totals.bytes_allocated += bytes;
	k->allocations += count;
	k->bytes_allocated += bytes;
	if (lw_mem_kind_is_device(s->kind)) {
		struct lw_totals *c = &m->contexts.items[context].totals;

		c->allocations += count;
		c->bytes_allocated += bytes;
	}
	m->counts.allocations += count;
}

/*
 * Frees: count allocations of site freed at the current step, each after
 * lifetime steps (0: made in it); gc_count of them, gc_bytes in all,
 * inside a pass of the collector. Frees after the program's end are its
 * teardown: not counted in the sites' lifetimes.
 */
static inline void lw_model_account_frees(struct lw_model *m, uint32_t site,
					  uint64_t count, uint64_t lifetime,
					  uint64_t gc_count, uint64_t gc_bytes)
{
	struct lw_site *s = &m->sites.items[site];

	if (m->have_program_end)
		return;
	if (s->tail_step != m->counts.steps) {
		s->tail_step = m->counts.steps;
		s->tail_frees = s->tail_long_frees = s->tail_gc_frees = 0;
	}
	s->frees += count;
	s->tail_frees += count;
	s->lifetime_total += count * lifetime;
	if (lifetime > s->lifetime_max)
		s->lifetime_max = lifetime;
	if (lifetime > LW_LINGER_STEPS) {
		s->long_frees += count;
		s->tail_long_frees += count;
	}
	s->gc_frees += gc_count;
	s->tail_gc_frees += gc_count;
	s->gc_freed_bytes += gc_bytes;
	m->counts.gc_frees += gc_count;
}

/* Bounded traces' SHORT_LIVED records (model-short-lived.c). */
int lw_model_on_short_lived_change(
	void *ctx, const struct lw_trace_short_lived_change *c);
int lw_model_on_short_lived(void *ctx, const struct lw_trace_short_lived *rec);

/* Takes a step point (the step count is the step just ended). */
int lw_points_add(struct lw_model *m);

#endif
