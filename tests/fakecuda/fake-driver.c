/* SPDX-License-Identifier: MIT */
/*
 * The stand-in driver, libcuda.so.1: the driver's allocation entry points,
 * virtual-memory management, and cuGetProcAddress, the resolver through
 * which the runtime (this one and the real one) finds every driver
 * function. It owns the state (fake-core.c); the stand-in runtime reaches
 * the rest of it through cuGetExportTable.
 *
 * Exported names are the ones the real libcuda.so.1 exports: cuda.h maps
 * cuMemAlloc to cuMemAlloc_v2 and so on, and cuGetProcAddress maps a base
 * name and a CUDA version to one of them.
 */
#include "fake-driver.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* The first cuGetProcAddress, still exported beside cuGetProcAddress_v2. */
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags);

/* cuMemAllocPitch rounds rows up to this. */
#define PITCH_ALIGNMENT 512

#define DEVICE_KINDS (FAKE_KIND_BIT(FAKE_DEVICE) | FAKE_KIND_BIT(FAKE_MANAGED))

static CUresult to_cu(cudaError_t err)
{
	switch (err) {
	case cudaSuccess: return CUDA_SUCCESS;
	case cudaErrorInvalidValue: return CUDA_ERROR_INVALID_VALUE;
	case cudaErrorMemoryAllocation: return CUDA_ERROR_OUT_OF_MEMORY;
	case cudaErrorNoDevice: return CUDA_ERROR_NO_DEVICE;
	case cudaErrorInvalidDevice: return CUDA_ERROR_INVALID_DEVICE;
	case cudaErrorInvalidResourceHandle: return CUDA_ERROR_INVALID_HANDLE;
	case cudaErrorNotSupported: return CUDA_ERROR_NOT_SUPPORTED;
	default: return CUDA_ERROR_UNKNOWN;
	}
}

static CUresult device_alloc(int kind, int device, size_t size, void **out)
{
	cudaError_t err;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	/* The real driver refuses empty allocations. */
	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	err = fake_require_device();
	if (!err)
		err = fake_mem_alloc(kind, device, size, out);
	return to_cu(err);
}

FAKECUDA_EXPORT CUresult cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	return to_cu(fake_require_device());
}

FAKECUDA_EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = CUDA_VERSION;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	return device_alloc(FAKE_DEVICE, fake_current_device(), bytesize, (void **)dptr);
}

FAKECUDA_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
					    size_t WidthInBytes, size_t Height,
					    unsigned int ElementSizeBytes)
{
	size_t pitch;

	if (!dptr || !pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	if (WidthInBytes > SIZE_MAX - (PITCH_ALIGNMENT - 1))
		return CUDA_ERROR_OUT_OF_MEMORY;
	pitch = (WidthInBytes + PITCH_ALIGNMENT - 1) & ~(size_t)(PITCH_ALIGNMENT - 1);
	if (pitch > SIZE_MAX / Height)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult result = device_alloc(FAKE_DEVICE, fake_current_device(), pitch * Height,
				       (void **)dptr);
	if (result == CUDA_SUCCESS)
		*pPitch = pitch;
	return result;
}

FAKECUDA_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
					   unsigned int flags)
{
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	return device_alloc(FAKE_MANAGED, fake_current_device(), bytesize, (void **)dptr);
}

FAKECUDA_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return device_alloc(FAKE_PINNED, -1, bytesize, pp);
}

FAKECUDA_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	if (Flags & ~(unsigned int)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
				    CU_MEMHOSTALLOC_WRITECOMBINED))
		return CUDA_ERROR_INVALID_VALUE;
	return device_alloc(FAKE_PINNED, -1, bytesize, pp);
}

/* The real driver answers a free of 0 or of an unknown address alike. */
static CUresult free_kinds(const void *ptr, unsigned int kinds)
{
	if (!ptr)
		return CUDA_ERROR_INVALID_VALUE;
	return to_cu(fake_mem_free((void *)ptr, kinds));
}

FAKECUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	return free_kinds((const void *)(uintptr_t)dptr, DEVICE_KINDS);
}

FAKECUDA_EXPORT CUresult cuMemFreeHost(void *p)
{
	return free_kinds(p, FAKE_KIND_BIT(FAKE_PINNED));
}

/* A stream-ordered allocation, counted in its pool's used bytes. */
static CUresult pooled_alloc(int device, size_t bytesize, cudaMemPool_t pool,
			     CUdeviceptr *dptr)
{
	CUresult result = device_alloc(FAKE_DEVICE, device, bytesize, (void **)dptr);

	if (result == CUDA_SUCCESS)
		fake_mem_set_pool((void *)(uintptr_t)*dptr, pool);
	return result;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
	int device;
	cudaError_t err = fake_stream_device((cudaStream_t)stream, &device);

	if (err)
		return to_cu(err);
	return pooled_alloc(device, bytesize, fake_default_pool(device), dptr);
}

FAKECUDA_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, hStream);
}

FAKECUDA_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
					      CUstream hStream)
{
	return alloc_async(dptr, bytesize, hStream);
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				CUstream stream)
{
	int device, stream_device;
	cudaError_t err = fake_pool_device((cudaMemPool_t)pool, &device);

	if (!err)
		err = fake_stream_device((cudaStream_t)stream, &stream_device);
	if (err)
		return to_cu(err);
	return pooled_alloc(device, bytesize, (cudaMemPool_t)pool, dptr);
}

FAKECUDA_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
						 CUmemoryPool pool, CUstream hStream)
{
	return alloc_from_pool(dptr, bytesize, pool, hStream);
}

FAKECUDA_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
						      CUmemoryPool pool, CUstream hStream)
{
	return alloc_from_pool(dptr, bytesize, pool, hStream);
}

static CUresult free_async(CUdeviceptr dptr, CUstream stream)
{
	int device;
	cudaError_t err = fake_stream_device((cudaStream_t)stream, &device);

	if (err)
		return to_cu(err);
	return free_kinds((const void *)(uintptr_t)dptr, DEVICE_KINDS);
}

FAKECUDA_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream);
}

FAKECUDA_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream);
}

FAKECUDA_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	if (Flags & ~(unsigned int)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
				    CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY))
		return CUDA_ERROR_INVALID_VALUE;
	cudaError_t err = fake_mem_register(p, bytesize);
	return err == cudaErrorHostMemoryAlreadyRegistered ?
		       CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : to_cu(err);
}

/*
 * Virtual memory. Physical allocations are host memory charged to their
 * device; a reserved range is anonymous memory. Mappings are checked, not
 * backed: nothing here reads memory through a mapping.
 */
