/* SPDX-License-Identifier: MIT */
/*
 * The step series: at a step point (every stride-th STEP record) device
 * memory and, for each site whose live totals changed since the previous
 * point, its totals. A site gets a series of its own only once its totals
 * differ between two points; when the series is full, pairs of points are
 * merged and the stride doubles (LW_STEP_POINTS_MAX).
 */
#include "model-parts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "torch.h"

/* Halves the step series: merges pairs of points, doubles the stride. */
static void merge_step_points(struct lw_model *m)
{
	size_t half = m->points.count / 2;

	for (size_t i = 0; i < half; i++) {
		struct lw_step_point *a = &m->points.items[2 * i];
		struct lw_step_point b = m->points.items[2 * i + 1];

		if (a->peak_bytes > b.peak_bytes)
			b.peak_bytes = a->peak_bytes;
		if (a->lingering_bytes > b.lingering_bytes)
			b.lingering_bytes = a->lingering_bytes;
		if (a->peak_reserved_bytes > b.peak_reserved_bytes)
			b.peak_reserved_bytes = a->peak_reserved_bytes;
		if (a->peak_allocated_bytes > b.peak_allocated_bytes) {
			b.peak_allocated_bytes = a->peak_allocated_bytes;
			b.free_at_peak_bytes = a->free_at_peak_bytes;
		}
		if (a->peak_outside_bytes > b.peak_outside_bytes)
			b.peak_outside_bytes = a->peak_outside_bytes;
		if (a->peak_in_use_bytes > b.peak_in_use_bytes)
			b.peak_in_use_bytes = a->peak_in_use_bytes;
		if (a->max_request_bytes > b.max_request_bytes)
			b.max_request_bytes = a->max_request_bytes;
		m->points.items[i] = b;
	}
	for (uint32_t j = 0; j < m->points.series_count; j++) {
		struct lw_site_series *se = &m->points.series[j];

		for (size_t i = 0; i < half; i++) {
			se->bytes[i] = se->bytes[2 * i + 1];
			se->counts[i] = se->counts[2 * i + 1];
		}
	}
	m->points.count = half;
	m->points.stride *= 2;
}

static uint32_t saturate_count(uint64_t count)
{
	return count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
}

