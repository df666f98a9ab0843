/* SPDX-License-Identifier: MIT */
/*
 * libc10_cuda.so: a small stand-in for PyTorch's CUDA caching allocator
 * (c10/cuda/CUDACachingAllocator.cpp), named like PyTorch's library so that
 * a trace looks like PyTorch's. Like the real one it rounds requests up to
 * 512 bytes, carves blocks out of segments (2 MiB for requests up to 1 MiB,
 * 20 MiB for up to 10 MiB, else the request rounded up to 2 MiB), splits
 * and merges blocks, keeps freed blocks cached, calls cudaMalloc only when
 * no cached block fits and cudaFree only in empty_cache() or to retry a
 * cudaMalloc that failed, and reports every block it hands out and takes
 * back to c10::reportMemoryUsageToProfiler in libc10 (c10.c), with its
 * allocated and reserved totals: a call across shared objects, as in
 * PyTorch. A request that still fails is reported to
 * c10::reportOutOfMemoryToProfiler.
 *
 * Its configuration, read at first use as PyTorch reads it:
 * PYTORCH_NO_CUDA_MEMORY_CACHING=1: one cudaMalloc per tensor, no report;
 * PYTORCH_CUDA_ALLOC_CONF with backend:cudaMallocAsync: one
 * cudaMallocAsync per tensor, no report; with expandable_segments:True:
 * segments made of cuMemCreate memory mapped into reserved address space,
 * the driver functions taken from cudaGetDriverEntryPoint.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

struct c10_device {
	int8_t type;
	int8_t index;
};

void _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(
	void *ptr, int64_t size, uint64_t total_allocated,
	uint64_t total_reserved, struct c10_device device);
void _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE(
	int64_t size, uint64_t total_allocated, uint64_t total_reserved,
	struct c10_device device);

EXPORT void *c10_cuda_alloc(size_t size);
EXPORT void c10_cuda_free(void *ptr);
EXPORT void c10_cuda_empty_cache(void);
EXPORT void c10_cuda_memory(uint64_t *allocated, uint64_t *reserved);
EXPORT void *c10_cuda_raw_alloc(size_t size);

#define MIN_BLOCK 512u
#define SMALL_SIZE (1u << 20)
#define SMALL_BUFFER (2u << 20)
#define LARGE_BUFFER (20u << 20)
#define MIN_LARGE_ALLOC (10u << 20)
#define ROUND_LARGE (2u << 20)

struct segment;

struct block {
	char *ptr;
	size_t size;
	int allocated;
	struct segment *segment;
	struct block *prev, *next; /* neighbours in the segment */
};

struct segment {
	char *base;
	size_t size;
	int small;
	CUmemGenericAllocationHandle handle; /* expandable segments */
	struct block *first;
	struct segment *next;
};

enum mode { NATIVE, EXPANDABLE, ASYNC, UNCACHED };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static enum mode mode;
static struct segment *segments;
static uint64_t allocated_bytes, reserved_bytes;

static CUresult (*mem_create)(CUmemGenericAllocationHandle *, size_t,
			      const CUmemAllocationProp *, unsigned long long);
static CUresult (*mem_release)(CUmemGenericAllocationHandle);
static CUresult (*address_reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
				   unsigned long long);
static CUresult (*address_free)(CUdeviceptr, size_t);
static CUresult (*mem_map)(CUdeviceptr, size_t, size_t,
			   CUmemGenericAllocationHandle, unsigned long long);
static CUresult (*mem_unmap)(CUdeviceptr, size_t);

static void driver(const char *name, void *fn)
{
	enum cudaDriverEntryPointQueryResult status;

	/* As PyTorch does (c10/cuda/driver_api.cpp). */
	cudaGetDriverEntryPointByVersion(name, (void **)fn, 12000,
					 cudaEnableDefault, &status);
}

static void configure(void)
{
	const char *uncached = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
	const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");

	if (!conf)
		conf = getenv("PYTORCH_ALLOC_CONF");
	if (uncached && strcmp(uncached, "1") == 0)
		mode = UNCACHED;
	else if (conf && strstr(conf, "backend:cudaMallocAsync"))
		mode = ASYNC;
	else if (conf && strstr(conf, "expandable_segments:True"))
		mode = EXPANDABLE;
	if (mode == EXPANDABLE) {
		driver("cuMemCreate", &mem_create);
		driver("cuMemRelease", &mem_release);
		driver("cuMemAddressReserve", &address_reserve);
		driver("cuMemAddressFree", &address_free);
		driver("cuMemMap", &mem_map);
		driver("cuMemUnmap", &mem_unmap);
	}
}

static struct c10_device device(void)
{
	int index = 0;

	cudaGetDevice(&index);
	return (struct c10_device){ 1, (int8_t)index };
}

static char *map_segment(size_t size, CUmemGenericAllocationHandle *handle)
{
	CUmemAllocationProp prop = { 0 };
	CUdeviceptr va = 0;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = device().index;
	if (!mem_create || mem_create(handle, size, &prop, 0) != CUDA_SUCCESS)
		return NULL;
	if (address_reserve(&va, size, 0, 0, 0) != CUDA_SUCCESS ||
	    mem_map(va, size, 0, *handle, 0) != CUDA_SUCCESS) {
		if (va)
			address_free(va, size);
		mem_release(*handle);
		return NULL;
	}
	return (char *)(uintptr_t)va;
}

static struct segment *new_segment(size_t size, int small)
{
	struct segment *s = calloc(1, sizeof(*s));
	struct block *b = calloc(1, sizeof(*b));
	void *ptr = NULL;

