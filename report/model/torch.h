/* SPDX-License-Identifier: MIT */
/*
 * What a trace says about PyTorch's allocator: whether PyTorch's CUDA
 * library was loaded, the allocator configuration the shim recorded (INFO
 * "torch_alloc_conf", "torch_alloc_conf_source") and so whether the trace
 * shows tensors or only the native caching allocator's segments; and the
 * model's two levels of that allocator's memory, allocated (its blocks)
 * and reserved (its segments), with its out-of-memory report; the memory
 * account of each step (struct lw_step_point) and the pool's verdict.
 */
#ifndef LW_TORCH_H
#define LW_TORCH_H

#include <stdbool.h>
#include <stdint.h>

#include "lw-growth.h"
#include "model.h"

struct lw_torch_view {
	int present;             /* libc10_cuda is among the loaded modules */
	const struct lw_bytes *conf;   /* NULL: not recorded */
	const struct lw_bytes *source; /* NULL: not recorded */
	/* the cudaMallocAsync backend, no caching, or the native allocator's
	 * blocks reported through its profiler hook */
	int tensors_visible;
	int async_backend;       /* backend:cudaMallocAsync */
	int blocks_reported;     /* the native allocator's hook was heard */
	/* Device memory came one tensor per cudaMallocAsync with no backend
	 * set: a pluggable allocator (CUDAPluggableAllocator), leakwatch's
	 * own or another that allocates per tensor. */
	int pluggable;
	int expandable_segments; /* native allocator with expandable_segments:True */
};

void lw_torch_view(const struct lw_model *model, struct lw_torch_view *view);

/*
 * The model's side of PyTorch's records (struct lw_torch_memory, struct
 * lw_oom): trace callbacks whose ctx is the struct lw_model. They return
 * 0, or -ENOMEM.
 */
int lw_torch_context(void *ctx, uint64_t api, int64_t device,
		     uint64_t stream);
int lw_torch_segment(void *ctx, uint64_t key, uint64_t size, int64_t device);
int lw_torch_segment_free(void *ctx, uint64_t key);
int lw_torch_oom(void *ctx, uint64_t size, uint64_t allocated,
		 uint64_t reserved, int64_t device);

/* A block of the caching allocator born, and freed (through the model's
 * forget()). */
void lw_torch_block_born(struct lw_model *model, uint64_t addr,
			 uint64_t size);
void lw_torch_block_freed(struct lw_model *model, uint64_t addr,
			  uint64_t size);

/*
 * The memory account after any change to the device memory the model
 * counts: the step's and the run's peaks of allocated, outside the pool,
 * in use (struct lw_step_point).
 */
void lw_torch_account(struct lw_model *model);

/*
 * How the native allocator's reserved memory (its segments) grew over the
 * step points, judged as growth.h judges live memory: "not-enough-steps"
 * when fewer than min_steps steps, or no segment was seen. Returns 0, or
 * -ENOMEM.
 */
int lw_torch_reserved_growth(const struct lw_model *model, uint64_t min_steps,
			     struct lw_growth *out);

/*
 * PyTorch's caching allocator pool, judged on its own: the memory it
 * reserves that its tensors do not use is no leak, but it is what runs a
 * job out of memory. The verdict (pool-fragmentation) names the pattern of
 * requests behind it and the fix that fits it (see torch.c for the rules,
 * docs/reference.md for the thresholds).
 */
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
 * Judges the pool of model over its step points (see torch.c); run, the
 * run's growth verdict, keeps a run that leaks tensors from a pool
 * verdict: its pool grows because its tensors do. Returns 0 or -ENOMEM.
 */
int lw_pool_judge(const struct lw_model *model, uint64_t min_steps,
		  enum lw_verdict run, struct lw_pool *out);

/* Frees what the callbacks above allocated. */
void lw_torch_fini(struct lw_model *model);

#endif
