/* SPDX-License-Identifier: MIT */
/*
 * torch_steps MODE STEPS: a training loop on the stand-in PyTorch allocator
 * (c10_cuda.c), marking its steps, in one of these modes:
 *   leak      each step keeps its 512-byte loss (the torchtitan case);
 *   clean     the same, with the loss freed;
 *   fragment  each step makes and frees one activation larger than any
 *             before: the cache grows, the tensors do not;
 *   oom       keeps 1 MiB tensors until the allocator runs out of memory.
 * At the end it prints the allocator's counters, as
 * torch.cuda.memory_allocated() and memory_reserved() would, and what the
 * stand-in libc10's profiler hook was told:
 *   allocated=N reserved=N peak_allocated=N peak_reserved=N
 *   hook_calls=N hook_bytes=N hook_ooms=N
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leakwatch.h"

void *c10_cuda_alloc(size_t size);
void c10_cuda_free(void *ptr);
void c10_cuda_empty_cache(void);
void c10_cuda_memory(uint64_t *allocated, uint64_t *reserved);
void c10_profiler_seen(uint64_t *calls, int64_t *bytes, uint64_t *ooms);

static void *losses[100000];
static uint64_t peak_allocated, peak_reserved;

static void note_peak(void)
{
	uint64_t allocated, reserved;

	c10_cuda_memory(&allocated, &reserved);
	if (allocated > peak_allocated)
		peak_allocated = allocated;
	if (reserved > peak_reserved)
		peak_reserved = reserved;
}

static void *loss_of(void *activations)
{
	(void)activations;
	return c10_cuda_alloc(512);
}

static void forward_backward(int step, int keep)
{
	void *hidden = c10_cuda_alloc(300000);
	void *logits = c10_cuda_alloc(3u << 20);
	void *loss = loss_of(logits);

	note_peak();
	c10_cuda_free(logits);
	c10_cuda_free(hidden);
	if (keep)
		losses[step] = loss;
	else
		c10_cuda_free(loss);
}

static void grow_cache(int step)
{
	void *activation = c10_cuda_alloc((10u << 20) + (size_t)step * (2u << 20));

	note_peak();
	c10_cuda_free(activation);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "leak";
	int steps = argc > 2 ? atoi(argv[2]) : 20;
	uint64_t allocated, reserved, calls, ooms;
	int64_t bytes;
	void *weights = c10_cuda_alloc(4096);

	if (steps < 0 || steps > 100000 || !weights)
		return 2;
	for (int step = 0; step < steps; step++) {
		if (strcmp(mode, "fragment") == 0)
			grow_cache(step);
		else if (strcmp(mode, "oom") == 0)
			while (c10_cuda_alloc(1u << 20))
				;
		else
			forward_backward(step, strcmp(mode, "leak") == 0);
		leakwatch_mark_step();
		if (strcmp(mode, "oom") == 0)
			break;
	}
	c10_cuda_memory(&allocated, &reserved);
	c10_profiler_seen(&calls, &bytes, &ooms);
	printf("allocated=%llu reserved=%llu peak_allocated=%llu "
	       "peak_reserved=%llu\nhook_calls=%llu hook_bytes=%lld "
	       "hook_ooms=%llu\n",
	       (unsigned long long)allocated, (unsigned long long)reserved,
	       (unsigned long long)peak_allocated,
	       (unsigned long long)peak_reserved, (unsigned long long)calls,
	       (long long)bytes, (unsigned long long)ooms);
	return 0;
}
