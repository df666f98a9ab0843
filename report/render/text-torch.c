/* SPDX-License-Identifier: MIT */
/*
 * The text report's PyTorch parts: the allocator line of the summary (what
 * the allocator let the trace see, its allocated and reserved levels) and
 * the "at the out-of-memory error" section.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "result.h"
#include "torch.h"

/* What PyTorch's allocator lets the trace see, when PyTorch was loaded. */
void lw_put_torch_text(FILE *out, const struct lw_model *m)
{
	const struct lw_torch_memory *torch = lw_model_torch(m);
	struct lw_torch_view t;

	lw_torch_view(m, &t);
	if (!t.present)
		return;
	fputs("  pytorch allocator: ", out);
	if (t.pluggable)
		fputs("a pluggable allocator (CUDAPluggableAllocator) that "
		      "allocates each tensor with cudaMallocAsync", out);
	else if (t.conf && t.conf->len)
		lw_put_text(out, t.conf->data, t.conf->len);
	else if (t.source && t.source->len == 10 &&
		 memcmp(t.source->data, "no_caching", 10) == 0)
		fputs("PYTORCH_NO_CUDA_MEMORY_CACHING", out);
	else if (t.source)
		fputs("native caching allocator", out);
	else
		fputs("configuration not recorded", out);
	if (t.source && t.source->len == 9 &&
	    memcmp(t.source->data, "leakwatch", 9) == 0)
		fputs(" (chosen by leakwatch; LEAKWATCH_TORCH_ALLOCATOR=keep "
		      "keeps PyTorch's default)", out);
	if (t.blocks_reported) {
		char a[LW_SIZE_BUF], r[LW_SIZE_BUF], pa[LW_SIZE_BUF],
			pr[LW_SIZE_BUF];

		fprintf(out, ": tensors tracked one by one through its "
			     "profiler hook\n"
			     "  allocated (tensors): %s at the end, %s at the "
			     "peak; reserved (segments): %s at the end, %s at "
			     "the peak\n",
			lw_format_size(a, torch->allocated_bytes),
			lw_format_size(pa, torch->peak_allocated_bytes),
			lw_format_size(r, torch->reserved_bytes),
			lw_format_size(pr, torch->peak_reserved_bytes));
		return;
	}
	if (t.tensors_visible) {
		fputs(": tensors tracked one by one\n", out);
		return;
	}
	fputs(": the native caching allocator, whose profiler hook "
	      "reported no tensor: only its segments are visible", out);
	if (t.expandable_segments)
		fputs(" (expandable segments, as their cuMemCreate pages)", out);
	fputs("; to see tensors, run with --torch-allocator async\n", out);
}

/* Up to top of a list of sites' shares (0: all), each with its location. */
static int put_oom_shares(FILE *out, const struct lw_report *r,
			  const struct lw_shares *sh, size_t top)
{
	size_t shown = top && top < sh->count ? top : sh->count;
	char size[LW_SIZE_BUF];
	int rc = 0;

	for (size_t i = 0; i < shown && rc == 0; i++) {
		const struct lw_site_share *s = &sh->items[i];

		fprintf(out, "    %s in %" PRIu64 " block%s\n",
			lw_format_size(size, s->bytes), s->count,
			s->count == 1 ? "" : "s");
		rc = lw_put_site_location(out, r, s->site);
	}
	if (rc == 0 && shown < sh->count)
		fprintf(out, "    ... %zu more site%s (--top 0 shows all)\n",
			sh->count - shown, sh->count - shown == 1 ? "" : "s");
	return rc;
}

