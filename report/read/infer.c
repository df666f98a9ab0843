/* SPDX-License-Identifier: MIT */
/*
 * Step inference. One pass over the ALLOC records numbers them; for each
 * stack it keeps the gap (in allocations) between its consecutive uses, how
 * often a gap equals the one before (regularity) and the gap most of its
 * gaps have (a majority vote). In a loop every stack used once per
 * iteration has the same usual gap: the iteration's length. Each gap value
 * is scored by the allocations of the regular stacks that have it; the
 * best covers the loop, and of its stacks the one used first starts each
 * iteration. An evaluation pass every few steps only lengthens some gaps;
 * setup code, used once, has none. A pattern must span at least half of
 * the trace's allocations, and its stacks make at least half of those it
 * spans; and an iteration makes at least two allocations: a burst from one
 * line in a loop of its own (a list of parameters) is not the training
 * loop.
 *
 * Memory: a few words per stack, never per event.
 */
#include "infer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lw-format.h"
#include "trace-reader.h"

/* Share of a stack's consecutive gaps that must be alike. */
#define REGULAR_NUM 3
#define REGULAR_DEN 5

struct stack_pattern {
	uint64_t count;
	uint64_t first;		/* allocation number of its first use */
	uint64_t last;
	uint64_t gap;		/* the latest gap */
	uint64_t alike;		/* gaps equal to the one before */
	uint64_t vote_gap;	/* majority vote over its gaps */
	uint64_t votes;
};

struct infer_state {
	int (*progress)(void *progress_ctx, size_t offset, size_t total);
	void *progress_ctx;
	struct stack_pattern *stacks;
	size_t stack_count;	/* ids [0, stack_count) */
	size_t stack_capacity;
	uint64_t allocations;
	bool has_steps;
	uint64_t steps, void_steps;
};

static int infer_stack(void *ctx, uint64_t id, const uint64_t *frames,
		       uint32_t count)
{
	struct infer_state *st = ctx;
	struct stack_pattern *p;

	(void)frames;
	(void)count;
	if (id < st->stack_count)
		return 0;
	if (id >= SIZE_MAX / (2 * sizeof(*p)) - 1)
		return -ENOMEM;
	/* Grown by half again at least: one STACK record after another must
	 * not copy the array each time. */
	if (id >= st->stack_capacity) {
		size_t capacity = st->stack_capacity + st->stack_capacity / 2;

		if (capacity < (size_t)id + 1)
			capacity = (size_t)id + 1;
		if (capacity < 64)
			capacity = 64;
		p = realloc(st->stacks, capacity * sizeof(*p));
		if (!p)
			return -ENOMEM;
		st->stacks = p;
		st->stack_capacity = capacity;
	}
	memset(st->stacks + st->stack_count, 0,
	       ((size_t)id + 1 - st->stack_count) * sizeof(*p));
	st->stack_count = (size_t)id + 1;
	return 0;
}

static int infer_alloc(void *ctx, unsigned kind, uint64_t addr, uint64_t size,
		       uint64_t stack_id)
{
	struct infer_state *st = ctx;
	struct stack_pattern *p;
	uint64_t n = st->allocations++, gap;

	if (st->has_steps)
		return 0;
	(void)kind;
	(void)addr;
	(void)size;
	if (stack_id == 0 || stack_id >= st->stack_count)
		return 0;
	p = &st->stacks[stack_id];
	if (p->count++ == 0) {
		p->first = p->last = n;
		return 0;
	}
	gap = n - p->last;
	p->last = n;
	if (p->count > 2 && gap == p->gap)
		p->alike++;
	p->gap = gap;
	if (p->votes == 0) {
		p->vote_gap = gap;
		p->votes = 1;
	} else if (gap == p->vote_gap) {
		p->votes++;
	} else {
		p->votes--;
	}
	return 0;
}

static int infer_step(void *ctx)
{
	struct infer_state *st = ctx;

	/* The trace says where its steps are; read on only while some may
	 * still be void (the shim's first steps: at most
	 * LW_STEPS_VOID_MAX of them). */
	st->has_steps = true;
	return ++st->steps > LW_STEPS_VOID_MAX ? -ECANCELED : 0;
}

