/* SPDX-License-Identifier: MIT */
/*
 * driver_api: allocates through every driver entry point the shim hooks,
 * reached one of five ways (the first argument):
 *
 *   direct       calling the exported names (cuMemAlloc_v2, ...)
 *   dlsym        dlsym() on a handle to libcuda.so.1, by exported name
 *   procaddress  cuGetProcAddress_v2 (and the first cuGetProcAddress) with
 *                base names, a version and per-thread-stream flags
 *   entrypoint   cudaGetDriverEntryPoint and ...ByVersion (and _ptsz)
 *   legacy       procaddress with a version older than every hooked ABI:
 *                the driver refuses, and nothing may be swapped in
 *   next         dlsym(RTLD_NEXT) from the program must find what
 *                dlsym(RTLD_DEFAULT) finds, the first definition after
 *                the program (with a shim preloaded, the shim's); prints
 *                the object it came from
 *
 * Each entry point allocates once from its own via_* function and keeps
 * the memory; each free entry point frees one more allocation of its kind.
 * Virtual memory: one physical allocation is kept mapped, another is
 * mapped, unmapped and released. The program prints what must be live:
 *
 *     expect <kind> <allocations> <live count> <live bytes>
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "prog-common.h"

#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				      CUmemoryPool pool, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
					 unsigned long long flags,
					 enum cudaDriverEntryPointQueryResult *driverStatus);

struct driver {
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
	CUresult (*alloc_managed)(CUdeviceptr *, size_t, unsigned int);
	CUresult (*alloc_host)(void **, size_t);
	CUresult (*host_alloc)(void **, size_t, unsigned int);
	CUresult (*free)(CUdeviceptr);
	CUresult (*free_host)(void *);
	CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
	CUresult (*alloc_async_ptsz)(CUdeviceptr *, size_t, CUstream);
	CUresult (*alloc_pool)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
	CUresult (*alloc_pool_ptsz)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
	CUresult (*free_async)(CUdeviceptr, CUstream);
	CUresult (*free_async_ptsz)(CUdeviceptr, CUstream);
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
			   const CUmemAllocationProp *, unsigned long long);
	CUresult (*release)(CUmemGenericAllocationHandle);
};

static void check_cu(CUresult result, const char *what)
{
	if (result == CUDA_SUCCESS)
		return;
	fprintf(stderr, "driver_api: %s failed: %d\n", what, (int)result);
	exit(1);
}

#define CHECK_CU(call) check_cu((call), #call)

static void set(void *slot, void *fn, const char *name)
{
	if (!fn) {
		fprintf(stderr, "driver_api: no function for %s\n", name);
		exit(1);
	}
	memcpy(slot, &fn, sizeof(fn));
}

static void by_name(struct driver *d)
{
	d->alloc = cuMemAlloc_v2;
	d->alloc_pitch = cuMemAllocPitch_v2;
	d->alloc_managed = cuMemAllocManaged;
	d->alloc_host = cuMemAllocHost_v2;
	d->host_alloc = cuMemHostAlloc;
	d->free = cuMemFree_v2;
	d->free_host = cuMemFreeHost;
	d->alloc_async = cuMemAllocAsync;
	d->alloc_async_ptsz = cuMemAllocAsync_ptsz;
	d->alloc_pool = cuMemAllocFromPoolAsync;
	d->alloc_pool_ptsz = cuMemAllocFromPoolAsync_ptsz;
	d->free_async = cuMemFreeAsync;
	d->free_async_ptsz = cuMemFreeAsync_ptsz;
	d->create = cuMemCreate;
	d->release = cuMemRelease;
}

static void by_dlsym(struct driver *d)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "driver_api: %s\n", dlerror());
		exit(1);
	}
#define SYM(field, name) set(&d->field, dlsym(h, name), name)
	SYM(alloc, "cuMemAlloc_v2");
	SYM(alloc_pitch, "cuMemAllocPitch_v2");
	SYM(alloc_managed, "cuMemAllocManaged");
	SYM(alloc_host, "cuMemAllocHost_v2");
	SYM(host_alloc, "cuMemHostAlloc");
	SYM(free, "cuMemFree_v2");
	SYM(free_host, "cuMemFreeHost");
	SYM(alloc_async, "cuMemAllocAsync");
	SYM(alloc_async_ptsz, "cuMemAllocAsync_ptsz");
	SYM(alloc_pool, "cuMemAllocFromPoolAsync");
	SYM(alloc_pool_ptsz, "cuMemAllocFromPoolAsync_ptsz");
	SYM(free_async, "cuMemFreeAsync");
	SYM(free_async_ptsz, "cuMemFreeAsync_ptsz");
	SYM(create, "cuMemCreate");
	SYM(release, "cuMemRelease");
#undef SYM
}

static int proc_version = CUDA_VERSION;
static int proc_first; /* use the first cuGetProcAddress */

static void *proc(const char *name, cuuint64_t flags)
{
	CUdriverProcAddressQueryResult status;
	void *fn = NULL;

	if (proc_first)
		CHECK_CU(cuGetProcAddress(name, &fn, proc_version, flags));
	else
		CHECK_CU(cuGetProcAddress_v2(name, &fn, proc_version, flags, &status));
	return fn;
}

