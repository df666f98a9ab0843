/* SPDX-License-Identifier: MIT */
/* A stand-in for libtorch_cpu.so's dispatcher frames (fake-framework.h). */
#include "fake-framework.h"

__attribute__((noinline)) static uint64_t lw_fake_return_address(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

LW_FAKE_FRAME(fw_wrap_kernel)
LW_FAKE_FRAME(fw_mul_redispatch)
LW_FAKE_FRAME(fw_mul_call)
LW_FAKE_FRAME(fw_empty_strided_call)
LW_FAKE_FRAME(fw_thp_mul)
LW_FAKE_FRAME(fw_mul_backward)
LW_FAKE_FRAME(fw_thread_main)
