/* SPDX-License-Identifier: MIT */
/*
 * libc10.so, the part of PyTorch's core library that its CUDA allocator
 * calls (see c10_cuda.c): the profiler hooks, under the names and calling
 * convention of PyTorch's (c10/core/Allocator.h; checked with nm -D on
 * torch 2.15's libc10.so). Like PyTorch's, they do nothing useful without
 * a profiler; here they count their calls and sum what they were told, so
 * that a test can see that the shim forwards every call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

struct c10_device {
	int8_t type;
	int8_t index;
};

EXPORT void _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(
	void *ptr, int64_t size, uint64_t total_allocated,
	uint64_t total_reserved, struct c10_device device);
EXPORT void _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE(
	int64_t size, uint64_t total_allocated, uint64_t total_reserved,
	struct c10_device device);
EXPORT void c10_profiler_seen(uint64_t *calls, int64_t *bytes,
			      uint64_t *ooms);

static uint64_t usage_calls, oom_calls;
static int64_t usage_bytes;

void _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(
	void *ptr, int64_t size, uint64_t total_allocated,
	uint64_t total_reserved, struct c10_device device)
{
	(void)ptr;
	(void)total_allocated;
	(void)total_reserved;
	(void)device;
	__atomic_add_fetch(&usage_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&usage_bytes, size, __ATOMIC_RELAXED);
}

void _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE(
	int64_t size, uint64_t total_allocated, uint64_t total_reserved,
	struct c10_device device)
{
	(void)size;
	(void)total_allocated;
	(void)total_reserved;
	(void)device;
	__atomic_add_fetch(&oom_calls, 1, __ATOMIC_RELAXED);
}

void c10_profiler_seen(uint64_t *calls, int64_t *bytes, uint64_t *ooms)
{
	*calls = __atomic_load_n(&usage_calls, __ATOMIC_RELAXED);
	*bytes = __atomic_load_n(&usage_bytes, __ATOMIC_RELAXED);
	*ooms = __atomic_load_n(&oom_calls, __ATOMIC_RELAXED);
}