static void by_proc_address(struct driver *d)
{
	const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

#define PROC(field, name, flags) set(&d->field, proc(name, flags), name)
	PROC(alloc, "cuMemAlloc", 0);
	PROC(alloc_pitch, "cuMemAllocPitch", 0);
	PROC(alloc_managed, "cuMemAllocManaged", 0);
	PROC(alloc_host, "cuMemAllocHost", 0);
	PROC(free, "cuMemFree", 0);
	PROC(free_host, "cuMemFreeHost", 0);
	PROC(alloc_async, "cuMemAllocAsync", 0);
	PROC(alloc_async_ptsz, "cuMemAllocAsync", pt);
	PROC(free_async, "cuMemFreeAsync", CU_GET_PROC_ADDRESS_LEGACY_STREAM);
	PROC(free_async_ptsz, "cuMemFreeAsync", pt);
	proc_first = 1; /* half through the first resolver */
	PROC(host_alloc, "cuMemHostAlloc", 0);
	PROC(alloc_pool, "cuMemAllocFromPoolAsync", 0);
	PROC(alloc_pool_ptsz, "cuMemAllocFromPoolAsync", pt);
	PROC(create, "cuMemCreate", 0);
	PROC(release, "cuMemRelease", 0);
	proc_first = 0;
#undef PROC
}

