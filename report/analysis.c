/* SPDX-License-Identifier: MIT */
#include "analysis.h"

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

uint64_t lw_analysis_growth_runs(void)
{
	return growth_runs;
}

uint64_t lw_analysis_diagnosis_runs(void)
{
	return diagnosis_runs;
}
