/* SPDX-License-Identifier: MIT */
/*
 * Built as nvcc --default-stream per-thread builds host code: the header then
 * renames cudaMallocAsync to cudaMallocAsync_ptsz, cudaMemcpy to
 * cudaMemcpy_ptds and so on. The symbol test checks that this file's calls
 * really went to those names.
 */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "selftest.h"

void selftest_per_thread_stream(void)
{
	unsigned char host[64];
	cudaMemPool_t pool;
	cudaStream_t stream;
	void *pooled = NULL;
	void *ptr = NULL;
	size_t i;

	CHECK_ERR(cudaStreamCreate(&stream), cudaSuccess);
	CHECK_ERR(cudaMallocAsync(&ptr, sizeof(host), stream), cudaSuccess);
	CHECK(ptr != NULL);
	CHECK_ERR(cudaMemsetAsync(ptr, 7, sizeof(host), stream), cudaSuccess);
	CHECK_ERR(cudaMemcpyAsync(host, ptr, sizeof(host), cudaMemcpyDeviceToHost, stream),
		  cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize(stream), cudaSuccess);
	CHECK(host[0] == 7 && host[sizeof(host) - 1] == 7);

	CHECK_ERR(cudaMemset(ptr, 1, sizeof(host)), cudaSuccess);
	CHECK_ERR(cudaMemcpy(host, ptr, sizeof(host), cudaMemcpyDeviceToHost), cudaSuccess);
	for (i = 0; i < sizeof(host); i++)
		CHECK(host[i] == 1);
	CHECK_ERR(cudaMemset((char *)ptr + 1, 0, sizeof(host)), cudaErrorInvalidValue);

	CHECK_ERR(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
	CHECK_ERR(cudaMallocFromPoolAsync(&pooled, 32, pool, cudaStreamPerThread), cudaSuccess);
	CHECK(pooled != NULL);
	CHECK_ERR(cudaFreeAsync(pooled, cudaStreamPerThread), cudaSuccess);
	CHECK_ERR(cudaFreeAsync(ptr, stream), cudaSuccess);
	CHECK_ERR(cudaFreeAsync(ptr, stream), cudaErrorInvalidValue);
	CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
	CHECK_ERR(cudaStreamDestroy(stream), cudaSuccess);
}