	if (!s || !b)
		goto fail;
	if (mode == EXPANDABLE)
		ptr = map_segment(size, &s->handle);
	else if (cudaMalloc(&ptr, size) != cudaSuccess)
		ptr = NULL;
	if (!ptr)
		goto fail;
	s->base = ptr;
	s->size = size;
	s->small = small;
	s->first = b;
	s->next = segments;
	segments = s;
	b->ptr = ptr;
	b->size = size;
	b->segment = s;
	reserved_bytes += size;
	return s;
fail:
	free(s);
	free(b);
	return NULL;
}

/* Gives back every segment with nothing allocated in it. */
static void release_cached(void)
{
	for (struct segment **p = &segments; *p;) {
		struct segment *s = *p;

		if (s->first->allocated || s->first->next) {
			p = &s->next;
			continue;
		}
		if (mode == EXPANDABLE) {
			mem_unmap((CUdeviceptr)(uintptr_t)s->base, s->size);
			mem_release(s->handle);
			address_free((CUdeviceptr)(uintptr_t)s->base, s->size);
		} else {
			cudaFree(s->base);
		}
		reserved_bytes -= s->size;
		*p = s->next;
		free(s->first);
		free(s);
	}
}

static struct block *best_fit(size_t size, int small)
{
	struct block *best = NULL;

	for (struct segment *s = segments; s; s = s->next) {
		if (s->small != small)
			continue;
		for (struct block *b = s->first; b; b = b->next)
			if (!b->allocated && b->size >= size &&
			    (!best || b->size < best->size))
				best = b;
	}
	return best;
}

static void *cached_alloc(size_t request)
{
	size_t size = (request + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
	int small = size <= SMALL_SIZE;
	size_t segment_size = small ? SMALL_BUFFER
			      : size < MIN_LARGE_ALLOC
				      ? LARGE_BUFFER
				      : (size + ROUND_LARGE - 1) / ROUND_LARGE *
						ROUND_LARGE;
	struct block *b = best_fit(size, small);

	if (!b) {
		struct segment *s = new_segment(segment_size, small);
		if (!s) {
			release_cached();
			s = new_segment(segment_size, small);
		}
		if (!s) {
			_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE(
				(int64_t)size, allocated_bytes, reserved_bytes,
				device());
			return NULL;
		}
		b = s->first;
	}
	size_t rest = b->size - size;
	if (small ? rest >= MIN_BLOCK : rest > SMALL_SIZE) {
		struct block *tail = calloc(1, sizeof(*tail));
		if (tail) {
			tail->ptr = b->ptr + size;
			tail->size = rest;
			tail->segment = b->segment;
			tail->prev = b;
			tail->next = b->next;
			if (b->next)
				b->next->prev = tail;
			b->next = tail;
			b->size = size;
		}
	}
	b->allocated = 1;
	allocated_bytes += b->size;
	_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(
		b->ptr, (int64_t)b->size, allocated_bytes, reserved_bytes,
		device());
	return b->ptr;
}

static struct block *find_block(const char *ptr)
{
	for (struct segment *s = segments; s; s = s->next) {
		if (ptr < s->base || ptr >= s->base + s->size)
			continue;
		for (struct block *b = s->first; b; b = b->next)
			if (b->ptr == ptr && b->allocated)
				return b;
	}
	return NULL;
}

/* Joins b with its free neighbour next. */
static void merge(struct block *b, struct block *next)
{
	b->size += next->size;
	b->next = next->next;
	if (next->next)
		next->next->prev = b;
	free(next);
}

static void cached_free(void *ptr)
{
	struct block *b = find_block(ptr);

	if (!b)
		return;
	size_t size = b->size;
	b->allocated = 0;
	allocated_bytes -= size;
	if (b->next && !b->next->allocated)
		merge(b, b->next);
	if (b->prev && !b->prev->allocated) {
		b = b->prev;
		merge(b, b->next);
	}
	_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(
		ptr, -(int64_t)size, allocated_bytes, reserved_bytes, device());
}

void *c10_cuda_alloc(size_t size)
{
	void *ptr = NULL;

	pthread_once(&once, configure);
	if (mode == UNCACHED)
		return cudaMalloc(&ptr, size) == cudaSuccess ? ptr : NULL;
	if (mode == ASYNC)
		return cudaMallocAsync(&ptr, size, 0) == cudaSuccess ? ptr : NULL;
	pthread_mutex_lock(&lock);
	ptr = cached_alloc(size);
	pthread_mutex_unlock(&lock);
	return ptr;
}

void c10_cuda_free(void *ptr)
{
	pthread_once(&once, configure);
	if (mode == UNCACHED) {
		cudaFree(ptr);
	} else if (mode == ASYNC) {
		cudaFreeAsync(ptr, 0);
	} else {
		pthread_mutex_lock(&lock);
		cached_free(ptr);
		pthread_mutex_unlock(&lock);
	}
}

void c10_cuda_empty_cache(void)
{
	pthread_mutex_lock(&lock);
	release_cached();
	pthread_mutex_unlock(&lock);
}

/* torch.cuda.memory_allocated() and memory_reserved(). */
void c10_cuda_memory(uint64_t *allocated, uint64_t *reserved)
{
	pthread_mutex_lock(&lock);
	*allocated = allocated_bytes;
	*reserved = reserved_bytes;
	pthread_mutex_unlock(&lock);
}

void *c10_cuda_raw_alloc(size_t size)
{
	return c10_cuda_alloc(size);
}
