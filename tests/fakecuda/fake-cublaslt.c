/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libcublasLt.so.13 for the stand-in GPU: descriptors and layouts
 * are created, set and destroyed; the heuristic offers one algorithm that
 * needs no workspace; a matmul is a kernel, accepted and computing nothing.
 */
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

/* What a descriptor, layout or preference points at: only its address matters. */
struct fake_lt_object {
	unsigned int magic;
};

#define LT_MAGIC 0x6c776c74u /* "lwlt" */

static cublasStatus_t create(void **out)
{
	struct fake_lt_object *object;

	if (!out)
		return CUBLAS_STATUS_INVALID_VALUE;
	object = calloc(1, sizeof(*object));
	if (!object)
		return CUBLAS_STATUS_ALLOC_FAILED;
	object->magic = LT_MAGIC;
	*out = object;
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t destroy(void *object)
{
	struct fake_lt_object *lt = object;

	if (!lt)
		return CUBLAS_STATUS_SUCCESS;
	if (lt->magic != LT_MAGIC)
		return CUBLAS_STATUS_INVALID_VALUE;
	lt->magic = 0;
	free(lt);
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t set(const void *object, const void *buf, size_t sizeInBytes)
{
	const struct fake_lt_object *lt = object;

	if (!lt || lt->magic != LT_MAGIC || (sizeInBytes && !buf))
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT size_t cublasLtGetVersion(void)
{
	return CUBLAS_VERSION;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
						    cublasComputeType_t computeType,
						    cudaDataType_t scaleType)
{
	return create((void **)matmulDesc);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
	return destroy(matmulDesc);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
							  cublasLtMatmulDescAttributes_t attr,
							  const void *buf, size_t sizeInBytes)
{
	return set(matmulDesc, buf, sizeInBytes);
}

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
						      cudaDataType type, uint64_t rows,
						      uint64_t cols, int64_t ld)
{
	return create((void **)matLayout);
}

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
	return destroy(matLayout);
}

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
							    cublasLtMatrixLayoutAttribute_t attr,
							    const void *buf, size_t sizeInBytes)
{
	return set(matLayout, buf, sizeInBytes);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
	return create((void **)pref);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
	return destroy(pref);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
	cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
	const void *buf, size_t sizeInBytes)
{
	return set(pref, buf, sizeInBytes);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
	cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
	cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
	cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
	cublasLtMatmulPreference_t preference, int requestedAlgoCount,
	cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount)
{
	if (!lightHandle || !operationDesc || requestedAlgoCount < 1 ||
	    !heuristicResultsArray || !returnAlgoCount)
		return CUBLAS_STATUS_INVALID_VALUE;
	memset(&heuristicResultsArray[0], 0, sizeof(heuristicResultsArray[0]));
	heuristicResultsArray[0].state = CUBLAS_STATUS_SUCCESS;
	heuristicResultsArray[0].wavesCount = 1.0f;
	*returnAlgoCount = 1;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t lightHandle,
						  cublasComputeType_t computeType,
						  cudaDataType_t scaleType, cudaDataType_t Atype,
						  cudaDataType_t Btype, cudaDataType_t Ctype,
						  cudaDataType_t Dtype, int algoId,
						  cublasLtMatmulAlgo_t *algo)
{
	if (!lightHandle || !algo)
		return CUBLAS_STATUS_INVALID_VALUE;
	memset(algo, 0, sizeof(*algo));
	algo->data[0] = (uint64_t)algoId;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoCheck(
	cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
	cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
	cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
	const cublasLtMatmulAlgo_t *algo, cublasLtMatmulHeuristicResult_t *result)
{
	if (!lightHandle || !operationDesc || !algo || !result)
		return CUBLAS_STATUS_INVALID_VALUE;
	memset(result, 0, sizeof(*result));
	result->algo = *algo;
	result->state = CUBLAS_STATUS_SUCCESS;
	result->wavesCount = 1.0f;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(
	cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr,
	const void *buf, size_t sizeInBytes)
{
	return algo && (buf || !sizeInBytes) ? CUBLAS_STATUS_SUCCESS
					     : CUBLAS_STATUS_INVALID_VALUE;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(
	const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr,
	void *buf, size_t sizeInBytes, size_t *sizeWritten)
{
	if (!algo || (!buf && !sizeWritten))
		return CUBLAS_STATUS_INVALID_VALUE;
	if (buf)
		memset(buf, 0, sizeInBytes);
	if (sizeWritten)
		*sizeWritten = sizeInBytes;
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmul(
	cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
	const void *A, cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
	const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
	cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
	size_t workspaceSizeInBytes, cudaStream_t stream)
{
	if (!lightHandle || !computeDesc)
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}
