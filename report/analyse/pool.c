/* SPDX-License-Identifier: MIT */
/*
 * The pool's verdict. PyTorch's native allocator keeps what it reserved
 * (segments) and hands blocks out of it; memory it reserves that no
 * tensor uses is lost to the job as surely as a leak, but no tensor holds
 * it, so it is judged apart from leaks, on the two levels the trace keeps
 * for every step: the step's peak of allocated and of reserved.
 *
 * The verdict holds when either
 *  - reserved grows from step to step (growth.h's judge), and so does
 *    what the pool holds free at a step's peak (a step's peak of reserved
 *    minus its peak of allocated), to at least GROWN_MIN, while the run's
 *    tensors do not grow (a run that leaks tensors grows its pool for
 *    them): reserved outgrows what the tensors need; or
 *  - the run's peak of reserved is at least twice its peak of allocated,
 *    and at least EXCESS_MIN above it; or
 *  - at least STRANDED_MIN new segments, EXCESS_MIN in all, were made for
 *    blocks of a size freed earlier and not yet reusable (stranded).
 * The pattern of requests behind it comes from the largest block each
 * step asked for, and from the pool's misses (see struct lw_torch_memory).
 */
#include "pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "torch.h"

/* Below this much reserved beyond the peak of allocated, no verdict: the
 * pool's rounding and its 20 MiB segments for mid-size requests. */
#define EXCESS_MIN (64ull << 20)
/* Free at a step's peak, once grown, below which growth is the pool's
 * rounding: a few small-pool segments. */
#define GROWN_MIN (16ull << 20)
/* Misses for a size freed and not reused before a pool is called
 * stranded: one may be a stream's own first use. */
#define STRANDED_MIN 2

const char *lw_pool_pattern_name(enum lw_pool_pattern p)
{
	switch (p) {
	case LW_POOL_PATTERN_RISING: return "rising";
	case LW_POOL_PATTERN_VARYING: return "varying";
	case LW_POOL_PATTERN_STRANDED: return "stranded";
	case LW_POOL_PATTERN_SPLIT: return "split";
	default: return "";
	}
}

const char *lw_pool_pattern_text(const struct lw_pool *p)
{
	switch (p->pattern) {
	case LW_POOL_PATTERN_RISING:
		return "request sizes that rise every step: no freed block fits the next, larger request, so each step reserves new segments";
	case LW_POOL_PATTERN_VARYING:
		return "request sizes that vary from step to step: freed blocks of one size are cut up for others, and the pieces fit no later request";
	case LW_POOL_PATTERN_STRANDED:
		return "blocks freed on one stream while another still uses them (tensor.record_stream()): the pool cannot hand them out until that stream's work is done, and reserves new segments for requests of their size";
	case LW_POOL_PATTERN_SPLIT:
		return "large blocks split into remainders that no later request fits";
	default:
		return "";
	}
}

const char *lw_pool_fix(const struct lw_pool *p)
{
	switch (p->pattern) {
	case LW_POOL_PATTERN_STRANDED:
		return "not a leak of tensors: instead of tensor.record_stream(side), make the main stream wait for the side stream before the tensor is dropped (torch.cuda.current_stream().wait_stream(side)), or allocate the tensor on the stream that uses it (under with torch.cuda.stream(side):); expandable_segments does not free a block another stream still uses";
	case LW_POOL_PATTERN_RISING:
		return p->expandable
			? "not a leak of tensors: expandable_segments:True is already on and what remains is the rising sizes themselves: pad or bucket the sizes to a few fixed lengths, or call torch.cuda.empty_cache() where a phase of sizes ends"
			: "not a leak of tensors: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (one segment grows in place of new ones), pad or bucket the sizes to a few fixed lengths, or call torch.cuda.empty_cache() where a phase of sizes ends";
	case LW_POOL_PATTERN_VARYING:
		return p->expandable
			? "not a leak of tensors: expandable_segments:True is already on: pad or bucket the sizes (a few fixed lengths, or multiples of a large round size) so that a freed block fits the next request, or call torch.cuda.empty_cache() where a phase ends"
			: "not a leak of tensors: pad or bucket the sizes (a few fixed lengths) so that a freed block fits the next request, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; torch.cuda.empty_cache() where a phase ends gives the pieces back";
	default:
		return p->expandable
			? "not a leak of tensors: expandable_segments:True is already on: set max_split_size_mb:N in PYTORCH_CUDA_ALLOC_CONF (N above the sizes that vary, e.g. 128) so that large blocks are not split, or call torch.cuda.empty_cache() where a phase ends"
			: "not a leak of tensors: set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N (N above the sizes that vary, e.g. 128) so that large blocks are not split, or expandable_segments:True; torch.cuda.empty_cache() where a phase ends gives the remainders back";
	}
}

