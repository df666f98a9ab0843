/* SPDX-License-Identifier: MIT */
#include "tinytensor.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#define TT_EXPORT __attribute__((visibility("default")))

/* Buffers tt_native_leak() keeps: enough for any test, checked. */
#define NATIVE_MAX_BUFFERS 4096

/* The allocation sites the tests look for, exported so that every
 * symbolizer names them. Not part of the API. */
int native_keep_buffers(unsigned count, size_t nbytes);
int locked_region_alloc(size_t nbytes, void **out);

TT_EXPORT int tt_alloc(size_t nbytes, void **out)
{
	return (int)cudaMalloc(out, nbytes);
}

TT_EXPORT int tt_free(void *p)
{
	return (int)cudaFree(p);
}

TT_EXPORT int tt_fill(void *p, size_t n, float v)
{
	float *dst = p;

	for (size_t i = 0; i < n; i++)
		dst[i] = v;
	return 0;
}

TT_EXPORT int tt_add(const void *a, const void *b, void *out, size_t n)
{
	const float *x = a, *y = b;
	float *dst = out;

	for (size_t i = 0; i < n; i++)
		dst[i] = x[i] + y[i];
	return 0;
}

TT_EXPORT int tt_mul(const void *a, const void *b, void *out, size_t n)
{
	const float *x = a, *y = b;
	float *dst = out;

	for (size_t i = 0; i < n; i++)
		dst[i] = x[i] * y[i];
	return 0;
}

TT_EXPORT int tt_axpb(const void *a, float alpha, float beta, void *out,
		      size_t n)
{
	const float *x = a;
	float *dst = out;

	for (size_t i = 0; i < n; i++)
		dst[i] = x[i] * alpha + beta;
	return 0;
}

TT_EXPORT int tt_axpy(void *y, float alpha, const void *x, size_t n)
{
	const float *src = x;
	float *dst = y;

	for (size_t i = 0; i < n; i++)
		dst[i] += alpha * src[i];
	return 0;
}

TT_EXPORT int tt_sum(const void *a, size_t n, float *out)
{
	const float *x = a;
	double total = 0;

	for (size_t i = 0; i < n; i++)
		total += x[i];
	*out = (float)total;
	return 0;
}

TT_EXPORT int tt_copy(void *dst, const void *src, size_t nbytes)
{
	return (int)cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToDevice);
}

TT_EXPORT int tt_read(const void *src, size_t n, float *host)
{
	if (n > SIZE_MAX / sizeof(float))
		return (int)cudaErrorInvalidValue;
	return (int)cudaMemcpy(host, src, n * sizeof(float),
			       cudaMemcpyDeviceToHost);
}

TT_EXPORT int tt_write(void *dst, const float *host, size_t n)
{
	if (n > SIZE_MAX / sizeof(float))
		return (int)cudaErrorInvalidValue;
	return (int)cudaMemcpy(dst, host, n * sizeof(float),
			       cudaMemcpyHostToDevice);
}

/* ---- allocations on a thread that has no Python frames ---- */

static pthread_mutex_t native_lock = PTHREAD_MUTEX_INITIALIZER;
static void *native_buffers[NATIVE_MAX_BUFFERS];
static unsigned native_count;

struct native_job {
	unsigned count;
	size_t nbytes;
	int result;
};

/* Runs on the native thread: the site the native-thread test looks for. */
TT_EXPORT int native_keep_buffers(unsigned count, size_t nbytes)
{
	for (unsigned i = 0; i < count; i++) {
		void *p;
		int err = (int)cudaMalloc(&p, nbytes);

		if (err)
			return err;
		pthread_mutex_lock(&native_lock);
		native_buffers[native_count++] = p;
		pthread_mutex_unlock(&native_lock);
	}
	return 0;
}

static void *native_worker(void *arg)
{
	struct native_job *job = arg;

	job->result = native_keep_buffers(job->count, job->nbytes);
	return NULL;
}

