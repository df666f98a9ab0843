/* SPDX-License-Identifier: MIT */
#include "analysis.h"

#include <errno.h>
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
	return 0;
}

void lw_analysis_fini(struct lw_analysis *a)
{
	lw_growth_report_fini(&a->growth);
	lw_diagnosis_fini(&a->diagnosis);
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
