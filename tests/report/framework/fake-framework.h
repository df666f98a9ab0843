/* SPDX-License-Identifier: MIT */
/*
 * The framework's functions that gen-framework puts on its stacks, under
 * the (mangled) names PyTorch's libraries give them: each returns a return
 * address inside itself, which the report symbolizes back to that name.
 * fake-c10.c builds libc10_cuda.so, fake-torch.c libtorch_cpu.so: test
 * doubles named so that the report takes them for the framework's.
 */
#ifndef LW_FAKE_FRAMEWORK_H
#define LW_FAKE_FRAMEWORK_H

#include <stdint.h>

/* Keeps a call from being a tail call (its return address would then lie
 * in the caller's caller). */
#define LW_NO_TAIL_CALL(v) __asm__ volatile("" : "+r"(v))

/* Defines fn, declared below with its symbol. */
#define LW_FAKE_FRAME(fn)                                         \
	__attribute__((noinline)) uint64_t fn(void)                         \
	{                                                                   \
		uint64_t a = lw_fake_return_address();                      \
		LW_NO_TAIL_CALL(a);                                         \
		return a;                                                   \
	}

/* libc10_cuda.so */
/* c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long) */
uint64_t fw_device_malloc(void)
	__asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocEm");
/* c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long) */
uint64_t fw_allocate(void)
	__asm__("_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator8allocateEm");

/* libtorch_cpu.so */
/* c10::impl::wrap_kernel_functor_unboxed_::call(int) */
uint64_t fw_wrap_kernel(void)
	__asm__("_ZN3c104impl28wrap_kernel_functor_unboxed_4callEi");
/* at::_ops::mul_Tensor::redispatch(int) */
uint64_t fw_mul_redispatch(void) __asm__("_ZN2at4_ops10mul_Tensor10redispatchEi");
/* at::_ops::mul_Tensor::call(int) */
uint64_t fw_mul_call(void) __asm__("_ZN2at4_ops10mul_Tensor4callEi");
/* at::_ops::empty_strided::call(int) */
uint64_t fw_empty_strided_call(void) __asm__("_ZN2at4_ops13empty_strided4callEi");
/* torch::autograd::THPVariable_mul(int) */
uint64_t fw_thp_mul(void) __asm__("_ZN5torch8autograd15THPVariable_mulEi");
/* torch::autograd::generated::MulBackward0::apply(int) */
uint64_t fw_mul_backward(void)
	__asm__("_ZN5torch8autograd9generated12MulBackward05applyEi");
/* torch::autograd::Engine::thread_main(int) */
uint64_t fw_thread_main(void) __asm__("_ZN5torch8autograd6Engine11thread_mainEi");

#endif