static void *entry(const char *name, int per_thread, int by_version)
{
	enum cudaDriverEntryPointQueryResult status;
	void *fn = NULL;

	if (by_version)
		CHECK_CUDA(cudaGetDriverEntryPointByVersion(
			name, &fn, CUDA_VERSION,
			per_thread ? cudaEnablePerThreadDefaultStream : cudaEnableDefault,
			&status));
	else if (per_thread)
		CHECK_CUDA(cudaGetDriverEntryPoint_ptsz(name, &fn, cudaEnableDefault, &status));
	else {
		/* Deprecated, and still what older programs call. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
		CHECK_CUDA(cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &status));
#pragma GCC diagnostic pop
	}
	return fn;
}

static void by_entry_point(struct driver *d)
{
#define ENTRY(field, name, pt, bv) set(&d->field, entry(name, pt, bv), name)
	ENTRY(alloc, "cuMemAlloc", 0, 1);
	ENTRY(alloc_pitch, "cuMemAllocPitch", 0, 0);
	ENTRY(alloc_managed, "cuMemAllocManaged", 0, 1);
	ENTRY(alloc_host, "cuMemAllocHost", 0, 0);
	ENTRY(host_alloc, "cuMemHostAlloc", 0, 1);
	ENTRY(free, "cuMemFree", 0, 0);
	ENTRY(free_host, "cuMemFreeHost", 0, 1);
	ENTRY(alloc_async, "cuMemAllocAsync", 0, 0);
	ENTRY(alloc_async_ptsz, "cuMemAllocAsync", 1, 0);
	ENTRY(alloc_pool, "cuMemAllocFromPoolAsync", 0, 1);
	ENTRY(alloc_pool_ptsz, "cuMemAllocFromPoolAsync", 1, 1);
	ENTRY(free_async, "cuMemFreeAsync", 0, 1);
	ENTRY(free_async_ptsz, "cuMemFreeAsync", 1, 0);
	ENTRY(create, "cuMemCreate", 0, 1);
	ENTRY(release, "cuMemRelease", 0, 0);
#undef ENTRY
}

/* A version older than every hooked ABI: the driver refuses each name. */
static int legacy_refused(void)
{
	static const char *const names[] = {
		"cuMemAlloc", "cuMemAllocAsync", "cuMemCreate", "cuMemFree",
	};
	CUdriverProcAddressQueryResult status;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *fn = (void *)1;
		if (cuGetProcAddress_v2(names[i], &fn, 2000, 0, &status) != CUDA_ERROR_NOT_FOUND ||
		    status != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT || fn) {
			fprintf(stderr, "driver_api: %s at version 2000 was not refused\n",
				names[i]);
			return 0;
		}
	}
	return 1;
}

static int next_is_default(void)
{
	void *next = dlsym(RTLD_NEXT, "cudaMalloc");
	void *first = dlsym(RTLD_DEFAULT, "cudaMalloc");
	Dl_info info;

	if (!next || next != first || !dladdr(next, &info)) {
		fprintf(stderr, "driver_api: RTLD_NEXT found %p, RTLD_DEFAULT %p\n", next, first);
		return 0;
	}
	printf("next %s\n", info.dli_fname);
	return 1;
}

struct expect {
	unsigned long allocations, count, bytes;
};

static struct expect device, managed, pinned;

static void kept(struct expect *e, size_t bytes)
{
	e->allocations++;
	e->count++;
	e->bytes += bytes;
}

static void freed(struct expect *e)
{
	e->allocations++;
}

void via_alloc(const struct driver *d);
void via_alloc_pitch(const struct driver *d);
void via_alloc_managed(const struct driver *d);
void via_alloc_host(const struct driver *d);
void via_host_alloc(const struct driver *d);
void via_alloc_async(const struct driver *d, CUstream stream);
void via_alloc_pool(const struct driver *d, CUmemoryPool pool, CUstream stream);
void via_create(const struct driver *d);

void via_alloc(const struct driver *d)
{
	CUdeviceptr p, q;

	CHECK_CU(d->alloc(&p, 1000));
	kept(&device, 1000);
	CHECK_CU(d->alloc(&q, 1001));
	CHECK_CU(d->free(q));
	freed(&device);
}

void via_alloc_pitch(const struct driver *d)
{
	CUdeviceptr p;
	size_t pitch;

	CHECK_CU(d->alloc_pitch(&p, &pitch, 100, 3, 4));
	kept(&device, pitch * 3);
}

void via_alloc_managed(const struct driver *d)
{
	CUdeviceptr p;

	CHECK_CU(d->alloc_managed(&p, 2000, CU_MEM_ATTACH_GLOBAL));
	kept(&managed, 2000);
}

void via_alloc_host(const struct driver *d)
{
	void *p, *q;

	CHECK_CU(d->alloc_host(&p, 3000));
	kept(&pinned, 3000);
	CHECK_CU(d->alloc_host(&q, 3001));
	CHECK_CU(d->free_host(q));
	freed(&pinned);
}

void via_host_alloc(const struct driver *d)
{
	void *p;

	CHECK_CU(d->host_alloc(&p, 4000, CU_MEMHOSTALLOC_PORTABLE));
	kept(&pinned, 4000);
}

void via_alloc_async(const struct driver *d, CUstream stream)
{
	CUdeviceptr p, q;

	CHECK_CU(d->alloc_async(&p, 5000, stream));
	kept(&device, 5000);
	CHECK_CU(d->alloc_async_ptsz(&p, 5001, stream));
	kept(&device, 5001);
	CHECK_CU(d->alloc_async(&q, 5002, stream));
	CHECK_CU(d->free_async(q, stream));
	freed(&device);
	CHECK_CU(d->alloc_async_ptsz(&q, 5003, stream));
	CHECK_CU(d->free_async_ptsz(q, stream));
	freed(&device);
}

void via_alloc_pool(const struct driver *d, CUmemoryPool pool, CUstream stream)
{
	CUdeviceptr p;

	CHECK_CU(d->alloc_pool(&p, 6000, pool, stream));
	kept(&device, 6000);
	CHECK_CU(d->alloc_pool_ptsz(&p, 6001, pool, stream));
	kept(&device, 6001);
}

void via_create(const struct driver *d)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
	CUmemAccessDesc access = { .location = prop.location,
				   .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	const size_t size = 2 << 20;
	CUmemGenericAllocationHandle kept_handle, released;
	CUdeviceptr va;

	CHECK_CU(cuMemAddressReserve(&va, 2 * size, 0, 0, 0));
	CHECK_CU(d->create(&kept_handle, size, &prop, 0));
	kept(&device, size);
	CHECK_CU(cuMemMap(va, size, 0, kept_handle, 0));
	CHECK_CU(cuMemSetAccess(va, size, &access, 1));
	/* Mapped twice: still one physical allocation. */
	CHECK_CU(cuMemMap(va + size, size, 0, kept_handle, 0));
	CHECK_CU(cuMemUnmap(va + size, size));

	CHECK_CU(d->create(&released, size, &prop, 0));
	CHECK_CU(cuMemMap(va + size, size, 0, released, 0));
	CHECK_CU(cuMemUnmap(va + size, size));
	CHECK_CU(d->release(released));
	freed(&device);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	struct driver d;
	cudaMemPool_t pool;
	cudaStream_t stream;

	CHECK_CU(cuInit(0));
	CHECK_CUDA(cudaStreamCreate(&stream));
	CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
	if (strcmp(how, "direct") == 0) {
		by_name(&d);
	} else if (strcmp(how, "dlsym") == 0) {
		by_dlsym(&d);
	} else if (strcmp(how, "procaddress") == 0) {
		by_proc_address(&d);
	} else if (strcmp(how, "entrypoint") == 0) {
		by_entry_point(&d);
	} else if (strcmp(how, "legacy") == 0) {
		return legacy_refused() ? 0 : 1;
	} else if (strcmp(how, "next") == 0) {
		return next_is_default() ? 0 : 1;
	} else {
		fprintf(stderr, "usage: driver_api "
			"direct|dlsym|procaddress|entrypoint|legacy|next\n");
		return 2;
	}
	via_alloc(&d);
	via_alloc_pitch(&d);
	via_alloc_managed(&d);
	via_alloc_host(&d);
	via_host_alloc(&d);
	via_alloc_async(&d, (CUstream)stream);
	via_alloc_pool(&d, (CUmemoryPool)pool, (CUstream)stream);
	via_create(&d);
	printf("expect device %lu %lu %lu\n", device.allocations, device.count, device.bytes);
	printf("expect managed %lu %lu %lu\n", managed.allocations, managed.count, managed.bytes);
	printf("expect pinned_host %lu %lu %lu\n", pinned.allocations, pinned.count,
	       pinned.bytes);
	return 0;
}
