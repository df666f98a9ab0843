/* SPDX-License-Identifier: MIT */
/*
 * step_churn [steps] [temporaries] [fork_at] [streams]: a training-like loop
 * (default 100 steps) whose every step makes that many short-lived buffers
 * (default 1000) from eight call sites, sizes varying by site and position,
 * and frees them within the step in an order other than that of their
 * making; keeps a gradient into the next step, freed there; and leaks one
 * 256-byte buffer per step from leak_one(). The weights live throughout.
 * With fork_at, the process forks in the middle of that step (its
 * temporaries made, not yet freed): the child runs the rest of the steps
 * and exits, then the parent does. With streams, the temporaries of step k
 * are made with cudaMallocAsync on stream k mod streams (each stream a
 * context of its own in the trace). Prints "parent PID" (and the child
 * "child PID").
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <leakwatch.h>

#include "prog-common.h"

void *temp_a(size_t bytes);
void *temp_b(size_t bytes);
void *temp_c(size_t bytes);
void *temp_d(size_t bytes);
void *temp_e(size_t bytes);
void *temp_f(size_t bytes);
void *temp_g(size_t bytes);
void *temp_h(size_t bytes);
void *gradient(void);
void leak_one(void);

/* The streams the temporaries are made on, one per step in turn; none:
 * cudaMalloc. */
static cudaStream_t *streams;
static unsigned long stream_count, stream_now;

#define TEMP(name)                                                          \
	void *name(size_t bytes)                                            \
	{                                                                   \
		void *p;                                                    \
		if (stream_count)                                           \
			CHECK_CUDA(cudaMallocAsync(&p, bytes,               \
						   streams[stream_now]));   \
		else                                                        \
			CHECK_CUDA(cudaMalloc(&p, bytes));                  \
		return p;                                                   \
	}
TEMP(temp_a) TEMP(temp_b) TEMP(temp_c) TEMP(temp_d)
TEMP(temp_e) TEMP(temp_f) TEMP(temp_g) TEMP(temp_h)

void *gradient(void)
{
	void *p;

	CHECK_CUDA(cudaMalloc(&p, 65536));
	return p;
}

/* The leak under test. */
void leak_one(void)
{
	void *p;

	CHECK_CUDA(cudaMalloc(&p, 256));
}

int main(int argc, char **argv)
{
	static void *(*const sites[8])(size_t) = {
		temp_a, temp_b, temp_c, temp_d, temp_e, temp_f, temp_g, temp_h,
	};
	unsigned long steps = prog_arg(argc, argv, 1, 100);
	unsigned long n = prog_arg(argc, argv, 2, 1000);
	unsigned long fork_at = prog_arg(argc, argv, 3, 0);
	void **temps = calloc(n ? n : 1, sizeof(*temps));
	void *weights, *grad = NULL;

	stream_count = prog_arg(argc, argv, 4, 0);
	streams = calloc(stream_count ? stream_count : 1, sizeof(*streams));
	if (!temps || !streams)
		return 1;
	for (unsigned long i = 0; i < stream_count; i++)
		CHECK_CUDA(cudaStreamCreate(&streams[i]));
	printf("parent %d\n", (int)getpid());
	fflush(stdout);
	CHECK_CUDA(cudaMalloc(&weights, 1 << 20));
	for (unsigned long step = 0; step < steps; step++) {
		if (stream_count)
			stream_now = step % stream_count;
		for (unsigned long i = 0; i < n; i++) {
			temps[i] = sites[i % 8](512 * (1 + i % 8) + 64 * (i % 3));
			/* Some die at once, the rest at the step's end. */
			if (i % 4 == 3) {
				CHECK_CUDA(cudaFree(temps[i]));
				temps[i] = NULL;
			}
		}
		if (fork_at && step == fork_at) {
			pid_t child = fork();
			int status;

			if (child < 0)
				return 1;
			if (child == 0) {
				printf("child %d\n", (int)getpid());
				fflush(stdout);
			} else if (waitpid(child, &status, 0) != child ||
				   !WIFEXITED(status) || WEXITSTATUS(status)) {
				return 1;
			}
		}
		if (grad)
			CHECK_CUDA(cudaFree(grad));
		grad = gradient();
		for (unsigned long k = 0; k < n; k++) {
			unsigned long i = (k * 7919) % n;

			if (temps[i])
				CHECK_CUDA(cudaFree(temps[i]));
			temps[i] = NULL;
		}
		for (unsigned long i = 0; i < n; i++)
			if (temps[i])
				CHECK_CUDA(cudaFree(temps[i]));
		leak_one();
		leakwatch_mark_step();
	}
	CHECK_CUDA(cudaFree(grad));
	CHECK_CUDA(cudaFree(weights));
	for (unsigned long i = 0; i < stream_count; i++)
		CHECK_CUDA(cudaStreamDestroy(streams[i]));
	free(streams);
	free(temps);
	return 0;
}
