/* SPDX-License-Identifier: MIT */
/*
 * The stand-in runtime's device, stream, error and version entry points.
 */
#include "fake-driver.h"

#include <limits.h>
#include <stddef.h>

struct fake_error_name {
	cudaError_t code;
	const char *name;
};

#include "fake-error-names.h"

/*
 * The real runtime's descriptions of the errors this one returns; any other
 * code is described by its name.
 */
static const struct fake_error_name descriptions[] = {
	{ cudaSuccess, "no error" },
	{ cudaErrorInvalidValue, "invalid argument" },
	{ cudaErrorMemoryAllocation, "out of memory" },
	{ cudaErrorInitializationError, "initialization error" },
	{ cudaErrorInvalidDevicePointer, "invalid device pointer" },
	{ cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy" },
	{ cudaErrorNoDevice, "no CUDA-capable device is detected" },
	{ cudaErrorInvalidDevice, "invalid device ordinal" },
	{ cudaErrorInvalidResourceHandle, "invalid resource handle" },
	{ cudaErrorIllegalAddress, "an illegal memory access was encountered" },
	{ cudaErrorHostMemoryAlreadyRegistered,
	  "part or all of the requested memory range is already mapped" },
	{ cudaErrorHostMemoryNotRegistered,
	  "pointer does not correspond to a registered memory region" },
	{ cudaErrorNotSupported, "operation not supported" },
	{ cudaErrorUnknown, "unknown error" },
};

#define UNRECOGNIZED "unrecognized error code"

/* The version this runtime reports: the headers' unless the build names
 * another (the second runtime, libcudart.so.12, of the two-runtime test). */
#ifndef FAKE_RUNTIME_VERSION
#define FAKE_RUNTIME_VERSION CUDART_VERSION
#endif

static const char *lookup(const struct fake_error_name *table, size_t count,
			  cudaError_t error)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (table[i].code == error)
			return table[i].name;
	}
	return NULL;
}

/*
 * Entry points never call each other (nor does the real runtime, linked
 * -Bsymbolic): an interposer would see calls the program did not make.
 */
static const char *error_name(cudaError_t error)
{
	const char *name = lookup(fake_error_names,
				  sizeof(fake_error_names) / sizeof(fake_error_names[0]), error);

	return name ? name : UNRECOGNIZED;
}

FAKECUDA_EXPORT const char *cudaGetErrorName(cudaError_t error)
{
	return error_name(error);
}

FAKECUDA_EXPORT const char *cudaGetErrorString(cudaError_t error)
{
	const char *text = lookup(descriptions, sizeof(descriptions) / sizeof(descriptions[0]),
				  error);

	return text ? text : error_name(error);
}

FAKECUDA_EXPORT cudaError_t cudaGetLastError(void)
{
	return fake_last_error(1);
}

FAKECUDA_EXPORT cudaError_t cudaPeekAtLastError(void)
{
	return fake_last_error(0);
}

FAKECUDA_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
	if (!count)
		return fake_return(cudaErrorInvalidValue);
	*count = fake_device_count();
	return fake_return(fake_require_device());
}

FAKECUDA_EXPORT cudaError_t cudaGetDevice(int *device)
{
	cudaError_t err;

	if (!device)
		return fake_return(cudaErrorInvalidValue);
	err = fake_require_device();
	if (err)
		return fake_return(err);
	*device = fake_current_device();
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaSetDevice(int device)
{
	cudaError_t err = fake_require_device();

	if (err)
		return fake_return(err);
	if (device < 0 || device >= fake_device_count())
		return fake_return(cudaErrorInvalidDevice);
	fake_set_current_device(device);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
	return fake_return(fake_require_device());
}

FAKECUDA_EXPORT cudaError_t cudaDeviceReset(void)
{
	cudaError_t err = fake_require_device();

	if (err)
		return fake_return(err);
	fake_reset_device(fake_current_device());
	return cudaSuccess;
}

cudaError_t fake_stream_create(cudaStream_t *pStream, unsigned int flags)
{
	cudaError_t err;
	void *handle;

	if (!pStream || (flags & ~(unsigned int)cudaStreamNonBlocking))
		return fake_return(cudaErrorInvalidValue);
	err = fake_require_device();
	if (!err)
		err = fake_handle_create(FAKE_STREAM, fake_current_device(), &handle);
	if (err)
		return fake_return(err);
	*pStream = handle;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	return fake_stream_create(pStream, cudaStreamDefault);
}

FAKECUDA_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	return fake_stream_create(pStream, flags);
}

FAKECUDA_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	return fake_return(fake_handle_destroy(FAKE_STREAM, stream));
}

static cudaError_t stream_synchronize(cudaStream_t stream)
{
	int device;

	/* Work is done when it is issued: there is nothing to wait for. */
	return fake_return(fake_stream_device(stream, &device));
}

FAKECUDA_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	return stream_synchronize(stream);
}

FAKECUDA_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	return stream_synchronize(stream);
}

FAKECUDA_EXPORT cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return fake_return(cudaErrorInvalidValue);
	*runtimeVersion = FAKE_RUNTIME_VERSION;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return fake_return(cudaErrorInvalidValue);
	*driverVersion = CUDART_VERSION;
	return cudaSuccess;
}

/*
 * The driver's functions for programs that take them from the runtime: the
 * driver's cuGetProcAddress_v2 (as the runtime resolved it) answers, with
 * the runtime's version or the caller's. The flags have the driver's
 * values; the _ptsz variants make the default per-thread.
 */
static cudaError_t driver_entry_point(const char *symbol, void **funcPtr, int version,
				      unsigned long long flags, int per_thread,
				      enum cudaDriverEntryPointQueryResult *driverStatus)
{
	CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;

	if (!symbol || !funcPtr ||
	    (flags & ~(unsigned long long)(cudaEnableLegacyStream |
					   cudaEnablePerThreadDefaultStream)))
		return fake_return(cudaErrorInvalidValue);
	if (per_thread && !(flags & cudaEnableLegacyStream))
		flags |= cudaEnablePerThreadDefaultStream;
	if (fake_driver()->get_proc_address(symbol, funcPtr, version, flags, &found) !=
	    CUDA_SUCCESS)
		*funcPtr = NULL;
	if (driverStatus)
		*driverStatus = found == CU_GET_PROC_ADDRESS_SUCCESS ?
			cudaDriverEntryPointSuccess :
			found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ?
			cudaDriverEntryPointVersionNotSufficent :
			cudaDriverEntryPointSymbolNotFound;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
						    unsigned long long flags,
						    enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return driver_entry_point(symbol, funcPtr, CUDART_VERSION, flags, 0, driverStatus);
}

FAKECUDA_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(
	const char *symbol, void **funcPtr, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return driver_entry_point(symbol, funcPtr, CUDART_VERSION, flags, 1, driverStatus);
}

FAKECUDA_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
	const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	if (cudaVersion > INT_MAX)
		return fake_return(cudaErrorInvalidValue);
	return driver_entry_point(symbol, funcPtr, (int)cudaVersion, flags, 0, driverStatus);
}

FAKECUDA_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
	const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	if (cudaVersion > INT_MAX)
		return fake_return(cudaErrorInvalidValue);
	return driver_entry_point(symbol, funcPtr, (int)cudaVersion, flags, 1, driverStatus);
}