static bool info_is(struct lw_bytes key, const char *name)
{
	return key.len == strlen(name) && memcmp(key.data, name, key.len) == 0;
}

static int infer_info(void *ctx, struct lw_bytes key, struct lw_bytes value)
{
	struct infer_state *st = ctx;

	if (info_is(key, "steps_settled"))
		return st->has_steps ? -ECANCELED : 0;
	if (info_is(key, "steps_void")) {
		uint64_t n = 0;

		for (size_t i = 0; i < value.len; i++) {
			if (value.data[i] < '0' || value.data[i] > '9' ||
			    n > LW_STEPS_VOID_MAX)
				return 0; /* not the shim's: ignored */
			n = n * 10 + (uint64_t)(value.data[i] - '0');
		}
		st->void_steps = n;
	}
	return 0;
}

static int infer_progress(void *ctx, size_t offset, size_t total)
{
	struct infer_state *st = ctx;

	return st->progress ? st->progress(st->progress_ctx, offset, total)
			    : 0;
}

static const struct lw_trace_ops infer_ops = {
	.alloc = infer_alloc,
	.step = infer_step,
	.info = infer_info,
	.stack = infer_stack,
	.progress = infer_progress,
};

static bool regular(const struct stack_pattern *p)
{
	return p->count >= LW_INFER_MIN_REPEATS && p->votes > 0 &&
	       p->vote_gap >= 2 &&
	       p->alike * REGULAR_DEN >= (p->count - 2) * REGULAR_NUM;
}

static int compare_gap(const void *a, const void *b)
{
	const struct stack_pattern *x = *(const struct stack_pattern *const *)a;
	const struct stack_pattern *y = *(const struct stack_pattern *const *)b;

	if (x->vote_gap != y->vote_gap)
		return x->vote_gap < y->vote_gap ? -1 : 1;
	return (x->first > y->first) - (x->first < y->first);
}

int lw_infer_steps(const uint8_t *buf, size_t len,
		   int (*progress)(void *progress_ctx, size_t offset,
				   size_t total),
		   void *progress_ctx, struct lw_inferred_steps *out)
{
	struct infer_state st = { 0 };
	struct lw_trace_result result;
	const struct stack_pattern **regulars = NULL;
	size_t n = 0, best = 0;
	uint64_t best_cover = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	st.progress = progress;
	st.progress_ctx = progress_ctx;
	rc = lw_trace_read(buf, len, &infer_ops, &st, &result);
	if (st.has_steps) {
		out->void_steps = st.void_steps;
		rc = 0;
		goto out;
	}
	if (rc < 0)
		goto out;
	if (st.stack_count) {
		regulars = malloc(st.stack_count * sizeof(*regulars));
		if (!regulars) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 1; i < st.stack_count; i++) {
		if (regular(&st.stacks[i]))
			regulars[n++] = &st.stacks[i];
	}
	if (n > 1)
		qsort(regulars, n, sizeof(*regulars), compare_gap);
	/* Runs of one gap value, earliest first use first in each. */
	for (size_t i = 0; i < n;) {
		uint64_t cover = 0;
		size_t j = i;

		const struct stack_pattern *a = regulars[i];
		uint64_t span = a->last - a->first + 1;

		while (j < n && regulars[j]->vote_gap == a->vote_gap)
			cover += regulars[j++]->count;
		/* A loop is most of the run, and most of what it spans is
		 * its own: not a burst of allocations from one line. */
		if (span * 2 >= st.allocations && cover * 2 >= span &&
		    cover > best_cover) {
			best_cover = cover;
			best = i;
		}
		i = j;
	}
	if (best_cover) {
		out->anchor = (uint64_t)(regulars[best] - st.stacks);
		out->period = regulars[best]->vote_gap;
		out->repeats = regulars[best]->count;
	}
out:
	free(regulars);
	free(st.stacks);
	return rc;
}
