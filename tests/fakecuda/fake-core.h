/* SPDX-License-Identifier: MIT */
/*
 * The stand-in CUDA runtime's state: configuration from the environment, the
 * record of live allocations and handles, capacity accounting, the calling
 * thread's current device and last error. The exported cuda* functions in
 * fake-memory.c and fake-device.c check their arguments and call these.
 *
 * Memory is host memory standing in for device memory. All functions here
 * are thread-safe.
 */
#ifndef FAKE_CORE_H
#define FAKE_CORE_H

/*
 * The plain and the per-thread-stream entry points are both defined here;
 * with this macro the header would rename the plain ones.
 */
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "the stand-in runtime must be built without CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#include <stddef.h>

#include <cuda_runtime_api.h>

#define FAKECUDA_EXPORT __attribute__((visibility("default")))

/* Most devices FAKECUDA_DEVICES may ask for. */
#define FAKE_MAX_DEVICES 64

/*
 * The per-thread-default-stream variants. cuda_runtime_api.h declares them
 * only under CUDA_API_PER_THREAD_DEFAULT_STREAM, renaming the plain names.
 */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream);
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
				 enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
					 unsigned long long flags,
					 enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
						  unsigned int cudaVersion,
						  unsigned long long flags,
						  enum cudaDriverEntryPointQueryResult *driverStatus);

enum fake_kind {
	FAKE_DEVICE = 1,     /* cudaMalloc, cudaMallocAsync, pitch, 3D, pools */
	FAKE_MANAGED = 2,    /* cudaMallocManaged */
	FAKE_PINNED = 3,     /* cudaMallocHost, cudaHostAlloc */
	FAKE_REGISTERED = 4, /* cudaHostRegister of the caller's memory */
	FAKE_STREAM = 5,
	FAKE_POOL = 6,
	FAKE_PHYSICAL = 7,   /* cuMemCreate: device memory reached by mapping */
	FAKE_RESERVED = 8,   /* cuMemAddressReserve: a range mappings go into */
};

#define FAKE_KIND_BIT(kind) (1u << (kind))

/* What an address range is, to the runtime (see fake_classify()). */
enum fake_place {
	FAKE_PLACE_HOST,    /* not device memory: the caller's or pinned */
	FAKE_PLACE_DEVICE,  /* wholly inside one device or managed allocation */
	FAKE_PLACE_OVERRUN, /* starts in an allocation but runs past its end */
};

/* Records err as the calling thread's last error unless it is success. */
cudaError_t fake_return(cudaError_t err);

/* Returns the calling thread's last error; clears it if clear is non-zero. */
cudaError_t fake_last_error(int clear);

/* FAKECUDA_DEVICES (default 1, at most FAKE_MAX_DEVICES). */
int fake_device_count(void);

/* cudaErrorNoDevice when FAKECUDA_DEVICES is 0, else cudaSuccess. */
cudaError_t fake_require_device(void);

/* The calling thread's current device (0 until cudaSetDevice). */
int fake_current_device(void);
void fake_set_current_device(int device);

/* Returns free and total device bytes of device. */
void fake_mem_info(int device, size_t *free_bytes, size_t *total_bytes);

/*
 * Allocates size bytes, 256-byte aligned, of kind FAKE_DEVICE, FAKE_MANAGED,
 * FAKE_PHYSICAL (charged to device; to the host if device is -1) or
 * FAKE_PINNED (charged to the host). Size 0 stores
 * NULL. Over capacity, or when the system has no memory, returns
 * cudaErrorMemoryAllocation and leaves *out alone.
 */
cudaError_t fake_mem_alloc(int kind, int device, size_t size, void **out);

/* The kind of the live allocation that starts at ptr, or 0. */
int fake_mem_kind(const void *ptr);

/*
 * Marks the live allocation at ptr as taken from pool (stream-ordered), and
 * returns the bytes live in pool's allocations.
 */
void fake_mem_set_pool(void *ptr, cudaMemPool_t pool);
size_t fake_mem_pool_used(cudaMemPool_t pool);

/*
 * Records [ptr, ptr + size) as a reserved address range of device (the
 * caller made the range; nothing is charged), or forgets it. Memory inside
 * a reserved range counts as device memory.
 */
cudaError_t fake_mem_reserve(void *ptr, size_t size, int device);
cudaError_t fake_mem_unreserve(void *ptr);

/*
 * The device, managed or reserved allocation that holds ptr: stores its
 * start and size and returns cudaSuccess, or cudaErrorInvalidValue.
 */
cudaError_t fake_mem_range(const void *ptr, void **base, size_t *size);

/*
 * Frees ptr if it is the start of a live allocation whose kind is in
 * kind_mask (FAKE_KIND_BIT()s); else cudaErrorInvalidValue. NULL: success.
 */
cudaError_t fake_mem_free(void *ptr, unsigned int kind_mask);

/* Host registration, with the real runtime's errors. */
cudaError_t fake_mem_register(void *ptr, size_t size);
cudaError_t fake_mem_unregister(void *ptr);

/* Where [ptr, ptr + count) lies; count is at least 1. */
enum fake_place fake_classify(const void *ptr, size_t count);

/*
 * Streams and pools. Create stores a new handle of kind for device. Destroy
 * returns cudaErrorInvalidResourceHandle (streams) or cudaErrorInvalidValue
 * (pools) for a handle it does not know.
 */
cudaError_t fake_handle_create(int kind, int device, void **out);
cudaError_t fake_handle_destroy(int kind, void *handle);

/*
 * Checks a stream: 0, cudaStreamLegacy, cudaStreamPerThread or a live
 * stream. Stores the device its work runs on in *device.
 */
cudaError_t fake_stream_device(cudaStream_t stream, int *device);

/* Checks a pool (a device's default pool or a live one); stores its device. */
cudaError_t fake_pool_device(cudaMemPool_t pool, int *device);

/* The default pool of device (which must be valid). */
cudaMemPool_t fake_default_pool(int device);

/* Frees everything of device: allocations, streams, pools (cudaDeviceReset). */
void fake_reset_device(int device);

#endif
