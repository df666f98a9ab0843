/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver entry points leakwatch intercepts, and the resolvers
 * through which programs reach them, and nothing else.
 *
 * Allocation hooks do what the runtime hooks in hooks.c do. A runtime hook
 * is the outermost API: while it runs, the runtime's own driver calls find
 * lw_enter() false and are not recorded, so a cudaMalloc is counted once,
 * with its caller's stack.
 *
 * Virtual memory is counted as physical memory: cuMemCreate records the
 * handle's allocation (device or host memory, by the property's location)
 * and cuMemRelease frees it. Mapping it (cuMemMap, as often as one likes)
 * adds no memory, so mappings are not counted.
 *
 * Resolvers (cuGetProcAddress, cudaGetDriverEntryPoint*) call the real one
 * with the caller's exact arguments; when it returns a function leakwatch
 * hooks, the hook is handed back instead (see lw_resolve_swap()).
 */
#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "export.h"
#include "real.h"
#include "torchconf.h"
#include "tracker.h"

/* cuda.h maps the first cuGetProcAddress to the second; both are exported. */
#undef cuGetProcAddress

LW_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
				    int cudaVersion, cuuint64_t flags);
LW_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
					CUstream hStream);
LW_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
						size_t bytesize,
						CUmemoryPool pool,
						CUstream hStream);
LW_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
LW_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(
	const char *symbol, void **funcPtr, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus);
LW_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
	const char *symbol, void **funcPtr, unsigned int cudaVersion,
	unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus);

typedef CUresult (*cu_alloc_fn)(CUdeviceptr *dptr, size_t size);
typedef CUresult (*cu_alloc_flags_fn)(CUdeviceptr *dptr, size_t size,
				      unsigned int flags);
typedef CUresult (*cu_alloc_pitch_fn)(CUdeviceptr *dptr, size_t *pitch,
				      size_t width, size_t height,
				      unsigned int element_size);
typedef CUresult (*cu_alloc_host_fn)(void **pp, size_t size);
typedef CUresult (*cu_host_alloc_fn)(void **pp, size_t size,
				     unsigned int flags);
typedef CUresult (*cu_alloc_async_fn)(CUdeviceptr *dptr, size_t size,
				      CUstream stream);
typedef CUresult (*cu_alloc_pool_fn)(CUdeviceptr *dptr, size_t size,
				     CUmemoryPool pool, CUstream stream);
typedef CUresult (*cu_free_fn)(CUdeviceptr dptr);
typedef CUresult (*cu_free_host_fn)(void *p);
typedef CUresult (*cu_free_async_fn)(CUdeviceptr dptr, CUstream stream);
typedef CUresult (*cu_create_fn)(CUmemGenericAllocationHandle *handle,
				 size_t size, const CUmemAllocationProp *prop,
				 unsigned long long flags);
typedef CUresult (*cu_release_fn)(CUmemGenericAllocationHandle handle);
typedef CUresult (*cu_get_proc_fn)(const char *symbol, void **pfn,
				   int version, cuuint64_t flags);
typedef CUresult (*cu_get_proc_v2_fn)(const char *symbol, void **pfn,
				      int version, cuuint64_t flags,
				      CUdriverProcAddressQueryResult *status);
typedef cudaError_t (*entry_point_fn)(
	const char *symbol, void **pfn, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *status);
typedef cudaError_t (*entry_point_by_version_fn)(
	const char *symbol, void **pfn, unsigned int version,
	unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *status);

/* What a hook returns when no loaded driver provides the function. */
#define NO_DRIVER CUDA_ERROR_NOT_INITIALIZED

static inline void *as_ptr(CUdeviceptr dptr)
{
	return (void *)(uintptr_t)dptr;
}

static inline uint64_t stream_id(CUstream stream)
{
	return (uint64_t)(uintptr_t)stream;
}

/* ---- allocations ---- */

LW_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	cu_alloc_fn real = (cu_alloc_fn)lw_real(LW_FN_CU_MEM_ALLOC_V2);
	if (!real)
		return NO_DRIVER;
	if (!lw_enter())
		return real(dptr, bytesize);
	CUresult res = real(dptr, bytesize);
	lw_record_alloc_result(LW_API_CU_MEM_ALLOC, LW_MEM_DEVICE, (int)res,
			       res == CUDA_SUCCESS && dptr ? as_ptr(*dptr) : NULL,
			       bytesize, 0);
	lw_leave();
	return res;
}

