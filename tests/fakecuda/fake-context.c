/* SPDX-License-Identifier: MIT */
/*
 * The stand-in driver's devices, contexts, modules and launches: what
 * PyTorch reaches through the driver directly, through its lazily loaded
 * NVRTC bindings (run-time compiled kernels) and through the entry points
 * its caching allocator resolves (c10's DriverAPI). Contexts are the one
 * primary context of each device; modules load any image and their
 * functions launch as kernels do here, computing nothing.
 */
#include "fake-driver.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static CUresult check_device(CUdevice device)
{
	if (fake_require_device() != cudaSuccess)
		return CUDA_ERROR_NO_DEVICE;
	if (device < 0 || device >= fake_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult result;

	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	result = check_device(ordinal);
	if (result == CUDA_SUCCESS)
		*device = ordinal;
	return result;
}

/* The runtime's cudaDeviceGetAttribute answers through this, as the real one. */
FAKECUDA_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult result;

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	result = check_device(dev);
	if (result != CUDA_SUCCESS)
		return result;
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *pi = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *pi = 64; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *pi = INT32_MAX; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *pi = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *pi = SHARED_PER_BLOCK; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		*pi = SHARED_PER_BLOCK_OPTIN;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *pi = SHARED_PER_SM; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *pi = REGS; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = SM_COUNT; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *pi = 2048; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *pi = 32; break;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *pi = L2_BYTES; break;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *pi = 5120; break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = 1 + dev; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
		*pi = 1;
		break;
	default:
		/* Every other attribute reads as absent or zero. */
		*pi = 0;
		break;
	}
	return CUDA_SUCCESS;
}

/* ---- the primary context of each device ---- */

static char primary_contexts[FAKE_MAX_DEVICES];
static _Thread_local CUcontext current_context;

FAKECUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult result = check_device(dev);

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (result == CUDA_SUCCESS)
		*pctx = (CUcontext)(void *)&primary_contexts[dev];
	return result;
}

FAKECUDA_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
						    int *active)
{
	CUresult result = check_device(dev);

	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	if (result != CUDA_SUCCESS)
		return result;
	/* The runtime makes it on first use; every device here is in use. */
	*flags = 0;
	*active = 1;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = current_context ? current_context
				: (CUcontext)(void *)&primary_contexts[fake_current_device()];
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	const char *at = (const char *)(void *)ctx;

	if (ctx && (at < primary_contexts || at >= primary_contexts + fake_device_count()))
		return CUDA_ERROR_INVALID_CONTEXT;
	current_context = ctx;
	if (ctx)
		fake_set_current_device((int)(at - primary_contexts));
	return CUDA_SUCCESS;
}

/* ---- errors ---- */

