/* SPDX-License-Identifier: MIT */
/*
 * The CUDA runtime entry points leakwatch intercepts, and nothing else.
 *
 * Each one finds the real function (that of the runtime its caller is linked
 * against, see lw_real_for_caller()), calls it with the caller's arguments,
 * records what it did when it succeeded, and returns its result untouched.
 * Frees are recorded before the real call (see lw_free_begin()). All the
 * work lives in tracker.c.
 */
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "export.h"
#include "real.h"
#include "torchconf.h"
#include "tracker.h"

/* The per-thread-default-stream variants; cuda_runtime_api.h declares them
 * only when a program opts into per-thread streams. */
LW_EXPORT cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size,
					   cudaStream_t stream);
LW_EXPORT cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream);
LW_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size,
						   cudaMemPool_t pool,
						   cudaStream_t stream);

typedef cudaError_t (*alloc_fn)(void **ptr, size_t size);
typedef cudaError_t (*alloc_flags_fn)(void **ptr, size_t size,
				      unsigned int flags);
typedef cudaError_t (*alloc_async_fn)(void **ptr, size_t size,
				      cudaStream_t stream);
typedef cudaError_t (*alloc_pool_fn)(void **ptr, size_t size,
				     cudaMemPool_t pool, cudaStream_t stream);
typedef cudaError_t (*alloc_pitch_fn)(void **ptr, size_t *pitch, size_t width,
				      size_t height);
typedef cudaError_t (*alloc_3d_fn)(struct cudaPitchedPtr *ptr,
				   struct cudaExtent extent);
typedef cudaError_t (*free_fn)(void *ptr);
typedef cudaError_t (*host_register_fn)(void *ptr, size_t size,
					 unsigned int flags);
typedef cudaError_t (*free_async_fn)(void *ptr, cudaStream_t stream);

/* The real function of type T for fn, in a hook: its caller's runtime's. */
#define REAL(T, fn) ((T)lw_real_for_caller(fn, LW_CALLER()))

/* What a hook returns when no loaded runtime provides the function. */
#define NO_RUNTIME cudaErrorInitializationError

static inline uint64_t stream_id(cudaStream_t stream)
{
	return (uint64_t)(uintptr_t)stream;
}

static inline uint64_t product(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ---- device memory ---- */

LW_EXPORT cudaError_t cudaMalloc(void **ptr, size_t size)
{
	const void *caller = LW_CALLER();
	alloc_fn real = (alloc_fn)lw_real_for_caller(LW_FN_CUDA_MALLOC, caller);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, size);
	cudaError_t err = real(ptr, size);
	if (err == cudaSuccess && ptr && lw_torch_is_segment(caller))
		lw_record_segment(*ptr, size, -1);
	else if (err == cudaSuccess && ptr)
		lw_record_alloc(LW_API_CUDA_MALLOC, LW_MEM_DEVICE, *ptr, size, 0);
	else if (err != cudaSuccess)
		lw_record_alloc_failed(LW_API_CUDA_MALLOC, LW_MEM_DEVICE, size,
				       (int)err);
	lw_leave();
	return err;
}

static cudaError_t malloc_async(const void *caller, enum lw_fn fn, void **ptr,
				size_t size, cudaStream_t stream)
{
	alloc_async_fn real = (alloc_async_fn)lw_real_for_caller(fn, caller);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, size, stream);
	cudaError_t err = real(ptr, size, stream);
	lw_record_alloc_result(LW_API_CUDA_MALLOC_ASYNC, LW_MEM_DEVICE,
			       (int)err,
			       err == cudaSuccess && ptr ? *ptr : NULL, size,
			       stream_id(stream));
	lw_leave();
	return err;
}

LW_EXPORT cudaError_t cudaMallocAsync(void **ptr, size_t size,
				      cudaStream_t stream)
{
	return malloc_async(LW_CALLER(), LW_FN_CUDA_MALLOC_ASYNC, ptr, size,
			    stream);
}

LW_EXPORT cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size,
					   cudaStream_t stream)
{
	return malloc_async(LW_CALLER(), LW_FN_CUDA_MALLOC_ASYNC_PTSZ, ptr, size,
			    stream);
}

static cudaError_t malloc_from_pool(const void *caller, enum lw_fn fn,
				    void **ptr, size_t size, cudaMemPool_t pool,
				    cudaStream_t stream)
{
	alloc_pool_fn real = (alloc_pool_fn)lw_real_for_caller(fn, caller);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, size, pool, stream);
	cudaError_t err = real(ptr, size, pool, stream);
	lw_record_alloc_result(LW_API_CUDA_MALLOC_FROM_POOL_ASYNC,
			       LW_MEM_DEVICE, (int)err,
			       err == cudaSuccess && ptr ? *ptr : NULL, size,
			       stream_id(stream));
	lw_leave();
	return err;
}

LW_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size,
					      cudaMemPool_t pool,
					      cudaStream_t stream)
{
	return malloc_from_pool(LW_CALLER(), LW_FN_CUDA_MALLOC_FROM_POOL_ASYNC,
				ptr, size, pool, stream);
}

LW_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size,
						   cudaMemPool_t pool,
						   cudaStream_t stream)
{
	return malloc_from_pool(LW_CALLER(),
				LW_FN_CUDA_MALLOC_FROM_POOL_ASYNC_PTSZ, ptr, size,
				pool, stream);
}

