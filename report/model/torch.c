/* SPDX-License-Identifier: MIT */
#include "torch.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static int bytes_have(const struct lw_bytes *b, const char *text)
{
	size_t n = strlen(text);

	for (size_t i = 0; b && n <= b->len && i + n <= b->len; i++)
		if (memcmp(b->data + i, text, n) == 0)
			return 1;
	return 0;
}

static int bytes_are(const struct lw_bytes *b, const char *text)
{
	return b && b->len == strlen(text) && memcmp(b->data, text, b->len) == 0;
}

static int is_c10_cuda(const struct lw_bytes *path)
{
	static const char name[] = "libc10_cuda";
	size_t start = 0;

	for (size_t i = 0; i < path->len; i++)
		if (path->data[i] == '/')
			start = i + 1;
	return path->len - start >= sizeof(name) - 1 &&
	       memcmp(path->data + start, name, sizeof(name) - 1) == 0;
}

void lw_torch_view(const struct lw_model *m, struct lw_torch_view *view)
{
	memset(view, 0, sizeof(*view));
	for (size_t i = 0; i < m->meta.module_count && !view->present; i++)
		view->present = is_c10_cuda(&m->meta.modules[i].path);
	view->conf = lw_model_info(m, "torch_alloc_conf");
	view->source = lw_model_info(m, "torch_alloc_conf_source");
	/* PyTorch reads "key:value" pairs separated by commas. */
	view->async_backend = bytes_have(view->conf, "backend:cudaMallocAsync");
	view->blocks_reported = m->torch.blocks > 0;
	for (size_t i = 0; i < m->contexts.count && !view->async_backend &&
			   !view->blocks_reported; i++)
		view->pluggable |= m->contexts.items[i].api ==
					   LW_API_CUDA_MALLOC_ASYNC &&
				   m->contexts.items[i].totals.allocations > 0;
	view->tensors_visible = view->async_backend ||
				bytes_are(view->source, "no_caching") ||
				view->blocks_reported || view->pluggable;
	view->expandable_segments = !view->async_backend &&
				    bytes_have(view->conf, "expandable_segments:True");
}

int lw_torch_context(void *ctx, uint64_t api, int64_t device, uint64_t stream)
{
	struct lw_model *m = ctx;

	(void)device;
	(void)stream;
	m->torch.api = api;
	return 0;
}

/* A live segment: its key (address or handle) and size. */
struct live_segment {
	uint64_t key;
	uint64_t size;
	uint8_t used;
	uint8_t used_once;	/* a block was born at its start */
};

static const struct lw_addr_table_kind segment_kind = {
	.slot_size = sizeof(struct live_segment),
	.used_offset = offsetof(struct live_segment, used),
	.alloc = malloc,
	.release = free,
	.max_load = 128,
};

/*
 * Freed blocks kept for telling a stranded block (struct lw_torch_memory's
 * stranded_misses): the latest this many, so that a block birth costs a
 * short scan whatever the trace holds. A block the pool could reuse is
 * reused within a step; one held back by another stream's work waits.
 */
#define FREED_MAX 128

/* Forgets the freed blocks that overlap [addr, addr + size): reused, or
 * their segment given back. */
static void freed_drop(struct lw_torch_memory *t, uint64_t addr, uint64_t size)
{
	size_t j = 0;

	for (size_t i = 0; i < t->freed_count; i++) {
		const struct lw_torch_freed *f = &t->freed[i];

		if (f->addr < addr + size && addr < f->addr + f->size)
			continue;
		t->freed[j++] = *f;
	}
	t->freed_count = j;
}