TT_EXPORT int tt_native_leak(unsigned count, size_t nbytes)
{
	struct native_job job = { count, nbytes, 0 };
	pthread_t thread;
	int err;

	pthread_mutex_lock(&native_lock);
	err = count > NATIVE_MAX_BUFFERS - native_count ? EINVAL : 0;
	pthread_mutex_unlock(&native_lock);
	if (err)
		return err;
	err = pthread_create(&thread, NULL, native_worker, &job);
	if (err)
		return err;
	pthread_join(thread, NULL);
	return job.result;
}

TT_EXPORT int tt_native_release(void)
{
	int freed = 0;

	pthread_mutex_lock(&native_lock);
	while (native_count) {
		cudaFree(native_buffers[--native_count]);
		freed++;
	}
	pthread_mutex_unlock(&native_lock);
	return freed;
}

/* ---- the GIL deadlock proof ---- */

/* L: held by thread B around its cudaMalloc. */
static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;

/* Orders A and B; never held while waiting for L. */
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t order_cond = PTHREAD_COND_INITIALIZER;
static int b_inside;  /* B holds L */
static int a_waiting; /* A is inside tt_lock_wait() */

struct locked_job {
	pthread_t thread;
	size_t nbytes;
	void *buffer;
	int result;
	int running;
};

static struct locked_job locked_job;

/* The allocation made while L is held: the site the test looks for. */
TT_EXPORT int locked_region_alloc(size_t nbytes, void **out)
{
	return (int)cudaMalloc(out, nbytes);
}

TT_EXPORT int tt_locked_alloc(size_t nbytes, void **out)
{
	int err;

	pthread_mutex_lock(&region_lock);
	pthread_mutex_lock(&order_lock);
	b_inside = 1;
	pthread_cond_broadcast(&order_cond);
	while (!a_waiting)
		pthread_cond_wait(&order_cond, &order_lock);
	pthread_mutex_unlock(&order_lock);
	/* A holds the GIL now and is on its way to block on L. */
	err = locked_region_alloc(nbytes, out);
	pthread_mutex_unlock(&region_lock);
	return err;
}

static void *locked_worker(void *arg)
{
	struct locked_job *job = arg;

	job->result = tt_locked_alloc(job->nbytes, &job->buffer);
	return NULL;
}

TT_EXPORT int tt_locked_alloc_start(size_t nbytes)
{
	int err;

	if (locked_job.running)
		return EBUSY;
	locked_job.nbytes = nbytes;
	locked_job.buffer = NULL;
	locked_job.result = 0;
	err = pthread_create(&locked_job.thread, NULL, locked_worker,
			     &locked_job);
	if (!err)
		locked_job.running = 1;
	return err;
}

TT_EXPORT int tt_locked_alloc_join(void **out)
{
	if (!locked_job.running)
		return EINVAL;
	pthread_join(locked_job.thread, NULL);
	locked_job.running = 0;
	*out = locked_job.buffer;
	return locked_job.result;
}

TT_EXPORT int tt_lock_wait(void)
{
	pthread_mutex_lock(&order_lock);
	while (!b_inside)
		pthread_cond_wait(&order_cond, &order_lock);
	a_waiting = 1;
	pthread_cond_broadcast(&order_cond);
	pthread_mutex_unlock(&order_lock);
	/* Blocks until B has allocated: with the GIL held, under PyDLL. */
	pthread_mutex_lock(&region_lock);
	pthread_mutex_unlock(&region_lock);
	pthread_mutex_lock(&order_lock);
	b_inside = 0;
	a_waiting = 0;
	pthread_mutex_unlock(&order_lock);
	return 0;
}

/*
 * A library workspace, as cuBLAS keeps one: allocated at first use, grown
 * when a larger one is needed, kept for reuse until the process ends.
 */
static void *workspace;
static size_t workspace_size;

TT_EXPORT int tt_workspace(size_t nbytes, void **out)
{
	if (nbytes > workspace_size) {
		void *p;
		int rc = (int)cudaMalloc(&p, nbytes);

		if (rc != 0)
			return rc;
		if (workspace)
			cudaFree(workspace);
		workspace = p;
		workspace_size = nbytes;
	}
	*out = workspace;
	return 0;
}
