/* SPDX-License-Identifier: MIT */
/*
 * no_cuda: links the CUDA runtime but never allocates; it only asks how
 * many devices there are. Under the shim it should leave no trace at all.
 */
#include "prog-common.h"

int main(void)
{
	cudaError_t err;
	int count = 0;

	/* FAKECUDA_DEVICES=0 gives cudaErrorNoDevice, as on a machine without one. */
	err = cudaGetDeviceCount(&count);
	if (err != cudaErrorNoDevice)
		prog_check(err, "cudaGetDeviceCount");
	return 0;
}