void lw_torch_block_born(struct lw_model *m, uint64_t addr, uint64_t size)
{
	struct lw_torch_memory *t = &m->torch;
	struct live_segment *seg;

	t->blocks++;
	t->allocated_bytes += size;
	if (t->allocated_bytes > t->peak_allocated_bytes) {
		t->peak_allocated_bytes = t->allocated_bytes;
		t->free_at_peak_bytes = t->reserved_bytes > t->allocated_bytes
						? t->reserved_bytes -
							  t->allocated_bytes
						: 0;
	}
	if (size > t->step_max_request)
		t->step_max_request = size;
	/* A new segment was made for this block (it starts one no block
	 * has used yet) while a block of its size, freed earlier, was not
	 * reused: the pool could not hand that one out. */
	seg = lw_addr_table_find(&t->live_segments, &segment_kind, addr);
	if (seg && !seg->used_once) {
		seg->used_once = 1;
		for (size_t i = 0; i < t->freed_count; i++) {
			if (t->freed[i].size != size)
				continue;
			t->stranded_misses++;
			t->stranded_bytes += seg->size;
			break;
		}
	}
	freed_drop(t, addr, size);
}

void lw_torch_block_freed(struct lw_model *m, uint64_t addr, uint64_t size)
{
	struct lw_torch_memory *t = &m->torch;

	t->allocated_bytes -= size;
	if (t->freed_count == t->freed_capacity) {
		size_t n = t->freed_capacity ? t->freed_capacity * 2 : 16;

		if (t->freed_capacity >= FREED_MAX) {
			/* The oldest half goes. */
			memmove(t->freed, t->freed + FREED_MAX / 2,
				(FREED_MAX / 2) * sizeof(*t->freed));
			t->freed_count = FREED_MAX / 2;
		} else {
			struct lw_torch_freed *f =
				realloc(t->freed, n * sizeof(*f));

			if (!f)
				return; /* a hint lost, not an error */
			t->freed = f;
			t->freed_capacity = n;
		}
	}
	t->freed[t->freed_count++] = (struct lw_torch_freed){
		.addr = addr, .size = size,
	};
}

void lw_torch_account(struct lw_model *m)
{
	struct lw_torch_memory *t = &m->torch;
	uint64_t live = m->counts.live_device_bytes;
	uint64_t outside = live > t->allocated_bytes
				   ? live - t->allocated_bytes : 0;
	uint64_t in_use = t->reserved_bytes + outside;

	if (t->allocated_bytes > t->step_peak_allocated) {
		t->step_peak_allocated = t->allocated_bytes;
		t->step_free_at_peak = t->reserved_bytes > t->allocated_bytes
					       ? t->reserved_bytes -
							 t->allocated_bytes
					       : 0;
	}
	if (outside > t->step_peak_outside)
		t->step_peak_outside = outside;
	if (outside > t->peak_outside_bytes)
		t->peak_outside_bytes = outside;
	if (in_use > t->step_peak_in_use)
		t->step_peak_in_use = in_use;
	if (in_use > t->peak_in_use_bytes)
		t->peak_in_use_bytes = in_use;
}

int lw_torch_segment_free(void *ctx, uint64_t key)
{
	struct lw_torch_memory *t = &((struct lw_model *)ctx)->torch;
	struct live_segment *s =
		lw_addr_table_find(&t->live_segments, &segment_kind, key);

	if (!s)
		return 0;
	t->reserved_bytes -= s->size;
	freed_drop(t, key, s->size);
	lw_addr_table_remove(&t->live_segments, &segment_kind, s);
	return 0;
}

int lw_torch_segment(void *ctx, uint64_t key, uint64_t size, int64_t device)
{
	struct lw_torch_memory *t = &((struct lw_model *)ctx)->torch;
	struct live_segment *s;
	bool found;

	(void)device;
	lw_torch_segment_free(ctx, key); /* a segment missed freed */
	s = lw_addr_table_put(&t->live_segments, &segment_kind, key, &found);
	if (!s)
		return -ENOMEM;
	s->size = size;
	t->segments++;
	t->reserved_bytes += size;
	if (t->reserved_bytes > t->peak_reserved_bytes)
		t->peak_reserved_bytes = t->reserved_bytes;
	if (t->reserved_bytes > t->step_peak_reserved)
		t->step_peak_reserved = t->reserved_bytes;
	/* The block it was made for comes next. */
	s->used_once = 0;
	lw_torch_account(ctx);
	return 0;
}

