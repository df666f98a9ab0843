/* SPDX-License-Identifier: MIT */
/*
 * unchecked_loop [iterations] [bytes] [mark]: a training-like loop that
 * uses a scratch buffer and keeps one buffer of bytes per iteration, and
 * never looks at what cudaMalloc returned, as careless programs do (two
 * allocations per iteration, so that its steps can be inferred from the
 * trace); marks a step after each
 * iteration unless mark is 0. Run with FAKECUDA_CAPACITY=0, every
 * allocation fails and the program still exits 0.
 */
#include <stddef.h>

#include <leakwatch.h>

#include "prog-common.h"

void use_scratch(void);
void keep_one_buffer(size_t bytes);

void use_scratch(void)
{
	void *scratch;

	if (cudaMalloc(&scratch, 4096) == cudaSuccess)
		(void)cudaFree(scratch);
}

void keep_one_buffer(size_t bytes)
{
	void *buffer;

	(void)cudaMalloc(&buffer, bytes);
}

int main(int argc, char **argv)
{
	unsigned long iterations = prog_arg(argc, argv, 1, 50);
	size_t bytes = prog_arg(argc, argv, 2, 1024);
	unsigned long mark = prog_arg(argc, argv, 3, 1);

	for (unsigned long i = 0; i < iterations; i++) {
		use_scratch();
		keep_one_buffer(bytes);
		if (mark)
			leakwatch_mark_step();
	}
	return 0;
}
