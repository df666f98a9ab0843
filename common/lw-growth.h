/* SPDX-License-Identifier: MIT */
/*
 * Growth verdicts: whether memory grows from step to step, judged the way an
 * engineer reads a memory plot (see lw-growth.c). Pure functions, used by
 * the report and by the shim's exit-status gate.
 */
#ifndef LW_GROWTH_COMMON_H
#define LW_GROWTH_COMMON_H

#include <stddef.h>
#include <stdint.h>

/*
 * The exit status that says growth passed the limit (`leakwatch run
 * --max-growth`, LEAKWATCH_MAX_GROWTH), distinct from the program's own
 * (as LeakSanitizer's 23).
 */
#define LW_EXIT_GROWTH 23
/*
 * The exit status that says the gate was asked for but could not judge:
 * every CUDA allocation of a traced process failed, or its trace could not
 * be written. A gate that judged nothing must not pass.
 */
#define LW_EXIT_UNJUDGED 24

/* Steps a run needs before it is judged (`--min-steps`). */
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

#endif
