/* SPDX-License-Identifier: MIT */
/*
 * What a framework's host code asks of the runtime beyond memory: the
 * device's properties and attributes, kernel registration and launches,
 * events, stream priorities, stream capture and graphs (with nothing to
 * replay), function attributes and occupancy, pointer attributes, and a
 * few copies. With these, real PyTorch trains on the stand-in: kernels are
 * accepted and do nothing, streams and events behave as work already
 * completed, and the device describes itself as a compute capability 9.0
 * part whose name says it is a stand-in.
 *
 * Every other function that PyTorch imports exists as a generated stub that
 * says once that it is not implemented (gen-stubs.py).
 */
#include "fake-driver.h"

#include <cuda_profiler_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEVICE_NAME "leakwatch stand-in GPU (fakegpu, no kernels run)"

/* ---- the device ---- */

static cudaError_t check_device(int device)
{
	cudaError_t err = fake_require_device();

	if (err)
		return err;
	if (device < 0 || device >= fake_device_count())
		return cudaErrorInvalidDevice;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	size_t free_bytes, total_bytes;
	cudaError_t err;

	if (!prop)
		return fake_return(cudaErrorInvalidValue);
	err = check_device(device);
	if (err)
		return fake_return(err);
	fake_mem_info(device, &free_bytes, &total_bytes);
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "%s", DEVICE_NAME);
	memcpy(prop->uuid.bytes, "lw-fakegpu-00000", sizeof(prop->uuid.bytes));
	prop->uuid.bytes[15] = (char)('0' + device % 10);
	prop->totalGlobalMem = total_bytes;
	prop->sharedMemPerBlock = SHARED_PER_BLOCK;
	prop->regsPerBlock = REGS;
	prop->warpSize = 32;
	prop->memPitch = SIZE_MAX >> 1;
	prop->maxThreadsPerBlock = 1024;
	prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
	prop->maxThreadsDim[2] = 64;
	prop->maxGridSize[0] = INT32_MAX;
	prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
	prop->totalConstMem = 64 << 10;
	prop->major = 9;
	prop->minor = 0;
	prop->textureAlignment = 512;
	prop->texturePitchAlignment = 32;
	prop->multiProcessorCount = SM_COUNT;
	prop->canMapHostMemory = 1;
	prop->concurrentKernels = 1;
	prop->pciBusID = 1 + device;
	prop->asyncEngineCount = 2;
	prop->unifiedAddressing = 1;
	prop->memoryBusWidth = 5120;
	prop->l2CacheSize = L2_BYTES;
	prop->maxThreadsPerMultiProcessor = 2048;
	prop->streamPrioritiesSupported = 1;
	prop->globalL1CacheSupported = 1;
	prop->localL1CacheSupported = 1;
	prop->sharedMemPerMultiprocessor = SHARED_PER_SM;
	prop->regsPerMultiprocessor = REGS;
	prop->managedMemory = 1;
	prop->concurrentManagedAccess = 1;
	prop->computePreemptionSupported = 1;
	prop->cooperativeLaunch = 1;
	prop->sharedMemPerBlockOptin = SHARED_PER_BLOCK_OPTIN;
	prop->maxBlocksPerMultiProcessor = 32;
	prop->reservedSharedMemPerBlock = 1024;
	prop->hostRegisterSupported = 1;
	prop->memoryPoolsSupported = 1;
	prop->clusterLaunch = 1;
	prop->hostNumaId = -1;
	return cudaSuccess;
}

/* The driver answers, as it does for the real runtime. */
FAKECUDA_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr,
						   int device)
{
	cudaError_t err;

	if (!value)
		return fake_return(cudaErrorInvalidValue);
	err = check_device(device);
	if (err)
		return fake_return(err);
	return fake_return(fake_from_cu(fake_driver()->device_get_attribute(
		value, (CUdevice_attribute)attr, device)));
}

