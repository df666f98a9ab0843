/* SPDX-License-Identifier: MIT */
#include "analysis.h"

#include "holders.h"
#include "locations.h"
#include "pystack.h"
#include "torch.h"


#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Traces may be analysed on several threads (trace-pool.h). */
static _Atomic uint64_t growth_runs, diagnosis_runs;

int lw_analyse(struct lw_report *r, struct lw_analysis *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	r->analysis = NULL;
	growth_runs++;
	rc = lw_model_growth(r->model, r->min_steps, &a->growth);
	if (rc < 0)
		return rc;
	diagnosis_runs++;
	rc = lw_diagnose(r, &a->growth, &a->diagnosis);
	if (rc < 0)
		return rc;
	r->analysis = a;
	/* Everything a format prints, symbolized here, in one order, before
	 * any renderer runs. */
	rc = lw_result_build(r, r->needs, &a->result);
	if (rc < 0)
		r->analysis = NULL;
	return rc;
}

void lw_analysis_fini(struct lw_analysis *a)
{
	lw_growth_report_fini(&a->growth);
	lw_diagnosis_fini(&a->diagnosis);
	lw_result_fini(&a->result);
}

bool lw_site_leaked(const struct lw_report *r, uint32_t site)
{
	const struct lw_analysis *a = r->analysis;
	const struct lw_site_diagnosis *sd;

	if (!a || site >= a->growth.site_count ||
	    lw_model_site_suppressed(r->model, site))
		return false;
	if (a->growth.sites[site].verdict == LW_VERDICT_GROWING &&
	    !a->growth.sites[site].suppressed)
		return true;
	if (!a->diagnosis.sites || site >= a->diagnosis.site_count)
		return false;
	sd = &a->diagnosis.sites[site];
	/* A finding suppressed by its lead site is in no view: none of its
	 * sites leaked. */
	return sd->finding < a->diagnosis.finding_count &&
	       a->diagnosis.findings[sd->finding].leak &&
	       !a->diagnosis.findings[sd->finding].suppressed;
}

/* A leaked site no longer live: what it held at step ends decides. */
static bool let_go(const void *ctx, uint32_t site)
{
	const struct lw_report *r = ctx;
	const struct lw_model *m = r->model;

	return lw_site_leaked(r, site) &&
	       lw_model_site_totals(m, site).live_count == 0 &&
	       lw_model_site_live_at_end(m, site).live_count == 0 &&
	       r->analysis->growth.sites[site].held_bytes > 0;
}

static int by_held(const void *a, const void *b, void *ctx)
{
	const struct lw_report *r = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t hx = r->analysis->growth.sites[x].held_bytes;
	uint64_t hy = r->analysis->growth.sites[y].held_bytes;

	if (hx != hy)
		return hx > hy ? -1 : 1;
	return (x > y) - (x < y);
}

int lw_report_sites(const struct lw_report *r, uint32_t **out, size_t *count)
{
	uint32_t *live = NULL, *gone = NULL, *all;
	size_t nlive = 0, ngone = 0;
	int rc;

	*out = NULL;
	*count = 0;
	if ((rc = lw_model_live_sites(r->model, &live, &nlive)) < 0)
		return rc;
	if (r->analysis &&
	    (rc = lw_select_sites(lw_model_site_count(r->model), let_go,
				  by_held, r, &gone, &ngone)) < 0) {
		free(live);
		return rc;
	}
	if (!ngone) {
		*out = live;
		*count = nlive;
		return 0;
	}
	all = realloc(live, (nlive + ngone) * sizeof(*all));
	if (!all) {
		free(live);
		free(gone);
		return -ENOMEM;
	}
	memcpy(all + nlive, gone, ngone * sizeof(*all));
	free(gone);
	*out = all;
	*count = nlive + ngone;
	return 0;
}

uint64_t lw_site_retained(const struct lw_report *r, uint32_t site)
{
	const struct lw_model *m = r->model;

	if (!lw_mem_kind_is_device(lw_model_site(m, site)->kind))
		return 0;
	if (lw_model_point_count(m) == 0 || !r->analysis)
		return lw_model_site_totals(m, site).live_bytes;
	return r->analysis->growth.sites[site].last_bytes;
}

static bool retains(const void *ctx, uint32_t site)
{
	const struct lw_report *r = ctx;

	return !lw_model_site_suppressed(r->model, site) &&
	       lw_site_retained(r, site) > 0;
}

static int by_retained(const void *a, const void *b, void *ctx)
{
	const struct lw_report *r = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t rx = lw_site_retained(r, x), ry = lw_site_retained(r, y);

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return (x > y) - (x < y);
}

int lw_retained_sites(const struct lw_report *r, uint32_t **out,
		      size_t *count)
{
	return lw_select_sites(lw_model_site_count(r->model), retains,
			       by_retained, r, out, count);
}

uint64_t lw_analysis_growth_runs(void)
{
	return growth_runs;
}

uint64_t lw_analysis_diagnosis_runs(void)
{
	return diagnosis_runs;
}

/* The result the formats print (result.h), made once at the end of the
 * analysis. */

/* Appends len bytes of text to the result's; *at is where they are. */
static int add_text(struct lw_result *res, const char *text, size_t len,
		    size_t *at)
{
	long start = ftell(res->text_stream);

	if (start < 0)
		return -ENOMEM;
	*at = (size_t)start;
	fwrite(text, 1, len, res->text_stream);
	/* Each a C string too. */
	putc('\0', res->text_stream);
	return ferror(res->text_stream) ? -ENOMEM : 0;
}

static void put_raw(FILE *out, const void *data, size_t len)
{
	fwrite(data, 1, len, out);
}

/* Appends a frame's label (lw_put_frame_label()) to the result's text;
 * the frame points at it. */
