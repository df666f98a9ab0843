/* SPDX-License-Identifier: MIT */
/*
 * Growth verdicts of a model's step series: the run's and each site's (the
 * judging itself is common/lw-growth.c).
 */
#include "growth.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int judge(const struct lw_model *m, uint64_t min_steps,
		 struct lw_growth_report *out);

int lw_model_growth(const struct lw_model *m, uint64_t min_steps,
		    struct lw_growth_report *out)
{
	return judge(m, min_steps, out);
}

/* Consecutive step points [from, to) inside one phase instance. */
struct segment {
	size_t from, to;
};

/*
 * The stretches of steps that a named phase seen once (a test of a pytest
 * session, a benchmark) spans, of at least min_steps steps each: growth
 * within one is growth, even when what it kept stops growing after it
 * ends, so that a site gets the verdict the phase's own judge gives it.
 * Phases seen again (epochs, evaluations) are left alone: memory they
 * gather and drop each time is a sawtooth, judged on the whole run.
 * *out is malloc'ed (NULL when none). Returns how many, or -ENOMEM.
 */
static long phase_segments(const struct lw_model *m, uint64_t min_steps,
			   struct segment **out)
{
	size_t n = m->points.count, count = 0;
	struct segment *seg = NULL;

	*out = NULL;
	for (size_t i = 0, j; i < n; i = j) {
		const struct lw_step_point *p = &m->points.items[i];

		for (j = i + 1; j < n && m->points.items[j].phase_instance ==
						 p->phase_instance; j++)
			;
		if (!p->phase_instance || p->phase == UINT32_MAX ||
		    m->phases.items[p->phase].instances > 1 ||
		    (j - i) * m->points.stride < min_steps)
			continue;
		if (!seg && !(seg = calloc(n, sizeof(*seg))))
			return -ENOMEM;
		seg[count++] = (struct segment){ i, j };
	}
	*out = seg;
	return (long)count;
}

/* The fastest growth of v within one of the segments; false if none grows. */
static bool grows_in_a_phase(const double *v, const struct segment *seg,
			     size_t count, uint64_t stride,
			     struct lw_growth *out)
{
	bool found = false;

	for (size_t k = 0; k < count; k++) {
		struct lw_growth g = lw_judge_series(v + seg[k].from,
						     seg[k].to - seg[k].from,
						     stride);

		if (g.verdict == LW_VERDICT_GROWING &&
		    (!found || g.per_step > out->per_step)) {
			*out = g;
			found = true;
		}
	}
	return found;
}

/* Each site's memory at step ends: the most, the last, and whether it
 * was let go after the last step. */
static void held(const struct lw_model *m, struct lw_growth_report *out)
{
	size_t n = m->points.count;

	for (uint32_t site = 0; n && site < m->sites.count; site++) {
		struct lw_site_growth *sg = &out->sites[site];
		struct lw_live_count c;
		struct lw_totals now;

		for (size_t i = 0; i < n; i++) {
			if (!lw_model_site_at_point(m, site, i, &c))
				break;
			if (c.live_bytes > sg->held_bytes) {
				sg->held_bytes = c.live_bytes;
				sg->held_count = c.live_count;
				sg->held_step = m->points.items[i].step;
			}
			sg->last_bytes = c.live_bytes;
			sg->last_count = c.live_count;
		}
		now = lw_model_site_totals(m, site);
		sg->released = sg->last_bytes > now.live_bytes;
	}
}

/*
 * A step's input made larger every step (a curriculum's rising sequence
 * length), not a buffer kept and remade: one allocation at a time, each
 * freed before the site makes the next (a buffer remade from itself is
 * born while its predecessor lives) and at most one step mark after its
 * birth (the mark falls between its birth and its free when the step
 * ends at optimizer.step()). What it holds at a step's mark is the step's
 * own working memory, growth of neither the site nor the run.
 */
static bool step_input(const struct lw_model *m, uint32_t site,
		       const struct lw_site_growth *sg)
{
	const struct lw_site *s = &m->sites.items[site];

	return sg->count_per_step < 0.25 && sg->held_count <= 1 &&
	       s->frees * 2 >= m->counts.steps && s->lifetime_max <= 1 &&
	       s->births_onto_live * 4 < s->totals.allocations;
}

static int judge(const struct lw_model *m, uint64_t min_steps,
		 struct lw_growth_report *out)
{
	struct segment *segments = NULL;
	long segment_count;
	size_t n = m->points.count;
	double *bytes = NULL, *counts = NULL;
	bool judge = m->counts.steps >= min_steps && m->counts.steps > 0;
	bool any_growing = false;

