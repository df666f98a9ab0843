/* SPDX-License-Identifier: MIT */
/*
 * The self-test's concurrency checks: many threads allocating at once, and
 * fork() while another thread is inside the runtime.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "selftest.h"

#define MIB ((size_t)1 << 20)

struct worker {
	pthread_t thread;
	unsigned int seed;
	int iterations;
	int failed;
};

static unsigned int next_random(unsigned int *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

static void *churn(void *arg)
{
	struct worker *worker = arg;
	void *live[8];
	int count = 0;
	int i;

	for (i = 0; i < worker->iterations; i++) {
		if (count == 8 || (count && next_random(&worker->seed) % 3 == 0)) {
			int victim = (int)(next_random(&worker->seed) % (unsigned int)count);

			worker->failed |= cudaFree(live[victim]) != cudaSuccess;
			live[victim] = live[--count];
		} else {
			size_t size = 1 + next_random(&worker->seed) % 4096;

			worker->failed |= cudaMalloc(&live[count++], size) != cudaSuccess;
		}
	}
	while (count)
		worker->failed |= cudaFree(live[--count]) != cudaSuccess;
	return NULL;
}

void selftest_threads(void)
{
	struct worker workers[8];
	int i;

	for (i = 0; i < 8; i++) {
		workers[i] = (struct worker){ .seed = (unsigned int)i + 1, .iterations = 5000 };
		CHECK(pthread_create(&workers[i].thread, NULL, churn, &workers[i]) == 0);
	}
	for (i = 0; i < 8; i++) {
		CHECK(pthread_join(workers[i].thread, NULL) == 0);
		CHECK(!workers[i].failed);
	}
	CHECK(selftest_device_free_bytes() == MIB);
}

static atomic_int stop_churning;

static void *churn_until_stopped(void *arg)
{
	void *ptr;

	while (!atomic_load(&stop_churning)) {
		if (cudaMalloc(&ptr, 64) == cudaSuccess)
			cudaFree(ptr);
	}
	return NULL;
}

/* A child forked while another thread is inside the runtime can use it. */
void selftest_fork(void)
{
	pthread_t thread;
	void *inherited;
	int i, status;
	pid_t pid;

	CHECK_ERR(cudaMalloc(&inherited, 100), cudaSuccess);
	CHECK(pthread_create(&thread, NULL, churn_until_stopped, NULL) == 0);
	for (i = 0; i < 20; i++) {
		pid = fork();
		if (pid == 0) {
			void *ptr;
			int ok = cudaMalloc(&ptr, 10) == cudaSuccess && cudaFree(ptr) == cudaSuccess &&
				 cudaFree(inherited) == cudaSuccess;

			_exit(ok ? 0 : 1);
		}
		CHECK(pid > 0);
		if (pid < 0)
			break;
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0);
	}
	atomic_store(&stop_churning, 1);
	CHECK(pthread_join(thread, NULL) == 0);
	CHECK_ERR(cudaFree(inherited), cudaSuccess);
	CHECK(selftest_device_free_bytes() == MIB);
}
