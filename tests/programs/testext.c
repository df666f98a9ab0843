/* SPDX-License-Identifier: MIT */
#include "testext.h"

#include <cuda_runtime_api.h>

#define TESTEXT_EXPORT __attribute__((visibility("default")))

TESTEXT_EXPORT int testext_alloc(size_t size, void **out)
{
	return (int)cudaMalloc(out, size);
}

TESTEXT_EXPORT int testext_free(void *ptr)
{
	return (int)cudaFree(ptr);
}
