/* SPDX-License-Identifier: MIT */
/*
 * Growth verdicts: whether memory grows from step to step, judged the way an
 * engineer reads a memory plot (see growth.c).
 */
#ifndef LW_GROWTH_H
#define LW_GROWTH_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Steps a trace needs before it is judged (`--min-steps`). */
#define LW_DEFAULT_MIN_STEPS 10

enum lw_verdict {
	LW_VERDICT_NOT_ENOUGH_STEPS,
	LW_VERDICT_STABLE,
	LW_VERDICT_SAWTOOTH_FLAT,
	LW_VERDICT_PLATEAU,
	LW_VERDICT_GROWING,
};

/* "not-enough-steps", "stable", "sawtooth-flat", "plateau", "growing". */
const char *lw_verdict_name(enum lw_verdict verdict);

struct lw_growth {
	enum lw_verdict verdict;
	double per_step;	/* robust slope of the lower envelope */
};

/*
 * Judges a series of n values taken every stride steps (a step series).
 * Pure: no allocation beyond the stack; never fails.
 */
struct lw_growth lw_judge_series(const double *values, size_t n,
				 uint64_t stride);

struct lw_site_growth {
	enum lw_verdict verdict;	/* "growing" if bytes or count grow */
	double bytes_per_step;
	double count_per_step;
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
 * Sites whose verdict is "growing", fastest (bytes per step) first. On
 * success *out is malloc'ed (NULL when none). Returns 0 or -ENOMEM.
 */
int lw_growing_sites(const struct lw_growth_report *report, uint32_t **out,
		     size_t *count);

#endif
