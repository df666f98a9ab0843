/* SPDX-License-Identifier: MIT */
/*
 * threads [nthreads] [iterations]: each of nthreads threads (default 8)
 * allocates iterations times (default 20000) with pseudo-random sizes,
 * keeping up to 16 buffers live and freeing them in scrambled order; then
 * thread i leaks exactly i + 1 buffers of 1000 bytes from thread_leak().
 * Prints "expected_live_count N expected_live_bytes B" at the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "prog-common.h"

#define MAX_LIVE 16
#define MAX_THREADS 1024
#define LEAK_BYTES 1000

struct worker {
	pthread_t thread;
	unsigned int index;
	unsigned long iterations;
};

void churn(struct worker *worker);
void thread_leak(unsigned int index);

static unsigned int next_random(unsigned int *state)
{
	*state = *state * 1664525u + 1013904223u;
	return *state >> 8;
}

/* Allocates and frees; leaves nothing live. */
void churn(struct worker *worker)
{
	unsigned int state = 0x9e3779b9u * (worker->index + 1);
	void *live[MAX_LIVE];
	unsigned int count = 0;
	unsigned int victim;
	unsigned long i;

	for (i = 0; i < worker->iterations; i++) {
		size_t bytes = 1 + next_random(&state) % 65536;

		CHECK_CUDA(cudaMalloc(&live[count++], bytes));
		while (count == MAX_LIVE || (count && next_random(&state) % 4 == 0)) {
			victim = next_random(&state) % count;
			CHECK_CUDA(cudaFree(live[victim]));
			live[victim] = live[--count];
		}
	}
	while (count) {
		victim = next_random(&state) % count;
		CHECK_CUDA(cudaFree(live[victim]));
		live[victim] = live[--count];
	}
}

/* The leak under test: index + 1 buffers, dropped. */
void thread_leak(unsigned int index)
{
	unsigned int i;
	void *buffer;

	for (i = 0; i <= index; i++)
		CHECK_CUDA(cudaMalloc(&buffer, LEAK_BYTES));
}

static void *thread_main(void *arg)
{
	struct worker *worker = arg;

	churn(worker);
	thread_leak(worker->index);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	unsigned long nthreads = prog_arg(argc, argv, 1, 8);
	unsigned long iterations = prog_arg(argc, argv, 2, 20000);
	unsigned long count = 0;
	unsigned long i;
	int err;

	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "threads: nthreads must be 1 to %d\n", MAX_THREADS);
		return 2;
	}
	for (i = 0; i < nthreads; i++) {
		workers[i].index = (unsigned int)i;
		workers[i].iterations = iterations;
		err = pthread_create(&workers[i].thread, NULL, thread_main, &workers[i]);
		if (err) {
			fprintf(stderr, "threads: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		count += i + 1;
	}
	printf("expected_live_count %lu expected_live_bytes %lu\n", count,
	       count * LEAK_BYTES);
	return 0;
}
