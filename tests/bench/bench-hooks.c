/* SPDX-License-Identifier: MIT */
/*
 * bench-hooks DEPTH PAIRS [STEP_EVERY]: cudaMalloc+cudaFree pairs made DEPTH
 * native frames down, on whatever runtime is loaded, a training step marked
 * every STEP_EVERY pairs (leakwatch_step(), when the shim is loaded; never
 * by default); prints "ns-per-pair N", the thread's CPU time per pair. Run
 * with and without LD_PRELOAD=libleakwatch.so by bench-hooks.py and
 * bench-all.py.
 *
 * Built a second time with LW_BENCH_MALLOC as bench-malloc: the same loop
 * with malloc+free, the heaptrack side of the comparison.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef LW_BENCH_MALLOC
#include <cuda_runtime_api.h>

#include "leakwatch.h"
#endif

static long pairs, step_every;
#ifdef LW_BENCH_MALLOC
static void *volatile sink;

/* One pair; nonzero on failure. */
static int pair(size_t size)
{
	void *p = malloc(size);

	if (!p)
		return 1;
	sink = p;
	free(p);
	return 0;
}
#else
static int pair(size_t size)
{
	void *p;

	return cudaMalloc(&p, size) != cudaSuccess || cudaFree(p) != cudaSuccess;
}
#endif

__attribute__((noinline)) static int descend(int depth)
{
	if (depth > 0) {
		int r = descend(depth - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return r;
	}
	for (long i = 0; i < pairs; i++) {
		if (pair(256 + (size_t)(i & 7) * 64))
			return 1;
#ifndef LW_BENCH_MALLOC
		if (step_every && i % step_every == step_every - 1)
			leakwatch_mark_step();
#endif
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec a, b;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s DEPTH PAIRS [STEP_EVERY]\n", argv[0]);
		return 2;
	}
	int depth = atoi(argv[1]);
	pairs = atol(argv[2]);
	step_every = argc == 4 ? atol(argv[3]) : 0;
	if (depth < 0 || pairs <= 0 || step_every < 0)
		return 2;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	int failed = descend(depth);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 +
		     (double)(b.tv_nsec - a.tv_nsec)) / (double)pairs;
	printf("ns-per-pair %.1f\n", ns);
	return failed;
}
