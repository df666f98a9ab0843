/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libcublas.so.13 for the stand-in GPU. Handles keep what a
 * program sets on them (stream, workspace, math and pointer modes) and give
 * it back; the routines themselves are kernels, and like every kernel on
 * the stand-in they are accepted and compute nothing (the generated stubs
 * make them succeed, see gen-stubs.py). Host-device copies really copy.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_api.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

#define HANDLE_MAGIC 0x6c77626cu /* "lwbl" */

struct cublasContext {
	unsigned int magic;
	cudaStream_t stream;
	void *workspace;
	size_t workspace_size;
	cublasMath_t math_mode;
	cublasPointerMode_t pointer_mode;
	int sm_count_target;
};

static int valid(cublasHandle_t handle)
{
	return handle && handle->magic == HANDLE_MAGIC;
}

FAKE_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
	cublasHandle_t created;

	if (!handle)
		return CUBLAS_STATUS_INVALID_VALUE;
	created = calloc(1, sizeof(*created));
	if (!created)
		return CUBLAS_STATUS_ALLOC_FAILED;
	created->magic = HANDLE_MAGIC;
	created->math_mode = CUBLAS_DEFAULT_MATH;
	created->pointer_mode = CUBLAS_POINTER_MODE_HOST;
	*handle = created;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->magic = 0;
	free(handle);
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->stream = streamId;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
						 size_t workspaceSizeInBytes)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (workspaceSizeInBytes && !workspace)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->workspace = workspace;
	handle->workspace_size = workspaceSizeInBytes;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->math_mode = mode;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->math_mode;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle,
						   cublasPointerMode_t mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->pointer_mode = mode;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle,
						   cublasPointerMode_t *mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->pointer_mode;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (smCountTarget < 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->sm_count_target = smCountTarget;
	return CUBLAS_STATUS_SUCCESS;
}

/* Column-major copies between host and device memory: both are host memory. */
static cublasStatus_t copy_matrix(int rows, int cols, int elemSize, const void *A, int lda,
				  void *B, int ldb)
{
	if (rows < 0 || cols < 0 || elemSize <= 0 || lda < rows || ldb < rows ||
	    lda <= 0 || ldb <= 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (!rows || !cols)
		return CUBLAS_STATUS_SUCCESS;
	if (!A || !B)
		return CUBLAS_STATUS_INVALID_VALUE;
	for (int col = 0; col < cols; col++)
		memmove((char *)B + (size_t)col * (size_t)ldb * (size_t)elemSize,
			(const char *)A + (size_t)col * (size_t)lda * (size_t)elemSize,
			(size_t)rows * (size_t)elemSize);
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t copy_vector(int n, int elemSize, const void *x, int incx, void *y,
				  int incy)
{
	if (n < 0 || elemSize <= 0 || incx <= 0 || incy <= 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (n && (!x || !y))
		return CUBLAS_STATUS_INVALID_VALUE;
	for (int i = 0; i < n; i++)
		memmove((char *)y + (size_t)i * (size_t)incy * (size_t)elemSize,
			(const char *)x + (size_t)i * (size_t)incx * (size_t)elemSize,
			(size_t)elemSize);
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int elemSize, const void *A,
						int lda, void *B, int ldb, cudaStream_t stream)
{
	return copy_matrix(rows, cols, elemSize, A, lda, B, ldb);
}

FAKE_EXPORT cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int elemSize, const void *A,
						int lda, void *B, int ldb, cudaStream_t stream)
{
	return copy_matrix(rows, cols, elemSize, A, lda, B, ldb);
}

FAKE_EXPORT cublasStatus_t cublasSetVectorAsync(int n, int elemSize, const void *hostPtr,
						int incx, void *devicePtr, int incy,
						cudaStream_t stream)
{
	return copy_vector(n, elemSize, hostPtr, incx, devicePtr, incy);
}

FAKE_EXPORT cublasStatus_t cublasGetVectorAsync(int n, int elemSize, const void *devicePtr,
						int incx, void *hostPtr, int incy,
						cudaStream_t stream)
{
	return copy_vector(n, elemSize, devicePtr, incx, hostPtr, incy);
}
