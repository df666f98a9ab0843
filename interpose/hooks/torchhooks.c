/* SPDX-License-Identifier: MIT */
/*
 * PyTorch's allocator hooks, and nothing else.
 *
 * PyTorch's native CUDA caching allocator (libc10_cuda) reports every block
 * it hands out, and every block it takes back, to
 * c10::reportMemoryUsageToProfiler(ptr, size, total_allocated,
 * total_reserved, device), and a request it cannot satisfy to
 * c10::reportOutOfMemoryToProfiler(size, total_allocated, total_reserved,
 * device), both defined in libc10. The calls cross shared objects, so the
 * preloaded shim's definitions come first. Each one records what it is told
 * (CUDA devices only: the CPU allocators call the same function) and then
 * calls libc10's own, so that torch.profiler keeps working.
 *
 * The mangled names: the totals are size_t ("lmm") in PyTorch 2.x (checked
 * against 2.15.0's headers and nm -D of its libraries) and were int64_t
 * ("lll") in older releases (not checked against a wheel here).
 * Both have the same calling convention: c10::Device is two one-byte
 * fields (type, index), passed by value in a register.
 */
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "real.h"
#include "tracker.h"

struct c10_device {
	int8_t type; /* c10::DeviceType; CUDA is 1 */
	int8_t index;
};

#define C10_CUDA 1

#define USAGE_NAME "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE"
#define USAGE_NAME_INT64 "_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE"
#define OOM_NAME "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE"
#define OOM_NAME_INT64 "_ZN3c1027reportOutOfMemoryToProfilerElllNS_6DeviceE"

typedef void (*usage_fn)(void *ptr, int64_t size, uint64_t total_allocated,
			 uint64_t total_reserved, struct c10_device device);
typedef void (*oom_fn)(int64_t size, uint64_t total_allocated,
		       uint64_t total_reserved, struct c10_device device);

LW_EXPORT void _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(
	void *ptr, int64_t size, uint64_t total_allocated,
	uint64_t total_reserved, struct c10_device device);
LW_EXPORT void _ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE(
	void *ptr, int64_t size, uint64_t total_allocated,
	uint64_t total_reserved, struct c10_device device);
LW_EXPORT void _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE(
	int64_t size, uint64_t total_allocated, uint64_t total_reserved,
	struct c10_device device);
LW_EXPORT void _ZN3c1027reportOutOfMemoryToProfilerElllNS_6DeviceE(
	int64_t size, uint64_t total_allocated, uint64_t total_reserved,
	struct c10_device device);

/* A block handed out (size > 0) or taken back (size < 0). */
static void record_usage(void *ptr, int64_t size, struct c10_device device)
{
	if (device.type != C10_CUDA || !ptr || size == 0 || !lw_enter())
		return;
	if (size > 0) {
		lw_record_alloc_on(LW_API_TORCH_BLOCK, LW_MEM_DEVICE, ptr,
				   (uint64_t)size, 0, device.index);
	} else {
		lw_record_block_free(ptr);
	}
	lw_leave();
}

static void record_oom(int64_t size, uint64_t allocated, uint64_t reserved,
		       struct c10_device device)
{
	if (device.type != C10_CUDA || !lw_enter())
		return;
	lw_record_oom(size > 0 ? (uint64_t)size : 0, allocated, reserved,
		      device.index);
	lw_leave();
}

/* libc10's function behind one of ours, looked up once per name (a
 * libc10 without it is remembered as NO_REAL). */
#define NO_REAL ((lw_fnptr)(uintptr_t)1)

static lw_fnptr real_c10(lw_fnptr *cache, const char *name)
{
	lw_fnptr fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = lw_real_c10_symbol(name);
		if (!fn)
			fn = NO_REAL;
		__atomic_store_n(cache, fn, __ATOMIC_RELEASE);
	}
	return fn == NO_REAL ? NULL : fn;
}

/* Records a block and forwards the call to libc10's function name. */
static void usage(lw_fnptr *real, const char *name, void *ptr, int64_t size,
		  uint64_t total_allocated, uint64_t total_reserved,
		  struct c10_device device)
{
	usage_fn fn = (usage_fn)real_c10(real, name);

	record_usage(ptr, size, device);
	if (fn)
		fn(ptr, size, total_allocated, total_reserved, device);
}

/* Records an out-of-memory error and forwards the call likewise. */
static void oom(lw_fnptr *real, const char *name, int64_t size,
		uint64_t total_allocated, uint64_t total_reserved,
		struct c10_device device)
{
	oom_fn fn = (oom_fn)real_c10(real, name);

	record_oom(size, total_allocated, total_reserved, device);
	if (fn)
		fn(size, total_allocated, total_reserved, device);
}

void _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(
	void *ptr, int64_t size, uint64_t total_allocated,
	uint64_t total_reserved, struct c10_device device)
{
	static lw_fnptr real;

	usage(&real, USAGE_NAME, ptr, size, total_allocated, total_reserved,
	      device);
}

void _ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE(
	void *ptr, int64_t size, uint64_t total_allocated,
	uint64_t total_reserved, struct c10_device device)
{
	static lw_fnptr real;

	usage(&real, USAGE_NAME_INT64, ptr, size, total_allocated,
	      total_reserved, device);
}

void _ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE(
	int64_t size, uint64_t total_allocated, uint64_t total_reserved,
	struct c10_device device)
{
	static lw_fnptr real;

	oom(&real, OOM_NAME, size, total_allocated, total_reserved, device);
}

void _ZN3c1027reportOutOfMemoryToProfilerElllNS_6DeviceE(
	int64_t size, uint64_t total_allocated, uint64_t total_reserved,
	struct c10_device device)
{
	static lw_fnptr real;

	oom(&real, OOM_NAME_INT64, size, total_allocated, total_reserved,
	    device);
}
