/* SPDX-License-Identifier: MIT */
/*
 * bench-malloc DEPTH PAIRS: the heaptrack side of the comparison, the same
 * loop as bench-hooks with malloc+free instead of cudaMalloc+cudaFree;
 * prints ns of the thread's CPU time per pair.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs;
static void *volatile sink;

__attribute__((noinline)) static int descend(int depth)
{
	if (depth > 0) {
		int r = descend(depth - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return r;
	}
	for (long i = 0; i < pairs; i++) {
		void *p = malloc(256 + (size_t)(i & 7) * 64);
		if (!p)
			return 1;
		sink = p;
		free(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec a, b;

	if (argc != 3) {
		fprintf(stderr, "usage: bench-malloc DEPTH PAIRS\n");
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
	printf("ns-per-pair %.1f\n", ns);
	return failed;
}