FAKECUDA_EXPORT cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
	cudaError_t err;

	if (!pciBusId || len <= 0)
		return fake_return(cudaErrorInvalidValue);
	err = check_device(device);
	if (err)
		return fake_return(err);
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 1 + device);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device,
						    int peerDevice)
{
	cudaError_t err;

	if (!canAccessPeer)
		return fake_return(cudaErrorInvalidValue);
	err = check_device(device);
	if (!err)
		err = check_device(peerDevice);
	if (err)
		return fake_return(err);
	*canAccessPeer = device != peerDevice;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
	cudaError_t err;

	if (flags)
		return fake_return(cudaErrorInvalidValue);
	err = check_device(peerDevice);
	if (err)
		return fake_return(err);
	if (peerDevice == fake_current_device())
		return fake_return(cudaErrorInvalidDevice);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority,
							     int *greatestPriority)
{
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device,
							   enum cudaGraphMemAttributeType attr,
							   void *value)
{
	cudaError_t err = check_device(device);

	if (!value)
		return fake_return(cudaErrorInvalidValue);
	if (err)
		return fake_return(err);
	*(cuuint64_t *)value = 0; /* no graph ever holds memory here */
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device,
							   enum cudaGraphMemAttributeType attr,
							   void *value)
{
	return fake_return(value ? check_device(device) : cudaErrorInvalidValue);
}

FAKECUDA_EXPORT cudaError_t cudaProfilerStart(void)
{
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaProfilerStop(void)
{
	return cudaSuccess;
}

/* ---- kernels: registered, configured, launched, never run ---- */

/* Declared only by crt/host_runtime.h, which is C++. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
			    const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
		       const char *deviceName, int ext, size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
				     void *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
				       void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
			       size_t sharedMem, cudaStream_t stream);

FAKECUDA_EXPORT void **__cudaRegisterFatBinary(void *fatCubin)
{
	/* The handle is only passed back: any stable, distinct address. */
	void **handle = malloc(sizeof(*handle));

	if (handle)
		*handle = fatCubin;
	return handle;
}

FAKECUDA_EXPORT void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
}

FAKECUDA_EXPORT void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
	/*
	 * Called from the registering library's destructors, possibly after
	 * other threads' last use: the few bytes stay, as the real runtime
	 * keeps its modules until exit.
	 */
}

FAKECUDA_EXPORT void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
					    char *deviceFun, const char *deviceName,
					    int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim,
					    dim3 *gDim, int *wSize)
{
}

/*
 * __device__ and __constant__ variables: each gets device memory of its size
 * at registration, found again by its host shadow's address.
 */
struct fake_symbol {
	const void *host;
	void *device;
	size_t size;
	struct fake_symbol *next;
};

static pthread_mutex_t symbols_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_symbol *symbols;

FAKECUDA_EXPORT void __cudaRegisterVar(void **fatCubinHandle, char *hostVar,
				       char *deviceAddress, const char *deviceName, int ext,
				       size_t size, int constant, int global)
{
	struct fake_symbol *symbol = calloc(1, sizeof(*symbol));

	if (!symbol)
		return;
	symbol->host = hostVar;
	symbol->size = size;
	symbol->device = calloc(1, size ? size : 1);
	if (!symbol->device) {
		free(symbol);
		return;
	}
	pthread_mutex_lock(&symbols_lock);
	symbol->next = symbols;
	symbols = symbol;
	pthread_mutex_unlock(&symbols_lock);
}

static struct fake_symbol *find_symbol(const void *host)
{
	struct fake_symbol *symbol;

	pthread_mutex_lock(&symbols_lock);
	for (symbol = symbols; symbol && symbol->host != host; symbol = symbol->next)
		;
	pthread_mutex_unlock(&symbols_lock);
	return symbol;
}

FAKECUDA_EXPORT cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
	struct fake_symbol *found;

	if (!devPtr)
		return fake_return(cudaErrorInvalidValue);
	found = find_symbol(symbol);
	if (!found)
		return fake_return(cudaErrorInvalidSymbol);
	*devPtr = found->device;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src,
					       size_t count, size_t offset,
					       enum cudaMemcpyKind kind)
{
	struct fake_symbol *found = find_symbol(symbol);

	if (!found)
		return fake_return(cudaErrorInvalidSymbol);
	if (!src || offset > found->size || count > found->size - offset ||
	    (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice &&
	     kind != cudaMemcpyDefault))
		return fake_return(cudaErrorInvalidValue);
	memcpy((char *)found->device + offset, src, count);
	return cudaSuccess;
}

