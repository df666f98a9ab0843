/* SPDX-License-Identifier: MIT */
/*
 * Checks the stand-in libcudart.so.13 the way a program sees it: compiled
 * against the real cuda_runtime_api.h and linked normally.
 *
 *   fakecuda-selftest            every behaviour, with the configuration set
 *                                here: 1 MiB per device, 2 devices, 512 KiB
 *                                of pinned host memory
 *   fakecuda-selftest defaults   no FAKECUDA_* variables: 80 GiB, 1 device
 *   fakecuda-selftest bad-env    unparsable variables fall back to defaults
 *   fakecuda-selftest no-device  FAKECUDA_DEVICES=0
 *
 * The runtime reads its environment once, at its first use, so each mode
 * sets the environment before the first CUDA call.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "selftest.h"

/* Declared by the header only under CUDA_API_PER_THREAD_DEFAULT_STREAM. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream);

#define KIB ((size_t)1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)
#define SENTINEL ((void *)(uintptr_t)0x5e5e5e5e)

static int failures;

void selftest_check(int ok, const char *what, const char *file, int line)
{
	if (ok)
		return;
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	failures++;
}

void selftest_check_err(cudaError_t got, cudaError_t expected, const char *what,
			const char *file, int line)
{
	if (got == expected)
		return;
	fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s (%d)\n", file, line, what,
		cudaGetErrorName(got), (int)got, cudaGetErrorName(expected), (int)expected);
	failures++;
}

/* make_cudaExtent() is in driver_functions.h, which C programs rarely include. */
static struct cudaExtent extent_of(size_t width, size_t height, size_t depth)
{
	struct cudaExtent extent = { .width = width, .height = height, .depth = depth };

	return extent;
}