/* The pattern of the largest requests of the steps (v, n of them). */
static enum lw_pool_pattern request_pattern(const double *v, size_t n)
{
	size_t ups = 0, downs = 0;

	for (size_t i = 1; i < n; i++) {
		ups += v[i] > v[i - 1];
		downs += v[i] < v[i - 1];
	}
	/* Rising, steadily or by buckets: it ends well above where it began
	 * and seldom drops. */
	if (n >= 3 && ups && 3 * downs <= ups && v[n - 1] >= 1.25 * v[0])
		return LW_POOL_PATTERN_RISING;
	if (n >= 3 && 4 * (ups + downs) >= n - 1)
		return LW_POOL_PATTERN_VARYING;
	return LW_POOL_PATTERN_SPLIT;
}

int lw_pool_judge(const struct lw_model *m, uint64_t min_steps,
		  const struct lw_growth_report *g, struct lw_pool *out)
{
	const struct lw_torch_memory *t = lw_model_torch(m);
	size_t n = m->points.count, k = 0;
	struct lw_torch_view view;
	double *reserved, *allocated, *requests, *slack;
	struct lw_growth free_growth = { LW_VERDICT_NOT_ENOUGH_STEPS, 0 };

	memset(out, 0, sizeof(*out));
	if (!t->segments)
		return 0;
	lw_torch_view(m, &view);
	out->seen = true;
	out->expandable = view.expandable_segments;
	out->peak_reserved = t->peak_reserved_bytes;
	out->peak_allocated = t->peak_allocated_bytes;
	/* A bounded trace leaves out the blocks a step made and freed, any of
	 * which may have reused a freed block: held back blocks are told only
	 * where every block is written. */
	if (!m->short_lived.records) {
		out->stranded_misses = t->stranded_misses;
		out->stranded_bytes = t->stranded_bytes;
	}
	out->reserved.verdict = out->allocated.verdict =
		LW_VERDICT_NOT_ENOUGH_STEPS;
	reserved = malloc((n ? n : 1) * sizeof(*reserved));
	allocated = malloc((n ? n : 1) * sizeof(*allocated));
	requests = malloc((n ? n : 1) * sizeof(*requests));
	slack = malloc((n ? n : 1) * sizeof(*slack));
	if (!reserved || !allocated || !requests || !slack) {
		free(reserved);
		free(allocated);
		free(requests);
		free(slack);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct lw_step_point *p = &m->points.items[i];

		reserved[i] = (double)p->peak_reserved_bytes;
		allocated[i] = (double)p->peak_allocated_bytes;
		if (!p->max_request_bytes)
			continue;
		requests[k++] = (double)p->max_request_bytes;
	}
	if (k) {
		out->first_request = (uint64_t)requests[0];
		out->last_request = (uint64_t)requests[k - 1];
		out->min_request = out->max_request = out->first_request;
		for (size_t i = 1; i < k; i++) {
			if ((uint64_t)requests[i] < out->min_request)
				out->min_request = (uint64_t)requests[i];
			if ((uint64_t)requests[i] > out->max_request)
				out->max_request = (uint64_t)requests[i];
		}
	}
	if (m->counts.steps >= min_steps && m->counts.steps > 0 && n) {
		out->reserved = lw_judge_series(reserved, n, m->points.stride);
		out->allocated = lw_judge_series(allocated, n,
						 m->points.stride);
	}
	for (size_t i = 0; i < n; i++)
		slack[i] = reserved[i] > allocated[i] ? reserved[i] - allocated[i]
						      : 0;
	if (m->counts.steps >= min_steps && m->counts.steps > 0 && n)
		free_growth = lw_judge_series(slack, n, m->points.stride);
	out->grows = out->reserved.verdict == LW_VERDICT_GROWING &&
		     free_growth.verdict == LW_VERDICT_GROWING &&
		     free_growth.per_step > 0 &&
		     slack[n - 1] >= (double)GROWN_MIN &&
		     g->run.verdict != LW_VERDICT_GROWING &&
		     g->run.verdict != LW_VERDICT_NOT_ENOUGH_STEPS;
	out->excess = out->peak_reserved >= 2 * out->peak_allocated &&
		      out->peak_reserved - out->peak_allocated >= EXCESS_MIN &&
		      g->run.verdict != LW_VERDICT_GROWING;
	out->stranded = out->stranded_misses >= STRANDED_MIN &&
			out->stranded_bytes >= EXCESS_MIN;
	out->fragmented = out->grows || out->excess || out->stranded;
	if (out->fragmented)
		out->pattern = out->stranded_misses >= STRANDED_MIN
				       ? LW_POOL_PATTERN_STRANDED
				       : request_pattern(requests, k);
	free(reserved);
	free(allocated);
	free(requests);
	free(slack);
	return 0;
}