/* The <<<...>>> configuration, pushed and popped by the launching thread. */
static _Thread_local struct {
	dim3 grid, block;
	size_t shared;
	void *stream;
} call_configuration;

FAKECUDA_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
						     size_t sharedMem, void *stream)
{
	call_configuration.grid = gridDim;
	call_configuration.block = blockDim;
	call_configuration.shared = sharedMem;
	call_configuration.stream = stream;
	return 0;
}

FAKECUDA_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
						       size_t *sharedMem, void *stream)
{
	*gridDim = call_configuration.grid;
	*blockDim = call_configuration.block;
	*sharedMem = call_configuration.shared;
	*(void **)stream = call_configuration.stream;
	return cudaSuccess;
}

/* A launch checks its stream and runs nothing. */
static cudaError_t launch(cudaStream_t stream)
{
	int device;

	return fake_return(fake_stream_device(stream, &device));
}

FAKECUDA_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
	if (!kernel)
		return fake_return(cudaErrorInvalidValue);
	*kernel = (cudaKernel_t)(uintptr_t)func;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim,
					       dim3 blockDim, void **args, size_t sharedMem,
					       cudaStream_t stream)
{
	return launch(stream);
}

FAKECUDA_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
					     void **args, size_t sharedMem, cudaStream_t stream)
{
	return func ? launch(stream) : fake_return(cudaErrorInvalidDeviceFunction);
}

FAKECUDA_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim,
							dim3 blockDim, void **args,
							size_t sharedMem, cudaStream_t stream)
{
	return func ? launch(stream) : fake_return(cudaErrorInvalidDeviceFunction);
}

FAKECUDA_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config,
						const void *func, void **args)
{
	if (!config)
		return fake_return(cudaErrorInvalidValue);
	return func ? launch(config->stream) : fake_return(cudaErrorInvalidDeviceFunction);
}

/* Host work on a stream runs at once: everything before it is complete. */
FAKECUDA_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn,
					       void *userData)
{
	cudaError_t err = launch(stream);

	if (err)
		return err;
	if (!fn)
		return fake_return(cudaErrorInvalidValue);
	fn(userData);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream,
						  cudaStreamCallback_t callback,
						  void *userData, unsigned int flags)
{
	cudaError_t err = launch(stream);

	if (err)
		return err;
	if (!callback || flags)
		return fake_return(cudaErrorInvalidValue);
	callback(stream, cudaSuccess, userData);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr,
						  const void *func)
{
	if (!attr)
		return fake_return(cudaErrorInvalidValue);
	if (!func)
		return fake_return(cudaErrorInvalidDeviceFunction);
	memset(attr, 0, sizeof(*attr));
	attr->maxThreadsPerBlock = 1024;
	attr->numRegs = 32;
	attr->ptxVersion = 90;
	attr->binaryVersion = 90;
	attr->maxDynamicSharedSizeBytes = SHARED_PER_BLOCK;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr,
						 int value)
{
	return func ? cudaSuccess : fake_return(cudaErrorInvalidDeviceFunction);
}

FAKECUDA_EXPORT cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel,
							    enum cudaFuncAttribute attr,
							    int value, int device)
{
	if (!kernel)
		return fake_return(cudaErrorInvalidDeviceFunction);
	return fake_return(check_device(device));
}

static cudaError_t occupancy(int *numBlocks, const void *func, int blockSize)
{
	if (!numBlocks || blockSize <= 0)
		return fake_return(cudaErrorInvalidValue);
	if (!func)
		return fake_return(cudaErrorInvalidDeviceFunction);
	*numBlocks = blockSize > 2048 ? 0 : 2048 / blockSize;
	if (*numBlocks > 32)
		*numBlocks = 32;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(
	int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize)
{
	return occupancy(numBlocks, func, blockSize);
}

FAKECUDA_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
	int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize,
	unsigned int flags)
{
	return occupancy(numBlocks, func, blockSize);
}

/* ---- streams: priorities, queries, capture state ---- */

FAKECUDA_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream,
							 unsigned int flags, int priority)
{
	return fake_stream_create(pStream, flags); /* one priority only */
}

FAKECUDA_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
	if (!priority)
		return fake_return(cudaErrorInvalidValue);
	*priority = 0;
	return launch(hStream);
}

