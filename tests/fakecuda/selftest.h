/* SPDX-License-Identifier: MIT */
/* The stand-in runtime's self-test: checks shared by its source files. */
#ifndef SELFTEST_H
#define SELFTEST_H

#include <stddef.h>

#include <cuda_runtime_api.h>

/* Counts and prints a failure unless ok. */
void selftest_check(int ok, const char *what, const char *file, int line);

/* Counts and prints a failure unless got == expected. */
void selftest_check_err(cudaError_t got, cudaError_t expected, const char *what,
			const char *file, int line);

#define CHECK(cond) selftest_check(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_ERR(call, expected) \
	selftest_check_err((call), (expected), #call, __FILE__, __LINE__)

/* Free device memory of the current device. */
size_t selftest_device_free_bytes(void);

/* Calls made through the header's CUDA_API_PER_THREAD_DEFAULT_STREAM names. */
void selftest_per_thread_stream(void);

/* 8 threads allocating and freeing at once; leaves nothing live. */
void selftest_threads(void);

/* fork() while another thread allocates: the child can use the runtime. */
void selftest_fork(void);

#endif
