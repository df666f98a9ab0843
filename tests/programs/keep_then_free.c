/* SPDX-License-Identifier: MIT */
/*
 * keep_then_free [iterations] [bytes]: a training-like loop that keeps one
 * buffer of bytes per iteration (default 4096 bytes, 100 iterations), with
 * a large per-step workspace, marks a step after each, and frees every kept
 * buffer after the loop: teardown, not memory lingering from step to step.
 */
#include <stdlib.h>

#include <leakwatch.h>

#include "prog-common.h"

void *keep_one_buffer(size_t bytes);
void use_workspace(void);
void free_kept(void **kept, unsigned long count);

void *keep_one_buffer(size_t bytes)
{
	void *buffer;

	CHECK_CUDA(cudaMalloc(&buffer, bytes));
	return buffer;
}

/* The step's peak: a workspace freed within the step. */
void use_workspace(void)
{
	void *workspace;

	CHECK_CUDA(cudaMalloc(&workspace, 1 << 20));
	CHECK_CUDA(cudaFree(workspace));
}

void free_kept(void **kept, unsigned long count)
{
	for (unsigned long i = 0; i < count; i++)
		CHECK_CUDA(cudaFree(kept[i]));
}

int main(int argc, char **argv)
{
	unsigned long iterations = prog_arg(argc, argv, 1, 100);
	size_t bytes = prog_arg(argc, argv, 2, 4096);
	void **kept = calloc(iterations ? iterations : 1, sizeof(*kept));

	if (!kept)
		return 1;
	for (unsigned long i = 0; i < iterations; i++) {
		kept[i] = keep_one_buffer(bytes);
		use_workspace();
		leakwatch_mark_step();
	}
	free_kept(kept, iterations);
	free(kept);
	return 0;
}