/* A site's share, added to sh (sized for every site). */
static void share_put(struct lw_shares *sh, uint32_t site, uint64_t bytes,
		      uint64_t count)
{
	sh->items[sh->count].site = site;
	sh->items[sh->count].bytes = bytes;
	sh->items[sh->count].count = count;
	sh->count++;
}

/* What each site held at the out-of-memory report, and what it gained
 * since the first step point. */
static int oom_sites(struct lw_model *m, struct lw_oom *o)
{
	if (!m->sites.count)
		return 0;
	o->live.items = calloc(m->sites.count, sizeof(*o->live.items));
	o->grew.items = calloc(m->sites.count, sizeof(*o->grew.items));
	if (!o->live.items || !o->grew.items)
		return -ENOMEM;
	o->live.capacity = o->grew.capacity = m->sites.count;
	for (uint32_t i = 0; i < m->sites.count; i++) {
		const struct lw_totals *now = &m->sites.items[i].totals;
		struct lw_live_count then = { 0, 0 };

		if (!now->live_bytes && !now->live_count)
			continue;
		share_put(&o->live, i, now->live_bytes, now->live_count);
		if (m->points.count &&
		    !lw_model_site_at_point(m, i, 0, &then))
			continue; /* no series kept: growth unknown */
		if (now->live_bytes > then.live_bytes)
			share_put(&o->grew, i,
				  now->live_bytes - then.live_bytes,
				  now->live_count > then.live_count
					  ? now->live_count - then.live_count
					  : 0);
	}
	lw_shares_sort(&o->live);
	lw_shares_sort(&o->grew);
	return 0;
}

int lw_torch_oom(void *ctx, uint64_t size, uint64_t allocated,
		 uint64_t reserved, int64_t device)
{
	struct lw_model *m = ctx;
	struct lw_oom *o = &m->oom;

	o->count++;
	if (o->seen)
		return 0; /* the first is the one that matters */
	o->seen = true;
	o->size = size;
	o->allocated = allocated;
	o->reserved = reserved;
	o->device = device;
	o->steps = m->counts.steps;
	o->live_device_bytes = m->counts.live_device_bytes;
	o->live_device_count = m->kinds[LW_MEM_DEVICE].live_count +
			       m->kinds[LW_MEM_MANAGED].live_count;
	o->tracked_allocated = m->torch.allocated_bytes;
	o->tracked_reserved = m->torch.reserved_bytes;
	return oom_sites(m, o);
}

int lw_torch_reserved_growth(const struct lw_model *m, uint64_t min_steps,
			     struct lw_growth *out)
{
	size_t n = m->points.count;
	double *reserved;

	out->verdict = LW_VERDICT_NOT_ENOUGH_STEPS;
	out->per_step = 0;
	if (!m->torch.segments || !n || m->counts.steps < min_steps)
		return 0;
	reserved = malloc(n * sizeof(*reserved));
	if (!reserved)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		reserved[i] = (double)m->points.items[i].reserved_bytes;
	*out = lw_judge_series(reserved, n, m->points.stride);
	free(reserved);
	return 0;
}

/*
 * The pool's verdict. PyTorch's native allocator keeps what it reserved
 * (segments) and hands blocks out of it; memory it reserves that no
 * tensor uses is lost to the job as surely as a leak, but no tensor holds
 * it, so it is judged apart from leaks, on the two levels the trace keeps
 * for every step: the step's peak of allocated and of reserved.
 *
 * The verdict holds when either
 *  - reserved grows from step to step (lw_judge_series()), and so does
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
		  enum lw_verdict run, struct lw_pool *out)
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
		     run != LW_VERDICT_GROWING &&
		     run != LW_VERDICT_NOT_ENOUGH_STEPS;
	out->excess = out->peak_reserved >= 2 * out->peak_allocated &&
		      out->peak_reserved - out->peak_allocated >= EXCESS_MIN &&
		      run != LW_VERDICT_GROWING;
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

void lw_torch_fini(struct lw_model *m)
{
	lw_addr_table_clear(&m->torch.live_segments, &segment_kind);
	free(m->torch.freed);
	free(m->oom.live.items);
	free(m->oom.grew.items);
}