LW_EXPORT cudaError_t cudaMallocManaged(void **ptr, size_t size,
					unsigned int flags)
{
	alloc_flags_fn real = REAL(alloc_flags_fn, LW_FN_CUDA_MALLOC_MANAGED);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, size, flags);
	cudaError_t err = real(ptr, size, flags);
	lw_record_alloc_result(LW_API_CUDA_MALLOC_MANAGED, LW_MEM_MANAGED,
			       (int)err,
			       err == cudaSuccess && ptr ? *ptr : NULL, size,
			       0);
	lw_leave();
	return err;
}

LW_EXPORT cudaError_t cudaMallocPitch(void **ptr, size_t *pitch, size_t width,
				      size_t height)
{
	alloc_pitch_fn real = REAL(alloc_pitch_fn, LW_FN_CUDA_MALLOC_PITCH);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, pitch, width, height);
	cudaError_t err = real(ptr, pitch, width, height);
	if (err == cudaSuccess && ptr && pitch)
		lw_record_alloc(LW_API_CUDA_MALLOC_PITCH, LW_MEM_DEVICE, *ptr,
				product(*pitch, height), 0);
	else if (err != cudaSuccess)
		lw_record_alloc_failed(LW_API_CUDA_MALLOC_PITCH, LW_MEM_DEVICE,
				       product(width, height), (int)err);
	lw_leave();
	return err;
}

LW_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *ptr,
				   struct cudaExtent extent)
{
	alloc_3d_fn real = REAL(alloc_3d_fn, LW_FN_CUDA_MALLOC_3D);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, extent);
	cudaError_t err = real(ptr, extent);
	if (err == cudaSuccess && ptr)
		lw_record_alloc(LW_API_CUDA_MALLOC_3D, LW_MEM_DEVICE, ptr->ptr,
				product(product(ptr->pitch, extent.height),
					extent.depth), 0);
	else if (err != cudaSuccess)
		lw_record_alloc_failed(LW_API_CUDA_MALLOC_3D, LW_MEM_DEVICE,
				       product(product(extent.width,
						       extent.height),
					       extent.depth),
				       (int)err);
	lw_leave();
	return err;
}

static cudaError_t tracked_free(const void *caller, enum lw_fn fn, void *ptr,
				cudaStream_t stream, int async)
{
	lw_fnptr real = lw_real_for_caller(fn, caller);
	struct lw_pending_free pending;

	if (!real)
		return NO_RUNTIME;
	if (!ptr || !lw_enter())
		return async ? ((free_async_fn)real)(ptr, stream)
			     : ((free_fn)real)(ptr);
	lw_free_begin(ptr, &pending);
	cudaError_t err = async ? ((free_async_fn)real)(ptr, stream)
				: ((free_fn)real)(ptr);
	lw_free_end(&pending, err == cudaSuccess);
	lw_leave();
	return err;
}

LW_EXPORT cudaError_t cudaFree(void *ptr)
{
	return tracked_free(LW_CALLER(), LW_FN_CUDA_FREE, ptr, 0, 0);
}

LW_EXPORT cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
	return tracked_free(LW_CALLER(), LW_FN_CUDA_FREE_ASYNC, ptr, stream, 1);
}

LW_EXPORT cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream)
{
	return tracked_free(LW_CALLER(), LW_FN_CUDA_FREE_ASYNC_PTSZ, ptr, stream, 1);
}

/* ---- pinned and registered host memory ---- */

LW_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	alloc_fn real = REAL(alloc_fn, LW_FN_CUDA_MALLOC_HOST);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, size);
	cudaError_t err = real(ptr, size);
	lw_record_alloc_result(LW_API_CUDA_MALLOC_HOST, LW_MEM_PINNED_HOST,
			       (int)err,
			       err == cudaSuccess && ptr ? *ptr : NULL, size,
			       0);
	lw_leave();
	return err;
}

LW_EXPORT cudaError_t cudaHostAlloc(void **ptr, size_t size,
				    unsigned int flags)
{
	alloc_flags_fn real = REAL(alloc_flags_fn, LW_FN_CUDA_HOST_ALLOC);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, size, flags);
	cudaError_t err = real(ptr, size, flags);
	lw_record_alloc_result(LW_API_CUDA_HOST_ALLOC, LW_MEM_PINNED_HOST,
			       (int)err,
			       err == cudaSuccess && ptr ? *ptr : NULL, size,
			       0);
	lw_leave();
	return err;
}

LW_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
	return tracked_free(LW_CALLER(), LW_FN_CUDA_FREE_HOST, ptr, 0, 0);
}

LW_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size,
				       unsigned int flags)
{
	host_register_fn real =
		REAL(host_register_fn, LW_FN_CUDA_HOST_REGISTER);
	if (!real)
		return NO_RUNTIME;
	if (!lw_enter())
		return real(ptr, size, flags);
	cudaError_t err = real(ptr, size, flags);
	if (err == cudaSuccess)
		lw_record_alloc(LW_API_CUDA_HOST_REGISTER,
				LW_MEM_HOST_REGISTERED, ptr, size, 0);
	else
		lw_record_alloc_failed(LW_API_CUDA_HOST_REGISTER,
				       LW_MEM_HOST_REGISTERED, size, (int)err);
	lw_leave();
	return err;
}

LW_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
	return tracked_free(LW_CALLER(), LW_FN_CUDA_HOST_UNREGISTER, ptr, 0, 0);
}