int lw_put_oom_text(FILE *out, const struct lw_report *r, size_t top)
{
	const struct lw_oom *o = lw_model_oom(r->model);
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF], c[LW_SIZE_BUF];
	int rc;

	if (!o->seen)
		return 0;
	fprintf(out, "\nAt the out-of-memory error (after %" PRIu64
		     " step%s; %" PRIu64 " report%s in all):\n",
		o->steps, o->steps == 1 ? "" : "s", o->count,
		o->count == 1 ? "" : "s");
	fprintf(out, "  PyTorch asked for %s on device %" PRId64
		     " with %s allocated and %s reserved\n",
		lw_format_size(a, o->size), o->device,
		lw_format_size(b, o->allocated), lw_format_size(c, o->reserved));
	fprintf(out, "  live then: %s in %" PRIu64 " allocations\n",
		lw_format_size(a, o->live_device_bytes), o->live_device_count);
	fputs("  by site (largest first):\n", out);
	if ((rc = put_oom_shares(out, r, &o->live, top)) < 0)
		return rc;
	if (!o->steps || !o->grew.count)
		return 0; /* before the first step, all of it grew */
	fputs("  grew since the first step to get there:\n", out);
	return put_oom_shares(out, r, &o->grew, top);
}

/* Rows of the account by step: at most this many (lw_account_row()); the
 * JSON report has every step. */
#define POOL_ROWS 10

static void put_account_row(FILE *out, const struct lw_step_point *p)
{
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF], c[LW_SIZE_BUF], d[LW_SIZE_BUF];

	fprintf(out, "    %8" PRIu64 "  %12s  %12s  %12s  %12s\n", p->step,
		lw_format_size(a, p->peak_allocated_bytes),
		lw_format_size(b, p->peak_reserved_bytes),
		lw_format_size(c, p->free_at_peak_bytes),
		lw_format_size(d, p->peak_outside_bytes));
}

int lw_put_pool_text(FILE *out, const struct lw_report *r)
{
	const struct lw_model *m = r->model;
	const struct lw_result_pool *pool = lw_result_pool(lw_result_of(r));
	size_t n = lw_model_point_count(m);
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF], c[LW_SIZE_BUF], e[LW_SIZE_BUF],
		u[LW_SIZE_BUF];
	int rc;

	if (!pool->seen)
		return 0;
	fputs("\nPyTorch's pool (not a leak: the memory its caching allocator "
	      "reserved, used by tensors or not):\n", out);
	for (size_t i = 0; i < pool->verdict_count; i++) {
		const struct lw_result_pool_verdict *v = &pool->verdicts[i];

		fprintf(out, "  %s (%s confidence): %s\n", v->category,
			v->confidence, v->reason);
		if ((rc = lw_put_site_location(out, r, v->site)) < 0)
			return rc;
		fprintf(out, "      evidence: %s\n", v->evidence);
		fprintf(out, "      fix: %s\n", v->fix);
	}
	/* A verdict with no block site to lead it (the hook reported no
	 * block): the pool's words alone. */
	if (pool->fragmented && !pool->verdict_count)
		fprintf(out, "  %s: %s\n      fix: %s\n", pool->category,
			pool->pattern_text, pool->fix);
	if (!pool->fragmented)
		fprintf(out, "  no fragmentation: reserved stays near what the "
			     "tensors need%s\n",
			pool->expandable ? " (expandable_segments:True is on)"
					 : "");
	fprintf(out, "  at the peak: allocated %s, reserved %s (%s of it "
		     "free when allocated peaked), outside the pool %s; in "
		     "use on the device %s\n",
		lw_format_size(a, pool->peak_allocated),
		lw_format_size(b, pool->peak_reserved),
		lw_format_size(c, pool->free_at_peak),
		lw_format_size(e, pool->peak_outside),
		lw_format_size(u, pool->peak_in_use));
	fprintf(out, "  at the end: allocated %s, reserved %s, outside the "
		     "pool %s\n",
		lw_format_size(a, pool->end_allocated),
		lw_format_size(b, pool->end_reserved),
		lw_format_size(c, pool->end_outside));
	fputs("  device total: not recorded (in use is what this process "
	      "held: reserved plus outside the pool)\n", out);
	if (!n)
		return 0;
	fprintf(out, "  by step (the most within each step%s):\n"
		     "    %8s  %12s  %12s  %12s  %12s\n",
		n > POOL_ROWS ? "; some steps, --format json has all" : "",
		"step", "allocated", "reserved", "free at peak", "outside");
	for (size_t k = 0; k < POOL_ROWS && k < n; k++)
		put_account_row(out,
				lw_model_point(m, lw_account_row(k, n, POOL_ROWS)));
	return 0;
}
