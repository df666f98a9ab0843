/* SPDX-License-Identifier: MIT */
/*
 * Bounded traces (common/lw-format.h): what each interval made and freed
 * again arrives summed per stack in its SHORT_LIVED record, whose changes
 * update a table of what each stack makes per interval. Each record adds
 * the whole table to the model as the ALLOC and FREE records it stands for
 * would have: the sites' allocations and frees (of lifetime 0, some inside
 * a pass of the collector), the trace's counts, PyTorch's blocks; and the
 * interval's peak, which none of the written records shows, to the step's
 * peak and its attribution (model-peak.c).
 *
 * The sites' births and frees are accounted as model.c accounts ALLOC and
 * FREE records, by the same functions (model-parts.h).
 *
 * Memory: one entry per stack that makes short-lived allocations.
 */
#include "model-parts.h"

#include <errno.h>
#include <string.h>

/* Takes a stack's entry out of the table (the last one fills its slot). */
static void drop(struct lw_model *m, uint32_t slot)
{
	struct lw_short_lived_table *t = &m->short_lived;
	struct lw_short_lived_entry *e = &t->items[slot];

	m->stacks.items[e->stack_id].short_lived = LW_NO_SITE;
	if (slot + 1 < t->count) {
		*e = t->items[t->count - 1];
		m->stacks.items[e->stack_id].short_lived = slot;
	}
	t->count--;
}

int lw_model_on_short_lived_change(
	void *ctx, const struct lw_trace_short_lived_change *c)
{
	struct lw_model *m = ctx;
	struct lw_short_lived_table *t = &m->short_lived;
	struct lw_short_lived_entry *e, *items;
	uint32_t slot, site;
	int rc;

	if (c->stack_id >= m->stacks.count)
		return -EINVAL; /* the reader rules this out */
	slot = m->stacks.items[c->stack_id].short_lived;
	if (c->count == 0) {
		if (slot != LW_NO_SITE)
			drop(m, slot);
		return 0;
	}
	if ((rc = lw_model_site_for(m, c->stack_id, c->kind, &site)) < 0)
		return rc;
	if (slot == LW_NO_SITE) {
		if (t->count >= LW_NO_SITE)
			return -EOVERFLOW;
		items = lw_grow_array(t->items, &t->capacity, t->count + 1,
				      sizeof(*items));
		if (!items)
			return -ENOMEM;
		t->items = items;
		slot = (uint32_t)t->count++;
		m->stacks.items[c->stack_id].short_lived = slot;
	}
	e = &t->items[slot];
	e->stack_id = c->stack_id;
	e->site = site;
	e->context = lw_model_context_index(m, c->api, c->device, c->stream);
	e->torch_block = c->api == LW_API_TORCH_BLOCK;
	e->count = c->count;
	e->bytes = c->bytes;
	e->gc_count = c->gc_count;
	e->gc_bytes = c->gc_bytes;
	return 0;
}

/* One stack's allocations of the interval, made and freed in it. */
static void add_entry(struct lw_model *m, const struct lw_short_lived_entry *e)
{
	struct lw_site *s = &m->sites.items[e->site];

	lw_model_account_births(m, e->site, e->context, e->torch_block,
				e->count, e->bytes);
	if (s->torch_block) {
		m->torch.blocks += e->count;
		/* A stack's requests of the interval, by their mean size. */
		if (e->count && e->bytes / e->count > m->torch.step_max_request)
			m->torch.step_max_request = e->bytes / e->count;
	}
	m->counts.frees += e->count;
	m->counts.events += 2 * e->count;
	m->short_lived.allocations += e->count;
	lw_model_account_frees(m, e->site, e->count, 0, e->gc_count,
			       e->gc_bytes);
}

int lw_model_on_short_lived(void *ctx, const struct lw_trace_short_lived *rec)
{
	struct lw_model *m = ctx;

	m->short_lived.records++;
	/* The interval's peak: the step's if it passed what the step had
	 * reached when the interval began, the records after it freeing
	 * what lingered there. What the written records reached on their
	 * own in the interval is a part of it, never more. */
	if (rec->peak > m->peak.interval_bytes) {
		m->peak.cur_bytes = rec->peak;
		m->peak.cur_event = rec->after_peak < m->counts.events
					    ? m->counts.events - rec->after_peak
					    : 0;
	}
	m->peak.interval_bytes = m->peak.cur_bytes;
	if (rec->peak > m->peak.bytes) {
		m->peak.bytes = rec->peak;
		m->peak.step = m->counts.steps;
	}
	if (rec->peak > m->points.peak)
		m->points.peak = rec->peak;
	if (rec->torch_peak > m->torch.peak_allocated_bytes) {
		m->torch.peak_allocated_bytes = rec->torch_peak;
		m->torch.free_at_peak_bytes =
			m->torch.reserved_bytes > rec->torch_peak
				? m->torch.reserved_bytes - rec->torch_peak
				: 0;
	}
	/* The step's account: the interval's peak of PyTorch's blocks, with
	 * the pool as it stands now (its segments are all written). */
	if (rec->torch_peak > m->torch.step_peak_allocated) {
		m->torch.step_peak_allocated = rec->torch_peak;
		m->torch.step_free_at_peak =
			m->torch.reserved_bytes > rec->torch_peak
				? m->torch.reserved_bytes - rec->torch_peak
				: 0;
	}
	if (!m->have_program_end)
		m->counts.gc_passes += rec->gc_passes;
	for (size_t i = 0; rec->summed && i < m->short_lived.count; i++)
		add_entry(m, &m->short_lived.items[i]);
	return 0;
}