static int add_label(struct lw_result *res, struct lw_result_frame *frame)
{
	long start = ftell(res->text_stream), end;

	if (start < 0)
		return -ENOMEM;
	lw_put_frame_label(res->text_stream, &frame->named, put_raw);
	end = ftell(res->text_stream);
	putc('\0', res->text_stream);
	if (end < start || ferror(res->text_stream))
		return -ENOMEM;
	frame->label = (size_t)start;
	frame->label_len = (size_t)(end - start);
	return 0;
}

/* Closes the result's text once every label is in; its pointer is then
 * valid. */
static int close_text(struct lw_result *res)
{
	int rc = 0;

	if (res->text_stream && fclose(res->text_stream) != 0)
		rc = -ENOMEM;
	res->text_stream = NULL;
	return rc;
}

/* Appends named frames, labelled, to the result's frames; *first is where
 * they start. */
static int add_frames(struct lw_result *res, const struct lw_named_frame *named,
		      size_t n, size_t *first)
{
	*first = res->frame_count;
	if (res->frame_count + n > res->frame_capacity) {
		size_t next = (res->frame_count + n) * 2;
		struct lw_result_frame *p =
			realloc(res->frames, next * sizeof(*p));

		if (!p)
			return -ENOMEM;
		res->frames = p;
		res->frame_capacity = next;
	}
	for (size_t j = 0; j < n; j++) {
		struct lw_result_frame *f = &res->frames[res->frame_count];
		int rc;

		f->named = named[j];
		if ((rc = add_label(res, f)) < 0)
			return rc;
		res->frame_count++;
	}
	return 0;
}

/* A site's named stack (lw_named_stack()) into the result's frames. */
static int add_stack(const struct lw_report *r, struct lw_result *res,
		     uint32_t site, size_t *first, size_t *count)
{
	struct lw_named_frame *frames;
	size_t n;
	int rc = lw_named_stack(r, lw_model_site(r->model, site)->stack_id,
				&frames, &n);

	*first = res->frame_count;
	*count = 0;
	if (rc < 0)
		return rc;
	rc = add_frames(res, frames, n, first);
	*count = res->frame_count - *first;
	free(frames);
	return rc;
}

/* The retained sites, largest first, each with its named stack. */
static int build_retained(const struct lw_report *r, struct lw_result *res)
{
	uint32_t *sites;
	size_t count;
	int rc = lw_retained_sites(r, &sites, &count);

	if (rc < 0)
		return rc;
	if (count && !(res->retained = calloc(count, sizeof(*res->retained)))) {
		free(sites);
		return -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < count; i++) {
		struct lw_result_site *rs = &res->retained[res->retained_count++];

		rs->site = sites[i];
		rs->bytes = lw_site_retained(r, sites[i]);
		rc = add_stack(r, res, sites[i], &rs->first_frame,
			       &rs->frame_count);
	}
	free(sites);
	return rc;
}

static int breakdown_by_rate(const void *a, const void *b)
{
	const struct lw_result_breakdown *x = a, *y = b;

	if (x->rate != y->rate)
		return x->rate < y->rate ? 1 : -1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->site < y->site ? -1 : x->site > y->site;
}

/*
 * The sites of a finding's line, of its kind, that hold or add memory (as
 * the JSON's entry), fastest first, each with its stack; none unless two.
 */
static int build_breakdown(const struct lw_report *r, struct lw_result *res,
			   struct lw_result_finding *v)
{
	const struct lw_model *m = r->model;
	const struct lw_growth_report *g = &r->analysis->growth;
	uint32_t lead = v->finding->site, loc;
	struct lw_result_breakdown *sites;
	size_t count = 0;
	int rc;

	if ((rc = lw_location_of(r->locations, lead, &loc)) < 0)
		return rc;
	if (!(sites = calloc(lw_model_site_count(m) ? lw_model_site_count(m) : 1,
			     sizeof(*sites))))
		return -ENOMEM;
	for (uint32_t s = 0; s < lw_model_site_count(m); s++) {
		uint32_t at;

		if (lw_model_site(m, s)->kind != lw_model_site(m, lead)->kind)
			continue;
		if ((rc = lw_location_of(r->locations, s, &at)) < 0)
			goto out;
		if (at != loc || (lw_model_site_totals(m, s).live_bytes == 0 &&
				  g->sites[s].bytes_per_step == 0))
			continue;
		sites[count].site = s;
		sites[count].rate = g->sites[s].bytes_per_step;
		sites[count++].bytes = lw_model_site_totals(m, s).live_bytes;
	}
	if (count < 2)
		goto out;
	qsort(sites, count, sizeof(*sites), breakdown_by_rate);
	for (size_t i = 0; i < count && rc == 0; i++)
		rc = add_stack(r, res, sites[i].site, &sites[i].first_frame,
			       &sites[i].frame_count);
	v->breakdown = sites;
	v->breakdown_count = count;
	return rc;
out:
	free(sites);
	return rc;
}

/* Each finding's location label, other lines, holders and, as parts asks,
 * its series and breakdown. */
static int build_findings(const struct lw_report *r, unsigned parts,
			  struct lw_result *res)
{
	size_t points = lw_model_point_count(r->model);
	size_t series = 0;
	int rc = lw_findings_collect(r, &res->findings);

	if (rc < 0)
		return rc;
	if (!res->findings.count)
		return 0;
	res->finding_views = calloc(res->findings.count,
				    sizeof(*res->finding_views));
	if (!res->finding_views)
		return -ENOMEM;
	if (parts & LW_RESULT_SERIES) {
		series = res->findings.count < LW_RESULT_SERIES_MAX
				 ? res->findings.count
				 : LW_RESULT_SERIES_MAX;
		if (points && !(res->series = calloc(series * points,
						      sizeof(*res->series))))
			return -ENOMEM;
	}
	for (size_t k = 0; k < res->findings.count; k++) {
		const struct lw_report_finding *f = &res->findings.items[k];
		struct lw_result_finding *v = &res->finding_views[k];
		struct lw_result_frame at = { .named = f->location };

		v->finding = f;
		if (f->have_location) {
			if ((rc = add_label(res, &at)) < 0)
				return rc;
			/* A pointer once every label is in: the text moves
			 * as it grows. */
			v->location_label_len = at.label_len;
			v->location_label_at = at.label;
		}
		if ((rc = add_frames(res, f->also, f->also_count,
				     &v->also_first)) < 0)
			return rc;
		v->also_count = f->also_count;
		if ((rc = lw_held_by(r, f->site, &v->held)) < 0)
			return rc;
		if (k < series && points) {
			uint64_t *values = res->series + k * points;

			if ((rc = lw_location_series(r->locations, f->site,
						     values,
						     &v->series_sites)) < 0)
				return rc;
			v->series = values;
		}
		if ((parts & LW_RESULT_BREAKDOWN) &&
		    (rc = build_breakdown(r, res, v)) < 0)
			return rc;
	}
	return 0;
}