LW_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
				      size_t WidthInBytes, size_t Height,
				      unsigned int ElementSizeBytes)
{
	cu_alloc_pitch_fn real =
		(cu_alloc_pitch_fn)lw_real(LW_FN_CU_MEM_ALLOC_PITCH_V2);
	if (!real)
		return NO_DRIVER;
	if (!lw_enter())
		return real(dptr, pPitch, WidthInBytes, Height,
			    ElementSizeBytes);
	CUresult res = real(dptr, pPitch, WidthInBytes, Height,
			    ElementSizeBytes);
	uint64_t size;
	if (res == CUDA_SUCCESS && dptr && pPitch)
		lw_record_alloc(LW_API_CU_MEM_ALLOC_PITCH, LW_MEM_DEVICE,
				as_ptr(*dptr),
				__builtin_mul_overflow(*pPitch, Height, &size)
					? UINT64_MAX : size, 0);
	else if (res != CUDA_SUCCESS)
		lw_record_alloc_failed(LW_API_CU_MEM_ALLOC_PITCH, LW_MEM_DEVICE,
				       (uint64_t)WidthInBytes * Height,
				       (int)res);
	lw_leave();
	return res;
}

LW_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
				     unsigned int flags)
{
	cu_alloc_flags_fn real =
		(cu_alloc_flags_fn)lw_real(LW_FN_CU_MEM_ALLOC_MANAGED);
	if (!real)
		return NO_DRIVER;
	if (!lw_enter())
		return real(dptr, bytesize, flags);
	CUresult res = real(dptr, bytesize, flags);
	lw_record_alloc_result(LW_API_CU_MEM_ALLOC_MANAGED, LW_MEM_MANAGED,
			       (int)res,
			       res == CUDA_SUCCESS && dptr ? as_ptr(*dptr) : NULL,
			       bytesize, 0);
	lw_leave();
	return res;
}

LW_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	cu_alloc_host_fn real =
		(cu_alloc_host_fn)lw_real(LW_FN_CU_MEM_ALLOC_HOST_V2);
	if (!real)
		return NO_DRIVER;
	if (!lw_enter())
		return real(pp, bytesize);
	CUresult res = real(pp, bytesize);
	lw_record_alloc_result(LW_API_CU_MEM_ALLOC_HOST, LW_MEM_PINNED_HOST,
			       (int)res, res == CUDA_SUCCESS && pp ? *pp : NULL,
			       bytesize, 0);
	lw_leave();
	return res;
}

LW_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize,
				  unsigned int Flags)
{
	cu_host_alloc_fn real =
		(cu_host_alloc_fn)lw_real(LW_FN_CU_MEM_HOST_ALLOC);
	if (!real)
		return NO_DRIVER;
	if (!lw_enter())
		return real(pp, bytesize, Flags);
	CUresult res = real(pp, bytesize, Flags);
	lw_record_alloc_result(LW_API_CU_MEM_HOST_ALLOC, LW_MEM_PINNED_HOST,
			       (int)res, res == CUDA_SUCCESS && pp ? *pp : NULL,
			       bytesize, 0);
	lw_leave();
	return res;
}

static CUresult alloc_async(enum lw_fn fn, CUdeviceptr *dptr, size_t size,
			    CUstream stream)
{
	cu_alloc_async_fn real = (cu_alloc_async_fn)lw_real(fn);
	if (!real)
		return NO_DRIVER;
	if (!lw_enter())
		return real(dptr, size, stream);
	CUresult res = real(dptr, size, stream);
	lw_record_alloc_result(LW_API_CU_MEM_ALLOC_ASYNC, LW_MEM_DEVICE,
			       (int)res,
			       res == CUDA_SUCCESS && dptr ? as_ptr(*dptr) : NULL,
			       size, stream_id(stream));
	lw_leave();
	return res;
}

LW_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
				   CUstream hStream)
{
	return alloc_async(LW_FN_CU_MEM_ALLOC_ASYNC, dptr, bytesize, hStream);
}

