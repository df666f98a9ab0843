/* SPDX-License-Identifier: MIT */
/*
 * What the stand-in runtime and the stand-in driver share. As the real
 * runtime does, libcudart.so.13 dlopens libcuda.so.1, takes
 * cuGetProcAddress_v2 from it with dlsym and resolves every driver function
 * it calls through that. Allocations go through the driver's public entry
 * points (cuMemAlloc_v2, cuMemAllocAsync, ...), so a tool that hooks them
 * sees the runtime's own calls; the rest of the state (the current device,
 * the last error, streams, pools, host registrations) is reached through a
 * private export table, as the real runtime reaches the driver's internals
 * with cuGetExportTable.
 */
#ifndef FAKE_DRIVER_H
#define FAKE_DRIVER_H

#include <cuda.h>

#include "fake-core.h"

/*
 * An H100's figures where a program sizes its work by them: the driver's
 * attributes and the runtime's device properties give the same.
 */
enum {
	SM_COUNT = 132,
	SHARED_PER_BLOCK = 48 << 10,
	SHARED_PER_BLOCK_OPTIN = 227 << 10,
	SHARED_PER_SM = 228 << 10,
	L2_BYTES = 50 << 20,
	REGS = 64 << 10,
	GRANULARITY = 2 << 20,
};

/* The id cuGetExportTable answers to with struct fake_core_ops. */
#define FAKE_EXPORT_TABLE_ID \
	{ { 'l', 'e', 'a', 'k', 'w', 'a', 't', 'c', 'h', '-', 'f', 'a', 'k', 'e', '0', '1' } }

struct fake_core_ops {
	size_t size; /* sizeof(struct fake_core_ops) */
	cudaError_t (*set_last_error)(cudaError_t err);
	cudaError_t (*last_error)(int clear);
	int (*device_count)(void);
	int (*current_device)(void);
	void (*set_current_device)(int device);
	void (*mem_info)(int device, size_t *free_bytes, size_t *total_bytes);
	cudaError_t (*mem_register)(void *ptr, size_t size);
	cudaError_t (*mem_unregister)(void *ptr);
	enum fake_place (*classify)(const void *ptr, size_t count);
	cudaError_t (*handle_create)(int kind, int device, void **out);
	cudaError_t (*handle_destroy)(int kind, void *handle);
	cudaError_t (*stream_device)(cudaStream_t stream, int *device);
	cudaError_t (*pool_device)(cudaMemPool_t pool, int *device);
	cudaMemPool_t (*default_pool)(int device);
	void (*reset_device)(int device);
	int (*mem_kind)(const void *ptr);
	size_t (*mem_pool_used)(cudaMemPool_t pool);
};

/* The driver's per-thread-default-stream variants (cuda.h declares them
 * only under CUDA_API_PER_THREAD_DEFAULT_STREAM). */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				      CUmemoryPool pool, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

/* The driver functions the runtime calls, as cuGetProcAddress_v2 gave them. */
struct fake_driver_api {
	CUresult (*get_proc_address)(const char *symbol, void **pfn, int version,
				     cuuint64_t flags,
				     CUdriverProcAddressQueryResult *status);
	CUresult (*mem_alloc)(CUdeviceptr *dptr, size_t bytesize);
	CUresult (*mem_alloc_pitch)(CUdeviceptr *dptr, size_t *pitch, size_t width,
				    size_t height, unsigned int element_size);
	CUresult (*mem_alloc_managed)(CUdeviceptr *dptr, size_t bytesize,
				      unsigned int flags);
	CUresult (*mem_alloc_host)(void **pp, size_t bytesize);
	CUresult (*mem_host_alloc)(void **pp, size_t bytesize, unsigned int flags);
	CUresult (*mem_free)(CUdeviceptr dptr);
	CUresult (*mem_free_host)(void *p);
	CUresult (*mem_alloc_async)(CUdeviceptr *dptr, size_t bytesize, CUstream stream);
	CUresult (*mem_alloc_async_ptsz)(CUdeviceptr *dptr, size_t bytesize,
					 CUstream stream);
	CUresult (*mem_alloc_from_pool_async)(CUdeviceptr *dptr, size_t bytesize,
					      CUmemoryPool pool, CUstream stream);
	CUresult (*mem_alloc_from_pool_async_ptsz)(CUdeviceptr *dptr, size_t bytesize,
						   CUmemoryPool pool, CUstream stream);
	CUresult (*mem_free_async)(CUdeviceptr dptr, CUstream stream);
	CUresult (*mem_free_async_ptsz)(CUdeviceptr dptr, CUstream stream);
	CUresult (*device_get_attribute)(int *pi, CUdevice_attribute attrib, CUdevice dev);
	const struct fake_core_ops *core;
};

/* The runtime's link to the driver, loaded at first use (fake-link.c). */
const struct fake_driver_api *fake_driver(void);

/*
 * The runtime's error for a driver result. The codes the stand-in driver
 * returns have the same numbers in both APIs.
 */
cudaError_t fake_from_cu(CUresult result);

/* A runtime stream of the current device (fake-device.c); flags may only
 * be cudaStreamNonBlocking. */
cudaError_t fake_stream_create(cudaStream_t *stream, unsigned int flags);

#endif