FAKECUDA_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
					     CUdeviceptr addr, unsigned long long flags)
{
	void *range;

	(void)alignment;
	(void)addr;
	if (!ptr || !size || flags)
		return CUDA_ERROR_INVALID_VALUE;
	range = mmap(NULL, size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (range == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Copies and memsets into what is mapped there reach the range itself. */
	if (fake_mem_reserve(range, size, fake_current_device()) != cudaSuccess) {
		munmap(range, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*ptr = (CUdeviceptr)(uintptr_t)range;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	if (!ptr || !size || fake_mem_unreserve((void *)(uintptr_t)ptr) != cudaSuccess)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)(uintptr_t)ptr, size);
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize,
					      CUdeviceptr dptr)
{
	void *base;

	if (fake_mem_range((const void *)(uintptr_t)dptr, &base, psize) != cudaSuccess)
		return CUDA_ERROR_NOT_FOUND;
	if (pbase)
		*pbase = (CUdeviceptr)(uintptr_t)base;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
				     const CUmemAllocationProp *prop, unsigned long long flags)
{
	int device;
	void *mem;

	if (!handle || !prop || flags || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
		device = prop->location.id;
		if (device < 0 || device >= fake_device_count())
			return CUDA_ERROR_INVALID_DEVICE;
	} else if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST) {
		device = -1;
	} else {
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	CUresult result = device_alloc(FAKE_PHYSICAL, device, size, &mem);
	if (result == CUDA_SUCCESS)
		*handle = (CUmemGenericAllocationHandle)(uintptr_t)mem;
	return result;
}

FAKECUDA_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(
	CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	if (fake_mem_kind((const void *)(uintptr_t)handle) != FAKE_PHYSICAL)
		return CUDA_ERROR_INVALID_HANDLE;
	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = fake_current_device();
	return CUDA_SUCCESS;
}

/*
 * The handle of the physical allocation mapped at addr. Mappings are not
 * recorded, so only a handle's own address answers; anything else is
 * reported as not mapped.
 */
FAKECUDA_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
						     void *addr)
{
	if (!handle || !addr)
		return CUDA_ERROR_INVALID_VALUE;
	if (fake_mem_kind(addr) != FAKE_PHYSICAL)
		return CUDA_ERROR_INVALID_VALUE;
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)addr;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	return free_kinds((const void *)(uintptr_t)handle, FAKE_KIND_BIT(FAKE_PHYSICAL));
}

