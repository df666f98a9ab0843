/* SPDX-License-Identifier: MIT */
/* The public C API of include/leakwatch.h. */
#include "leakwatch.h"

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "export.h"
#include "holders.h"
#include "lw-growth.h"
#include "tracker.h"

/*
 * PyTorch's CUDAPluggableAllocator ABI, for users who plug leakwatch in
 * explicitly: torch.cuda.memory.CUDAPluggableAllocator(path,
 * "leakwatch_torch_alloc", "leakwatch_torch_free"). Each tensor is one
 * cudaMallocAsync on PyTorch's stream, through the shim's own hook (so it
 * is recorded once, with PyTorch's stack: the shim's frames are dropped).
 * PyTorch calls them with the device current; failure returns NULL, which
 * PyTorch reports as out of memory.
 */
LW_EXPORT void *leakwatch_torch_alloc(size_t size, int device,
				      cudaStream_t stream);
LW_EXPORT void leakwatch_torch_free(void *ptr, size_t size, int device,
				    cudaStream_t stream);

void *leakwatch_torch_alloc(size_t size, int device, cudaStream_t stream)
{
	void *ptr = NULL;

	(void)device;
	if (cudaMallocAsync(&ptr, size, stream) != cudaSuccess)
		return NULL;
	return ptr;
}

void leakwatch_torch_free(void *ptr, size_t size, int device,
			  cudaStream_t stream)
{
	(void)size;
	(void)device;
	cudaFreeAsync(ptr, stream);
}

LW_EXPORT void leakwatch_step(void)
{
	lw_record_step(LW_STEP_API);
}

LW_EXPORT void leakwatch_phase_begin(const char *name)
{
	lw_record_phase_begin(name);
}

LW_EXPORT void leakwatch_phase_end(void)
{
	lw_record_phase_end();
}

/* Runs the holder search now: for the Python helper's snapshot(), which
 * calls it through ctypes.PyDLL, so with the GIL held. */
LW_EXPORT void leakwatch_snapshot(void);

void leakwatch_snapshot(void)
{
	lw_holders_search();
}

LW_EXPORT int leakwatch_snapshot_info(char *trace_path, size_t path_size,
				      unsigned long long *steps,
				      unsigned long long *bytes,
				      unsigned long long *count,
				      unsigned *growing_sites,
				      double *fastest_growth)
{
	struct lw_snapshot s;

	if (lw_snapshot_taken(trace_path, path_size, &s) < 0)
		return -1;
	if (steps)
		*steps = s.steps;
	if (bytes)
		*bytes = s.live_bytes;
	if (count)
		*count = s.live_count;
	if (growing_sites)
		*growing_sites = s.growing_sites;
	if (fastest_growth)
		*fastest_growth = s.fastest;
	return 0;
}

LW_EXPORT int leakwatch_device_live(unsigned long long *bytes,
				    unsigned long long *count)
{
	uint64_t b, c;

	if (lw_device_live(&b, &c) < 0)
		return -1;
	if (bytes)
		*bytes = b;
	if (count)
		*count = c;
	return 0;
}

LW_EXPORT const char *leakwatch_judge_growth(const double *series,
					     unsigned long count,
					     double *per_step)
{
	struct lw_growth g = lw_judge_series(series, series ? count : 0, 1);

	if (per_step)
		*per_step = g.per_step;
	return lw_verdict_name(g.verdict);
}