FAKECUDA_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream)
{
	return launch(stream); /* all work is complete */
}

FAKECUDA_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
						unsigned int flags)
{
	return launch(stream);
}

/*
 * Stream capture. Kernels do nothing here, so a captured graph has nothing
 * to replay: capture only keeps its state (which stream, which capture id),
 * as the caching allocator asks for it to choose a graph's private pool,
 * and a graph and its executable are tokens that launch successfully. At
 * most CAPTURES_MAX streams capture at once (PyTorch captures on one).
 */
#define CAPTURES_MAX 8
#define GRAPH_MAGIC 0x6c776772u /* "lwgr" */

struct fake_graph {
	unsigned int magic;
	int executable;
};

static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	cudaStream_t stream;
	unsigned long long id;
} captures[CAPTURES_MAX];
static unsigned long long capture_ids;

/* The capture id of stream, 0 when it is not capturing. */
static unsigned long long capture_id(cudaStream_t stream)
{
	unsigned long long id = 0;

	pthread_mutex_lock(&capture_lock);
	for (int i = 0; i < CAPTURES_MAX && !id; i++)
		if (captures[i].id && captures[i].stream == stream)
			id = captures[i].id;
	pthread_mutex_unlock(&capture_lock);
	return id;
}

FAKECUDA_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
						   enum cudaStreamCaptureMode mode)
{
	cudaError_t err = launch(stream);
	int slot = -1;

	if (err)
		return err;
	/* The legacy default stream cannot be captured. */
	if (!stream || stream == cudaStreamLegacy)
		return fake_return(cudaErrorStreamCaptureUnsupported);
	if ((unsigned int)mode > (unsigned int)cudaStreamCaptureModeRelaxed)
		return fake_return(cudaErrorInvalidValue);
	pthread_mutex_lock(&capture_lock);
	for (int i = 0; i < CAPTURES_MAX; i++) {
		if (captures[i].id && captures[i].stream == stream) {
			pthread_mutex_unlock(&capture_lock);
			return fake_return(cudaErrorIllegalState);
		}
		if (!captures[i].id && slot < 0)
			slot = i;
	}
	if (slot >= 0) {
		captures[slot].stream = stream;
		captures[slot].id = ++capture_ids;
	}
	pthread_mutex_unlock(&capture_lock);
	return slot < 0 ? fake_return(cudaErrorMemoryAllocation) : cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream,
						 cudaGraph_t *pGraph)
{
	struct fake_graph *graph;
	int found = 0;

	if (!pGraph)
		return fake_return(cudaErrorInvalidValue);
	pthread_mutex_lock(&capture_lock);
	for (int i = 0; i < CAPTURES_MAX && !found; i++) {
		if (captures[i].id && captures[i].stream == stream) {
			captures[i].id = 0;
			found = 1;
		}
	}
	pthread_mutex_unlock(&capture_lock);
	if (!found)
		return fake_return(cudaErrorIllegalState);
	graph = calloc(1, sizeof(*graph));
	if (!graph)
		return fake_return(cudaErrorMemoryAllocation);
	graph->magic = GRAPH_MAGIC;
	*pGraph = (cudaGraph_t)graph;
	return cudaSuccess;
}

static struct fake_graph *graph_of(const void *handle, int executable)
{
	struct fake_graph *graph = (struct fake_graph *)handle;

	return graph && graph->magic == GRAPH_MAGIC &&
	       graph->executable == executable ? graph : NULL;
}

FAKECUDA_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec,
						 cudaGraph_t graph,
						 unsigned long long flags)
{
	struct fake_graph *exec;

	if (!pGraphExec || !graph_of(graph, 0))
		return fake_return(cudaErrorInvalidValue);
	exec = calloc(1, sizeof(*exec));
	if (!exec)
		return fake_return(cudaErrorMemoryAllocation);
	exec->magic = GRAPH_MAGIC;
	exec->executable = 1;
	*pGraphExec = (cudaGraphExec_t)exec;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec,
							  cudaGraph_t graph,
							  unsigned long long flags)
{
	return cudaGraphInstantiate(pGraphExec, graph, flags);
}

