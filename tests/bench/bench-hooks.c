/* SPDX-License-Identifier: MIT */
/*
 * bench-hooks DEPTH PAIRS: cudaMalloc+cudaFree pairs made DEPTH native
 * frames down, on whatever runtime is loaded; prints ns per pair. Run with
 * and without LD_PRELOAD=libleakwatch.so by bench-hooks.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

static long pairs;

__attribute__((noinline)) static int descend(int depth)
{
	if (depth > 0) {
		int r = descend(depth - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return r;
	}
	for (long i = 0; i < pairs; i++) {
		void *p;
		if (cudaMalloc(&p, 256 + (size_t)(i & 7) * 64) != cudaSuccess ||
		    cudaFree(p) != cudaSuccess)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec a, b;

	if (argc != 3) {
		fprintf(stderr, "usage: bench-hooks DEPTH PAIRS\n");
		return 2;
	}
	int depth = atoi(argv[1]);
	pairs = atol(argv[2]);
	if (depth < 0 || pairs <= 0)
		return 2;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	int failed = descend(depth);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 +
		     (double)(b.tv_nsec - a.tv_nsec)) / (double)pairs;
	printf("%.1f\n", ns);
	return failed;
}
