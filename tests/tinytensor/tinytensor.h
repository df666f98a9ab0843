/* SPDX-License-Identifier: MIT */
/*
 * libtinytensor.so: the native half of tinytensor, a tensor-like Python
 * library for tests (tinytensor.py is the Python half). Linked against the
 * CUDA runtime as torch's libraries are, so that its cudaMalloc and cudaFree
 * calls go through the PLT and reach an LD_PRELOADed shim. "Device" memory
 * is the stand-in runtime's host memory: the math below reads and writes it
 * directly, which a real GPU would not allow.
 *
 * Functions return 0 or a cudaError_t as an int; counts n are in floats.
 */
#ifndef TINYTENSOR_H
#define TINYTENSOR_H

#include <stddef.h>

/* cudaMalloc(out, nbytes). The caller owns *out; free it with tt_free(). */
int tt_alloc(size_t nbytes, void **out);

/* cudaFree(p). */
int tt_free(void *p);

/* p[i] = v for i < n. */
int tt_fill(void *p, size_t n, float v);

/* out[i] = a[i] + b[i]; out may be a or b. */
int tt_add(const void *a, const void *b, void *out, size_t n);

/* out[i] = a[i] * b[i]; out may be a or b. */
int tt_mul(const void *a, const void *b, void *out, size_t n);

/* out[i] = a[i] * alpha + beta; out may be a. */
int tt_axpb(const void *a, float alpha, float beta, void *out, size_t n);

/* y[i] += alpha * x[i]. */
int tt_axpy(void *y, float alpha, const void *x, size_t n);

/* *out = the sum of a[i] (a host pointer). */
int tt_sum(const void *a, size_t n, float *out);

/* cudaMemcpy(dst, src, nbytes, device to device). */
int tt_copy(void *dst, const void *src, size_t nbytes);

/* cudaMemcpy(host, src, n floats, device to host). */
int tt_read(const void *src, size_t n, float *host);

/* cudaMemcpy(dst, host, n floats, host to device). */
int tt_write(void *dst, const float *host, size_t n);

/*
 * A thread created here, with no Python frames, allocates count buffers of
 * nbytes from native_keep_buffers() and keeps them until tt_native_release();
 * tt_native_leak() returns once it has joined that thread. Returns 0, an
 * errno value from pthread_create, or the first failed call's error.
 */
int tt_native_leak(unsigned count, size_t nbytes);
/* A workspace kept for reuse (grown as needed), as cuBLAS keeps one. */
int tt_workspace(size_t nbytes, void **out);

/* Frees what tt_native_leak() kept; returns how many buffers it freed. */
int tt_native_release(void);

/*
 * The GIL deadlock proof. Mutex L is held by an allocating thread B while it
 * calls cudaMalloc; a thread A that holds the GIL waits for L. A shim that
 * takes the GIL inside cudaMalloc would wait for A, which waits for B.
 *
 * tt_locked_alloc(): thread B's part, on the calling thread: locks L, says
 * so, waits until tt_lock_wait() has begun, then allocates nbytes from
 * locked_region_alloc() into *out while holding L, and unlocks L.
 * tt_locked_alloc_start() runs the same on a new native thread (keeping the
 * buffer for tt_locked_alloc_join(), which joins it and hands the buffer
 * over). tt_lock_wait(): thread A's part: waits until B holds L, then locks
 * L (blocking until B is done) and unlocks it. Call it through
 * ctypes.PyDLL so that the GIL stays held while it waits.
 */
int tt_locked_alloc(size_t nbytes, void **out);
int tt_locked_alloc_start(size_t nbytes);
int tt_locked_alloc_join(void **out);
int tt_lock_wait(void);

#endif
