/* SPDX-License-Identifier: MIT */
/*
 * bench-footprint live N | stacks N: what the process's resident memory
 * grows by while it holds N live cudaMalloc allocations made from one
 * stack, or while it allocates and frees once from each of N distinct
 * stacks (all at the same depth). Run with and without the shim: the
 * difference is the shim's. Prints the growth in bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static long resident_bytes(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = atol(line + 6);
	fclose(f);
	return kb * 1024;
}

/* Eight functions, each its own call site: a path through LEVELS of them,
 * chosen by the digits of code in base 8, is a distinct stack. */
#define LEVELS 6
static int step(int level, unsigned code);

#define VIA(i)                                                                \
	__attribute__((noinline)) static int via##i(int level, unsigned code) \
	{                                                                     \
		int r = step(level, code);                                    \
		__asm__ volatile("" ::: "memory");                            \
		return r + (i);                                               \
	}
VIA(0) VIA(1) VIA(2) VIA(3) VIA(4) VIA(5) VIA(6) VIA(7)

static int (*const vias[8])(int, unsigned) = {
	via0, via1, via2, via3, via4, via5, via6, via7,
};

__attribute__((noinline)) static int step(int level, unsigned code)
{
	if (level == 0) {
		void *p;
		if (cudaMalloc(&p, 256) != cudaSuccess || cudaFree(p) != cudaSuccess)
			return -1000;
		return 0;
	}
	return vias[code & 7](level - 1, code >> 3);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bench-footprint live|stacks N\n");
		return 2;
	}
	long n = atol(argv[2]);
	if (n <= 0)
		return 2;
	if (strcmp(argv[1], "stacks") == 0 && n > (1l << (3 * LEVELS))) {
		fprintf(stderr, "bench-footprint: at most %ld stacks\n",
			1l << (3 * LEVELS));
		return 2;
	}
	void *warm;
	cudaMalloc(&warm, 256); /* the runtime and the shim started */
	cudaFree(warm);
	long before = resident_bytes();
	if (strcmp(argv[1], "live") == 0) {
		void **live = calloc((size_t)n, sizeof(*live));
		if (!live)
			return 1;
		long after;
		for (long i = 0; i < n; i++)
			if (cudaMalloc(&live[i], 256) != cudaSuccess)
				return 1;
		after = resident_bytes();
		for (long i = 0; i < n; i++)
			cudaFree(live[i]);
		/* The pointer array is the program's, not the shim's. */
		printf("%ld\n", after - before - n * (long)sizeof(*live));
		free(live);
		return 0;
	}
	if (strcmp(argv[1], "stacks") == 0) {
		for (long i = 0; i < n; i++)
			if (step(LEVELS, (unsigned)i) < 0)
				return 1;
		printf("%ld\n", resident_bytes() - before);
		return 0;
	}
	fprintf(stderr, "bench-footprint: live or stacks, not %s\n", argv[1]);
	return 2;
}