FAKECUDA_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec,
					    cudaStream_t stream)
{
	if (!graph_of(graphExec, 1))
		return fake_return(cudaErrorInvalidResourceHandle);
	return launch(stream); /* its kernels, like all here, do nothing */
}

static cudaError_t graph_destroy(void *handle, int executable)
{
	struct fake_graph *graph = graph_of(handle, executable);

	if (!graph)
		return fake_return(cudaErrorInvalidValue);
	graph->magic = 0;
	free(graph);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	return graph_destroy(graph, 0);
}

FAKECUDA_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	return graph_destroy(graphExec, 1);
}

FAKECUDA_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph,
					      cudaGraphNode_t *nodes,
					      size_t *numNodes)
{
	if (!graph_of(graph, 0) || !numNodes)
		return fake_return(cudaErrorInvalidValue);
	*numNodes = 0; /* nothing was captured that runs */
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
						  enum cudaStreamCaptureStatus *pCaptureStatus)
{
	if (!pCaptureStatus)
		return fake_return(cudaErrorInvalidValue);
	*pCaptureStatus = capture_id(stream) ? cudaStreamCaptureStatusActive
					     : cudaStreamCaptureStatusNone;
	return launch(stream);
}

FAKECUDA_EXPORT cudaError_t cudaStreamGetCaptureInfo(
	cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
	unsigned long long *id_out, cudaGraph_t *graph_out,
	const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out,
	size_t *numDependencies_out)
{
	unsigned long long id = capture_id(stream);

	if (!captureStatus_out)
		return fake_return(cudaErrorInvalidValue);
	*captureStatus_out = id ? cudaStreamCaptureStatusActive
				: cudaStreamCaptureStatusNone;
	if (id_out)
		*id_out = id;
	if (graph_out)
		*graph_out = NULL;
	if (dependencies_out)
		*dependencies_out = NULL;
	if (edgeData_out)
		*edgeData_out = NULL;
	if (numDependencies_out)
		*numDependencies_out = 0;
	return launch(stream);
}

static _Thread_local enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

FAKECUDA_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
	enum cudaStreamCaptureMode previous = capture_mode;

	if (!mode || (unsigned int)*mode > (unsigned int)cudaStreamCaptureModeRelaxed)
		return fake_return(cudaErrorInvalidValue);
	capture_mode = *mode;
	*mode = previous;
	return cudaSuccess;
}

/* ---- events: recorded with the host's clock ---- */

#define EVENT_MAGIC 0x6c776576u /* "lwev" */

struct fake_event {
	unsigned int magic;
	unsigned int flags;
	int recorded;
	struct timespec when;
};

static cudaError_t event_create(cudaEvent_t *event, unsigned int flags)
{
	struct fake_event *object;
	cudaError_t err;

	if (!event || (flags & ~(unsigned int)(cudaEventBlockingSync | cudaEventDisableTiming |
						cudaEventInterprocess)))
		return fake_return(cudaErrorInvalidValue);
	err = fake_require_device();
	if (err)
		return fake_return(err);
	object = calloc(1, sizeof(*object));
	if (!object)
		return fake_return(cudaErrorMemoryAllocation);
	object->magic = EVENT_MAGIC;
	object->flags = flags;
	*event = (cudaEvent_t)object;
	return cudaSuccess;
}

static struct fake_event *event_object(cudaEvent_t event)
{
	struct fake_event *object = (struct fake_event *)event;

	return object && object->magic == EVENT_MAGIC ? object : NULL;
}

FAKECUDA_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return event_create(event, cudaEventDefault);
}

FAKECUDA_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	return event_create(event, flags);
}

FAKECUDA_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	struct fake_event *object = event_object(event);

	if (!object)
		return fake_return(cudaErrorInvalidResourceHandle);
	object->magic = 0;
	free(object);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
						     unsigned int flags)
{
	struct fake_event *object = event_object(event);
	cudaError_t err;

	if (!object)
		return fake_return(cudaErrorInvalidResourceHandle);
	err = launch(stream);
	if (err)
		return err;
	clock_gettime(CLOCK_MONOTONIC, &object->when);
	object->recorded = 1;
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	return cudaEventRecordWithFlags(event, stream, 0);
}

FAKECUDA_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
	return event_object(event) ? cudaSuccess : fake_return(cudaErrorInvalidResourceHandle);
}

