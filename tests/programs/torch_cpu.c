/* SPDX-License-Identifier: MIT */
/*
 * libtorch_cpu.so: a stand-in for PyTorch's autograd engine, as much of it
 * as leakwatch's backward attribution relies on (interpose/python/backward.c).
 * torch_cpu_run_backward() runs a "graph task" on a worker thread, through
 * a function exported under the mangled name of
 * torch::autograd::Engine::thread_main, which allocates count blocks of
 * size bytes from the stand-in caching allocator (c10_cuda.c) and keeps
 * them (a gradient kept every step); the calling thread waits for it, as
 * PyTorch's does for CUDA tensors. Called from Python through ctypes,
 * which releases the GIL, as PyTorch's bindings do.
 */
#include <pthread.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

void *c10_cuda_alloc(size_t size);

struct graph_task {
	size_t size;
	int count;
	int failed;
};

EXPORT void _ZN5torch8autograd6Engine11thread_mainERKSt10shared_ptrINS0_9GraphTaskEE(
	struct graph_task *task);
EXPORT int torch_cpu_run_backward(size_t size, int count);

/* What backward made and the program keeps. */
static void *kept[100000];
static int kept_count;

__attribute__((noinline)) static void *evaluate_function(size_t size)
{
	void *grad = c10_cuda_alloc(size);

	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return grad;
}

void _ZN5torch8autograd6Engine11thread_mainERKSt10shared_ptrINS0_9GraphTaskEE(
	struct graph_task *task)
{
	for (int i = 0; i < task->count; i++) {
		void *grad = evaluate_function(task->size);

		if (!grad || kept_count == 100000)
			task->failed = 1;
		else
			kept[kept_count++] = grad;
	}
	__asm__ volatile("" ::: "memory");
}

static void *device_thread(void *arg)
{
	_ZN5torch8autograd6Engine11thread_mainERKSt10shared_ptrINS0_9GraphTaskEE(
		arg);
	return NULL;
}

int torch_cpu_run_backward(size_t size, int count)
{
	struct graph_task task = { size, count, 0 };
	pthread_t thread;

	if (pthread_create(&thread, NULL, device_thread, &task) != 0)
		return -1;
	pthread_join(thread, NULL);
	return task.failed ? -1 : 0;
}