/* Adds site's location as a chart line unless one of the same kind is
 * there. */
static int choose_line(const struct lw_report *r, uint32_t site,
		       uint32_t *locations, struct lw_result *res)
{
	const struct lw_model *m = r->model;
	uint32_t loc;
	int rc;

	if ((rc = lw_location_of(r->locations, site, &loc)) < 0)
		return rc;
	for (size_t j = 0; j < res->chart_count; j++)
		if (locations[j] == loc &&
		    lw_model_site(m, res->chart[j].lead)->kind ==
			    lw_model_site(m, site)->kind)
			return 0;
	locations[res->chart_count] = loc;
	res->chart[res->chart_count++].lead = site;
	return 0;
}

/* A chart line's figures: every site at its location, of its kind. */
static int chart_line(const struct lw_report *r, struct lw_result *res,
		      struct lw_result_chart_line *line, uint32_t location)
{
	const struct lw_model *m = r->model;
	const struct lw_growth_report *g = &r->analysis->growth;
	size_t points = lw_model_point_count(m);
	struct lw_named_frame loc;
	bool found;
	int rc = 0;

	line->verdict = g->sites[line->lead].verdict;
	/* The growth of every site there, not only the chart's. */
	for (uint32_t s = 0; rc == 0 && s < lw_model_site_count(m); s++) {
		uint32_t at;

		if (lw_model_site(m, s)->kind !=
			    lw_model_site(m, line->lead)->kind ||
		    (rc = lw_location_of(r->locations, s, &at)) < 0 ||
		    at != location)
			continue;
		line->rate += g->sites[s].bytes_per_step;
		if (g->sites[s].verdict == LW_VERDICT_GROWING)
			line->verdict = LW_VERDICT_GROWING;
	}
	if (rc < 0)
		return rc;
	if (points && !(line->points = malloc(points * sizeof(*line->points))))
		return -ENOMEM;
	if ((rc = lw_location_series(r->locations, line->lead, line->points,
				     &line->sites)) < 0 ||
	    (rc = lw_site_location(r, line->lead, &loc, &found)) < 0)
		return rc;
	if (found) {
		struct lw_result_frame f = { .named = loc };

		rc = add_label(res, &f);
		line->label_at = f.label;
		line->label_len = f.label_len;
	} else {
		static const char none[] = "(no stack captured)";

		line->label_len = sizeof(none) - 1;
		rc = add_text(res, none, line->label_len, &line->label_at);
	}
	return rc;
}

/*
 * The growth chart's lines, one per location (its sites summed): those
 * of the findings, then the live sites that are not stable, at most
 * LW_RESULT_CHART_MAX.
 */
static int build_chart(const struct lw_report *r, struct lw_result *res)
{
	const struct lw_model *m = r->model;
	const struct lw_growth_report *g = &r->analysis->growth;
	uint32_t locations[LW_RESULT_CHART_MAX];
	uint32_t *live = NULL;
	size_t live_count = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < res->findings.count &&
			   res->chart_count < LW_RESULT_CHART_MAX; i++)
		rc = choose_line(r, res->findings.items[i].site, locations,
				 res);
	if (rc == 0 && res->chart_count < LW_RESULT_CHART_MAX)
		rc = lw_model_live_sites(m, &live, &live_count);
	for (size_t i = 0; rc == 0 && i < live_count &&
			   res->chart_count < LW_RESULT_CHART_MAX; i++) {
		/* Lines that stay flat say nothing of growth. */
		if (g->sites[live[i]].verdict != LW_VERDICT_STABLE &&
		    lw_model_site(m, live[i])->series != LW_NO_SERIES &&
		    lw_model_site(m, live[i])->series != LW_SERIES_UNTRACKED)
			rc = choose_line(r, live[i], locations, res);
	}
	free(live);
	for (size_t k = 0; rc == 0 && k < res->chart_count; k++)
		rc = chart_line(r, res, &res->chart[k], locations[k]);
	return rc;
}

/* The pool's verdicts and the memory account, from the model and the
 * diagnosis. */
static int build_pool(const struct lw_report *r, struct lw_result_pool *p)
{
	const struct lw_model *m = r->model;
	const struct lw_torch_memory *t = lw_model_torch(m);
	const struct lw_diagnosis *d = &r->analysis->diagnosis;
	uint64_t live = lw_model_device_live_bytes(m);
	size_t verdicts = 0;

	p->peak_allocated = t->peak_allocated_bytes;
	p->peak_reserved = t->peak_reserved_bytes;
	p->free_at_peak = t->free_at_peak_bytes;
	p->peak_outside = t->peak_outside_bytes;
	p->peak_in_use = t->peak_in_use_bytes;
	p->end_allocated = t->allocated_bytes;
	p->end_reserved = t->reserved_bytes;
	p->end_outside = live > t->allocated_bytes ? live - t->allocated_bytes
						   : 0;
	p->seen = d->pool.seen;
	if (!p->seen)
		return 0;
	p->fragmented = d->pool.fragmented;
	p->expandable = d->pool.expandable;
	p->category = lw_category_name(LW_CATEGORY_CACHE_GROWTH);
	p->pattern_text = lw_pool_pattern_text(&d->pool);
	p->fix = lw_pool_fix(&d->pool);
	for (size_t i = 0; i < d->finding_count; i++)
		verdicts += d->findings[i].category == LW_CATEGORY_CACHE_GROWTH;
	if (verdicts && !(p->verdicts = calloc(verdicts, sizeof(*p->verdicts))))
		return -ENOMEM;
	for (size_t i = 0; i < d->finding_count; i++) {
		const struct lw_finding *f = &d->findings[i];
		struct lw_result_pool_verdict *v;
		int rc;

		if (f->category != LW_CATEGORY_CACHE_GROWTH)
			continue;
		v = &p->verdicts[p->verdict_count++];
		v->site = f->site;
		v->category = lw_category_name(f->category);
		v->confidence = lw_confidence_name(f->confidence);
		v->reason = f->reason;
		v->fix = f->fix;
		if ((rc = lw_evidence_string(r, f, &v->evidence)) < 0)
			return rc;
	}
	return 0;
}

