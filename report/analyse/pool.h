/* SPDX-License-Identifier: MIT */
/*
 * PyTorch's caching allocator pool, judged on its own: the memory it
 * reserves that its tensors do not use is no leak, but it is what runs a
 * job out of memory. The verdict (pool-fragmentation) names the pattern of
 * requests behind it and the fix that fits it (see pool.c for the rules,
 * docs/reference.md for the thresholds).
 */
#ifndef LW_POOL_H
#define LW_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "growth.h"
#include "model.h"

enum lw_pool_pattern {
	LW_POOL_PATTERN_NONE,
	/* the largest request rises from step to step */
	LW_POOL_PATTERN_RISING,
	/* the largest request changes from step to step */
	LW_POOL_PATTERN_VARYING,
	/* new segments for requests a freed block of their size could have
	 * served: blocks held back by another stream's work (record_stream) */
	LW_POOL_PATTERN_STRANDED,
	/* the same sizes, yet free memory no request fits: large blocks
	 * split into remainders */
	LW_POOL_PATTERN_SPLIT,
};

struct lw_pool {
	bool seen;		/* the native pool's segments are in the trace */
	bool expandable;	/* expandable_segments:True */
	/* The verdict: reserved grows along with what it holds free at the
	 * steps' peaks (grows), stands far above the peak of allocated
	 * (excess), or was reserved for blocks held back (stranded). */
	bool fragmented;
	bool grows, excess, stranded;
	enum lw_pool_pattern pattern;
	struct lw_growth reserved;	/* the steps' peaks of reserved */
	struct lw_growth allocated;	/* the steps' peaks of allocated */
	uint64_t peak_reserved, peak_allocated;
	/* The largest request of the first and the last step, and the
	 * smallest and largest of those per-step maxima. */
	uint64_t first_request, last_request, min_request, max_request;
	uint64_t stranded_misses, stranded_bytes;
};

/* "rising", "varying", "stranded", "split"; "" for none. */
const char *lw_pool_pattern_name(enum lw_pool_pattern pattern);

/* What the pattern is, in words (static). */
const char *lw_pool_pattern_text(const struct lw_pool *pool);

/* The fix that fits the pattern and the allocator's configuration
 * (static). */
const char *lw_pool_fix(const struct lw_pool *pool);

/*
 * Judges the pool of model over its step points; growth (the run's) keeps
 * a run that leaks tensors from a pool verdict: its pool grows because its
 * tensors do. Returns 0 or -ENOMEM.
 */
int lw_pool_judge(const struct lw_model *model, uint64_t min_steps,
		  const struct lw_growth_report *growth, struct lw_pool *out);

#endif
