/* SPDX-License-Identifier: MIT */
/*
 * What a trace says about PyTorch's allocator: whether PyTorch's CUDA
 * library was loaded, the allocator configuration the shim recorded (INFO
 * "torch_alloc_conf", "torch_alloc_conf_source") and so whether the trace
 * shows tensors or only the native caching allocator's segments.
 */
#ifndef LW_TORCH_H
#define LW_TORCH_H

#include "model.h"

struct lw_torch_view {
	int present;             /* libc10_cuda is among the loaded modules */
	const struct lw_bytes *conf;   /* NULL: not recorded */
	const struct lw_bytes *source; /* NULL: not recorded */
	int tensors_visible;     /* the cudaMallocAsync backend, or no caching */
	int expandable_segments; /* native allocator with expandable_segments:True */
};

void lw_torch_view(const struct lw_model *model, struct lw_torch_view *view);

#endif
