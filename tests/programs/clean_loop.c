/* SPDX-License-Identifier: MIT */
/*
 * clean_loop [iterations]: leaky_loop without the leak (default 100
 * iterations). Exactly one 64 KiB buffer, from keep_until_exit(), is still
 * held at exit on purpose: what a leak-free program really holds.
 */
#include <stddef.h>

#include <leakwatch.h>

#include "prog-common.h"

#define WEIGHTS_BYTES ((size_t)1 << 20)
#define KEPT_BYTES ((size_t)64 << 10)

void *load_weights(void);
void forward_step(unsigned long iteration);
void *keep_until_exit(void);
void free_weights(void *weights);

void *load_weights(void)
{
	void *weights;

	CHECK_CUDA(cudaMalloc(&weights, WEIGHTS_BYTES));
	CHECK_CUDA(cudaMemset(weights, 0, WEIGHTS_BYTES));
	return weights;
}

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

/* Held until the process exits, by design (a cache, say): not a leak. */
void *keep_until_exit(void)
{
	void *buffer;

	CHECK_CUDA(cudaMalloc(&buffer, KEPT_BYTES));
	return buffer;
}

void free_weights(void *weights)
{
	CHECK_CUDA(cudaFree(weights));
}

int main(int argc, char **argv)
{
	unsigned long iterations = prog_arg(argc, argv, 1, 100);
	unsigned long iteration;
	void *weights, *kept;

	kept = keep_until_exit();
	weights = load_weights();
	for (iteration = 0; iteration < iterations; iteration++) {
		forward_step(iteration);
		leakwatch_mark_step();
	}
	free_weights(weights);
	CHECK_CUDA(cudaMemset(kept, 0, KEPT_BYTES));
	return 0;
}
