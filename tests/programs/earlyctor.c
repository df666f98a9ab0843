/* SPDX-License-Identifier: MIT */
/*
 * libearlyctor.so: a library that takes device memory as it is loaded, as
 * a C++ global whose constructor allocates a buffer does. The program it
 * is linked to (early_ctor) is loaded after the preloaded shim, so its
 * libraries' constructors run before the shim's own.
 */
#include <cuda_runtime_api.h>

void *earlyctor_buffer;

__attribute__((constructor)) static void earlyctor_take(void)
{
	if (cudaMalloc(&earlyctor_buffer, 1 << 20) != cudaSuccess)
		earlyctor_buffer = NULL;
}
