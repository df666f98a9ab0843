/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the test programs the integration tests run under LD_PRELOAD.
 * Kept out of the allocation paths: each program calls the CUDA allocation
 * functions directly from the function a test expects to see on the stack.
 */
#ifndef PROG_COMMON_H
#define PROG_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

/* Exits 1 with a message naming the call unless err is cudaSuccess. */
static inline void prog_check(cudaError_t err, const char *what)
{
	if (err == cudaSuccess)
		return;
	fprintf(stderr, "%s: %s failed: %s (%s)\n", program_invocation_short_name, what,
		cudaGetErrorName(err), cudaGetErrorString(err));
	exit(1);
}

/* Exits 1 with a message unless err is the error expected. */
static inline void prog_expect(cudaError_t err, cudaError_t expected, const char *what)
{
	if (err == expected)
		return;
	fprintf(stderr, "%s: %s returned %s, expected %s\n", program_invocation_short_name,
		what, cudaGetErrorName(err), cudaGetErrorName(expected));
	exit(1);
}

#define CHECK_CUDA(call) prog_check((call), #call)
#define EXPECT_CUDA(call, expected) prog_expect((call), (expected), #call)

/*
 * Returns argv[index] as a non-negative number, or fallback when there is no
 * such argument; exits 2 if it is not a number.
 */
static inline unsigned long prog_arg(int argc, char **argv, int index, unsigned long fallback)
{
	unsigned long value;
	char *end;

	if (index >= argc)
		return fallback;
	errno = 0;
	value = strtoul(argv[index], &end, 10);
	if (errno || end == argv[index] || *end || argv[index][0] == '-') {
		fprintf(stderr, "%s: not a number: %s\n", program_invocation_short_name,
			argv[index]);
		exit(2);
	}
	return value;
}

#endif
