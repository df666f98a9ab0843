/* SPDX-License-Identifier: MIT */
/*
 * The text report's PyTorch parts: the allocator line of the summary (what
 * the allocator let the trace see, its allocated and reserved levels) and
 * the "at the out-of-memory error" section.
 */
#include <inttypes.h>
#include <string.h>

#include "render.h"
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
