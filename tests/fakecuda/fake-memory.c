/* SPDX-License-Identifier: MIT */
/*
 * The stand-in runtime's memory entry points: allocation, free, host
 * registration, copies, memsets, memory info and pools. Each checks its
 * arguments as the real runtime does, calls fake-core.c and records a
 * failure as the thread's last error.
 */
#include "fake-core.h"

#include <stdint.h>
#include <string.h>

/* cudaMallocPitch and cudaMalloc3D round rows up to this. */
#define PITCH_ALIGNMENT 512

#define DEVICE_KINDS (FAKE_KIND_BIT(FAKE_DEVICE) | FAKE_KIND_BIT(FAKE_MANAGED))

static cudaError_t device_alloc(int kind, int device, size_t size, void **out)
{
	cudaError_t err;

	if (!out)
		return fake_return(cudaErrorInvalidValue);
	err = fake_require_device();
	if (err)
		return fake_return(err);
	return fake_return(fake_mem_alloc(kind, device, size, out));
}

FAKECUDA_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	return device_alloc(FAKE_DEVICE, fake_current_device(), size, devPtr);
}

FAKECUDA_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
		return fake_return(cudaErrorInvalidValue);
	return device_alloc(FAKE_MANAGED, fake_current_device(), size, devPtr);
}

FAKECUDA_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	return device_alloc(FAKE_PINNED, -1, size, ptr);
}

FAKECUDA_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	if (flags & ~(unsigned int)(cudaHostAllocPortable | cudaHostAllocMapped |
				    cudaHostAllocWriteCombined))
		return fake_return(cudaErrorInvalidValue);
	return device_alloc(FAKE_PINNED, -1, size, pHost);
}

/* Rounds width up to the pitch; 0 on overflow. */
static size_t pitch_of(size_t width)
{
	if (width > SIZE_MAX - (PITCH_ALIGNMENT - 1))
		return 0;
	return (width + PITCH_ALIGNMENT - 1) & ~(size_t)(PITCH_ALIGNMENT - 1);
}

/* pitch * rows * layers, or SIZE_MAX when that overflows. */
static size_t pitched_size(size_t pitch, size_t rows, size_t layers)
{
	if (rows && pitch > SIZE_MAX / rows)
		return SIZE_MAX;
	if (layers && pitch * rows > SIZE_MAX / layers)
		return SIZE_MAX;
	return pitch * rows * layers;
}

FAKECUDA_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width,
					    size_t height)
{
	size_t row_bytes = pitch_of(width);
	cudaError_t err;

	if (!devPtr || !pitch)
		return fake_return(cudaErrorInvalidValue);
	if (width && !row_bytes)
		return fake_return(cudaErrorMemoryAllocation);
	err = device_alloc(FAKE_DEVICE, fake_current_device(),
			   pitched_size(row_bytes, height, 1), devPtr);
	if (!err)
		*pitch = row_bytes;
	return err;
}

FAKECUDA_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr,
					 struct cudaExtent extent)
{
	size_t row_bytes = pitch_of(extent.width);
	cudaError_t err;
	void *ptr;

	if (!pitchedDevPtr)
		return fake_return(cudaErrorInvalidValue);
	if (extent.width && !row_bytes)
		return fake_return(cudaErrorMemoryAllocation);
	err = device_alloc(FAKE_DEVICE, fake_current_device(),
			   pitched_size(row_bytes, extent.height, extent.depth), &ptr);
	if (!err) {
		pitchedDevPtr->ptr = ptr;
		pitchedDevPtr->pitch = row_bytes;
		pitchedDevPtr->xsize = extent.width;
		pitchedDevPtr->ysize = extent.height;
	}
	return err;
}

static cudaError_t malloc_async(void **devPtr, size_t size, cudaStream_t stream)
{
	cudaError_t err;
	int device;

	if (!devPtr)
		return fake_return(cudaErrorInvalidValue);
	err = fake_stream_device(stream, &device);
	if (err)
		return fake_return(err);
	return device_alloc(FAKE_DEVICE, device, size, devPtr);
}

FAKECUDA_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	return malloc_async(devPtr, size, hStream);
}

FAKECUDA_EXPORT cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size,
						 cudaStream_t hStream)
{
	return malloc_async(devPtr, size, hStream);
}

static cudaError_t malloc_from_pool(void **ptr, size_t size, cudaMemPool_t pool,
				    cudaStream_t stream)
{
	cudaError_t err;
	int stream_device;
	int device;

	if (!ptr)
		return fake_return(cudaErrorInvalidValue);
	err = fake_pool_device(pool, &device);
	if (!err)
		err = fake_stream_device(stream, &stream_device);
	if (err)
		return fake_return(err);
	return device_alloc(FAKE_DEVICE, device, size, ptr);
}

FAKECUDA_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size,
						    cudaMemPool_t memPool, cudaStream_t stream)
{
	return malloc_from_pool(ptr, size, memPool, stream);
}

FAKECUDA_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size,
							 cudaMemPool_t memPool,
							 cudaStream_t stream)
{
	return malloc_from_pool(ptr, size, memPool, stream);
}

FAKECUDA_EXPORT cudaError_t cudaFree(void *devPtr)
{
	return fake_return(fake_mem_free(devPtr, DEVICE_KINDS));
}

static cudaError_t free_async(void *devPtr, cudaStream_t stream)
{
	cudaError_t err;
	int device;

	err = fake_stream_device(stream, &device);
	if (err)
		return fake_return(err);
	return fake_return(fake_mem_free(devPtr, DEVICE_KINDS));
}

