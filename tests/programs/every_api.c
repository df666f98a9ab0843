/* SPDX-License-Identifier: MIT */
/*
 * every_api: calls every allocation entry point the shim intercepts, each
 * with its own size, then frees all but one allocation of each kind of
 * memory (device, managed, pinned host, registered host) through every
 * free entry point. Prints one line per allocation, in allocation order:
 *
 *     <api> <pointer> <bytes> <freed|kept>
 *
 * Bytes are what the runtime allocated: pitch * height (* depth) for the
 * pitched calls. cudaHostRegister is called twice, so that one registration
 * can be undone with cudaHostUnregister and one kept.
 */
#include <stdio.h>
#include <stdlib.h>

#include "prog-common.h"

/* Declared by the header only under CUDA_API_PER_THREAD_DEFAULT_STREAM. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream);

enum slot {
	MALLOC,
	MALLOC_ASYNC,
	MALLOC_ASYNC_PTSZ,
	FROM_POOL,
	FROM_POOL_PTSZ,
	PITCH,
	MALLOC_3D,
	MANAGED,
	MALLOC_HOST,
	HOST_ALLOC,
	REGISTER_FREED,
	REGISTER_KEPT,
	SLOT_COUNT,
};

struct allocation {
	const char *api;
	void *ptr;
	size_t bytes;
	int freed;
};

static struct allocation allocations[SLOT_COUNT];

void allocate_all(cudaStream_t stream, cudaMemPool_t pool);
void free_all_but_one_of_each_kind(cudaStream_t stream);

/* make_cudaExtent() is in driver_functions.h, which C programs rarely include. */
static struct cudaExtent extent_of(size_t width, size_t height, size_t depth)
{
	struct cudaExtent extent = { .width = width, .height = height, .depth = depth };

	return extent;
}

static void note(enum slot slot, const char *api, void *ptr, size_t bytes)
{
	allocations[slot] = (struct allocation){ .api = api, .ptr = ptr, .bytes = bytes };
}

static void *host_buffer(size_t bytes)
{
	void *buffer = malloc(bytes);

	if (!buffer) {
		fprintf(stderr, "every_api: out of host memory\n");
		exit(1);
	}
	return buffer;
}

void allocate_all(cudaStream_t stream, cudaMemPool_t pool)
{
	struct cudaPitchedPtr pitched;
	size_t pitch;
	void *ptr;

	CHECK_CUDA(cudaMalloc(&ptr, 1000));
	note(MALLOC, "cudaMalloc", ptr, 1000);
	CHECK_CUDA(cudaMallocAsync(&ptr, 2000, stream));
	note(MALLOC_ASYNC, "cudaMallocAsync", ptr, 2000);
	CHECK_CUDA(cudaMallocAsync_ptsz(&ptr, 3000, stream));
	note(MALLOC_ASYNC_PTSZ, "cudaMallocAsync_ptsz", ptr, 3000);
	CHECK_CUDA(cudaMallocFromPoolAsync(&ptr, 4000, pool, stream));
	note(FROM_POOL, "cudaMallocFromPoolAsync", ptr, 4000);
	CHECK_CUDA(cudaMallocFromPoolAsync_ptsz(&ptr, 5000, pool, stream));
	note(FROM_POOL_PTSZ, "cudaMallocFromPoolAsync_ptsz", ptr, 5000);
	CHECK_CUDA(cudaMallocPitch(&ptr, &pitch, 700, 10));
	note(PITCH, "cudaMallocPitch", ptr, pitch * 10);
	CHECK_CUDA(cudaMalloc3D(&pitched, extent_of(100, 3, 5)));
	note(MALLOC_3D, "cudaMalloc3D", pitched.ptr, pitched.pitch * 3 * 5);
	CHECK_CUDA(cudaMallocManaged(&ptr, 6000, cudaMemAttachGlobal));
	note(MANAGED, "cudaMallocManaged", ptr, 6000);
	CHECK_CUDA(cudaMallocHost(&ptr, 8000));
	note(MALLOC_HOST, "cudaMallocHost", ptr, 8000);
	CHECK_CUDA(cudaHostAlloc(&ptr, 9000, cudaHostAllocDefault));
	note(HOST_ALLOC, "cudaHostAlloc", ptr, 9000);
	ptr = host_buffer(12288);
	CHECK_CUDA(cudaHostRegister(ptr, 12288, cudaHostRegisterDefault));
	note(REGISTER_FREED, "cudaHostRegister", ptr, 12288);
	ptr = host_buffer(16384);
	CHECK_CUDA(cudaHostRegister(ptr, 16384, cudaHostRegisterDefault));
	note(REGISTER_KEPT, "cudaHostRegister", ptr, 16384);
}

/* Keeps cudaMalloc3D, cudaMallocManaged, cudaHostAlloc and REGISTER_KEPT. */
void free_all_but_one_of_each_kind(cudaStream_t stream)
{
	CHECK_CUDA(cudaFree(allocations[MALLOC].ptr));
	CHECK_CUDA(cudaFreeAsync(allocations[MALLOC_ASYNC].ptr, stream));
	CHECK_CUDA(cudaFreeAsync_ptsz(allocations[MALLOC_ASYNC_PTSZ].ptr, stream));
	CHECK_CUDA(cudaFreeAsync(allocations[FROM_POOL].ptr, stream));
	CHECK_CUDA(cudaFreeAsync_ptsz(allocations[FROM_POOL_PTSZ].ptr, stream));
	CHECK_CUDA(cudaFree(allocations[PITCH].ptr));
	CHECK_CUDA(cudaFreeHost(allocations[MALLOC_HOST].ptr));
	CHECK_CUDA(cudaHostUnregister(allocations[REGISTER_FREED].ptr));
	free(allocations[REGISTER_FREED].ptr);
	allocations[MALLOC].freed = 1;
	allocations[MALLOC_ASYNC].freed = 1;
	allocations[MALLOC_ASYNC_PTSZ].freed = 1;
	allocations[FROM_POOL].freed = 1;
	allocations[FROM_POOL_PTSZ].freed = 1;
	allocations[PITCH].freed = 1;
	allocations[MALLOC_HOST].freed = 1;
	allocations[REGISTER_FREED].freed = 1;
}

int main(void)
{
	cudaMemPool_t pool;
	cudaStream_t stream;
	int i;

	CHECK_CUDA(cudaStreamCreate(&stream));
	CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
	allocate_all(stream, pool);
	free_all_but_one_of_each_kind(stream);
	CHECK_CUDA(cudaStreamSynchronize(stream));
	CHECK_CUDA(cudaStreamDestroy(stream));
	for (i = 0; i < SLOT_COUNT; i++) {
		printf("%s %p %zu %s\n", allocations[i].api, allocations[i].ptr,
		       allocations[i].bytes, allocations[i].freed ? "freed" : "kept");
	}
	return 0;
}
