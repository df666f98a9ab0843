/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libnccl.so.2 for the stand-in GPU: the CUDA toolkit's NCCL is
 * older than the one PyTorch is built against. It reports a version and
 * describes errors; every collective is a generated stub that says it is
 * not implemented (one process, one device: nothing to communicate with).
 */
#include <stddef.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

/* NCCL_VERSION(2, 30, 7), the release PyTorch 2.15 names. */
#define FAKE_NCCL_VERSION 23007

int ncclGetVersion(int *version);
const char *ncclGetErrorString(int result);
const char *ncclGetLastError(void *comm);

FAKE_EXPORT int ncclGetVersion(int *version)
{
	if (!version)
		return 4; /* ncclInvalidArgument */
	*version = FAKE_NCCL_VERSION;
	return 0;
}

FAKE_EXPORT const char *ncclGetErrorString(int result)
{
	static const char *const names[] = {
		"no error", "unhandled cuda error", "unhandled system error",
		"internal error", "invalid argument", "invalid usage", "remote process exited",
		"NCCL operation in progress",
	};

	if (result >= 0 && (size_t)result < sizeof(names) / sizeof(names[0]))
		return names[result];
	return "unknown result code";
}

FAKE_EXPORT const char *ncclGetLastError(void *comm)
{
	return "NCCL collectives are not implemented by the stand-in GPU";
}
