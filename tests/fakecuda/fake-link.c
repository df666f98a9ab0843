/* SPDX-License-Identifier: MIT */
/*
 * The stand-in runtime's link to the stand-in driver, made as the real
 * runtime makes it: dlopen("libcuda.so.1"), dlsym() for
 * cuGetProcAddress_v2, and every other driver function through that, with
 * the runtime's CUDA version. The state functions of fake-core.h are
 * forwarded to the driver's private export table.
 */
#include "fake-driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct fake_driver_api api;

/* The stand-in runtime cannot work without its driver: that is a broken
 * build, not a condition to model. */
static void fail(const char *what)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "fakecuda: %s\n", what);

	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	abort();
}

static void resolve(const char *symbol, cuuint64_t flags, void *out)
{
	CUdriverProcAddressQueryResult status;
	void *fn = NULL;

	if (api.get_proc_address(symbol, &fn, CUDART_VERSION, flags, &status) != CUDA_SUCCESS ||
	    status != CU_GET_PROC_ADDRESS_SUCCESS || !fn)
		fail("the stand-in driver does not provide a function the runtime needs");
	memcpy(out, &fn, sizeof(fn));
}

static void load(void)
{
	static const CUuuid id = FAKE_EXPORT_TABLE_ID;
	CUresult (*get_export_table)(const void **table, const CUuuid *id);
	const void *table = NULL;
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	void *sym;

	if (!driver)
		fail("cannot load libcuda.so.1, the stand-in driver");
	sym = dlsym(driver, "cuGetProcAddress_v2");
	if (!sym)
		fail("libcuda.so.1 has no cuGetProcAddress_v2");
	memcpy(&api.get_proc_address, &sym, sizeof(sym));

	resolve("cuMemAlloc", 0, &api.mem_alloc);
	resolve("cuMemAllocPitch", 0, &api.mem_alloc_pitch);
	resolve("cuMemAllocManaged", 0, &api.mem_alloc_managed);
	resolve("cuMemAllocHost", 0, &api.mem_alloc_host);
	resolve("cuMemHostAlloc", 0, &api.mem_host_alloc);
	resolve("cuMemFree", 0, &api.mem_free);
	resolve("cuMemFreeHost", 0, &api.mem_free_host);
	resolve("cuMemAllocAsync", CU_GET_PROC_ADDRESS_LEGACY_STREAM, &api.mem_alloc_async);
	resolve("cuMemAllocAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
		&api.mem_alloc_async_ptsz);
	resolve("cuMemAllocFromPoolAsync", CU_GET_PROC_ADDRESS_LEGACY_STREAM,
		&api.mem_alloc_from_pool_async);
	resolve("cuMemAllocFromPoolAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
		&api.mem_alloc_from_pool_async_ptsz);
	resolve("cuMemFreeAsync", CU_GET_PROC_ADDRESS_LEGACY_STREAM, &api.mem_free_async);
	resolve("cuMemFreeAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
		&api.mem_free_async_ptsz);
	resolve("cuDeviceGetAttribute", 0, &api.device_get_attribute);
	resolve("cuGetExportTable", 0, &get_export_table);
	if (get_export_table(&table, &id) != CUDA_SUCCESS || !table ||
	    ((const struct fake_core_ops *)table)->size < sizeof(struct fake_core_ops))
		fail("libcuda.so.1 is not the stand-in driver this runtime was built with");
	api.core = table;
}

const struct fake_driver_api *fake_driver(void)
{
	pthread_once(&load_once, load);
	return &api;
}

cudaError_t fake_from_cu(CUresult result)
{
	switch (result) {
	case CUDA_SUCCESS: return cudaSuccess;
	case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
	case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
	case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
	case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
	case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
	case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
	default: return cudaErrorUnknown;
	}
}

/* ---- fake-core.h, answered by the driver ---- */

static const struct fake_core_ops *core(void)
{
	return fake_driver()->core;
}

/*
 * The last error is the runtime's own, per thread, as in the real one: two
 * runtimes in one process (a module linked to each) keep theirs apart.
 */
static _Thread_local cudaError_t last_error;

cudaError_t fake_return(cudaError_t err)
{
	if (err != cudaSuccess)
		last_error = err;
	return err;
}

cudaError_t fake_last_error(int clear)
{
	cudaError_t err = last_error;

	if (clear)
		last_error = cudaSuccess;
	return err;
}

int fake_device_count(void)
{
	return core()->device_count();
}

cudaError_t fake_require_device(void)
{
	return fake_device_count() > 0 ? cudaSuccess : cudaErrorNoDevice;
}

int fake_current_device(void)
{
	return core()->current_device();
}

void fake_set_current_device(int device)
{
	core()->set_current_device(device);
}

void fake_mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
	core()->mem_info(device, free_bytes, total_bytes);
}

cudaError_t fake_mem_register(void *ptr, size_t size)
{
	return core()->mem_register(ptr, size);
}

cudaError_t fake_mem_unregister(void *ptr)
{
	return core()->mem_unregister(ptr);
}

int fake_mem_kind(const void *ptr)
{
	return core()->mem_kind(ptr);
}

size_t fake_mem_pool_used(cudaMemPool_t pool)
{
	return core()->mem_pool_used(pool);
}

enum fake_place fake_classify(const void *ptr, size_t count)
{
	return core()->classify(ptr, count);
}

cudaError_t fake_handle_create(int kind, int device, void **out)
{
	return core()->handle_create(kind, device, out);
}

cudaError_t fake_handle_destroy(int kind, void *handle)
{
	return core()->handle_destroy(kind, handle);
}

cudaError_t fake_stream_device(cudaStream_t stream, int *device)
{
	return core()->stream_device(stream, device);
}

cudaError_t fake_pool_device(cudaMemPool_t pool, int *device)
{
	return core()->pool_device(pool, device);
}

cudaMemPool_t fake_default_pool(int device)
{
	return core()->default_pool(device);
}

void fake_reset_device(int device)
{
	core()->reset_device(device);
}