/*
 * A site's stack for the site lists, made once: its location, the fold
 * marks' names and, when full, every native frame's symbol.
 */
static int resolve(const struct lw_report *r, struct lw_result *res,
		   uint32_t site, bool full)
{
	struct lw_result_stack *rs;
	struct lw_frame *marks = NULL;
	size_t n;
	int rc;

	if (res->stack_of[site] != UINT32_MAX) {
		rs = &res->stacks[res->stack_of[site]];
		if (!full || rs->full)
			return 0;
	} else {
		size_t each = sizeof(*rs->symbols) + sizeof(*rs->mark_at) +
			      sizeof(*rs->mark_len);
		char *block;

		if (res->stack_count == res->stack_capacity) {
			size_t next = res->stack_capacity
					      ? res->stack_capacity * 2 : 64;
			struct lw_result_stack *p =
				realloc(res->stacks, next * sizeof(*p));

			if (!p)
				return -ENOMEM;
			res->stacks = p;
			res->stack_capacity = next;
		}
		rs = &res->stacks[res->stack_count];
		memset(rs, 0, sizeof(*rs));
		res->stack_of[site] = (uint32_t)res->stack_count++;
		if ((rc = lw_site_stack(r, site, &rs->st)) < 0)
			return rc;
		n = rs->st.count;
		rs->leaked = lw_site_leaked(r, site);
		rs->retained = lw_site_retained(r, site);
		/* The frames' symbols and marks in one block: a report of
		 * many sites keeps them all. */
		block = calloc(n ? n : 1, each);
		marks = calloc(n ? n : 1, sizeof(*marks));
		if (!block || !marks) {
			free(block);
			free(marks);
			return -ENOMEM;
		}
		rs->symbols = (const struct lw_symbol **)(void *)block;
		rs->mark_at = (size_t *)(void *)(block + n * sizeof(*rs->symbols));
		rs->mark_len = rs->mark_at + n;
		if (n && (rc = lw_fold_marks(r, rs->st.frames, n, marks)) < 0) {
			free(marks);
			return rc;
		}
		for (size_t i = 0; i < n; i++) {
			char *label;

			rs->mark_at[i] = SIZE_MAX;
			if (marks[i].fold == LW_FOLD_NONE)
				continue;
			if (!(label = lw_fold_label_string(&marks[i],
							   &rs->mark_len[i]))) {
				free(marks);
				return -ENOMEM;
			}
			rc = add_text(res, label, rs->mark_len[i],
				      &rs->mark_at[i]);
			free(label);
			if (rc < 0) {
				free(marks);
				return rc;
			}
		}
		free(marks);
	}
	if (!full)
		return 0;
	for (size_t i = 0; i < rs->st.count; i++) {
		if (rs->st.frames[i].python)
			continue;
		rc = lw_symbolize(r->symbolizer, rs->st.frames[i].address,
				  &rs->symbols[i]);
		if (rc < 0)
			return rc;
	}
	rs->full = true;
	return 0;
}

/* Resolves the sites of a model's list of shares. */
static int resolve_shares(const struct lw_report *r, struct lw_result *res,
			  const struct lw_shares *shares)
{
	int rc = 0;

	for (size_t i = 0; i < shares->count && rc == 0; i++)
		rc = resolve(r, res, shares->items[i].site, false);
	return rc;
}

/*
 * The report sites grouped by location, largest live bytes first: each
 * location's sums, the most urgent verdict and the first category among
 * its sites.
 */
static int build_location_sums(const struct lw_report *r,
			       struct lw_result *res)
{
	const struct lw_model *m = r->model;
	const struct lw_growth_report *g = &r->analysis->growth;
	const struct lw_diagnosis *d = &r->analysis->diagnosis;
	const uint32_t *sites = res->report_sites;
	size_t site_count = res->report_site_count;
	struct lw_location_sum *sums = NULL;
	uint64_t *bytes = calloc(site_count + 1, sizeof(*bytes));
	uint64_t *counts = calloc(site_count + 1, sizeof(*counts));
	double *rate = calloc(site_count + 1, sizeof(*rate));
	uint32_t *where = calloc(site_count + 1, sizeof(*where));
	size_t nsums = 0;
	int rc = -ENOMEM;

