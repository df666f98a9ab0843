/* SPDX-License-Identifier: MIT */
/*
 * failing_alloc: CUDA calls that fail, whose results the shim must pass
 * through untouched. Meant to run with FAKECUDA_CAPACITY=1048576 (set here
 * unless the environment already has it):
 *
 *   - 512 KiB allocated and kept: the only device allocation that succeeds;
 *   - 1 MiB refused with cudaErrorMemoryAllocation, out-pointer unchanged;
 *   - cudaFree of a pointer never allocated: cudaErrorInvalidValue;
 *   - a double free: cudaErrorInvalidValue. Done on pinned host memory, so
 *     that the device allocation above stays the only one.
 *
 * Prints "ok" when every call returned what it should.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "prog-common.h"

#define KEPT_BYTES ((size_t)512 << 10)
#define TOO_MANY_BYTES ((size_t)1 << 20)
#define SENTINEL ((void *)(uintptr_t)0x5e5e5e5e)

void *allocate_kept(void);
void allocate_too_much(void);
void free_unknown(void);
void double_free(void);

void *allocate_kept(void)
{
	void *kept;

	CHECK_CUDA(cudaMalloc(&kept, KEPT_BYTES));
	return kept;
}

void allocate_too_much(void)
{
	void *ptr = SENTINEL;

	EXPECT_CUDA(cudaMalloc(&ptr, TOO_MANY_BYTES), cudaErrorMemoryAllocation);
	if (ptr != SENTINEL) {
		fprintf(stderr, "failing_alloc: a failed cudaMalloc changed its out-pointer\n");
		exit(1);
	}
	EXPECT_CUDA(cudaGetLastError(), cudaErrorMemoryAllocation);
}

void free_unknown(void)
{
	EXPECT_CUDA(cudaFree((void *)0x1234), cudaErrorInvalidValue);
}

void double_free(void)
{
	void *ptr;

	CHECK_CUDA(cudaMallocHost(&ptr, 4096));
	CHECK_CUDA(cudaFreeHost(ptr));
	EXPECT_CUDA(cudaFreeHost(ptr), cudaErrorInvalidValue);
}

int main(void)
{
	setenv("FAKECUDA_CAPACITY", "1048576", 0);
	allocate_kept();
	allocate_too_much();
	free_unknown();
	double_free();
	EXPECT_CUDA(cudaGetLastError(), cudaErrorInvalidValue);
	printf("ok\n");
	return 0;
}
