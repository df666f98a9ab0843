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
	/*
	 * What the site held from step to step, read off its step series:
	 * the most at a step end (and the step that ended then), and at the
	 * last step end. What leaked is judged here, on the steps, never on
	 * what happens to be live at exit: a list local to train() grows for
	 * every step and is gone when train() returns. 0 when the site is
	 * not tracked.
	 */
	uint64_t held_bytes, held_count, held_step;
	uint64_t last_bytes, last_count;
	/* It held memory at the last step end and less of it at the report
	 * point: let go after the loop (a function returned, teardown). */
	bool released;
	/* A suppression matched it: left out of the run's verdict and of
	 * lw_growing_sites(). */
	bool suppressed;
	/* A step's input made larger every step and freed before the next
	 * is made (growth.c): its verdict is "stable", and its memory is
	 * left out of the run's. */
	bool step_input;
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
