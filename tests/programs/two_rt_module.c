/* SPDX-License-Identifier: MIT */
/*
 * A module linked against one CUDA runtime (built twice: libtwort12.so
 * against libcudart.so.12, libtwort13.so against libcudart.so.13), as a
 * Python extension is linked against the runtime it was built with.
 * two_runtimes loads both, RTLD_LOCAL.
 */
#include <stddef.h>

#include <cuda_runtime_api.h>

/*
 * Keeps a buffer of bytes, makes a call its runtime refuses, and returns
 * what its own runtime says: the runtime's version in *version, and the
 * error that runtime recorded for the refused call (its last error, read
 * without leakwatch in the way: cudaGetLastError is not intercepted).
 * Returns -1 if the buffer could not be kept or freed.
 */
__attribute__((visibility("default"))) int module_check(size_t bytes,
							 int *version,
							 int *last_error);

int module_check(size_t bytes, int *version, int *last_error)
{
	void *kept, *temp;

	(void)cudaGetLastError();
	if (cudaRuntimeGetVersion(version) != cudaSuccess ||
	    cudaMalloc(&kept, bytes) != cudaSuccess ||
	    cudaMalloc(&temp, 2 * bytes) != cudaSuccess ||
	    cudaFree(temp) != cudaSuccess)
		return -1;
	(void)cudaMalloc(NULL, bytes); /* refused: cudaErrorInvalidValue */
	*last_error = (int)cudaGetLastError();
	return 0;
}
