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
	/* The trace's first STEP records that end no step (INFO
	 * "steps_void", lw-format.h). */
	uint64_t void_steps;
};

/*
 * Looks for the loop in the trace in [buf, buf + len). Sets out->anchor to
 * 0 when the trace has STEP records or no pattern repeats. A trace with
 * STEP records is read on until it says none of them can be void any
 * more (INFO "steps_settled"), for out->void_steps. progress (may be
 * NULL) is called with progress_ctx as lw_trace_ops.progress is. Returns 0
 * or a negative errno (an unreadable trace too: the model's read says
 * why).
 */
int lw_infer_steps(const uint8_t *buf, size_t len,
		   int (*progress)(void *progress_ctx, size_t offset,
				   size_t total),
		   void *progress_ctx, struct lw_inferred_steps *out);

#endif