FAKECUDA_EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	return free_async(devPtr, hStream);
}

FAKECUDA_EXPORT cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	return free_async(devPtr, hStream);
}

FAKECUDA_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
	return fake_return(fake_mem_free(ptr, FAKE_KIND_BIT(FAKE_PINNED)));
}

FAKECUDA_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	if (flags & ~(unsigned int)(cudaHostRegisterPortable | cudaHostRegisterMapped |
				    cudaHostRegisterIoMemory | cudaHostRegisterReadOnly))
		return fake_return(cudaErrorInvalidValue);
	return fake_return(fake_mem_register(ptr, size));
}

FAKECUDA_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
	return fake_return(fake_mem_unregister(ptr));
}

FAKECUDA_EXPORT cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
	cudaError_t err;

	if (!free || !total)
		return fake_return(cudaErrorInvalidValue);
	err = fake_require_device();
	if (err)
		return fake_return(err);
	fake_mem_info(fake_current_device(), free, total);
	return cudaSuccess;
}

/* Checks one side of a copy or memset; device says it must be device memory. */
static cudaError_t check_side(const void *ptr, size_t count, int device)
{
	enum fake_place place;

	if (!ptr || (uintptr_t)ptr + count < (uintptr_t)ptr)
		return cudaErrorInvalidValue;
	place = fake_classify(ptr, count);
	if (place == FAKE_PLACE_OVERRUN || (device && place != FAKE_PLACE_DEVICE))
		return cudaErrorInvalidValue;
	return cudaSuccess;
}

static cudaError_t do_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	cudaError_t err;

	if ((unsigned int)kind > (unsigned int)cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	if (!count)
		return cudaSuccess;
	err = check_side(dst, count, kind == cudaMemcpyHostToDevice ||
				     kind == cudaMemcpyDeviceToDevice);
	if (!err)
		err = check_side(src, count, kind == cudaMemcpyDeviceToHost ||
					     kind == cudaMemcpyDeviceToDevice);
	if (err)
		return err;
	memmove(dst, src, count);
	return cudaSuccess;
}

static cudaError_t do_memset(void *devPtr, int value, size_t count)
{
	cudaError_t err;

	if (!count)
		return cudaSuccess;
	err = check_side(devPtr, count, 1);
	if (err)
		return err;
	memset(devPtr, value, count);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
				       enum cudaMemcpyKind kind)
{
	return fake_return(do_memcpy(dst, src, count, kind));
}

FAKECUDA_EXPORT cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
					    enum cudaMemcpyKind kind)
{
	return fake_return(do_memcpy(dst, src, count, kind));
}

static cudaError_t memcpy_async(void *dst, const void *src, size_t count,
				enum cudaMemcpyKind kind, cudaStream_t stream)
{
	int device;
	cudaError_t err = fake_stream_device(stream, &device);

	if (!err)
		err = do_memcpy(dst, src, count, kind);
	return fake_return(err);
}

FAKECUDA_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
					    enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return memcpy_async(dst, src, count, kind, stream);
}

FAKECUDA_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
						 enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return memcpy_async(dst, src, count, kind, stream);
}

FAKECUDA_EXPORT cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	return fake_return(do_memset(devPtr, value, count));
}

FAKECUDA_EXPORT cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	return fake_return(do_memset(devPtr, value, count));
}

static cudaError_t memset_async(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	int device;
	cudaError_t err = fake_stream_device(stream, &device);

	if (!err)
		err = do_memset(devPtr, value, count);
	return fake_return(err);
}

FAKECUDA_EXPORT cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count,
					    cudaStream_t stream)
{
	return memset_async(devPtr, value, count, stream);
}

FAKECUDA_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count,
						 cudaStream_t stream)
{
	return memset_async(devPtr, value, count, stream);
}

FAKECUDA_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	cudaError_t err;

	if (!memPool)
		return fake_return(cudaErrorInvalidValue);
	err = fake_require_device();
	if (err)
		return fake_return(err);
	if (device < 0 || device >= fake_device_count())
		return fake_return(cudaErrorInvalidDevice);
	*memPool = fake_default_pool(device);
	return cudaSuccess;
}

/*
 * Models pinned pools on a device only: host-located and managed pools are
 * real but nothing here needs them.
 */
FAKECUDA_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool,
					      const struct cudaMemPoolProps *poolProps)
{
	cudaError_t err;
	void *handle;

	if (!memPool || !poolProps)
		return fake_return(cudaErrorInvalidValue);
	err = fake_require_device();
	if (err)
		return fake_return(err);
	if (poolProps->allocType == cudaMemAllocationTypeInvalid ||
	    poolProps->location.type == cudaMemLocationTypeInvalid)
		return fake_return(cudaErrorInvalidValue);
	if (poolProps->allocType != cudaMemAllocationTypePinned ||
	    poolProps->location.type != cudaMemLocationTypeDevice)
		return fake_return(cudaErrorNotSupported);
	if (poolProps->location.id < 0 || poolProps->location.id >= fake_device_count())
		return fake_return(cudaErrorInvalidValue);
	err = fake_handle_create(FAKE_POOL, poolProps->location.id, &handle);
	if (err)
		return fake_return(err);
	*memPool = handle;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	/*
	 * Like the real one: allocations from the pool stay valid until they
	 * are freed. A default pool cannot be destroyed.
	 */
	return fake_return(fake_handle_destroy(FAKE_POOL, memPool));
}
