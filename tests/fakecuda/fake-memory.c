/* SPDX-License-Identifier: MIT */
/*
 * The stand-in runtime's memory entry points: allocation, free, host
 * registration, copies, memsets, memory info and pools. Each checks its
 * arguments as the real runtime does, calls fake-core.c and records a
 * failure as the thread's last error.
 */
#include "fake-driver.h"

#include <stdint.h>
#include <string.h>

/*
 * The allocation entry points call the driver's, as the real runtime does.
 * What the runtime checks itself: a NULL result pointer, a size of 0
 * (success and NULL, where the driver refuses it), a NULL free (success,
 * where the driver refuses it), and that a device exists.
 */
static cudaError_t checked(void **out, size_t size)
{
	cudaError_t err;

	if (!out)
		return cudaErrorInvalidValue;
	err = fake_require_device();
	if (err)
		return err;
	if (!size) {
		*out = NULL;
		return cudaErrorNotReady; /* done: nothing to allocate */
	}
	return cudaSuccess;
}

/* Runs a driver allocation after checked(); cudaErrorNotReady from it means
 * success with nothing to do. */
#define ALLOC_THROUGH_DRIVER(out, size, call)                               \
	do {                                                                \
		cudaError_t err_ = checked((void **)(out), (size));         \
		if (err_ == cudaErrorNotReady)                              \
			return cudaSuccess;                                 \
		if (err_)                                                   \
			return fake_return(err_);                           \
		return fake_return(fake_from_cu(call));                     \
	} while (0)

FAKECUDA_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	ALLOC_THROUGH_DRIVER(devPtr, size,
			     fake_driver()->mem_alloc((CUdeviceptr *)devPtr, size));
}

FAKECUDA_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
		return fake_return(cudaErrorInvalidValue);
	ALLOC_THROUGH_DRIVER(devPtr, size,
			     fake_driver()->mem_alloc_managed((CUdeviceptr *)devPtr, size,
							      flags));
}

FAKECUDA_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	ALLOC_THROUGH_DRIVER(ptr, size, fake_driver()->mem_alloc_host(ptr, size));
}

FAKECUDA_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	if (flags & ~(unsigned int)(cudaHostAllocPortable | cudaHostAllocMapped |
				    cudaHostAllocWriteCombined))
		return fake_return(cudaErrorInvalidValue);
	ALLOC_THROUGH_DRIVER(pHost, size, fake_driver()->mem_host_alloc(pHost, size, flags));
}

/* A pitched allocation of width x rows; the driver picks the pitch. */
static cudaError_t alloc_pitched(void **devPtr, size_t *pitch, size_t width, size_t rows)
{
	CUdeviceptr dptr;
	cudaError_t err = checked(devPtr, width && rows ? 1 : 0);

	if (err == cudaErrorNotReady) {
		/* No rows: nothing allocated, but the pitch a row would have. */
		*pitch = width <= SIZE_MAX - 511 ? (width + 511) & ~(size_t)511 : 0;
		return cudaSuccess;
	}
	if (err)
		return fake_return(err);
	err = fake_from_cu(fake_driver()->mem_alloc_pitch(&dptr, pitch, width, rows, 4));
	if (!err)
		*devPtr = (void *)(uintptr_t)dptr;
	return fake_return(err);
}

FAKECUDA_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width,
					    size_t height)
{
	if (!devPtr || !pitch)
		return fake_return(cudaErrorInvalidValue);
	return alloc_pitched(devPtr, pitch, width, height);
}

FAKECUDA_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr,
					 struct cudaExtent extent)
{
	size_t pitch = 0;
	cudaError_t err;
	void *ptr = NULL;

	if (!pitchedDevPtr)
		return fake_return(cudaErrorInvalidValue);
	if (extent.depth && extent.height > SIZE_MAX / extent.depth)
		return fake_return(cudaErrorMemoryAllocation);
	err = alloc_pitched(&ptr, &pitch, extent.width, extent.height * extent.depth);
	if (!err) {
		pitchedDevPtr->ptr = ptr;
		pitchedDevPtr->pitch = pitch;
		pitchedDevPtr->xsize = extent.width;
		pitchedDevPtr->ysize = extent.height;
	}
	return err;
}

FAKECUDA_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	ALLOC_THROUGH_DRIVER(devPtr, size,
			     fake_driver()->mem_alloc_async((CUdeviceptr *)devPtr, size,
							    (CUstream)hStream));
}

FAKECUDA_EXPORT cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size,
						 cudaStream_t hStream)
{
	ALLOC_THROUGH_DRIVER(devPtr, size,
			     fake_driver()->mem_alloc_async_ptsz((CUdeviceptr *)devPtr, size,
								 (CUstream)hStream));
}

FAKECUDA_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size,
						    cudaMemPool_t memPool, cudaStream_t stream)
{
	ALLOC_THROUGH_DRIVER(ptr, size,
			     fake_driver()->mem_alloc_from_pool_async(
				     (CUdeviceptr *)ptr, size, (CUmemoryPool)memPool,
				     (CUstream)stream));
}

FAKECUDA_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size,
							 cudaMemPool_t memPool,
							 cudaStream_t stream)
{
	ALLOC_THROUGH_DRIVER(ptr, size,
			     fake_driver()->mem_alloc_from_pool_async_ptsz(
				     (CUdeviceptr *)ptr, size, (CUmemoryPool)memPool,
				     (CUstream)stream));
}

FAKECUDA_EXPORT cudaError_t cudaFree(void *devPtr)
{
	if (!devPtr)
		return cudaSuccess;
	return fake_return(fake_from_cu(fake_driver()->mem_free((CUdeviceptr)(uintptr_t)devPtr)));
}

FAKECUDA_EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	int device;
	cudaError_t err = fake_stream_device(hStream, &device);

	if (err || !devPtr)
		return fake_return(err);
	return fake_return(fake_from_cu(fake_driver()->mem_free_async(
		(CUdeviceptr)(uintptr_t)devPtr, (CUstream)hStream)));
}

FAKECUDA_EXPORT cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	int device;
	cudaError_t err = fake_stream_device(hStream, &device);

	if (err || !devPtr)
		return fake_return(err);
	return fake_return(fake_from_cu(fake_driver()->mem_free_async_ptsz(
		(CUdeviceptr)(uintptr_t)devPtr, (CUstream)hStream)));
}

FAKECUDA_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
	if (!ptr)
		return cudaSuccess;
	return fake_return(fake_from_cu(fake_driver()->mem_free_host(ptr)));
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
