/* SPDX-License-Identifier: MIT */
/*
 * The analysis of one report: what every view of it shows, computed once,
 * right after the model is finished and the rules are set: the growth
 * verdicts (the run's and each site's) and the diagnosis. Renderers read
 * it through lw_report.analysis and never judge again.
 */
#ifndef LW_REPORT_ANALYSIS_H
#define LW_REPORT_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diagnose.h"
#include "growth.h"
#include "report.h"
#include "result.h"

struct lw_analysis {
	struct lw_growth_report growth;
	struct lw_diagnosis diagnosis;
	/* What the formats print (result.h), the parts report->needs
	 * names, made last. */
	struct lw_result result;
};

/*
 * Analyses report into a and points report->analysis at it. Returns 0 or
 * a negative errno; call lw_analysis_fini() either way.
 */
int lw_analyse(struct lw_report *report, struct lw_analysis *a);
void lw_analysis_fini(struct lw_analysis *a);

/*
 * What leaked, one notion for every view: judged on the steps (growth.h:
 * what each site held at step ends), never on what happens to be live at
 * exit. A site leaked when it grows, or leads (or joins) a leak finding.
 */
bool lw_site_leaked(const struct lw_report *report, uint32_t site);

/*
 * The sites a report lists: those with memory live at the report point or
 * at the end (lw_model_live_sites(), in that order), then the sites that
 * leaked and were let go before (a list local to train() is gone when it
 * returns), by what they held at step ends. *out is malloc'ed (NULL when
 * none). Returns 0 or -ENOMEM.
 */
int lw_report_sites(const struct lw_report *report, uint32_t **out,
		    size_t *count);

/*
 * The device memory a site kept from step to step: what it held at the
 * last step end; what is live at the report point when the trace has no
 * step. What the retained views (HTML, folded) draw.
 */
uint64_t lw_site_retained(const struct lw_report *report, uint32_t site);

/* Device sites that retained memory (lw_site_retained()), largest first;
 * suppressed ones left out. *out is malloc'ed. Returns 0 or -ENOMEM. */
int lw_retained_sites(const struct lw_report *report, uint32_t **out,
		      size_t *count);

/* How many growth judgements and diagnoses this process has made: one
 * each per report (the tests count them). */
uint64_t lw_analysis_growth_runs(void);
uint64_t lw_analysis_diagnosis_runs(void);

#endif