	if (!bytes || !counts || !rate || !where)
		goto out;
	for (size_t i = 0; i < site_count; i++) {
		struct lw_totals t = lw_model_site_totals(m, sites[i]);

		bytes[i] = t.live_bytes;
		counts[i] = t.live_count;
		rate[i] = g->sites[sites[i]].bytes_per_step;
	}
	rc = lw_locations_sum(r->locations, sites, rate, NULL, bytes, counts,
			      site_count, &sums, &nsums);
	for (size_t i = 0; i < site_count && rc == 0; i++)
		rc = lw_location_of(r->locations, sites[i], &where[i]);
	if (rc < 0)
		goto out;
	if (nsums > 1)
		qsort(sums, nsums, sizeof(*sums), lw_location_sum_by_bytes);
	if (nsums && !(res->location_sums = calloc(nsums,
						   sizeof(*res->location_sums)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nsums && rc == 0; i++) {
		struct lw_result_location_sum *ls =
			&res->location_sums[res->location_sum_count++];
		const struct lw_location_sum *s = &sums[i];

		ls->sum = *s;
		ls->verdict = g->sites[s->lead].verdict;
		ls->category = LW_CATEGORY_NONE;
		if (!(ls->sites = malloc((s->sites ? s->sites : 1) *
					 sizeof(*ls->sites)))) {
			rc = -ENOMEM;
			break;
		}
		for (size_t j = 0; j < site_count; j++) {
			uint32_t site = sites[j];

			if (!lw_location_sum_holds(m, s, where[j], site))
				continue;
			if (g->sites[site].verdict == LW_VERDICT_GROWING)
				ls->verdict = LW_VERDICT_GROWING;
			if (ls->category == LW_CATEGORY_NONE && d->sites &&
			    d->sites[site].category != LW_CATEGORY_NONE)
				ls->category = d->sites[site].category;
			if (ls->site_count < s->sites)
				ls->sites[ls->site_count++] = (uint32_t)j;
		}
		rc = resolve(r, res, s->lead, false);
	}
out:
	free(sums);
	free(bytes);
	free(counts);
	free(rate);
	free(where);
	return rc;
}

/* The table of the stacks resolved, empty; once. */
static int init_stacks(const struct lw_report *r, struct lw_result *res)
{
	uint32_t n = lw_model_site_count(r->model);

	if (res->stack_of)
		return 0;
	res->stack_of = malloc((n ? n : 1) * sizeof(*res->stack_of));
	if (!res->stack_of)
		return -ENOMEM;
	memset(res->stack_of, 0xff, (n ? n : 1) * sizeof(*res->stack_of));
	return 0;
}

/* Every diagnosis finding's evidence, released-when, holders and lines,
 * its site and lines located. */
static int build_diagnosed(const struct lw_report *r, struct lw_result *res)
{
	const struct lw_diagnosis *d = &r->analysis->diagnosis;
	int rc;

	if ((rc = init_stacks(r, res)) < 0)
		return rc;
	if (d->finding_count &&
	    !(res->diagnosed = calloc(d->finding_count,
				      sizeof(*res->diagnosed))))
		return -ENOMEM;
	res->diagnosed_count = d->finding_count;
	for (size_t i = 0; i < d->finding_count; i++) {
		const struct lw_finding *f = &d->findings[i];
		struct lw_result_diagnosed *dd = &res->diagnosed[i];

		if ((rc = resolve(r, res, f->site, false)) < 0 ||
		    (rc = lw_evidence_string(r, f, &dd->evidence)) < 0)
			return rc;
		if (lw_evidence_let_go(&f->evidence) && f->leak) {
			rc = lw_released_when(r, f->site, &dd->released_when,
					      &dd->released_when_len);
			if (rc < 0)
				return rc;
			if (rc == 0)
				dd->released_when = NULL;
		}
		if (f->leak && (rc = lw_held_by(r, f->site, &dd->held)) < 0)
			return rc;
		if ((rc = lw_finding_lines(r, i, &dd->lines,
					   &dd->line_count)) < 0)
			return rc;
		for (size_t k = 0; k < dd->line_count; k++)
			if ((rc = resolve(r, res, dd->lines[k], false)) < 0)
				return rc;
	}
	return 0;
}

/*
 * A live stack as the text report prints it: the frames folded, the first
 * max native ones symbolized (0: all), framework runs labelled.
 */
static int fold(const struct lw_report *r, struct lw_result *res,
		uint32_t site, size_t max)
{
	struct lw_result_stack *rs;
	struct lw_result_folded *fs;
	size_t n, native = 0;
	char *block;
	int rc;

	if ((rc = resolve(r, res, site, false)) < 0)
		return rc;
	rs = &res->stacks[res->stack_of[site]];
	if (rs->folded)
		return 0;
	n = rs->st.count;
	if (!(fs = calloc(1, sizeof(*fs))))
		return -ENOMEM;
	rs->folded = fs;
	fs->frames = malloc((n ? n : 1) * sizeof(*fs->frames));
	block = calloc(n ? n : 1, sizeof(*fs->symbols) + sizeof(*fs->label_at) +
				  sizeof(*fs->label_len) +
				  sizeof(*fs->interpreter));
	if (!fs->frames || !block) {
		free(block);
		return -ENOMEM;
	}
	fs->symbols = (const struct lw_symbol **)(void *)block;
	fs->label_at = (size_t *)(void *)(block + n * sizeof(*fs->symbols));
	fs->label_len = fs->label_at + n;
	fs->interpreter = (bool *)(fs->label_len + n);
	/* A copy: the location points into the frames as they were. */
	if (n)
		memcpy(fs->frames, rs->st.frames, n * sizeof(*fs->frames));
	if ((rc = lw_fold_stack(r, fs->frames, &n)) < 0)
		return rc;
	fs->count = n;
	for (size_t i = 0; i < n; i++) {
		const struct lw_frame *f = &fs->frames[i];

		if (f->fold == LW_FOLD_FRAMEWORK) {
			size_t len;
			char *label = lw_fold_label_string(f, &len);

			if (!label)
				return -ENOMEM;
			rc = add_text(res, label, len, &fs->label_at[i]);
			fs->label_len[i] = len;
			free(label);
			if (rc < 0)
				return rc;
			continue;
		}
		if (f->fold != LW_FOLD_NONE || f->python)
			continue;
		if (max && native == max)
			continue;
		native++;
		if ((rc = lw_symbolize(r->symbolizer, f->address,
				       &fs->symbols[i])) < 0)
			return rc;
		fs->interpreter[i] = lw_frame_is_interpreter(r, fs->symbols[i]);
	}
	return 0;
}

/* Sums sites (with bytes, counts, rates as lw_locations_sum() takes them)
 * into out, each site's location found, sorted by cmp; every sum's lead
 * located. out takes sites. */
static int sum_sites(const struct lw_report *r, struct lw_result *res,
		     uint32_t *sites, size_t n, const double *rate,
		     const double *count_rate, const uint64_t *bytes,
		     const uint64_t *counts,
		     int (*cmp)(const void *, const void *),
		     struct lw_result_sums *out)
{
	int rc;

	out->sites = sites;
	out->site_count = n;
	if (!(out->where = calloc(n + 1, sizeof(*out->where))))
		return -ENOMEM;
	rc = lw_locations_sum(r->locations, sites, rate, count_rate, bytes,
			      counts, n, &out->sums, &out->count);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = lw_location_of(r->locations, sites[i], &out->where[i]);
	if (rc < 0)
		return rc;
	if (out->count > 1)
		qsort(out->sums, out->count, sizeof(*out->sums), cmp);
	for (size_t i = 0; i < out->count && rc == 0; i++)
		rc = resolve(r, res, out->sums[i].lead, false);
	return rc;
}

/* The growing sites by location, fastest first; each one located (`check`
 * names them one by one). */
static int build_growth(const struct lw_report *r, struct lw_result *res)
{
	const struct lw_growth_report *g = &r->analysis->growth;
	uint32_t *sites;
	size_t n;
	double *rate, *count_rate;
	int rc;

	if ((rc = init_stacks(r, res)) < 0 ||
	    (rc = lw_growing_sites(g, &sites, &n)) < 0)
		return rc;
	rate = malloc((n ? n : 1) * sizeof(*rate));
	count_rate = malloc((n ? n : 1) * sizeof(*count_rate));
	if (!rate || !count_rate) {
		free(sites);
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		rate[i] = g->sites[sites[i]].bytes_per_step;
		count_rate[i] = g->sites[sites[i]].count_per_step;
	}
	rc = sum_sites(r, res, sites, n, rate, count_rate, NULL, NULL,
		       lw_location_sum_by_rate, &res->growth);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = resolve(r, res, sites[i], false);
out:
	free(rate);
	free(count_rate);
	return rc;
}

/* What outlived a phase: its shares of a count, unsuppressed, by
 * location, largest first. */
static int build_phase(const struct lw_report *r, struct lw_result *res,
		       const struct lw_phase *ph, struct lw_result_sums *out)
{
	const struct lw_model *m = r->model;
	size_t n = 0;
	uint32_t *sites = calloc(ph->sites.count + 1, sizeof(*sites));
	uint64_t *bytes = calloc(ph->sites.count + 1, sizeof(*bytes));
	uint64_t *counts = calloc(ph->sites.count + 1, sizeof(*counts));
	int rc = -ENOMEM;

	if (!sites || !bytes || !counts) {
		free(sites);
		goto out;
	}
	for (size_t j = 0; j < ph->sites.count; j++) {
		const struct lw_site_share *sh = &ph->sites.items[j];

		if (sh->count == 0 || lw_model_site_suppressed(m, sh->site))
			continue;
		sites[n] = sh->site;
		bytes[n] = sh->bytes;
		counts[n++] = sh->count;
	}
	rc = sum_sites(r, res, sites, n, NULL, NULL, bytes, counts,
		       lw_location_sum_by_bytes, out);
out:
	free(bytes);
	free(counts);
	return rc;
}

/*
 * The lingering sites by location: the most each site added to one peak,
 * summed (at most that together), at the most peaks any of them; largest
 * first.
 */
static int build_lingering(const struct lw_report *r, struct lw_result *res)
{
	const struct lw_model *m = r->model;
	struct lw_result_sums *l = &res->lingering;
	uint32_t *sites;
	uint64_t *most;
	size_t n;
	int rc = lw_model_lingering_sites(m, &sites, &n);

	if (rc < 0)
		return rc;
	if (!(most = calloc(n + 1, sizeof(*most)))) {
		free(sites);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		most[i] = lw_model_site(m, sites[i])->lingering_max;
	rc = sum_sites(r, res, sites, n, NULL, NULL, most, NULL,
		       lw_location_sum_by_bytes, l);
	free(most);
	if (rc < 0)
		return rc;
	for (size_t k = 0; k < l->count; k++) {
		l->sums[k].count = 0;
		for (size_t i = 0; i < n; i++)
			if (lw_location_sum_holds(m, &l->sums[k], l->where[i],
						  sites[i]) &&
			    lw_model_site(m, sites[i])->lingering_steps >
				    l->sums[k].count)
				l->sums[k].count =
					lw_model_site(m, sites[i])->lingering_steps;
	}
	return 0;
}

/*
 * The text report's lists by location, every entry's lead located: what
 * outlived each phase, what lingered at the peaks, the live sites (the
 * first top entries' stacks folded, with --sites each of their sites'),
 * and the sites of an out-of-memory error's lists and of the pool's
 * verdicts.
 */
static int build_lists(const struct lw_report *r, struct lw_result *res)
{
	const struct lw_model *m = r->model;
	const struct lw_phase_table *phases = lw_model_phases(m);
	const struct lw_oom *oom = lw_model_oom(m);
	const struct lw_report_options *o = r->options;
	size_t top = o ? o->top : 0, frames = o ? o->frames : 0, shown;
	struct lw_result_sums *live = &res->live;
	uint32_t *sites;
	uint64_t *bytes, *counts;
	size_t n;
	int rc;

	if ((rc = init_stacks(r, res)) < 0)
		return rc;
	if (phases->count &&
	    !(res->phases = calloc(phases->count, sizeof(*res->phases))))
		return -ENOMEM;
	res->phase_count = phases->count;
	for (size_t i = 0; i < phases->count; i++) {
		const struct lw_phase *ph = &phases->items[i];

		if (ph->surviving_count == 0 ||
		    !lw_model_string(m, ph->string_id))
			continue;
		if ((rc = build_phase(r, res, ph, &res->phases[i])) < 0)
			return rc;
	}
	if (lw_model_peak(m)->lingering_steps &&
	    (rc = build_lingering(r, res)) < 0)
		return rc;
	if (oom->seen && ((rc = resolve_shares(r, res, &oom->live)) < 0 ||
			  (rc = resolve_shares(r, res, &oom->grew)) < 0))
		return rc;
	for (size_t i = 0; i < res->pool.verdict_count; i++)
		if ((rc = resolve(r, res, res->pool.verdicts[i].site,
				  false)) < 0)
			return rc;
	if ((rc = lw_model_live_sites(m, &sites, &n)) < 0)
		return rc;
	bytes = calloc(n + 1, sizeof(*bytes));
	counts = calloc(n + 1, sizeof(*counts));
	if (!bytes || !counts) {
		free(sites);
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct lw_totals t = lw_model_site_totals(m, sites[i]);

		bytes[i] = t.live_bytes;
		counts[i] = t.live_count;
	}
	if ((rc = sum_sites(r, res, sites, n, NULL, NULL, bytes, counts,
			    lw_location_sum_by_bytes, live)) < 0)
		goto out;
	shown = top && top < live->count ? top : live->count;
	for (size_t k = 0; k < shown && rc == 0; k++) {
		const struct lw_location_sum *sum = &live->sums[k];

		rc = fold(r, res, sum->lead, frames);
		for (size_t i = 0; i < n && rc == 0 && sum->sites > 1 &&
				   (!o || o->sites); i++)
			if (lw_location_sum_holds(m, sum, live->where[i],
						  sites[i]))
				rc = fold(r, res, sites[i], frames);
	}
out:
	free(bytes);
	free(counts);
	return rc;
}

/*
 * The site lists: the report's sites with their stacks, their locations'
 * sums, the sites named by the model's lists of shares, and each
 * diagnosis finding's facts and lines.
 */
static int build_sites(const struct lw_report *r, struct lw_result *res)
{
	const struct lw_model *m = r->model;
	const struct lw_trace_meta *meta = lw_model_meta(m);
	const struct lw_peak *peak = lw_model_peak(m);
	const struct lw_oom *oom = lw_model_oom(m);
	uint32_t *lingering = NULL;
	size_t lingering_count = 0;
	int rc;

	if ((rc = lw_report_sites(r, &res->report_sites,
				  &res->report_site_count)) < 0 ||
	    (rc = init_stacks(r, res)) < 0)
		return rc;
	for (size_t i = 0; i < res->report_site_count; i++)
		if ((rc = resolve(r, res, res->report_sites[i], true)) < 0)
			return rc;
	if ((rc = build_location_sums(r, res)) < 0)
		return rc;
	for (size_t i = 0; i < meta->string_count; i++) {
		const struct lw_phase *ph =
			lw_model_phase(m, meta->strings[i].id);

		if (meta->strings[i].phase_begins && ph &&
		    (rc = resolve_shares(r, res, &ph->sites)) < 0)
			return rc;
	}
	if (peak->have_worst &&
	    ((rc = resolve_shares(r, res, &peak->worst.sites)) < 0 ||
	     (rc = resolve_shares(r, res, &peak->most.sites)) < 0 ||
	     (rc = lw_model_lingering_sites(m, &lingering,
					    &lingering_count)) < 0))
		return rc;
	for (size_t i = 0; i < lingering_count && rc == 0; i++)
		rc = resolve(r, res, lingering[i], false);
	free(lingering);
	if (rc < 0)
		return rc;
	if (oom->seen && ((rc = resolve_shares(r, res, &oom->live)) < 0 ||
			  (rc = resolve_shares(r, res, &oom->grew)) < 0))
		return rc;
	return 0;
}

int lw_result_build(const struct lw_report *r, unsigned parts,
		    struct lw_result *res)
{
	int rc;

	memset(res, 0, sizeof(*res));
	res->growth_report = &r->analysis->growth;
	res->diagnosis = &r->analysis->diagnosis;
	/* The labels, one after another, written as they are named. */
	if (!(res->text_stream = open_memstream(&res->text, &res->text_size)))
		return -ENOMEM;
	if (parts & (LW_RESULT_SERIES | LW_RESULT_BREAKDOWN | LW_RESULT_CHART))
		parts |= LW_RESULT_FINDINGS;
	res->parts = parts;
	/* Findings first: their locations are the first frames named. */
	if ((parts & LW_RESULT_FINDINGS) &&
	    (rc = build_findings(r, parts, res)) < 0)
		return rc;
	if ((parts & LW_RESULT_POOL) && (rc = build_pool(r, &res->pool)) < 0)
		return rc;
	if ((parts & LW_RESULT_CHART) && (rc = build_chart(r, res)) < 0)
		return rc;
	if ((parts & LW_RESULT_RETAINED) && (rc = build_retained(r, res)) < 0)
		return rc;
	if ((parts & LW_RESULT_SITES) && (rc = build_sites(r, res)) < 0)
		return rc;
	if ((parts & LW_RESULT_DIAGNOSED) &&
	    (rc = build_diagnosed(r, res)) < 0)
		return rc;
	if ((parts & LW_RESULT_GROWTH) && (rc = build_growth(r, res)) < 0)
		return rc;
	if ((parts & LW_RESULT_LISTS) && (rc = build_lists(r, res)) < 0)
		return rc;
	for (int c = 0; c < LW_CATEGORY_COUNT; c++)
		res->category_names[c] = lw_category_name((enum lw_category)c);
	for (int c = 0; c <= LW_CONFIDENCE_HIGH; c++)
		res->confidence_names[c] =
			lw_confidence_name((enum lw_confidence)c);
	/* Last: every frame a format shows is symbolized by now. */
	res->note_count = lw_symbolizer_notes(r->symbolizer, &res->notes);
	/* The text is where it stays: the labels' offsets become pointers. */
	if ((rc = close_text(res)) < 0)
		return rc;
	for (size_t k = 0; k < res->findings.count; k++) {
		struct lw_result_finding *v = &res->finding_views[k];

		if (v->finding->have_location)
			v->location_label = res->text + v->location_label_at;
	}
	for (size_t k = 0; k < res->chart_count; k++)
		res->chart[k].label = res->text + res->chart[k].label_at;
	return 0;
}

static void lw_result_sums_fini(struct lw_result_sums *sums)
{
	free(sums->sites);
	free(sums->where);
	free(sums->sums);
}

void lw_result_fini(struct lw_result *res)
{
	for (size_t i = 0; i < res->pool.verdict_count; i++)
		free(res->pool.verdicts[i].evidence);
	free(res->pool.verdicts);
	for (size_t k = 0; res->finding_views && k < res->findings.count; k++)
		free(res->finding_views[k].breakdown);
	for (size_t k = 0; k < res->chart_count; k++)
		free(res->chart[k].points);
	lw_result_sums_fini(&res->growth);
	lw_result_sums_fini(&res->lingering);
	lw_result_sums_fini(&res->live);
	for (size_t k = 0; k < res->phase_count; k++)
		lw_result_sums_fini(&res->phases[k]);
	free(res->phases);
	for (size_t k = 0; k < res->stack_count; k++) {
		struct lw_result_folded *fs = res->stacks[k].folded;

		if (fs) {
			free(fs->frames);
			free(fs->symbols);	/* the block of its arrays */
			free(fs);
		}
		lw_site_stack_fini(&res->stacks[k].st);
		free(res->stacks[k].symbols);	/* and the marks */
	}
	free(res->stacks);
	free(res->stack_of);
	free(res->report_sites);
	for (size_t k = 0; k < res->location_sum_count; k++)
		free(res->location_sums[k].sites);
	free(res->location_sums);
	for (size_t k = 0; k < res->diagnosed_count; k++) {
		free(res->diagnosed[k].lines);
		free(res->diagnosed[k].evidence);
	}
	free(res->diagnosed);
	lw_findings_fini(&res->findings);
	free(res->finding_views);
	free(res->series);
	free(res->retained);
	free(res->frames);
	close_text(res);
	free(res->text);
	memset(res, 0, sizeof(*res));
}

const struct lw_result *lw_result_of(const struct lw_report *r)
{
	return r->analysis ? &r->analysis->result : NULL;
}

size_t lw_result_finding_count(const struct lw_result *res)
{
	return res->findings.count;
}

const struct lw_result_finding *lw_result_finding(const struct lw_result *res,
						   size_t i)
{
	return &res->finding_views[i];
}

size_t lw_result_retained_count(const struct lw_result *res)
{
	return res->retained_count;
}

const struct lw_result_site *lw_result_retained(const struct lw_result *res,
						size_t i)
{
	return &res->retained[i];
}

const struct lw_result_frame *lw_result_site_frame(const struct lw_result *res,
						   const struct lw_result_site *site,
						   size_t j)
{
	return &res->frames[site->first_frame + j];
}

const char *lw_result_label(const struct lw_result *res,
			    const struct lw_result_frame *frame)
{
	return res->text + frame->label;
}

const struct lw_result_frame *lw_result_breakdown_frame(const struct lw_result *res,
							const struct lw_result_breakdown *site,
							size_t j)
{
	return &res->frames[site->first_frame + j];
}

const struct lw_result_frame *lw_result_also(const struct lw_result *res,
					     const struct lw_result_finding *finding,
					     size_t k)
{
	return &res->frames[finding->also_first + k];
}

size_t lw_result_chart_count(const struct lw_result *res)
{
	return res->chart_count;
}

const struct lw_result_chart_line *lw_result_chart(const struct lw_result *res,
						   size_t i)
{
	return &res->chart[i];
}

size_t lw_result_report_site_count(const struct lw_result *res)
{
	return res->report_site_count;
}

uint32_t lw_result_report_site(const struct lw_result *res, size_t i)
{
	return res->report_sites[i];
}

const struct lw_result_stack *lw_result_stack(const struct lw_result *res,
					      uint32_t site)
{
	if (!res->stack_of || res->stack_of[site] == UINT32_MAX)
		return NULL;
	return &res->stacks[res->stack_of[site]];
}

const char *lw_result_mark(const struct lw_result *res,
			   const struct lw_result_stack *stack, size_t i,
			   size_t *len)
{
	if (stack->mark_at[i] == SIZE_MAX)
		return NULL;
	*len = stack->mark_len[i];
	return res->text + stack->mark_at[i];
}

const char *lw_result_fold(const struct lw_result *res,
			   const struct lw_result_stack *stack, size_t i,
			   size_t *len)
{
	*len = stack->folded->label_len[i];
	return res->text + stack->folded->label_at[i];
}

const struct lw_result_sums *lw_result_growth(const struct lw_result *res)
{
	return &res->growth;
}

const struct lw_result_sums *lw_result_phase(const struct lw_result *res,
					     size_t phase)
{
	return &res->phases[phase];
}

const struct lw_result_sums *lw_result_lingering(const struct lw_result *res)
{
	return &res->lingering;
}

const struct lw_result_sums *lw_result_live(const struct lw_result *res)
{
	return &res->live;
}

size_t lw_result_location_sum_count(const struct lw_result *res)
{
	return res->location_sum_count;
}

const struct lw_result_location_sum *lw_result_location_sum(const struct lw_result *res,
							    size_t i)
{
	return &res->location_sums[i];
}

const struct lw_result_diagnosed *lw_result_diagnosed(const struct lw_result *res,
						      size_t i)
{
	return &res->diagnosed[i];
}

const char *lw_result_category(const struct lw_result *res,
			       enum lw_category category)
{
	return res->category_names[category];
}

const char *lw_result_confidence(const struct lw_result *res,
				 enum lw_confidence confidence)
{
	return res->confidence_names[confidence];
}

size_t lw_result_notes(const struct lw_result *res, const char *const **notes)
{
	*notes = res->notes;
	return res->note_count;
}

const struct lw_result_pool *lw_result_pool(const struct lw_result *res)
{
	return &res->pool;
}