FAKECUDA_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
				  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	(void)offset;
	if (!ptr || !size || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (fake_mem_kind((const void *)(uintptr_t)handle) != FAKE_PHYSICAL)
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	return ptr && size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
					const CUmemAccessDesc *desc, size_t count)
{
	return ptr && size && desc && count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- the runtime's private table ---- */

static const struct fake_core_ops core_ops = {
	.size = sizeof(struct fake_core_ops),
	.set_last_error = fake_return,
	.last_error = fake_last_error,
	.device_count = fake_device_count,
	.current_device = fake_current_device,
	.set_current_device = fake_set_current_device,
	.mem_info = fake_mem_info,
	.mem_register = fake_mem_register,
	.mem_unregister = fake_mem_unregister,
	.classify = fake_classify,
	.handle_create = fake_handle_create,
	.handle_destroy = fake_handle_destroy,
	.stream_device = fake_stream_device,
	.pool_device = fake_pool_device,
	.default_pool = fake_default_pool,
	.reset_device = fake_reset_device,
	.mem_kind = fake_mem_kind,
	.mem_pool_used = fake_mem_pool_used,
};

FAKECUDA_EXPORT CUresult cuGetExportTable(const void **ppExportTable,
					  const CUuuid *pExportTableId)
{
	static const CUuuid id = FAKE_EXPORT_TABLE_ID;

	if (!ppExportTable || !pExportTableId)
		return CUDA_ERROR_INVALID_VALUE;
	if (memcmp(pExportTableId->bytes, id.bytes, sizeof(id.bytes)) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	*ppExportTable = &core_ops;
	return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ---- */

typedef void (*fake_fn)(void);

/*
 * One ABI of a driver function: from which CUDA version a base name means
 * it, and its per-thread-default-stream twin if it has one. The versions
 * are those of the PFN_* typedefs in cudaTypedefs.h.
 */
struct proc {
	const char *name;
	int version;
	fake_fn fn;
	fake_fn ptsz;
};

#define PROC(name, version, fn) { name, version, (fake_fn)fn, NULL }
#define PROC_PTSZ(name, version, fn) \
	{ name, version, (fake_fn)fn, (fake_fn)fn##_ptsz }

/* Newest version of each name last. */
static const struct proc procs[] = {
	PROC("cuInit", 2000, cuInit),
	PROC("cuDriverGetVersion", 2020, cuDriverGetVersion),
	PROC("cuGetExportTable", 3000, cuGetExportTable),
	PROC("cuGetProcAddress", 11030, cuGetProcAddress),
	PROC("cuGetProcAddress", 12000, cuGetProcAddress_v2),
	PROC("cuMemAlloc", 3020, cuMemAlloc_v2),
	PROC("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
	PROC("cuMemAllocManaged", 6000, cuMemAllocManaged),
	PROC("cuMemAllocHost", 3020, cuMemAllocHost_v2),
	PROC("cuMemHostAlloc", 2020, cuMemHostAlloc),
	PROC("cuMemFree", 3020, cuMemFree_v2),
	PROC("cuMemFreeHost", 2000, cuMemFreeHost),
	PROC("cuMemHostRegister", 6050, cuMemHostRegister_v2),
	PROC_PTSZ("cuMemAllocAsync", 11020, cuMemAllocAsync),
	PROC_PTSZ("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
	PROC_PTSZ("cuMemFreeAsync", 11020, cuMemFreeAsync),
	PROC("cuMemAddressReserve", 10020, cuMemAddressReserve),
	PROC("cuMemAddressFree", 10020, cuMemAddressFree),
	PROC("cuMemCreate", 10020, cuMemCreate),
	PROC("cuMemRelease", 10020, cuMemRelease),
	PROC("cuMemMap", 10020, cuMemMap),
	PROC("cuMemUnmap", 10020, cuMemUnmap),
	PROC("cuMemSetAccess", 10020, cuMemSetAccess),
	PROC("cuMemGetAddressRange", 3020, cuMemGetAddressRange),
	PROC("cuMemGetAllocationPropertiesFromHandle", 10020,
	     cuMemGetAllocationPropertiesFromHandle),
	PROC("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle),
	/* fake-context.c */
	PROC("cuDeviceGet", 2000, cuDeviceGet),
	PROC("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
	PROC("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
	PROC("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
	PROC("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
	PROC("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
	PROC("cuGetErrorString", 6000, cuGetErrorString),
	PROC("cuModuleLoad", 2000, cuModuleLoad),
	PROC("cuModuleLoadData", 2000, cuModuleLoadData),
	PROC("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
	PROC("cuModuleUnload", 2000, cuModuleUnload),
	PROC("cuModuleGetFunction", 2000, cuModuleGetFunction),
	PROC("cuLaunchKernel", 4000, cuLaunchKernel),
	PROC("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel),
	PROC("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
	PROC("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
	PROC("cuFuncSetCacheConfig", 3000, cuFuncSetCacheConfig),
	PROC("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
	     cuOccupancyMaxActiveBlocksPerMultiprocessor),
	PROC("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
	PROC("cuMemExportToShareableHandle", 10020, cuMemExportToShareableHandle),
	PROC("cuMemImportFromShareableHandle", 10020, cuMemImportFromShareableHandle),
	PROC("cuMemsetD32Async", 3020, cuMemsetD32Async),
	PROC("cuStreamWriteValue32", 11070, cuStreamWriteValue32),
};

static CUresult get_proc_address_v2(const char *symbol, void **pfn, int cudaVersion,
				    cuuint64_t flags,
				    CUdriverProcAddressQueryResult *symbolStatus)
{
	const struct proc *found = NULL;
	int known = 0;

	if (!symbol || !pfn ||
	    (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
				    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(procs[i].name, symbol) != 0)
			continue;
		known = 1;
		if (procs[i].version <= cudaVersion)
			found = &procs[i];
	}
	*pfn = NULL;
	if (symbolStatus)
		*symbolStatus = found ? CU_GET_PROC_ADDRESS_SUCCESS :
			known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
				CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!found)
		return CUDA_ERROR_NOT_FOUND;
	*(fake_fn *)pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && found->ptsz
				  ? found->ptsz : found->fn;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
					     cuuint64_t flags,
					     CUdriverProcAddressQueryResult *symbolStatus)
{
	return get_proc_address_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
}

FAKECUDA_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
					  cuuint64_t flags)
{
	return get_proc_address_v2(symbol, pfn, cudaVersion, flags, NULL);
}