FAKECUDA_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	return event_object(event) ? cudaSuccess : fake_return(cudaErrorInvalidResourceHandle);
}

FAKECUDA_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	struct fake_event *a = event_object(start), *b = event_object(end);

	if (!ms)
		return fake_return(cudaErrorInvalidValue);
	if (!a || !b)
		return fake_return(cudaErrorInvalidResourceHandle);
	if ((a->flags | b->flags) & cudaEventDisableTiming || !a->recorded || !b->recorded)
		return fake_return(cudaErrorInvalidResourceHandle);
	*ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
		      (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
	return cudaSuccess;
}

/* ---- pointers, copies, pools ---- */

FAKECUDA_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
						     const void *ptr)
{
	if (!attributes)
		return fake_return(cudaErrorInvalidValue);
	memset(attributes, 0, sizeof(*attributes));
	attributes->device = -2;
	if (ptr && fake_classify(ptr, 1) == FAKE_PLACE_DEVICE) {
		attributes->type = fake_mem_kind(ptr) == FAKE_MANAGED ? cudaMemoryTypeManaged
								     : cudaMemoryTypeDevice;
		attributes->device = fake_current_device();
		attributes->devicePointer = (void *)ptr;
	} else if (ptr && fake_mem_kind(ptr) == FAKE_PINNED) {
		attributes->type = cudaMemoryTypeHost;
		attributes->device = fake_current_device();
		attributes->devicePointer = (void *)ptr;
		attributes->hostPointer = (void *)ptr;
	} else {
		attributes->type = cudaMemoryTypeUnregistered;
	}
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
					      size_t spitch, size_t width, size_t height,
					      enum cudaMemcpyKind kind, cudaStream_t stream)
{
	cudaError_t err = launch(stream);

	if (err)
		return err;
	if ((width > dpitch || width > spitch) && height > 1)
		return fake_return(cudaErrorInvalidPitchValue);
	if ((unsigned int)kind > (unsigned int)cudaMemcpyDefault)
		return fake_return(cudaErrorInvalidMemcpyDirection);
	if (width && height && (!dst || !src))
		return fake_return(cudaErrorInvalidValue);
	for (size_t row = 0; row < height; row++)
		memmove((char *)dst + row * dpitch, (const char *)src + row * spitch, width);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src,
						int srcDevice, size_t count, cudaStream_t stream)
{
	cudaError_t err = check_device(dstDevice);

	if (!err)
		err = check_device(srcDevice);
	if (err)
		return fake_return(err);
	err = launch(stream);
	if (err)
		return err;
	if (count && (!dst || !src))
		return fake_return(cudaErrorInvalidValue);
	if (count)
		memmove(dst, src, count);
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool,
						    enum cudaMemPoolAttr attr, void *value)
{
	int device;
	cudaError_t err;

	if (!value)
		return fake_return(cudaErrorInvalidValue);
	err = fake_pool_device(memPool, &device);
	if (err)
		return fake_return(err);
	switch (attr) {
	case cudaMemPoolReuseFollowEventDependencies:
	case cudaMemPoolReuseAllowOpportunistic:
	case cudaMemPoolReuseAllowInternalDependencies:
		*(int *)value = 1;
		break;
	case cudaMemPoolAttrUsedMemCurrent:
	case cudaMemPoolAttrReservedMemCurrent:
		/* The pool caches nothing: what it holds is what is in use. */
		*(cuuint64_t *)value = fake_mem_pool_used(memPool);
		break;
	default:
		/* The release threshold and the high-water marks: not kept. */
		*(cuuint64_t *)value = 0;
		break;
	}
	return cudaSuccess;
}

FAKECUDA_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool,
						    enum cudaMemPoolAttr attr, void *value)
{
	int device;

	if (!value)
		return fake_return(cudaErrorInvalidValue);
	return fake_return(fake_pool_device(memPool, &device));
}

FAKECUDA_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	int device;

	return fake_return(fake_pool_device(memPool, &device));
}

FAKECUDA_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool,
						 const struct cudaMemAccessDesc *descList,
						 size_t count)
{
	int device;

	if (count && !descList)
		return fake_return(cudaErrorInvalidValue);
	return fake_return(fake_pool_device(memPool, &device));
}
