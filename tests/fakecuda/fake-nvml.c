/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libnvidia-ml.so.1 for the stand-in GPU. PyTorch's caching
 * allocator loads NVML with dlopen and calls it without checking, as every
 * machine with an NVIDIA driver has it (expandable segments ask it whether
 * the device has fabric memory). It finds one device per stand-in device,
 * no NVLink, no fabric and no other process. The types are NVML's, reduced
 * to what these calls touch: the toolkit does not ship nvml.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
};

/* Devices are handles to these bytes; the stand-in has at most 64. */
static char devices[64];
static int initialized;

typedef char *nvmlDevice_t;

int nvmlInit_v2(void);
int nvmlInit(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int result);
int nvmlSystemGetCudaDriverVersion(int *version);
int nvmlSystemGetCudaDriverVersion_v2(int *version);
int nvmlDeviceGetCount_v2(unsigned int *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
int nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);
int nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link, int *type);
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, void *pci);
int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
					 void *infos);
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
					    void *infos);
int nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void *gpuFabricInfo);

FAKE_EXPORT int nvmlInit_v2(void)
{
	initialized = 1;
	return NVML_SUCCESS;
}

FAKE_EXPORT int nvmlInit(void)
{
	return nvmlInit_v2();
}

FAKE_EXPORT int nvmlShutdown(void)
{
	initialized = 0;
	return NVML_SUCCESS;
}

FAKE_EXPORT const char *nvmlErrorString(int result)
{
	switch (result) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	default: return "Unknown Error";
	}
}

FAKE_EXPORT int nvmlSystemGetCudaDriverVersion_v2(int *version)
{
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	*version = 13000;
	return NVML_SUCCESS;
}

FAKE_EXPORT int nvmlSystemGetCudaDriverVersion(int *version)
{
	return nvmlSystemGetCudaDriverVersion_v2(version);
}

/* FAKECUDA_DEVICES, read as the stand-in runtime reads it. */
static unsigned int device_count(void)
{
	const char *text = getenv("FAKECUDA_DEVICES");
	unsigned int count = 1;

	if (text && sscanf(text, "%u", &count) != 1)
		count = 1;
	return count > sizeof(devices) ? (unsigned int)sizeof(devices) : count;
}

FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = device_count();
	return NVML_SUCCESS;
}

FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= device_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[index];
	return NVML_SUCCESS;
}

/* Bus ids as cudaDeviceGetPCIBusId gives them: 0000:BB:00.0, bus 1 + ordinal. */
FAKE_EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
	unsigned int domain, bus, slot, function;

	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!pciBusId || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4 ||
	    bus < 1 || bus > device_count())
		return NVML_ERROR_NOT_FOUND;
	*device = &devices[bus - 1];
	return NVML_SUCCESS;
}

static int valid(nvmlDevice_t device)
{
	return initialized && device >= devices && device < devices + device_count();
}

FAKE_EXPORT int nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
						    int *type)
{
	return valid(device) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
}

FAKE_EXPORT int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
						    void *pci)
{
	return valid(device) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
}

FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
							unsigned int *infoCount, void *infos)
{
	if (!valid(device) || !infoCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*infoCount = 0;
	return NVML_SUCCESS;
}

FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
						     unsigned int *infoCount, void *infos)
{
	return nvmlDeviceGetComputeRunningProcesses_v3(device, infoCount, infos);
}

FAKE_EXPORT int nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void *gpuFabricInfo)
{
	return valid(device) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
}