	out->run.verdict = LW_VERDICT_NOT_ENOUGH_STEPS;
	out->run.per_step = 0;
	out->min_steps = min_steps;
	out->site_count = m->sites.count;
	out->sites = NULL;
	if (m->sites.count) {
		out->sites = calloc(m->sites.count, sizeof(*out->sites));
		if (!out->sites)
			return -ENOMEM;
	}
	held(m, out);
	if (!judge)
		return 0; /* calloc: every site "not-enough-steps", 0 */
	bytes = malloc((n ? n : 1) * sizeof(*bytes));
	counts = malloc((n ? n : 1) * sizeof(*counts));
	segment_count = phase_segments(m, min_steps, &segments);
	if (!bytes || !counts || segment_count < 0) {
		free(bytes);
		free(counts);
		free(segments);
		return -ENOMEM;
	}
	for (uint32_t site = 0; site < m->sites.count; site++) {
		struct lw_site_growth *sg = &out->sites[site];
		struct lw_growth gb, gc, pb, pc;
		bool tracked = true;

		for (size_t i = 0; i < n && tracked; i++) {
			struct lw_live_count c;

			tracked = lw_model_site_at_point(m, site, i, &c);
			bytes[i] = (double)c.live_bytes;
			counts[i] = (double)c.live_count;
		}
		sg->suppressed = lw_model_site_suppressed(m, site);
		if (!tracked)
			continue; /* "not-enough-steps" */
		gb = lw_judge_series(bytes, n, m->points.stride);
		gc = lw_judge_series(counts, n, m->points.stride);
		sg->bytes_per_step = gb.per_step;
		sg->count_per_step = gc.per_step;
		sg->verdict = gc.verdict == LW_VERDICT_GROWING ? gc.verdict
							       : gb.verdict;
		if (sg->verdict != LW_VERDICT_GROWING) {
			bool by_bytes = grows_in_a_phase(bytes, segments,
							 (size_t)segment_count,
							 m->points.stride, &pb);
			bool by_count = grows_in_a_phase(counts, segments,
							 (size_t)segment_count,
							 m->points.stride, &pc);

			if (by_bytes || by_count) {
				sg->verdict = LW_VERDICT_GROWING;
				sg->bytes_per_step = by_bytes ? pb.per_step
							      : gb.per_step;
				sg->count_per_step = by_count ? pc.per_step
							      : gc.per_step;
			}
		}
		if (sg->verdict == LW_VERDICT_GROWING &&
		    step_input(m, site, sg)) {
			sg->step_input = true;
			sg->verdict = LW_VERDICT_STABLE;
		}
		if (sg->verdict == LW_VERDICT_GROWING &&
		    !lw_model_site_suppressed(m, site))
			any_growing = true;
	}
	for (size_t i = 0; i < n; i++)
		bytes[i] = (double)m->points.items[i].live_bytes;
	/* Suppressed sites' memory is not the run's growth either, nor a
	 * step's input that straddles the step's mark. */
	for (uint32_t site = 0; site < m->sites.count; site++) {
		struct lw_live_count c;

		if (!lw_model_site_suppressed(m, site) &&
		    !out->sites[site].step_input)
			continue;
		for (size_t i = 0; i < n; i++)
			if (lw_model_site_at_point(m, site, i, &c))
				bytes[i] -= (double)c.live_bytes;
	}
	out->run = lw_judge_series(bytes, n, m->points.stride);
	if (out->run.verdict != LW_VERDICT_GROWING)
		grows_in_a_phase(bytes, segments, (size_t)segment_count,
				 m->points.stride, &out->run);
	if (any_growing)
		out->run.verdict = LW_VERDICT_GROWING;
	free(bytes);
	free(counts);
	free(segments);
	return 0;
}

void lw_growth_report_fini(struct lw_growth_report *r)
{
	free(r->sites);
	r->sites = NULL;
}

static int compare_growth(const void *a, const void *b, void *report)
{
	const struct lw_growth_report *r = report;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	double rx = r->sites[x].bytes_per_step;
	double ry = r->sites[y].bytes_per_step;

	if (rx != ry)
		return rx < ry ? 1 : -1;
	return (x > y) - (x < y);
}

static bool grows(const void *report, uint32_t site)
{
	const struct lw_growth_report *r = report;

	return r->sites[site].verdict == LW_VERDICT_GROWING &&
	       !r->sites[site].suppressed;
}

int lw_growing_sites(const struct lw_growth_report *r, uint32_t **out,
		     size_t *count)
{
	return lw_select_sites(r->site_count, grows, compare_growth, r, out,
			       count);
}