/* Makes room for need points in a site's series (need <= the maximum). */
static int series_reserve(struct lw_site_series *se, size_t need)
{
	size_t n = se->capacity ? se->capacity : 16;
	uint64_t *bytes;
	uint32_t *counts;

	if (need <= se->capacity)
		return 0;
	while (n < need)
		n *= 2;
	bytes = realloc(se->bytes, n * sizeof(*bytes));
	if (!bytes)
		return -ENOMEM;
	se->bytes = bytes;
	counts = realloc(se->counts, n * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	se->counts = counts;
	se->capacity = n;
	return 0;
}

/*
 * Gives a site whose live totals just changed a series of its own, with
 * its constant totals at the points before i.
 */
static int start_site_series(struct lw_model *m, struct lw_site *s, size_t i)
{
	struct lw_site_series *all, *se;
	int rc;

	if (m->points.series_count >= LW_SITE_SERIES_MAX) {
		s->series = LW_SERIES_UNTRACKED;
		return 0;
	}
	all = lw_grow_array(m->points.series, &m->points.series_capacity,
			 (size_t)m->points.series_count + 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->points.series = all;
	se = &all[m->points.series_count];
	memset(se, 0, sizeof(*se));
	if ((rc = series_reserve(se, i + 1)) < 0) {
		free(se->bytes);
		free(se->counts);
		return rc;
	}
	for (size_t j = 0; j < i; j++) {
		se->bytes[j] = s->step_bytes;
		se->counts[j] = saturate_count(s->step_count);
	}
	s->series = m->points.series_count++;
	return 0;
}

/* Records step point i: the run's and every changing site's live totals. */
int lw_points_add(struct lw_model *m)
{
	struct lw_step_point *p;
	size_t i;
	int rc;

	if (m->points.count == LW_STEP_POINTS_MAX)
		merge_step_points(m);
	if (m->counts.steps % m->points.stride != 0)
		return 0; /* the merge moved the next point further on */
	p = lw_grow_array(m->points.items, &m->points.capacity,
		       m->points.count + 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	m->points.items = p;
	i = m->points.count;
	p = &m->points.items[i];
	p->step = m->counts.steps;
	p->live_bytes = m->counts.live_device_bytes;
	p->live_count = m->kinds[LW_MEM_DEVICE].live_count +
			m->kinds[LW_MEM_MANAGED].live_count;
	p->peak_bytes = m->points.peak;
	p->lingering_bytes = 0; /* settle_lingering() sets it later */
	p->phase_instance = 0;
	p->phase = UINT32_MAX;
	if (m->phases.depth && m->phases.depth <= LW_PHASE_DEPTH_MAX) {
		p->phase_instance = m->phases.open[m->phases.depth - 1].instance;
		p->phase = m->phases.open[m->phases.depth - 1].phase;
	}
	p->allocated_bytes = m->torch.allocated_bytes;
	p->reserved_bytes = m->torch.reserved_bytes;
	p->peak_reserved_bytes = m->torch.step_peak_reserved;
	m->torch.step_peak_reserved = m->torch.reserved_bytes;
	{
		struct lw_torch_memory *t = &m->torch;
		uint64_t live = m->counts.live_device_bytes;

		p->peak_allocated_bytes = t->step_peak_allocated;
		p->free_at_peak_bytes = t->step_free_at_peak;
		p->outside_bytes = live > t->allocated_bytes
					   ? live - t->allocated_bytes : 0;
		p->peak_outside_bytes = t->step_peak_outside;
		p->peak_in_use_bytes = t->step_peak_in_use;
		/* Without PyTorch's pool all the device memory is outside
		 * it, and the step's peak says the most of it, in a bounded
		 * trace (whose steps are sums) as in a full one. */
		if (!t->segments && !t->allocated_bytes) {
			p->peak_outside_bytes = p->peak_bytes;
			p->peak_in_use_bytes = p->peak_bytes;
		}
		p->max_request_bytes = t->step_max_request;
		/* The next step's account starts from what is live now. */
		t->step_peak_allocated = 0;
		t->step_free_at_peak = 0;
		t->step_peak_outside = 0;
		t->step_peak_in_use = 0;
		t->step_max_request = 0;
		lw_torch_account(m);
	}

	for (size_t d = 0; d < m->points.dirty_count; d++) {
		struct lw_site *s = &m->sites.items[m->points.dirty[d]];

		if (s->series == LW_NO_SERIES &&
		    (s->totals.live_bytes != s->step_bytes ||
		     s->totals.live_count != s->step_count) &&
		    (rc = start_site_series(m, s, i)) < 0)
			return rc;
		s->dirty = false;
		s->step_bytes = s->totals.live_bytes;
		s->step_count = s->totals.live_count;
	}
	m->points.dirty_count = 0;
	for (uint32_t site = 0; site < m->sites.count && m->points.series_count; site++) {
		const struct lw_site *s = &m->sites.items[site];
		struct lw_site_series *se;

		if (s->series >= LW_SERIES_UNTRACKED)
			continue;
		se = &m->points.series[s->series];
		if ((rc = series_reserve(se, i + 1)) < 0)
			return rc;
		se->bytes[i] = s->totals.live_bytes;
		se->counts[i] = saturate_count(s->totals.live_count);
	}
	m->points.count++;
	m->points.peak = m->counts.live_device_bytes;
	return 0;
}

bool lw_model_site_at_point(const struct lw_model *m, uint32_t site, size_t i,
			    struct lw_live_count *out)
{
	const struct lw_site *s = &m->sites.items[site];

	out->live_bytes = s->step_bytes;
	out->live_count = s->step_count;
	if (s->series == LW_SERIES_UNTRACKED)
		return false;
	if (s->series != LW_NO_SERIES) {
		out->live_bytes = m->points.series[s->series].bytes[i];
		out->live_count = m->points.series[s->series].counts[i];
	}
	return true;
}
