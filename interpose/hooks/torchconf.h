/* SPDX-License-Identifier: MIT */
/*
 * PyTorch's allocator under leakwatch. PyTorch's native caching allocator
 * asks CUDA for memory only when its cache is full (segments), and reports
 * each block it hands out to a hook the shim defines (torchhooks.c); its
 * cudaMallocAsync backend makes one cudaMallocAsync per tensor. The shim
 * leaves the allocator as the user configured it, unless asked
 * (LEAKWATCH_TORCH_ALLOCATOR=async) to select that backend for the process
 * and its children, before PyTorch reads its settings.
 */
#ifndef LW_TORCHCONF_H
#define LW_TORCHCONF_H

struct lw_writer;

/* What leakwatch set PYTORCH_CUDA_ALLOC_CONF to, when it sets it. */
#define LW_TORCH_ASYNC_CONF "backend:cudaMallocAsync"

/*
 * Reads LEAKWATCH_TORCH_ALLOCATOR ("keep", the default, or "async") and
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

/* Subscribes to the recorder's events (events.h): the allocator's settings
 * are written into the trace as it opens (lw_torch_write_info()). */
void lw_torch_start(void);

/*
 * Whether device memory that caller (a hook's return address) obtained
 * from cudaMalloc or cuMemCreate is a segment of PyTorch's native caching
 * allocator: the caller lies in libc10_cuda and PyTorch caches (see
 * PYTORCH_NO_CUDA_MEMORY_CACHING). Its blocks are then reported through
 * c10::reportMemoryUsageToProfiler (torchhooks.c).
 */
int lw_torch_is_segment(const void *caller);

#endif
