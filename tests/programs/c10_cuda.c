/* SPDX-License-Identifier: MIT */
/*
 * libc10_cuda.so, named like PyTorch's CUDA core library so that a trace
 * looks like PyTorch's to the report (which then says what PyTorch's
 * allocator lets it see). Allocates as an allocator would.
 */
#include <cuda_runtime_api.h>

__attribute__((visibility("default"))) void *c10_cuda_raw_alloc(size_t size);

void *c10_cuda_raw_alloc(size_t size)
{
	void *ptr = NULL;

	return cudaMalloc(&ptr, size) == cudaSuccess ? ptr : NULL;
}
