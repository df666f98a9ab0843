/* SPDX-License-Identifier: MIT */
/* A stand-in for libc10_cuda.so's allocator frames (fake-framework.h). */
#include "fake-framework.h"

__attribute__((noinline)) static uint64_t lw_fake_return_address(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

LW_FAKE_FRAME(fw_device_malloc)
LW_FAKE_FRAME(fw_allocate)