LW_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
					CUstream hStream)
{
	return alloc_async(LW_FN_CU_MEM_ALLOC_ASYNC_PTSZ, dptr, bytesize,
			   hStream);
}

static CUresult alloc_from_pool(enum lw_fn fn, CUdeviceptr *dptr, size_t size,
				CUmemoryPool pool, CUstream stream)
{
	cu_alloc_pool_fn real = (cu_alloc_pool_fn)lw_real(fn);
	if (!real)
		return NO_DRIVER;
	if (!lw_enter())
		return real(dptr, size, pool, stream);
	CUresult res = real(dptr, size, pool, stream);
	lw_record_alloc_result(LW_API_CU_MEM_ALLOC_FROM_POOL_ASYNC,
			       LW_MEM_DEVICE, (int)res,
			       res == CUDA_SUCCESS && dptr ? as_ptr(*dptr) : NULL,
			       size, stream_id(stream));
	lw_leave();
	return res;
}

LW_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
					   CUmemoryPool pool, CUstream hStream)
{
	return alloc_from_pool(LW_FN_CU_MEM_ALLOC_FROM_POOL_ASYNC, dptr,
			       bytesize, pool, hStream);
}

LW_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
						size_t bytesize,
						CUmemoryPool pool,
						CUstream hStream)
{
	return alloc_from_pool(LW_FN_CU_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ, dptr,
			       bytesize, pool, hStream);
}

LW_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle,
			       size_t size, const CUmemAllocationProp *prop,
			       unsigned long long flags)
{
	cu_create_fn real = (cu_create_fn)lw_real(LW_FN_CU_MEM_CREATE);
	if (!real)
		return NO_DRIVER;
	if (!lw_enter())
		return real(handle, size, prop, flags);
	CUresult res = real(handle, size, prop, flags);
	if (res == CUDA_SUCCESS && handle && prop &&
	    prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
	    lw_torch_is_segment(LW_CALLER()))
		lw_record_segment((const void *)(uintptr_t)*handle, size,
				  prop->location.id);
	else if (res == CUDA_SUCCESS && handle && prop)
		lw_record_alloc(LW_API_CU_MEM_CREATE,
				prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
					? LW_MEM_DEVICE : LW_MEM_PINNED_HOST,
				(const void *)(uintptr_t)*handle, size, 0);
	else if (res != CUDA_SUCCESS)
		lw_record_alloc_failed(LW_API_CU_MEM_CREATE,
				       !prop || prop->location.type ==
							CU_MEM_LOCATION_TYPE_DEVICE
					       ? LW_MEM_DEVICE
					       : LW_MEM_PINNED_HOST,
				       size, (int)res);
	lw_leave();
	return res;
}

/* ---- frees ---- */

enum free_shape { FREE_DEVICE, FREE_HOST, FREE_ASYNC, FREE_HANDLE };

static CUresult call_free(lw_fnptr real, enum free_shape shape, uint64_t what,
			  CUstream stream)
{
	switch (shape) {
	case FREE_DEVICE:
		return ((cu_free_fn)real)((CUdeviceptr)what);
	case FREE_HOST:
		return ((cu_free_host_fn)real)((void *)(uintptr_t)what);
	case FREE_ASYNC:
		return ((cu_free_async_fn)real)((CUdeviceptr)what, stream);
	case FREE_HANDLE:
	default:
		return ((cu_release_fn)real)(
			(CUmemGenericAllocationHandle)what);
	}
}

static CUresult tracked_free(enum lw_fn fn, enum free_shape shape,
			     uint64_t what, CUstream stream)
{
	lw_fnptr real = lw_real(fn);
	struct lw_pending_free pending;

	if (!real)
		return NO_DRIVER;
	if (!what || !lw_enter())
		return call_free(real, shape, what, stream);
	lw_free_begin((const void *)(uintptr_t)what, &pending);
	CUresult res = call_free(real, shape, what, stream);
	lw_free_end(&pending, res == CUDA_SUCCESS);
	lw_leave();
	return res;
}

LW_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	return tracked_free(LW_FN_CU_MEM_FREE_V2, FREE_DEVICE, dptr, 0);
}

LW_EXPORT CUresult cuMemFreeHost(void *p)
{
	return tracked_free(LW_FN_CU_MEM_FREE_HOST, FREE_HOST,
			    (uint64_t)(uintptr_t)p, 0);
}