size_t selftest_device_free_bytes(void)
{
	size_t free_bytes = 0;
	size_t total_bytes = 0;

	CHECK_ERR(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
	return free_bytes;
}

static void test_alloc_basics(void)
{
	struct cudaPitchedPtr pitched;
	void *ptr = SENTINEL;
	size_t pitch = 0;

	CHECK_ERR(cudaMalloc(&ptr, 1000), cudaSuccess);
	CHECK(ptr && ptr != SENTINEL && (uintptr_t)ptr % 256 == 0);
	CHECK(selftest_device_free_bytes() == MIB - 1000);
	CHECK_ERR(cudaFree(ptr), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);

	CHECK_ERR(cudaMallocPitch(&ptr, &pitch, 700, 10), cudaSuccess);
	CHECK(pitch == 1024 && (uintptr_t)ptr % 256 == 0);
	CHECK(selftest_device_free_bytes() == MIB - 10240);
	CHECK_ERR(cudaFree(ptr), cudaSuccess);
	CHECK_ERR(cudaMallocPitch(&ptr, &pitch, 512, 3), cudaSuccess);
	CHECK(pitch == 512 && selftest_device_free_bytes() == MIB - 1536);
	CHECK_ERR(cudaFree(ptr), cudaSuccess);

	memset(&pitched, 0, sizeof(pitched));
	CHECK_ERR(cudaMalloc3D(&pitched, extent_of(100, 4, 3)), cudaSuccess);
	CHECK(pitched.ptr && pitched.pitch == 512 && pitched.xsize == 100 && pitched.ysize == 4);
	CHECK(selftest_device_free_bytes() == MIB - 512 * 4 * 3);
	CHECK_ERR(cudaFree(pitched.ptr), cudaSuccess);

	CHECK_ERR(cudaMallocManaged(&ptr, 3000, cudaMemAttachGlobal), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB - 3000);
	CHECK_ERR(cudaFree(ptr), cudaSuccess);
	CHECK_ERR(cudaMallocManaged(&ptr, 3000, cudaMemAttachHost), cudaSuccess);
	CHECK_ERR(cudaFree(ptr), cudaSuccess);
	ptr = SENTINEL;
	CHECK_ERR(cudaMallocManaged(&ptr, 3000, 0), cudaErrorInvalidValue);
	CHECK(ptr == SENTINEL);

	CHECK_ERR(cudaMallocHost(&ptr, 5000), cudaSuccess);
	CHECK(ptr && (uintptr_t)ptr % 256 == 0 && selftest_device_free_bytes() == MIB);
	memset(ptr, 0x11, 5000); /* pinned memory is ordinary host memory */
	CHECK_ERR(cudaFreeHost(ptr), cudaSuccess);
	CHECK_ERR(cudaHostAlloc(&ptr, 5000, cudaHostAllocMapped | cudaHostAllocPortable),
		  cudaSuccess);
	CHECK_ERR(cudaFreeHost(ptr), cudaSuccess);
	CHECK_ERR(cudaHostAlloc(&ptr, 5000, 0x80), cudaErrorInvalidValue);
	CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
}

static void test_size_zero(void)
{
	struct cudaPitchedPtr pitched = { SENTINEL, 1, 1, 1 };
	cudaMemPool_t pool;
	size_t pitch = 1;
	void *ptr;

	CHECK_ERR(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
#define ZERO(call) do { ptr = SENTINEL; CHECK_ERR(call, cudaSuccess); CHECK(ptr == NULL); } while (0)
	ZERO(cudaMalloc(&ptr, 0));
	ZERO(cudaMallocAsync(&ptr, 0, 0));
	ZERO(cudaMallocAsync_ptsz(&ptr, 0, 0));
	ZERO(cudaMallocFromPoolAsync(&ptr, 0, pool, 0));
	ZERO(cudaMallocFromPoolAsync_ptsz(&ptr, 0, pool, 0));
	ZERO(cudaMallocManaged(&ptr, 0, cudaMemAttachGlobal));
	ZERO(cudaMallocHost(&ptr, 0));
	ZERO(cudaHostAlloc(&ptr, 0, 0));
	ZERO(cudaMallocPitch(&ptr, &pitch, 0, 8));
	ZERO(cudaMallocPitch(&ptr, &pitch, 8, 0));
#undef ZERO
	CHECK(pitch == 512);
	CHECK_ERR(cudaMalloc3D(&pitched, extent_of(0, 4, 4)), cudaSuccess);
	CHECK(pitched.ptr == NULL);
	CHECK(selftest_device_free_bytes() == MIB);
}

static void test_null_out_pointers(void)
{
	cudaMemPool_t pool;
	size_t pitch;
	void *ptr;

	CHECK_ERR(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
	CHECK_ERR(cudaMalloc(NULL, 10), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocAsync(NULL, 10, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocAsync_ptsz(NULL, 10, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocFromPoolAsync(NULL, 10, pool, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocFromPoolAsync_ptsz(NULL, 10, pool, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocManaged(NULL, 10, cudaMemAttachGlobal), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocHost(NULL, 10), cudaErrorInvalidValue);
	CHECK_ERR(cudaHostAlloc(NULL, 10, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocPitch(NULL, &pitch, 10, 10), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocPitch(&ptr, NULL, 10, 10), cudaErrorInvalidValue);
	CHECK_ERR(cudaMalloc3D(NULL, extent_of(1, 1, 1)), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemGetInfo(NULL, &pitch), cudaErrorInvalidValue);
	CHECK(selftest_device_free_bytes() == MIB);
}

static void test_capacity(void)
{
	struct cudaPitchedPtr pitched = { SENTINEL, 7, 7, 7 };
	void *big, *managed, *other, *host, *ptr;
	size_t pitch = 7;

	CHECK_ERR(cudaMalloc(&big, 768 * KIB), cudaSuccess);
	ptr = SENTINEL;
	CHECK_ERR(cudaMalloc(&ptr, 256 * KIB + 1), cudaErrorMemoryAllocation);
	CHECK(ptr == SENTINEL);
	CHECK_ERR(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
	/* Managed memory counts too; exactly full is allowed. */
	CHECK_ERR(cudaMallocManaged(&managed, 256 * KIB, cudaMemAttachGlobal), cudaSuccess);
	CHECK(selftest_device_free_bytes() == 0);
	CHECK_ERR(cudaMallocAsync(&ptr, 1, 0), cudaErrorMemoryAllocation);
	CHECK_ERR(cudaMallocManaged(&ptr, 1, cudaMemAttachGlobal), cudaErrorMemoryAllocation);
	CHECK_ERR(cudaMallocPitch(&ptr, &pitch, 1, 1), cudaErrorMemoryAllocation);
	CHECK_ERR(cudaMalloc3D(&pitched, extent_of(1, 1, 1)), cudaErrorMemoryAllocation);
	CHECK(ptr == SENTINEL && pitch == 7 && pitched.ptr == SENTINEL && pitched.pitch == 7);
	CHECK_ERR(cudaMallocPitch(&ptr, &pitch, SIZE_MAX / 2, 4), cudaErrorMemoryAllocation);
	CHECK_ERR(cudaMalloc(&ptr, SIZE_MAX), cudaErrorMemoryAllocation);
	CHECK(ptr == SENTINEL);

	/* Each device has its own capacity; pinned memory has another. */
	CHECK_ERR(cudaSetDevice(1), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	CHECK_ERR(cudaMalloc(&other, MIB), cudaSuccess);
	CHECK(selftest_device_free_bytes() == 0);
	CHECK_ERR(cudaSetDevice(0), cudaSuccess);
	CHECK_ERR(cudaMallocHost(&host, 512 * KIB), cudaSuccess);
	CHECK_ERR(cudaHostAlloc(&ptr, 1, 0), cudaErrorMemoryAllocation);
	CHECK(ptr == SENTINEL);
	CHECK_ERR(cudaFreeHost(host), cudaSuccess);
	CHECK_ERR(cudaMallocHost(&host, 512 * KIB), cudaSuccess);
	CHECK_ERR(cudaFreeHost(host), cudaSuccess);

	CHECK_ERR(cudaFree(other), cudaSuccess); /* another device's: fine, as with UVA */
	CHECK_ERR(cudaFree(managed), cudaSuccess);
	CHECK_ERR(cudaFree(big), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	CHECK_ERR(cudaSetDevice(1), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	CHECK_ERR(cudaSetDevice(0), cudaSuccess);
	CHECK_ERR(cudaGetLastError(), cudaErrorMemoryAllocation);
}

static void test_frees(void)
{
	cudaStream_t stream;
	void *device, *host, *ptr;
	int local;

	CHECK_ERR(cudaFree(NULL), cudaSuccess);
	CHECK_ERR(cudaFreeHost(NULL), cudaSuccess);
	CHECK_ERR(cudaFreeAsync(NULL, 0), cudaSuccess);
	CHECK_ERR(cudaGetLastError(), cudaSuccess);
	CHECK_ERR(cudaFree(&local), cudaErrorInvalidValue);
	CHECK_ERR(cudaFree((void *)0x1234), cudaErrorInvalidValue);
	CHECK_ERR(cudaFreeHost(&local), cudaErrorInvalidValue);
	CHECK_ERR(cudaFreeAsync((void *)0x1234, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaFreeAsync_ptsz((void *)0x1234, 0), cudaErrorInvalidValue);

	/* Pinned memory is not device memory, and the other way round. */
	CHECK_ERR(cudaMallocHost(&host, 100), cudaSuccess);
	CHECK_ERR(cudaMalloc(&device, 1000), cudaSuccess);
	CHECK_ERR(cudaFree(host), cudaErrorInvalidValue);
	CHECK_ERR(cudaFreeAsync(host, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaFreeHost(device), cudaErrorInvalidValue);
	CHECK_ERR(cudaFree((char *)device + 256), cudaErrorInvalidValue);
	CHECK_ERR(cudaFreeAsync(device, (cudaStream_t)(uintptr_t)0x4321),
		  cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaFreeHost(host), cudaSuccess);
	CHECK_ERR(cudaFreeHost(host), cudaErrorInvalidValue);
	CHECK_ERR(cudaFree(device), cudaSuccess);
	CHECK_ERR(cudaFree(device), cudaErrorInvalidValue);
	CHECK_ERR(cudaFreeAsync(device, 0), cudaErrorInvalidValue);

	/* Either free works on either kind of device allocation. */
	CHECK_ERR(cudaStreamCreate(&stream), cudaSuccess);
	CHECK_ERR(cudaMallocAsync(&ptr, 100, stream), cudaSuccess);
	CHECK_ERR(cudaFree(ptr), cudaSuccess);
	CHECK_ERR(cudaMalloc(&ptr, 100), cudaSuccess);
	CHECK_ERR(cudaFreeAsync(ptr, stream), cudaSuccess);
	CHECK_ERR(cudaMallocManaged(&ptr, 100, cudaMemAttachGlobal), cudaSuccess);
	CHECK_ERR(cudaFreeAsync_ptsz(ptr, stream), cudaSuccess);
	CHECK_ERR(cudaStreamDestroy(stream), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
}

static void test_register(void)
{
	char *buffer = malloc(8192);
	void *device, *host;

	if (!buffer)
		abort();
	CHECK_ERR(cudaHostRegister(NULL, 10, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaHostRegister(buffer, 0, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaHostRegister(buffer, 8192, 0x100), cudaErrorInvalidValue);
	CHECK_ERR(cudaHostRegister(buffer, 8192, cudaHostRegisterDefault), cudaSuccess);
	CHECK_ERR(cudaHostRegister(buffer, 8192, 0), cudaErrorHostMemoryAlreadyRegistered);
	CHECK_ERR(cudaHostRegister(buffer + 4096, 100, 0), cudaErrorHostMemoryAlreadyRegistered);
	CHECK_ERR(cudaGetLastError(), cudaErrorHostMemoryAlreadyRegistered);
	CHECK_ERR(cudaHostUnregister(buffer + 4096), cudaErrorHostMemoryNotRegistered);
	CHECK_ERR(cudaHostUnregister(buffer), cudaSuccess);
	CHECK_ERR(cudaHostUnregister(buffer), cudaErrorHostMemoryNotRegistered);
	CHECK_ERR(cudaGetLastError(), cudaErrorHostMemoryNotRegistered);
	CHECK_ERR(cudaHostUnregister(NULL), cudaErrorInvalidValue);
	CHECK_ERR(cudaHostRegister(buffer, 8192, cudaHostRegisterMapped | cudaHostRegisterReadOnly),
		  cudaSuccess);
	CHECK_ERR(cudaHostUnregister(buffer), cudaSuccess);

	CHECK_ERR(cudaMallocHost(&host, 1000), cudaSuccess);
	CHECK_ERR(cudaHostRegister(host, 1000, 0), cudaErrorHostMemoryAlreadyRegistered);
	CHECK_ERR(cudaFreeHost(host), cudaSuccess);
	CHECK_ERR(cudaMalloc(&device, 1000), cudaSuccess);
	CHECK_ERR(cudaHostRegister(device, 1000, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaFree(device), cudaSuccess);
	CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
	free(buffer);
}

static void *other_thread_last_error(void *arg)
{
	int *ok = arg;

	*ok = cudaPeekAtLastError() == cudaSuccess;
	*ok &= cudaSetDevice(99) == cudaErrorInvalidDevice;
	*ok &= cudaGetLastError() == cudaErrorInvalidDevice;
	return NULL;
}

static void test_last_error(void)
{
	pthread_t thread;
	void *ptr;
	int ok = 0;

	cudaGetLastError();
	CHECK_ERR(cudaGetLastError(), cudaSuccess);
	CHECK_ERR(cudaFree((void *)0x1234), cudaErrorInvalidValue);
	CHECK_ERR(cudaPeekAtLastError(), cudaErrorInvalidValue);
	CHECK_ERR(cudaPeekAtLastError(), cudaErrorInvalidValue);
	/* Successful calls leave it alone. */
	CHECK_ERR(cudaMalloc(&ptr, 10), cudaSuccess);
	CHECK_ERR(cudaFree(ptr), cudaSuccess);
	CHECK_ERR(cudaPeekAtLastError(), cudaErrorInvalidValue);
	/* It is per thread. */
	CHECK(pthread_create(&thread, NULL, other_thread_last_error, &ok) == 0);
	CHECK(pthread_join(thread, NULL) == 0);
	CHECK(ok);
	CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
	CHECK_ERR(cudaGetLastError(), cudaSuccess);
	CHECK_ERR(cudaSetDevice(-1), cudaErrorInvalidDevice);
	CHECK_ERR(cudaGetLastError(), cudaErrorInvalidDevice);
}

static void test_ptsz(void)
{
	cudaMemPool_t pool;
	cudaStream_t stream;
	void *ptr = NULL;

	CHECK_ERR(cudaStreamCreate(&stream), cudaSuccess);
	CHECK_ERR(cudaMallocAsync_ptsz(&ptr, 4096, stream), cudaSuccess);
	CHECK(ptr && (uintptr_t)ptr % 256 == 0 && selftest_device_free_bytes() == MIB - 4096);
	CHECK_ERR(cudaFreeAsync_ptsz(ptr, stream), cudaSuccess);
	CHECK_ERR(cudaFreeAsync_ptsz(ptr, stream), cudaErrorInvalidValue);
	CHECK_ERR(cudaMallocAsync_ptsz(&ptr, 100, cudaStreamPerThread), cudaSuccess);
	CHECK_ERR(cudaFreeAsync_ptsz(ptr, cudaStreamPerThread), cudaSuccess);
	CHECK_ERR(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
	CHECK_ERR(cudaMallocFromPoolAsync_ptsz(&ptr, 300, pool, stream), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB - 300);
	CHECK_ERR(cudaFreeAsync(ptr, stream), cudaSuccess);
	ptr = SENTINEL;
	CHECK_ERR(cudaMallocAsync_ptsz(&ptr, 100, (cudaStream_t)(uintptr_t)0x4321),
		  cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaMallocFromPoolAsync_ptsz(&ptr, 100, (cudaMemPool_t)(uintptr_t)0x999,
					       stream), cudaErrorInvalidValue);
	CHECK(ptr == SENTINEL);
	CHECK_ERR(cudaStreamDestroy(stream), cudaSuccess);
	selftest_per_thread_stream();
	CHECK(selftest_device_free_bytes() == MIB);
}

static void test_streams(void)
{
	cudaStream_t stream, other;
	void *ptr = SENTINEL;

	CHECK_ERR(cudaStreamCreate(NULL), cudaErrorInvalidValue);
	CHECK_ERR(cudaStreamCreateWithFlags(&stream, 0x10), cudaErrorInvalidValue);
	CHECK_ERR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
	CHECK_ERR(cudaStreamCreate(&other), cudaSuccess);
	CHECK(stream && other && stream != other);
	CHECK_ERR(cudaStreamSynchronize(stream), cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize(0), cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
	CHECK_ERR(cudaDeviceSynchronize(), cudaSuccess);
	CHECK_ERR(cudaStreamDestroy(stream), cudaSuccess);
	CHECK_ERR(cudaStreamDestroy(stream), cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaStreamSynchronize(stream), cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaMallocAsync(&ptr, 10, stream), cudaErrorInvalidResourceHandle);
	CHECK(ptr == SENTINEL);
	CHECK_ERR(cudaStreamDestroy(0), cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaStreamDestroy(other), cudaSuccess);

	/* Stream-ordered memory comes from the stream's device. */
	CHECK_ERR(cudaSetDevice(1), cudaSuccess);
	CHECK_ERR(cudaStreamCreate(&stream), cudaSuccess);
	CHECK_ERR(cudaSetDevice(0), cudaSuccess);
	CHECK_ERR(cudaMallocAsync(&ptr, 1000, stream), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	CHECK_ERR(cudaSetDevice(1), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB - 1000);
	CHECK_ERR(cudaFreeAsync(ptr, stream), cudaSuccess);
	CHECK_ERR(cudaStreamDestroy(stream), cudaSuccess);
	CHECK_ERR(cudaSetDevice(0), cudaSuccess);
	cudaGetLastError();
}

static void test_pools(void)
{
	struct cudaMemPoolProps props;
	cudaMemPool_t pool, again, other;
	void *ptr = SENTINEL;

	CHECK_ERR(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
	CHECK_ERR(cudaDeviceGetDefaultMemPool(&again, 0), cudaSuccess);
	CHECK_ERR(cudaDeviceGetDefaultMemPool(&other, 1), cudaSuccess);
	CHECK(pool && pool == again && other && other != pool);
	CHECK_ERR(cudaDeviceGetDefaultMemPool(&again, 2), cudaErrorInvalidDevice);
	CHECK_ERR(cudaDeviceGetDefaultMemPool(&again, -1), cudaErrorInvalidDevice);
	CHECK_ERR(cudaDeviceGetDefaultMemPool(NULL, 0), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemPoolDestroy(pool), cudaErrorInvalidValue);

	/* A pool's allocations are charged to the pool's device. */
	CHECK_ERR(cudaMallocFromPoolAsync(&ptr, 2000, other, 0), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	CHECK_ERR(cudaFree(ptr), cudaSuccess);

	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK_ERR(cudaMemPoolCreate(NULL, &props), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemPoolCreate(&pool, NULL), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemPoolCreate(&pool, &props), cudaSuccess);
	CHECK_ERR(cudaMallocFromPoolAsync(&ptr, 3000, pool, 0), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB - 3000);
	/* Destroying a pool leaves its allocations valid until freed. */
	CHECK_ERR(cudaMemPoolDestroy(pool), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB - 3000);
	CHECK_ERR(cudaFreeAsync(ptr, 0), cudaSuccess);
	ptr = SENTINEL;
	CHECK_ERR(cudaMallocFromPoolAsync(&ptr, 10, pool, 0), cudaErrorInvalidValue);
	CHECK(ptr == SENTINEL);
	CHECK_ERR(cudaMemPoolDestroy(pool), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemPoolDestroy((cudaMemPool_t)(uintptr_t)0x999), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemPoolDestroy(NULL), cudaErrorInvalidValue);

	props.location.id = 5;
	CHECK_ERR(cudaMemPoolCreate(&pool, &props), cudaErrorInvalidValue);
	props.location.type = cudaMemLocationTypeHost;
	CHECK_ERR(cudaMemPoolCreate(&pool, &props), cudaErrorNotSupported);
	CHECK(selftest_device_free_bytes() == MIB);
	cudaGetLastError();
}

static void test_copies(void)
{
	unsigned char host[1024], back[1024];
	void *first, *second, *managed, *pinned;
	cudaStream_t stream;
	size_t i;
	int ok = 1;

	CHECK_ERR(cudaMalloc(&first, sizeof(host)), cudaSuccess);
	CHECK_ERR(cudaMalloc(&second, sizeof(host)), cudaSuccess);
	CHECK_ERR(cudaMemset(first, 0xab, sizeof(host)), cudaSuccess);
	CHECK_ERR(cudaMemcpy(back, first, sizeof(back), cudaMemcpyDeviceToHost), cudaSuccess);
	for (i = 0; i < sizeof(back); i++)
		ok &= back[i] == 0xab;
	for (i = 0; i < sizeof(host); i++)
		host[i] = (unsigned char)(i * 7);
	CHECK_ERR(cudaMemcpy(first, host, sizeof(host), cudaMemcpyHostToDevice), cudaSuccess);
	CHECK_ERR(cudaMemcpy(second, first, sizeof(host), cudaMemcpyDeviceToDevice), cudaSuccess);
	CHECK_ERR(cudaMemcpy(back, second, sizeof(back), cudaMemcpyDefault), cudaSuccess);
	CHECK(ok && memcmp(host, back, sizeof(host)) == 0);

	CHECK_ERR(cudaMemcpy(back, first, 10, (enum cudaMemcpyKind)7),
		  cudaErrorInvalidMemcpyDirection);
	CHECK_ERR(cudaMemcpy(back, host, 10, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemcpy(back, host, 10, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemcpy(first, host, sizeof(host) + 1, cudaMemcpyHostToDevice),
		  cudaErrorInvalidValue);
	CHECK_ERR(cudaMemcpy(host, (char *)first + 1, sizeof(host), cudaMemcpyDefault),
		  cudaErrorInvalidValue);
	CHECK_ERR(cudaMemcpy(NULL, host, 10, cudaMemcpyHostToHost), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemcpy(NULL, NULL, 0, cudaMemcpyHostToDevice), cudaSuccess);
	CHECK_ERR(cudaMemset((char *)first + 1000, 0, 24), cudaSuccess);
	CHECK_ERR(cudaMemset((char *)first + 1000, 0, 25), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemset(host, 0, 10), cudaErrorInvalidValue);
	CHECK_ERR(cudaMemset(NULL, 0, 0), cudaSuccess);

	/* Managed memory is device memory; pinned memory is host memory. */
	CHECK_ERR(cudaMallocManaged(&managed, 64, cudaMemAttachGlobal), cudaSuccess);
	CHECK_ERR(cudaMallocHost(&pinned, 64), cudaSuccess);
	CHECK_ERR(cudaMemcpy(managed, host, 64, cudaMemcpyHostToDevice), cudaSuccess);
	CHECK_ERR(cudaMemcpy(pinned, managed, 64, cudaMemcpyDeviceToHost), cudaSuccess);
	CHECK(memcmp(pinned, host, 64) == 0);
	CHECK_ERR(cudaMemcpy(pinned, host, 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);

	CHECK_ERR(cudaStreamCreate(&stream), cudaSuccess);
	CHECK_ERR(cudaMemsetAsync(second, 1, 16, stream), cudaSuccess);
	CHECK_ERR(cudaMemcpyAsync(back, second, 16, cudaMemcpyDeviceToHost, stream), cudaSuccess);
	CHECK_ERR(cudaStreamSynchronize(stream), cudaSuccess);
	CHECK(back[0] == 1 && back[15] == 1);
	CHECK_ERR(cudaStreamDestroy(stream), cudaSuccess);
	CHECK_ERR(cudaMemsetAsync(second, 1, 16, stream), cudaErrorInvalidResourceHandle);
	CHECK_ERR(cudaMemcpyAsync(back, second, 16, cudaMemcpyDeviceToHost, stream),
		  cudaErrorInvalidResourceHandle);

	CHECK_ERR(cudaFreeHost(pinned), cudaSuccess);
	CHECK_ERR(cudaFree(managed), cudaSuccess);
	CHECK_ERR(cudaFree(second), cudaSuccess);
	CHECK_ERR(cudaFree(first), cudaSuccess);
	cudaGetLastError();
}

static void *other_thread_device(void *arg)
{
	int *device = arg;

	if (cudaGetDevice(device) != cudaSuccess)
		*device = -1;
	return NULL;
}

static void test_devices(void)
{
	pthread_t thread;
	int count = 0;
	int device = -1;
	int version = 0;

	CHECK_ERR(cudaGetDeviceCount(&count), cudaSuccess);
	CHECK(count == 2);
	CHECK_ERR(cudaGetDeviceCount(NULL), cudaErrorInvalidValue);
	CHECK_ERR(cudaGetDevice(&device), cudaSuccess);
	CHECK(device == 0);
	CHECK_ERR(cudaGetDevice(NULL), cudaErrorInvalidValue);
	CHECK_ERR(cudaSetDevice(1), cudaSuccess);
	CHECK_ERR(cudaSetDevice(2), cudaErrorInvalidDevice);
	CHECK_ERR(cudaSetDevice(-1), cudaErrorInvalidDevice);
	CHECK_ERR(cudaGetDevice(&device), cudaSuccess);
	CHECK(device == 1);
	/* The current device is per thread. */
	CHECK(pthread_create(&thread, NULL, other_thread_device, &device) == 0);
	CHECK(pthread_join(thread, NULL) == 0);
	CHECK(device == 0);
	CHECK_ERR(cudaSetDevice(0), cudaSuccess);

	CHECK_ERR(cudaRuntimeGetVersion(&version), cudaSuccess);
	CHECK(version == 13000);
	version = 0;
	CHECK_ERR(cudaDriverGetVersion(&version), cudaSuccess);
	CHECK(version == 13000);
	CHECK_ERR(cudaRuntimeGetVersion(NULL), cudaErrorInvalidValue);
	CHECK_ERR(cudaDriverGetVersion(NULL), cudaErrorInvalidValue);
	cudaGetLastError();
}

static int same(const char *got, const char *expected)
{
	if (got && strcmp(got, expected) == 0)
		return 1;
	fprintf(stderr, "got \"%s\", expected \"%s\"\n", got ? got : "(null)", expected);
	return 0;
}

static void test_error_strings(void)
{
	CHECK(same(cudaGetErrorName(cudaSuccess), "cudaSuccess"));
	CHECK(same(cudaGetErrorString(cudaSuccess), "no error"));
	CHECK(same(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation"));
	CHECK(same(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory"));
	CHECK(same(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument"));
	CHECK(same(cudaGetErrorName(cudaErrorHostMemoryAlreadyRegistered),
		   "cudaErrorHostMemoryAlreadyRegistered"));
	CHECK(same(cudaGetErrorName(cudaErrorInvalidKernelImage), "cudaErrorInvalidKernelImage"));
	CHECK(same(cudaGetErrorName(cudaErrorUnknown), "cudaErrorUnknown"));
	CHECK(same(cudaGetErrorName((cudaError_t)12345), "unrecognized error code"));
	CHECK(same(cudaGetErrorString((cudaError_t)12345), "unrecognized error code"));
	CHECK(same(cudaGetErrorName((cudaError_t)-1), "unrecognized error code"));
	CHECK(cudaGetErrorString(cudaErrorInvalidKernelImage) != NULL);
}

static void test_reset(void)
{
	cudaStream_t stream;
	void *device, *managed, *host, *other;

	CHECK_ERR(cudaSetDevice(1), cudaSuccess);
	CHECK_ERR(cudaMalloc(&other, 100), cudaSuccess);
	CHECK_ERR(cudaSetDevice(0), cudaSuccess);
	CHECK_ERR(cudaMalloc(&device, 1000), cudaSuccess);
	CHECK_ERR(cudaMallocManaged(&managed, 1000, cudaMemAttachGlobal), cudaSuccess);
	CHECK_ERR(cudaMallocHost(&host, 1000), cudaSuccess);
	CHECK_ERR(cudaStreamCreate(&stream), cudaSuccess);
	CHECK_ERR(cudaDeviceReset(), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	CHECK_ERR(cudaFree(device), cudaErrorInvalidValue);
	CHECK_ERR(cudaFree(managed), cudaErrorInvalidValue);
	CHECK_ERR(cudaStreamDestroy(stream), cudaErrorInvalidResourceHandle);
	/* Pinned memory and other devices are left alone. */
	CHECK_ERR(cudaFreeHost(host), cudaSuccess);
	CHECK_ERR(cudaFree(other), cudaSuccess);
	cudaGetLastError();
}

/* Enough allocations on both devices that the reset meets collisions. */
static void test_reset_many(void)
{
	void *kept[200], *dropped[200];
	int i;

	for (i = 0; i < 200; i++) {
		CHECK_ERR(cudaSetDevice(1), cudaSuccess);
		CHECK_ERR(cudaMalloc(&kept[i], 16), cudaSuccess);
		CHECK_ERR(cudaSetDevice(0), cudaSuccess);
		CHECK_ERR(cudaMalloc(&dropped[i], 16), cudaSuccess);
	}
	CHECK_ERR(cudaDeviceReset(), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	for (i = 0; i < 200; i++) {
		CHECK_ERR(cudaFree(dropped[i]), cudaErrorInvalidValue);
		CHECK_ERR(cudaFree(kept[i]), cudaSuccess);
	}
	CHECK_ERR(cudaSetDevice(1), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
	CHECK_ERR(cudaSetDevice(0), cudaSuccess);
	cudaGetLastError();
}

static void run_main_mode(void)
{
	setenv("FAKECUDA_CAPACITY", "1M", 1);
	setenv("FAKECUDA_HOST_CAPACITY", "512k", 1);
	setenv("FAKECUDA_DEVICES", "2", 1);
	test_alloc_basics();
	test_size_zero();
	test_null_out_pointers();
	test_capacity();
	test_frees();
	test_register();
	test_last_error();
	test_ptsz();
	test_streams();
	test_pools();
	test_copies();
	test_devices();
	test_error_strings();
	test_reset();
	test_reset_many();
	selftest_threads();
	selftest_fork();
}

/* Expects the defaults: one device of 80 GiB, 16 GiB of pinned memory. */
static void check_defaults(void)
{
	size_t free_bytes = 0, total_bytes = 0;
	void *ptr = SENTINEL;
	int count = 0;

	CHECK_ERR(cudaGetDeviceCount(&count), cudaSuccess);
	CHECK(count == 1);
	CHECK_ERR(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
	CHECK(free_bytes == 80 * GIB && total_bytes == 80 * GIB);
	CHECK_ERR(cudaMalloc(&ptr, 80 * GIB + 1), cudaErrorMemoryAllocation);
	CHECK_ERR(cudaMallocHost(&ptr, 16 * GIB + 1), cudaErrorMemoryAllocation);
	CHECK(ptr == SENTINEL);
	CHECK_ERR(cudaSetDevice(1), cudaErrorInvalidDevice);
}

static void run_no_device_mode(void)
{
	void *ptr = SENTINEL;
	int count = -1;
	int device;

	setenv("FAKECUDA_DEVICES", "0", 1);
	CHECK_ERR(cudaGetDeviceCount(&count), cudaErrorNoDevice);
	CHECK(count == 0);
	CHECK_ERR(cudaGetLastError(), cudaErrorNoDevice);
	CHECK_ERR(cudaMalloc(&ptr, 10), cudaErrorNoDevice);
	CHECK_ERR(cudaMallocHost(&ptr, 10), cudaErrorNoDevice);
	CHECK(ptr == SENTINEL);
	CHECK_ERR(cudaGetDevice(&device), cudaErrorNoDevice);
	CHECK_ERR(cudaSetDevice(0), cudaErrorNoDevice);
	CHECK_ERR(cudaFree(NULL), cudaSuccess);
	CHECK_ERR(cudaFree((void *)0x1234), cudaErrorInvalidValue);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";

	if (strcmp(mode, "all") == 0) {
		run_main_mode();
	} else if (strcmp(mode, "defaults") == 0) {
		unsetenv("FAKECUDA_CAPACITY");
		unsetenv("FAKECUDA_HOST_CAPACITY");
		unsetenv("FAKECUDA_DEVICES");
		check_defaults();
	} else if (strcmp(mode, "bad-env") == 0) {
		setenv("FAKECUDA_CAPACITY", "-5", 1);
		setenv("FAKECUDA_HOST_CAPACITY", "12Q", 1);
		setenv("FAKECUDA_DEVICES", "lots", 1);
		check_defaults();
	} else if (strcmp(mode, "no-device") == 0) {
		run_no_device_mode();
	} else {
		fprintf(stderr, "usage: %s [all|defaults|bad-env|no-device]\n", argv[0]);
		return 2;
	}
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
