/* SPDX-License-Identifier: MIT */
/*
 * PyTorch's allocator under leakwatch. PyTorch's native caching allocator
 * asks CUDA for memory only when its cache is full, so a hook sees
 * segments, not tensors; its cudaMallocAsync backend makes one
 * cudaMallocAsync per tensor. Unless the user chose an allocator
 * configuration, or opted out, the shim's constructor selects that backend
 * for the process and its children, before PyTorch reads its settings.
 */
#ifndef LW_TORCHCONF_H
#define LW_TORCHCONF_H

struct lw_writer;

/* What leakwatch set PYTORCH_CUDA_ALLOC_CONF to, when it sets it. */
#define LW_TORCH_ASYNC_CONF "backend:cudaMallocAsync"

/*
 * Reads LEAKWATCH_TORCH_ALLOCATOR ("async", the default, or "keep") and
 * PyTorch's own settings, and sets PYTORCH_CUDA_ALLOC_CONF when that is the
 * choice. Called once, from the library constructor, while the process is
 * still single-threaded.
 */
void lw_torch_choose(void);

/*
 * Records the choice as INFO "torch_alloc_conf" (the configuration PyTorch
 * reads, possibly empty) and "torch_alloc_conf_source" ("leakwatch",
 * "user", "no_caching" or "kept"; see common/lw-format.h).
 */
void lw_torch_write_info(struct lw_writer *writer);

#endif