LW_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return tracked_free(LW_FN_CU_MEM_FREE_ASYNC, FREE_ASYNC, dptr, hStream);
}

LW_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return tracked_free(LW_FN_CU_MEM_FREE_ASYNC_PTSZ, FREE_ASYNC, dptr,
			    hStream);
}

LW_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	return tracked_free(LW_FN_CU_MEM_RELEASE, FREE_HANDLE, handle, 0);
}

/* ---- resolvers ---- */

LW_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
				    int cudaVersion, cuuint64_t flags)
{
	cu_get_proc_fn real = (cu_get_proc_fn)lw_real(LW_FN_CU_GET_PROC_ADDRESS);
	if (!real)
		return NO_DRIVER;
	CUresult res = real(symbol, pfn, cudaVersion, flags);
	if (res == CUDA_SUCCESS && pfn)
		*pfn = lw_resolve_swap(*pfn);
	return res;
}

LW_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
				       int cudaVersion, cuuint64_t flags,
				       CUdriverProcAddressQueryResult *symbolStatus)
{
	cu_get_proc_v2_fn real =
		(cu_get_proc_v2_fn)lw_real(LW_FN_CU_GET_PROC_ADDRESS_V2);
	if (!real)
		return NO_DRIVER;
	CUresult res = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (res == CUDA_SUCCESS && pfn)
		*pfn = lw_resolve_swap(*pfn);
	return res;
}

static cudaError_t entry_point(const void *caller, enum lw_fn fn,
			       const char *symbol, void **funcPtr,
			       unsigned long long flags,
			       enum cudaDriverEntryPointQueryResult *status)
{
	entry_point_fn real = (entry_point_fn)lw_real_for_caller(fn, caller);
	if (!real)
		return cudaErrorInitializationError;
	cudaError_t err = real(symbol, funcPtr, flags, status);
	if (err == cudaSuccess && funcPtr && *funcPtr)
		*funcPtr = lw_resolve_swap(*funcPtr);
	return err;
}

LW_EXPORT cudaError_t cudaGetDriverEntryPoint(
	const char *symbol, void **funcPtr, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(LW_CALLER(), LW_FN_CUDA_GET_DRIVER_ENTRY_POINT, symbol,
			   funcPtr, flags, driverStatus);
}

LW_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(
	const char *symbol, void **funcPtr, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(LW_CALLER(), LW_FN_CUDA_GET_DRIVER_ENTRY_POINT_PTSZ,
			   symbol, funcPtr, flags, driverStatus);
}

static cudaError_t entry_point_by_version(
	const void *caller, enum lw_fn fn, const char *symbol, void **funcPtr,
	unsigned int version, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *status)
{
	entry_point_by_version_fn real =
		(entry_point_by_version_fn)lw_real_for_caller(fn, caller);
	if (!real)
		return cudaErrorInitializationError;
	cudaError_t err = real(symbol, funcPtr, version, flags, status);
	if (err == cudaSuccess && funcPtr && *funcPtr)
		*funcPtr = lw_resolve_swap(*funcPtr);
	return err;
}

LW_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
	const char *symbol, void **funcPtr, unsigned int cudaVersion,
	unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point_by_version(LW_CALLER(),
				      LW_FN_CUDA_GET_DRIVER_ENTRY_POINT_BY_VERSION,
				      symbol, funcPtr, cudaVersion, flags,
				      driverStatus);
}

LW_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
	const char *symbol, void **funcPtr, unsigned int cudaVersion,
	unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point_by_version(
		LW_CALLER(), LW_FN_CUDA_GET_DRIVER_ENTRY_POINT_BY_VERSION_PTSZ,
		symbol,
		funcPtr, cudaVersion, flags, driverStatus);
}

/* The hooks a resolver may hand out in place of libcuda's functions: each
 * driver hook of hooks.def, the function of the symbol's name. */
const lw_fnptr lw_driver_hooks[LW_FN_COUNT] = {
#define LW_RUNTIME_HOOK(id, symbol)
#define LW_DRIVER_HOOK(id, symbol) [LW_FN_##id] = (lw_fnptr)symbol,
#include "hooks.def"
#undef LW_RUNTIME_HOOK
#undef LW_DRIVER_HOOK
};
