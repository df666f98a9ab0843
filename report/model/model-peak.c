/* SPDX-License-Identifier: MIT */
/*
 * Peak attribution (see LW_LINGER_STEPS): device memory born in an earlier
 * step and freed at most LW_LINGER_STEPS steps later lingered at the peaks
 * of the steps it outlived. A free of older memory is noted at once; what
 * it means for each step's peak is settled when that step can no longer
 * gain any, keeping the step at the highest peak and the one with the most
 * lingering bytes.
 */
#include "model-parts.h"

#include <errno.h>
#include <stdlib.h>

/* Adds size bytes of site to what lingered at the peak of the step in slot. */
static int linger_add(struct lw_model *m, unsigned slot, uint32_t site,
		      uint64_t size)
{
	struct lw_site *s = &m->sites.items[site];
	uint32_t *touched;

	if (s->lingering[slot] == 0) {
		touched = lw_grow_array(m->peak.touched[slot],
				     &m->peak.touched_capacity[slot],
				     m->peak.touched_count[slot] + 1,
				     sizeof(*touched));
		if (!touched)
			return -ENOMEM;
		m->peak.touched[slot] = touched;
		touched[m->peak.touched_count[slot]++] = site;
	}
	s->lingering[slot] += size;
	m->peak.open_bytes[slot] += size;
	return 0;
}

/*
 * Memory born in step b and freed now, in step m->counts.steps, lingered at the
 * peaks of the steps in between and maybe at this step's: counted when this
 * step ends (end_step()). A free after the last step is teardown, not
 * lingering: the trace ends before that step does, and it is never counted.
 */
int lw_peak_note_late_free(struct lw_model *m, const struct lw_live *e)
{
	struct lw_late_free *late;

	late = lw_grow_array(m->peak.late_frees, &m->peak.late_free_capacity,
			  m->peak.late_free_count + 1, sizeof(*late));
	if (!late)
		return -ENOMEM;
	m->peak.late_frees = late;
	late[m->peak.late_free_count].event = m->counts.events;
	late[m->peak.late_free_count].birth_step = e->birth_step;
	late[m->peak.late_free_count].size = e->size;
	late[m->peak.late_free_count].site = e->site;
	m->peak.late_free_count++;
	return 0;
}

/* Keeps a step's peak attribution; sites are distinct (linger_add()). */
static int keep_lingering(struct lw_lingering *to, uint64_t step,
			  uint64_t peak, uint64_t bytes, const uint32_t *sites,
			  size_t count, const struct lw_model *m, unsigned slot)
{
	struct lw_site_share *items = NULL;

	if (count) {
		items = malloc(count * sizeof(*items));
		if (!items)
			return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		items[i].site = sites[i];
		items[i].bytes = m->sites.items[sites[i]].lingering[slot];
		items[i].count = 0;
	}
	free(to->sites.items);
	to->sites.items = items;
	to->sites.count = to->sites.capacity = count;
	to->step = step;
	to->peak_bytes = peak;
	to->bytes = bytes;
	return 0;
}

/*
 * Settles step p's peak attribution: nothing can linger at its peak any
 * more (what was born before p and is still live will have lived longer
 * than LW_LINGER_STEPS when it is freed).
 */
static int settle_lingering(struct lw_model *m, uint64_t p)
{
	unsigned slot = (unsigned)(p % LW_LINGER_STEPS);
	uint32_t *touched = m->peak.touched[slot];
	size_t n = m->peak.touched_count[slot];
	uint64_t peak = m->peak.open_peak[slot], bytes = m->peak.open_bytes[slot];
	int rc;

	if (!m->peak.have_worst || peak > m->peak.worst.peak_bytes) {
		rc = keep_lingering(&m->peak.worst, p, peak, bytes,
				    touched, n, m, slot);
		if (rc < 0)
			return rc;
		m->peak.have_worst = true;
	}
	if (bytes > m->peak.most.bytes &&
	    (rc = keep_lingering(&m->peak.most, p, peak, bytes, touched,
				 n, m, slot)) < 0)
		return rc;
	if (bytes) {
		/* The point that covers step p: the one taken at its end,
		 * or the later one it was merged into. */
		uint64_t i = (p + m->points.stride) / m->points.stride - 1;

		m->peak.lingering_steps++;
		if (i < m->points.count &&
		    bytes > m->points.items[i].lingering_bytes)
			m->points.items[i].lingering_bytes = bytes;
	}
	for (size_t i = 0; i < n; i++) {
		struct lw_site *s = &m->sites.items[touched[i]];
		uint64_t v = s->lingering[slot];

		s->lingering_steps++;
		s->lingering_total += v;
		if (v > s->lingering_max)
			s->lingering_max = v;
		s->lingering[slot] = 0;
	}
	m->peak.touched_count[slot] = 0;
	m->peak.open_bytes[slot] = 0;
	m->peak.open_peak[slot] = 0;
	return 0;
}

static int compare_lingering(const void *a, const void *b, void *model)
{
	const struct lw_model *m = model;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t mx = m->sites.items[x].lingering_max;
	uint64_t my = m->sites.items[y].lingering_max;

	if (mx != my)
		return mx < my ? 1 : -1;
	return (x > y) - (x < y);
}

static bool lingered(const void *model, uint32_t site)
{
	const struct lw_model *m = model;

	return m->sites.items[site].lingering_steps &&
	       !lw_model_site_suppressed(m, site);
}

int lw_model_lingering_sites(const struct lw_model *m, uint32_t **out,
			     size_t *count)
{
	return lw_select_sites(m->sites.count, lingered, compare_lingering, m,
			       out, count);
}

/*
 * The current step ends: its peak is known, so the frees of older memory
 * after it say what lingered there, and the oldest step still open to
 * lingering is settled.
 */
int lw_peak_end_step(struct lw_model *m)
{
	unsigned slot = (unsigned)(m->counts.steps % LW_LINGER_STEPS);
	uint64_t now = m->counts.steps;
	int rc;

	m->peak.open_peak[slot] = m->peak.cur_bytes;
	for (size_t i = 0; i < m->peak.late_free_count; i++) {
		const struct lw_late_free *f = &m->peak.late_frees[i];

		/* Live at the peaks of the steps between birth and now. */
		for (uint64_t p = f->birth_step + 1; p < now; p++) {
			rc = linger_add(m, (unsigned)(p % LW_LINGER_STEPS),
					f->site, f->size);
			if (rc < 0)
				return rc;
		}
		if (f->event <= m->peak.cur_event)
			continue; /* freed before this step's peak */
		if ((rc = linger_add(m, slot, f->site, f->size)) < 0)
			return rc;
	}
	m->peak.late_free_count = 0;
	if (now + 1 >= LW_LINGER_STEPS &&
	    (rc = settle_lingering(m, now + 1 - LW_LINGER_STEPS)) < 0)
		return rc;
	m->peak.cur_bytes = m->counts.live_device_bytes;
	m->peak.cur_event = m->counts.events;
	m->peak.interval_bytes = m->peak.cur_bytes;
	return 0;
}

int lw_peak_finish(struct lw_model *m)
{
	uint64_t from = m->counts.steps >= LW_LINGER_STEPS - 1
				? m->counts.steps - (LW_LINGER_STEPS - 1) : 0;
	int rc;

	/* The steps that ended (the last one, cut short by the end of the
	 * trace, did not) and are not settled yet. */
	for (uint64_t p = from; p < m->counts.steps; p++) {
		if ((rc = settle_lingering(m, p)) < 0)
			return rc;
	}
	return 0;
}
