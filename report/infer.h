/* SPDX-License-Identifier: MIT */
/*
 * Steps inferred from a trace's own allocation pattern, for programs that
 * mark no steps: a training loop makes the same allocations, from the same
 * stacks, in the same order, every iteration.
 */
#ifndef LW_INFER_H
#define LW_INFER_H

#include <stddef.h>
#include <stdint.h>

/* Fewest repetitions of the loop that make a pattern. */
#define LW_INFER_MIN_REPEATS 5

struct lw_inferred_steps {
	uint64_t anchor;	/* the stack that starts each iteration; 0: none */
	uint64_t period;	/* allocations per iteration (the usual gap) */
	uint64_t repeats;	/* allocations from the anchor */
};

/*
 * Looks for the loop in the trace in [buf, buf + len) (already read once
 * without error). Sets out->anchor to 0 when the trace has STEP records or
 * no pattern repeats. Returns 0 or a negative errno.
 */
int lw_infer_steps(const uint8_t *buf, size_t len,
		   struct lw_inferred_steps *out);

#endif