FAKECUDA_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	static const struct { CUresult code; const char *text; } texts[] = {
		{ CUDA_SUCCESS, "no error" },
		{ CUDA_ERROR_INVALID_VALUE, "invalid argument" },
		{ CUDA_ERROR_OUT_OF_MEMORY, "out of memory" },
		{ CUDA_ERROR_NOT_INITIALIZED, "initialization error" },
		{ CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected" },
		{ CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal" },
		{ CUDA_ERROR_INVALID_CONTEXT, "invalid device context" },
		{ CUDA_ERROR_INVALID_HANDLE, "invalid resource handle" },
		{ CUDA_ERROR_NOT_FOUND, "named symbol not found" },
		{ CUDA_ERROR_NOT_SUPPORTED, "operation not supported" },
		{ CUDA_ERROR_UNKNOWN, "unknown error" },
	};

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (texts[i].code == error) {
			*pStr = texts[i].text;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- modules and their functions: loaded, launched, never run ---- */

#define MODULE_MAGIC 0x6c776d64u /* "lwmd" */

struct CUmod_st {
	unsigned int magic;
};

struct CUfunc_st {
	struct CUmod_st *module;
};

static CUresult module_create(CUmodule *module)
{
	struct CUmod_st *created;

	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	if (fake_require_device() != cudaSuccess)
		return CUDA_ERROR_NO_DEVICE;
	created = calloc(1, sizeof(*created));
	if (!created)
		return CUDA_ERROR_OUT_OF_MEMORY;
	created->magic = MODULE_MAGIC;
	*module = created;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	return image ? module_create(module) : CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
					    unsigned int numOptions, CUjit_option *options,
					    void **optionValues)
{
	return image ? module_create(module) : CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	return fname ? module_create(module) : CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
	/*
	 * Functions taken from the module may still be held: its memory stays,
	 * marked unloaded, so that a later use is refused rather than a crash.
	 */
	if (!hmod || hmod->magic != MODULE_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	hmod->magic = 0;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct CUfunc_st *function;

	if (!hfunc || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!hmod || hmod->magic != MODULE_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	function = calloc(1, sizeof(*function));
	if (!function)
		return CUDA_ERROR_OUT_OF_MEMORY;
	function->module = hmod;
	*hfunc = function;
	return CUDA_SUCCESS;
}

static CUresult check_function(CUfunction f)
{
	return f && f->module && f->module->magic == MODULE_MAGIC ? CUDA_SUCCESS
								   : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult launch(CUfunction f, CUstream stream)
{
	CUresult result = check_function(f);
	int device;

	if (result != CUDA_SUCCESS)
		return result;
	return fake_stream_device((cudaStream_t)stream, &device) == cudaSuccess
		       ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKECUDA_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
					unsigned int gridDimY, unsigned int gridDimZ,
					unsigned int blockDimX, unsigned int blockDimY,
					unsigned int blockDimZ, unsigned int sharedMemBytes,
					CUstream hStream, void **kernelParams, void **extra)
{
	return launch(f, hStream);
}

FAKECUDA_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
						   unsigned int gridDimY, unsigned int gridDimZ,
						   unsigned int blockDimX, unsigned int blockDimY,
						   unsigned int blockDimZ,
						   unsigned int sharedMemBytes, CUstream hStream,
						   void **kernelParams)
{
	return launch(f, hStream);
}

FAKECUDA_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
					    CUfunction hfunc)
{
	CUresult result = check_function(hfunc);

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (result != CUDA_SUCCESS)
		return result;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = SHARED_PER_BLOCK; break;
	default: *pi = 0; break;
	}
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
					    int value)
{
	return check_function(hfunc);
}

FAKECUDA_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	return check_function(hfunc);
}

FAKECUDA_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks,
								     CUfunction func,
								     int blockSize,
								     size_t dynamicSMemSize)
{
	CUresult result = check_function(func);

	if (!numBlocks || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (result != CUDA_SUCCESS)
		return result;
	*numBlocks = blockSize > 2048 ? 0 : 2048 / blockSize;
	if (*numBlocks > 32)
		*numBlocks = 32;
	return CUDA_SUCCESS;
}

/* ---- what c10's DriverAPI resolves beside the virtual-memory calls ---- */

FAKECUDA_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
						       const CUmemAllocationProp *prop,
						       CUmemAllocationGranularity_flags option)
{
	if (!granularity || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = GRANULARITY;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle,
						      CUmemGenericAllocationHandle handle,
						      CUmemAllocationHandleType handleType,
						      unsigned long long flags)
{
	return CUDA_ERROR_NOT_SUPPORTED; /* one process: nothing to share with */
}

FAKECUDA_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
							void *osHandle,
							CUmemAllocationHandleType shHandleType)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

FAKECUDA_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
					  CUstream hStream)
{
	uint32_t *words = (uint32_t *)(uintptr_t)dstDevice;

	if (!words && N)
		return CUDA_ERROR_INVALID_VALUE;
	if (N && fake_classify(words, N * sizeof(*words)) != FAKE_PLACE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < N; i++)
		words[i] = ui;
	return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr,
					      cuuint32_t value, unsigned int flags)
{
	if (!addr)
		return CUDA_ERROR_INVALID_VALUE;
	*(volatile cuuint32_t *)(uintptr_t)addr = value;
	return CUDA_SUCCESS;
}
