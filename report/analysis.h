/* SPDX-License-Identifier: MIT */
/*
 * The analysis of one report: what every view of it shows, computed once,
 * right after the model is finished and the rules are set: the growth
 * verdicts (the run's and each site's) and the diagnosis. Renderers read
 * it through lw_report.analysis and never judge again.
 */
#ifndef LW_REPORT_ANALYSIS_H
#define LW_REPORT_ANALYSIS_H

#include <stdint.h>

#include "diagnose.h"
#include "growth.h"
#include "render.h"

struct lw_analysis {
	struct lw_growth_report growth;
	struct lw_diagnosis diagnosis;
};

/*
 * Analyses report into a and points report->analysis at it. Returns 0 or
 * a negative errno; call lw_analysis_fini() either way.
 */
int lw_analyse(struct lw_report *report, struct lw_analysis *a);
void lw_analysis_fini(struct lw_analysis *a);

/* How many growth judgements and diagnoses this process has made: one
 * each per report (the tests count them). */
uint64_t lw_analysis_growth_runs(void);
uint64_t lw_analysis_diagnosis_runs(void);

#endif
