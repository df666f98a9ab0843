/* SPDX-License-Identifier: MIT */
/*
 * leaky_loop [iterations] [bytes]: a training-like loop that leaks exactly
 * one buffer of bytes (default 4096) per iteration (default 100), from
 * leak_one_buffer(). The weights and each step's temporaries are freed.
 */
#include <stddef.h>

#include <leakwatch.h>

#include "prog-common.h"

#define WEIGHTS_BYTES ((size_t)1 << 20)

void *load_weights(void);
void forward_step(unsigned long iteration);
void leak_one_buffer(size_t bytes);
void free_weights(void *weights);

/* Long-lived: allocated before the loop, freed after it. */
void *load_weights(void)
{
	void *weights;

	CHECK_CUDA(cudaMalloc(&weights, WEIGHTS_BYTES));
	CHECK_CUDA(cudaMemset(weights, 0, WEIGHTS_BYTES));
	return weights;
}

/* Activations and workspace: allocated and freed within the step. */
void forward_step(unsigned long iteration)
{
	size_t sizes[3] = { 8192, 12288 + (iteration % 4) * 256, 20480 };
	void *temporaries[3];
	size_t i;

	for (i = 0; i < 3; i++)
		CHECK_CUDA(cudaMalloc(&temporaries[i], sizes[i]));
	CHECK_CUDA(cudaMemset(temporaries[0], 1, sizes[0]));
	CHECK_CUDA(cudaFree(temporaries[1]));
	CHECK_CUDA(cudaFree(temporaries[0]));
	CHECK_CUDA(cudaFree(temporaries[2]));
}

/* The leak under test: the buffer is dropped, never freed. */
void leak_one_buffer(size_t bytes)
{
	void *buffer;

	CHECK_CUDA(cudaMalloc(&buffer, bytes));
}

void free_weights(void *weights)
{
	CHECK_CUDA(cudaFree(weights));
}

int main(int argc, char **argv)
{
	unsigned long iterations = prog_arg(argc, argv, 1, 100);
	size_t bytes = prog_arg(argc, argv, 2, 4096);
	unsigned long iteration;
	void *weights;

	weights = load_weights();
	for (iteration = 0; iteration < iterations; iteration++) {
		forward_step(iteration);
		leak_one_buffer(bytes);
		leakwatch_mark_step();
	}
	free_weights(weights);
	return 0;
}
