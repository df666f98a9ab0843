/* SPDX-License-Identifier: MIT */
/*
 * Growth verdicts: whether memory grows from step to step, judged the way an
 * engineer reads a memory plot (see growth.c).
 */
#ifndef LW_GROWTH_H
#define LW_GROWTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lw-growth.h"
#include "model.h"

struct lw_site_growth {
	enum lw_verdict verdict;	/* "growing" if bytes or count grow */
	double bytes_per_step;
	double count_per_step;
	/* A suppression matched it: left out of the run's verdict and of
	 * lw_growing_sites(). */
	bool suppressed;
};

struct lw_growth_report {
	/* The run: device bytes (device + managed) at step ends; the
	 * verdict is "growing" also when any site grows. */
	struct lw_growth run;
	struct lw_site_growth *sites;	/* indexed by site */
	uint32_t site_count;
	uint64_t min_steps;
};

/*
 * Judges the run and every site of model; traces with fewer than min_steps
 * steps are "not-enough-steps". Returns 0 or -ENOMEM; call
 * lw_growth_report_fini() either way.
 */
int lw_model_growth(const struct lw_model *model, uint64_t min_steps,
		    struct lw_growth_report *out);
void lw_growth_report_fini(struct lw_growth_report *report);

/*
 * Sites whose verdict is "growing" and not suppressed, fastest (bytes per
 * step) first. On success *out is malloc'ed (NULL when none). Returns 0 or
 * -ENOMEM.
 */
int lw_growing_sites(const struct lw_growth_report *report, uint32_t **out,
		     size_t *count);

#endif
