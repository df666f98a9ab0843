/* SPDX-License-Identifier: MIT */
/*
 * bench-week STEP_FILE STEPS [LEAK_EVERY]: replays one recorded training
 * step (bench-week-record.py: its allocations and frees, sizes and sites)
 * STEPS times on whatever CUDA runtime is loaded, marks a step after each
 * (leakwatch_step(), when the shim is loaded), and keeps one 512-byte block
 * every LEAK_EVERY steps (default 100), made by leak_small() and never
 * freed: a slow leak, at its own line. Each site of the recording
 * allocates through a call stack of its own: eight frames that spell its
 * number in binary.
 *
 * Prints "rss STEP BYTES" (the process's resident memory) after steps
 * 1000, 10000, 100000 and the last, and "seconds S", the loop's CPU time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "leakwatch.h"

#define SITE_BITS 8
#define LEAK_BYTES 512

struct op {
	char what;	/* 'a', 'f' (of this step) or 'p' (of the step before) */
	unsigned slot;
	unsigned site;
	size_t size;
};

static void die(const char *what)
{
	fprintf(stderr, "bench-week: %s\n", what);
	exit(1);
}

int via_zero(unsigned site, unsigned bit, size_t size, void **out);
void leak_small(void);
int via_one(unsigned site, unsigned bit, size_t size, void **out);

/* Each frame function counts its calls: no two are alike, and none is
 * folded into the other. */
static volatile unsigned long zeros, ones;

/* Allocates from the call stack of site: one frame per bit. */
static int alloc_at(unsigned site, unsigned bit, size_t size, void **out)
{
	if (bit == SITE_BITS)
		return cudaMalloc(out, size) != cudaSuccess;
	return (site >> bit) & 1 ? via_one(site, bit + 1, size, out)
				 : via_zero(site, bit + 1, size, out);
}

__attribute__((noinline)) int via_zero(unsigned site, unsigned bit,
				       size_t size, void **out)
{
	int rc = alloc_at(site, bit, size, out);

	zeros++; /* and not a tail call */
	return rc;
}

__attribute__((noinline)) int via_one(unsigned site, unsigned bit,
				      size_t size, void **out)
{
	int rc = alloc_at(site, bit, size, out);

	ones++;
	return rc;
}

/* The leak under test: a small block kept, never freed. */
__attribute__((noinline)) void leak_small(void)
{
	void *p;

	if (cudaMalloc(&p, LEAK_BYTES) != cudaSuccess) /* @leak */
		die("cudaMalloc failed");
}

static struct op *read_step(const char *path, size_t *count, unsigned *slots)
{
	FILE *f = fopen(path, "r");
	char line[256];
	struct op *ops = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		die("cannot open the recorded step");
	*slots = 0;
	while (fgets(line, sizeof(line), f)) {
		struct op op = { 0 };
		unsigned long size = 0;

		if (line[0] == '#' || strncmp(line, "sites", 5) == 0)
			continue;
		if (sscanf(line, "%c %u %lu %u", &op.what, &op.slot, &size,
			   &op.site) < 2 || !strchr("afp", op.what))
			die("a line of the recorded step does not parse");
		op.size = size;
		if (op.what == 'a' && (op.site >= 1u << SITE_BITS || !size))
			die("a site or size out of range");
		if (op.slot + 1 > *slots)
			*slots = op.slot + 1;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			ops = realloc(ops, cap * sizeof(*ops));
			if (!ops)
				die("out of memory");
		}
		ops[n++] = op;
	}
	fclose(f);
	*count = n;
	return ops;
}

static long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, resident = 0;

	if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	if (f)
		fclose(f);
	return resident * 4096;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	unsigned long steps, every;
	unsigned slots;
	size_t count;
	struct op *ops;
	void **cur, **prev, **swap;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s STEP_FILE STEPS [LEAK_EVERY]\n",
			argv[0]);
		return 2;
	}
	ops = read_step(argv[1], &count, &slots);
	steps = strtoul(argv[2], NULL, 10);
	every = argc == 4 ? strtoul(argv[3], NULL, 10) : 100;
	cur = calloc(slots, sizeof(*cur));
	prev = calloc(slots, sizeof(*prev));
	if (!cur || !prev || !every)
		die("bad arguments");
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (unsigned long t = 1; t <= steps; t++) {
		swap = prev;
		prev = cur;
		cur = swap;
		for (size_t i = 0; i < count; i++) {
			const struct op *op = &ops[i];
			void **p = op->what == 'p' ? &prev[op->slot]
						   : &cur[op->slot];

			if (op->what == 'a') {
				if (alloc_at(op->site, 0, op->size, p))
					die("cudaMalloc failed");
			} else if (*p) {
				if (cudaFree(*p) != cudaSuccess)
					die("cudaFree failed");
				*p = NULL;
			}
		}
		if (t % every == 0)
			leak_small();
		leakwatch_mark_step();
		if (t == 1000 || t == 10000 || t == 100000 || t == steps)
			printf("rss %lu %ld\n", t, rss_bytes());
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	printf("seconds %.3f\n", (double)(b.tv_sec - a.tv_sec) +
				    (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	free(ops);
	free(cur);
	free(prev);
	return 0;
}
